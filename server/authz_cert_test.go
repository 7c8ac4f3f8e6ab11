package server

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/goreka/goreka/registry"
	"github.com/goreka/goreka/server/metrics"
)

// doCert sends a request as a client whose verified certificate has the
// given CN, DNS and URI names (what the TLS listener hands the handler).
func (f *opsFixture) doCert(t *testing.T, method, target, cn string, dns []string, uri, body string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(method, target, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if cn != "" || dns != nil || uri != "" {
		c := &x509.Certificate{Subject: pkix.Name{CommonName: cn}, DNSNames: dns}
		if uri != "" {
			u, _ := url.Parse(uri)
			c.URIs = []*url.URL{u}
		}
		req.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{c}, VerifiedChains: [][]*x509.Certificate{{c}}}
	}
	w := httptest.NewRecorder()
	f.srv.ServeHTTP(w, req)
	return w
}

// A verified client certificate stands for the user whose
// certificate-subject it names: that user's apps, roles and namespaces,
// as with its password.
func TestCertificateSubjectIsAUser(t *testing.T) {
	f := newOpsFixture(t, OpsConfig{Auth: AuthConfig{Users: []UserConfig{
		{Name: "orders", CertificateSubject: "orders.svc", Apps: []string{"ORDERS"}},
		{Name: "pay", CertificateSubject: "pay.internal", Apps: []string{"PAY*"}},
		{Name: "mesh", CertificateSubject: "spiffe://cluster.local/ns/apps/sa/billing", Apps: []string{"BILLING"}},
		{Name: "peer", CertificateSubject: "eureka-peer", Roles: []string{"peer"}},
		{Name: "pw", Password: "pw-pw", Apps: []string{"PW"}},
		{Name: "elsewhere", CertificateSubject: "elsewhere", Apps: []string{"*"}, Namespaces: []string{"team-a"}},
	}}})
	expect(t, f.doCert(t, "POST", "/eureka/apps/ORDERS", "orders.svc", nil, "", instanceBody("ORDERS", "o-1")), 204, "")
	expect(t, f.doCert(t, "PUT", "/eureka/apps/ORDERS/o-1", "orders.svc", nil, "", ""), 200, "-")
	w := f.doCert(t, "POST", "/eureka/apps/PAYMENTS", "orders.svc", nil, "", instanceBody("PAYMENTS", "p-1"))
	expect(t, w, 403, `user "orders" may not register instances of application PAYMENTS`)
	// A DNS SAN, then a URI SAN (SPIFFE) name the user when the CN does not.
	expect(t, f.doCert(t, "POST", "/eureka/apps/PAYMENTS", "client-7", []string{"x.example", "pay.internal"}, "", instanceBody("PAYMENTS", "p-1")), 204, "")
	expect(t, f.doCert(t, "POST", "/eureka/apps/BILLING", "", nil, "spiffe://cluster.local/ns/apps/sa/billing", instanceBody("BILLING", "b-1")), 204, "")
	// A peer certificate posts batches; others may not.
	batch := `{"replicationList":[]}`
	expect(t, f.doCert(t, "POST", "/eureka/peerreplication/batch", "eureka-peer", nil, "", batch), 200, "-")
	expect(t, f.doCert(t, "POST", "/eureka/peerreplication/batch", "orders.svc", nil, "", batch), 403, "-")
	// A namespace-scoped user is refused outside its namespaces.
	expect(t, f.doCert(t, "GET", "/eureka/apps", "elsewhere", nil, "", ""), 403, "-")
	// Reads are open to any user, by certificate too.
	expect(t, f.doCert(t, "GET", "/eureka/apps", "orders.svc", nil, "", ""), 200, "-")
	// No certificate, or one that names nobody: the usual 401.
	if w := f.doCert(t, "GET", "/eureka/apps", "", nil, "", ""); w.Code != 401 || w.Header().Get("WWW-Authenticate") == "" {
		t.Fatalf("no certificate: %d %q", w.Code, w.Header())
	}
	expect(t, f.doCert(t, "GET", "/eureka/apps", "stranger", []string{"stranger.example"}, "", ""), 401, "")
	// Passwords still work beside certificates; a certificate-only user
	// has no password to guess (an empty one is no credential).
	expect(t, f.do(t, "POST", "/eureka/apps/PW", "pw:pw-pw", instanceBody("PW", "w-1")), 204, "")
	expect(t, f.do(t, "GET", "/eureka/apps", "orders:", ""), 401, "")
}

// An unverified certificate (no verified chain: client-auth none lets a
// client send any) names nobody.
func TestUnverifiedCertificateIsNoUser(t *testing.T) {
	f := newOpsFixture(t, OpsConfig{Auth: AuthConfig{Users: []UserConfig{{Name: "orders", CertificateSubject: "orders.svc", Apps: []string{"ORDERS"}}}}})
	req := httptest.NewRequest("GET", "/eureka/apps", nil)
	c := &x509.Certificate{Subject: pkix.Name{CommonName: "orders.svc"}}
	req.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{c}}
	w := httptest.NewRecorder()
	f.srv.ServeHTTP(w, req)
	expect(t, w, 401, "")
}

func TestCertificateSubjectConfigErrors(t *testing.T) {
	var o Ops
	if err := o.configureAuth(AuthConfig{Users: []UserConfig{{Name: "a"}}}); err == nil || !strings.Contains(err.Error(), "no password and no certificate subject") {
		t.Fatalf("err %v", err)
	}
	o = Ops{}
	if err := o.configureAuth(AuthConfig{Users: []UserConfig{{Name: "a", CertificateSubject: "x"}, {Name: "b", CertificateSubject: "x"}}}); err == nil || !strings.Contains(err.Error(), "same certificate subject") {
		t.Fatalf("err %v", err)
	}
}

// TestCertificateRenewDoesNotAllocate: a heartbeat whose user is named by
// its client certificate's CN allocates nothing, as one by password.
func TestCertificateRenewDoesNotAllocate(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop items, so gin's contexts are allocated")
	}
	m := metrics.New(metrics.Sources{})
	reg := registry.New(registry.Options{OnEvent: m.OnEvent, OnRenew: m.OnRenew})
	srv := New(Config{}, Deps{Registry: reg})
	srv.EnableOps(OpsConfig{Metrics: m, Auth: AuthConfig{Users: []UserConfig{{Name: "orders", CertificateSubject: "orders.svc", Apps: []string{"ORDERS"}}}}})
	in := &registry.Instance{InstanceID: "i-1", HostName: "h", App: "ORDERS", IPAddr: "10.0.0.1", Status: registry.StatusUp,
		DataCenterInfo: registry.DataCenterInfo{Name: registry.DataCenterMyOwn}}
	if _, err := reg.Register(in, false); err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest("PUT", "/eureka/apps/ORDERS/i-1", nil)
	c := &x509.Certificate{Subject: pkix.Name{CommonName: "orders.svc"}}
	req.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{c}, VerifiedChains: [][]*x509.Certificate{{c}}}
	w := &discard{h: http.Header{}}
	srv.ServeHTTP(w, req)
	if n := testing.AllocsPerRun(200, func() { srv.ServeHTTP(w, req) }); n != 0 {
		t.Fatalf("heartbeat by a certificate user: %v allocs, want 0", n)
	}
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, req)
	if rec.Code != 200 {
		t.Fatalf("heartbeat by a certificate user: %d %s", rec.Code, rec.Body)
	}
}
