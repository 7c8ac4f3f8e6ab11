package eurekahttp

import (
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

// TLSConfigFor configures each new connection for its host, and Go's own
// verification (the host's name or IP address) applies.
func TestTLSConfigForEachConnection(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	var host atomic.Value
	var calls atomic.Int32
	trusted := true
	c := New(Config{TLSConfigFor: func(h string) *tls.Config {
		host.Store(h)
		calls.Add(1)
		if !trusted {
			return &tls.Config{ServerName: h} // the system's roots: httptest's CA is not one
		}
		return &tls.Config{RootCAs: pool, ServerName: h}
	}})
	resp, err := c.hc.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if host.Load() != "127.0.0.1" || calls.Load() != 1 {
		t.Fatalf("configured for %v, %d times", host.Load(), calls.Load())
	}
	trusted = false
	c.hc.CloseIdleConnections()
	if resp, err := c.hc.Get(srv.URL); err == nil {
		resp.Body.Close()
		t.Fatal("a server the connection's configuration does not trust was accepted")
	}
}
