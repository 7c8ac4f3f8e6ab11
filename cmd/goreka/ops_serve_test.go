package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// serveOps runs an app in this process on a loopback port until the test
// ends, and returns its address.
func serveOps(t *testing.T, args ...string) (string, *app) {
	t.Helper()
	port, all := opsArgs(t, args...)
	n := inProcessNode(t, "ops", "127.0.0.1", port, all...)
	n.start()
	return n.addr(), n.app()
}

// selfSigned writes a certificate for 127.0.0.1 and its key as PEM files.
func selfSigned(t *testing.T) (certFile, keyFile string, cert *x509.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "goreka test"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	if cert, err = x509.ParseCertificate(der); err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile, cert
}

func TestOpsTLSServing(t *testing.T) {
	certFile, keyFile, cert := selfSigned(t)
	addr, _ := serveOps(t, "--server.ssl.certificate=file:"+certFile, "--server.ssl.certificate-private-key="+keyFile)

	pool := x509.NewCertPool()
	pool.AddCert(cert)
	pinned := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}, Timeout: 10 * time.Second}
	t.Cleanup(pinned.CloseIdleConnections)
	resp, err := pinned.Get("https://" + addr + "/actuator/health")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != `{"status":"UP"}` || resp.TLS == nil {
		t.Fatalf("health over TLS: %d %s (TLS %v)", resp.StatusCode, body, resp.TLS != nil)
	}

	// A client that does not trust the certificate is refused by TLS.
	plain := &http.Client{Timeout: 10 * time.Second}
	_, err = plain.Get("https://" + addr + "/actuator/health")
	var unknown x509.UnknownAuthorityError
	if !errors.As(err, &unknown) {
		t.Fatalf("untrusted client: %v, want an unknown-authority error", err)
	}
	// Plain HTTP to the TLS port gets Go's 400, never the API.
	resp, err = plain.Get("http://" + addr + "/eureka/apps")
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("plain HTTP on the TLS port: %d", resp.StatusCode)
		}
	}
}

// TestOpsSlowHeaderCutOff: a client that never finishes its headers is
// disconnected after read-header-timeout.
func TestOpsSlowHeaderCutOff(t *testing.T) {
	addr, _ := serveOps(t, "--goreka.server.read-header-timeout=200ms", "--goreka.server.read-timeout=1h")
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "GET /eureka/apps HTTP/1.1\r\nHost: x\r\nX-Slow: "); err != nil {
		t.Fatal(err)
	}
	// The deadline only bounds a broken test; the server must hang up first.
	conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	start := time.Now()
	_, err = io.ReadAll(conn)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("connection still open after %v: the slow client was not cut off", time.Since(start))
	}
}

func TestOpsBodyLimitFromConfig(t *testing.T) {
	addr, a := serveOps(t, "--goreka.server.max-body-bytes=1KB")
	body := `{"instance":{"instanceId":"i-1","hostName":"h1","app":"ORDERS","ipAddr":"10.0.0.1","status":"UP","metadata":{"pad":"` +
		strings.Repeat("x", 2048) + `"},"dataCenterInfo":{"name":"MyOwn"}}}`
	resp, err := http.Post("http://"+addr+"/eureka/apps/ORDERS", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("2 KiB registration with a 1 KB limit: %d", resp.StatusCode)
	}
	if _, ok := a.reg.Get("ORDERS", "i-1"); ok {
		t.Fatal("oversized registration stored")
	}
}

// TestOpsAuthFromSpringProperties: spring.security.user.* protect the API
// of a real app, and health stays open.
func TestOpsAuthFromSpringProperties(t *testing.T) {
	addr, _ := serveOps(t, "--spring.security.user.name=eureka", "--spring.security.user.password=s3cret")
	get := func(url string) int {
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if c := get("http://" + addr + "/eureka/apps"); c != 401 {
		t.Fatalf("without credentials: %d", c)
	}
	if c := get("http://eureka:s3cret@" + addr + "/eureka/apps"); c != 200 {
		t.Fatalf("with credentials from the URL: %d", c)
	}
	if c := get("http://" + addr + "/actuator/health"); c != 200 {
		t.Fatalf("health without credentials: %d", c)
	}
}
