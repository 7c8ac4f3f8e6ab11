package server

import (
	"bytes"
	"context"
	"encoding/base64"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/goreka/goreka/cache"
	"github.com/goreka/goreka/registry"
	"github.com/goreka/goreka/replication"
	"github.com/goreka/goreka/server/metrics"
)

const opsRegisterBody = `{"instance":{"instanceId":"i-1","hostName":"h1","app":"ORDERS","ipAddr":"10.0.0.1","status":"UP",
 "vipAddress":"orders","secureVipAddress":"orders-secure",
 "dataCenterInfo":{"@class":"com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo","name":"MyOwn"}}}`

type opsFixture struct {
	reg *registry.Registry
	srv *Server
	ops *Ops
	m   *metrics.Metrics
}

func newOpsFixture(t *testing.T, cfg OpsConfig) *opsFixture {
	t.Helper()
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	f := &opsFixture{m: metrics.New(metrics.Sources{})}
	f.reg = registry.New(registry.Options{Now: clock, OnRenew: func(rn registry.Renewal) { f.m.OnRenew(rn) }, OnEvent: func(e registry.Event) {
		f.m.OnEvent(e)
		if e.Changed && f.srv != nil {
			f.srv.Cache().Invalidate(e.App, e.Instance().VIPAddress, e.Instance().SecureVIPAddress)
		}
	}})
	cc := cache.DefaultConfig()
	cc.UseReadOnly = false
	cc.Now = clock
	f.srv = New(Config{MaxBodyBytes: 2048}, Deps{Registry: f.reg, Cache: cache.NewStreaming(cc, NewLoader(f.reg)), Now: clock})
	if cfg.Metrics == nil {
		cfg.Metrics = f.m
	}
	f.ops = f.srv.EnableOps(cfg)
	return f
}

// do serves one request through the ops layer; userinfo is "user:pass" or "".
func (f *opsFixture) do(t *testing.T, method, target, userinfo, body string) *httptest.ResponseRecorder {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, target, rd)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	if userinfo != "" {
		req.Header.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(userinfo)))
	}
	w := httptest.NewRecorder()
	f.ops.ServeHTTP(w, req)
	return w
}

func expect(t *testing.T, w *httptest.ResponseRecorder, code int, body string) {
	t.Helper()
	if w.Code != code || (body != "-" && w.Body.String() != body) {
		t.Fatalf("got %d %q, want %d %q", w.Code, w.Body.String(), code, body)
	}
}

func TestHealthAndReadinessTransitions(t *testing.T) {
	f := newOpsFixture(t, OpsConfig{Auth: AuthConfig{User: "eureka", Password: "s3cret"}})
	// Probes never need credentials, even with authentication on.
	expect(t, f.do(t, "GET", HealthPath, "", ""), 200, `{"status":"UP"}`)
	expect(t, f.do(t, "GET", LivenessPath, "", ""), 200, `{"status":"UP"}`)
	expect(t, f.do(t, "GET", ReadinessPath, "", ""), 503, `{"status":"OUT_OF_SERVICE"}`)
	expect(t, f.do(t, "GET", ReadinessPath+"/", "", ""), 503, `{"status":"OUT_OF_SERVICE"}`)

	f.ops.SetReady(true)
	expect(t, f.do(t, "GET", ReadinessPath, "", ""), 200, `{"status":"UP"}`)
	if w := f.do(t, "HEAD", ReadinessPath, "", ""); w.Code != 200 {
		t.Fatalf("HEAD readiness = %d", w.Code)
	}

	f.ops.SetShuttingDown()
	expect(t, f.do(t, "GET", HealthPath, "", ""), 503, `{"status":"DOWN"}`)
	expect(t, f.do(t, "GET", ReadinessPath, "", ""), 503, `{"status":"OUT_OF_SERVICE"}`)
	expect(t, f.do(t, "GET", LivenessPath, "", ""), 200, `{"status":"UP"}`)
	if ct := f.do(t, "GET", HealthPath, "", "").Header().Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type = %q", ct)
	}
}

func TestAuthClientAPI(t *testing.T) {
	f := newOpsFixture(t, OpsConfig{Auth: AuthConfig{User: "eureka", Password: "s3cret"}})
	for _, tc := range []struct{ name, method, target, user, body string }{
		{"fetch without credentials", "GET", "/eureka/apps", "", ""},
		{"fetch with a wrong password", "GET", "/eureka/apps", "eureka:nope", ""},
		{"fetch as another user", "GET", "/eureka/apps", "user:s3cret", ""},
		{"register without credentials", "POST", "/eureka/apps/ORDERS", "", opsRegisterBody},
		{"v2 path", "GET", "/eureka/v2/apps/", "", ""},
		{"dashboard page", "GET", "/", "", ""},
		{"metrics", "GET", MetricsPath, "", ""},
		{"unknown path", "GET", "/nope", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := f.do(t, tc.method, tc.target, tc.user, tc.body)
			expect(t, w, 401, "")
			if got := w.Header().Get("WWW-Authenticate"); !strings.HasPrefix(got, `Basic realm="goreka"`) {
				t.Fatalf("WWW-Authenticate = %q", got)
			}
		})
	}
	if len(f.reg.Applications().Apps) != 0 {
		t.Fatal("a refused registration reached the registry")
	}
	expect(t, f.do(t, "POST", "/eureka/apps/ORDERS", "eureka:s3cret", opsRegisterBody), 204, "")
	expect(t, f.do(t, "PUT", "/eureka/apps/ORDERS/i-1", "eureka:s3cret", ""), 200, "")
	expect(t, f.do(t, "GET", "/eureka/apps/ORDERS", "eureka:s3cret", ""), 200, "-")
	if w := f.do(t, "GET", MetricsPath, "eureka:s3cret", ""); w.Code != 200 || !strings.Contains(w.Body.String(), "eureka_server_instances") {
		t.Fatalf("metrics with credentials: %d", w.Code)
	}

	// Other encodings of the same credentials: lower-case scheme, no padding.
	req := httptest.NewRequest("GET", "/eureka/apps", nil)
	req.Header.Set("Authorization", "basic "+base64.RawStdEncoding.EncodeToString([]byte("eureka:s3cret")))
	w := httptest.NewRecorder()
	f.ops.ServeHTTP(w, req)
	if w.Code != 200 {
		t.Fatalf("lower-case, unpadded credentials: %d", w.Code)
	}
}

// TestAuthDashboardActions covers the requests the dashboard's action
// buttons send (take out of service, put back, remove), and the read-only
// user, who may look but not act.
func TestAuthDashboardActions(t *testing.T) {
	f := newOpsFixture(t, OpsConfig{Auth: AuthConfig{User: "eureka", Password: "s3cret", ReadOnlyUser: "viewer", ReadOnlyPassword: "look"}})
	expect(t, f.do(t, "POST", "/eureka/apps/ORDERS", "eureka:s3cret", opsRegisterBody), 204, "")
	actions := []struct{ method, target string }{
		{"PUT", "/eureka/apps/ORDERS/i-1/status?value=OUT_OF_SERVICE"},
		{"DELETE", "/eureka/apps/ORDERS/i-1/status"},
		{"DELETE", "/eureka/apps/ORDERS/i-1"},
	}
	for _, a := range actions {
		expect(t, f.do(t, a.method, a.target, "", ""), 401, "")
		expect(t, f.do(t, a.method, a.target, "viewer:look", ""), 403, "")
	}
	if v, ok := f.reg.Get("ORDERS", "i-1"); !ok || v.Instance.Status != registry.StatusUp {
		t.Fatal("a refused action changed the instance")
	}
	expect(t, f.do(t, "GET", "/eureka/apps/ORDERS", "viewer:look", ""), 200, "-")
	expect(t, f.do(t, "GET", "/eureka/apps/ORDERS", "viewer:s3cret", ""), 401, "")
	for _, a := range actions {
		expect(t, f.do(t, a.method, a.target, "eureka:s3cret", ""), 200, "")
	}
	if _, ok := f.reg.Get("ORDERS", "i-1"); ok {
		t.Fatal("remove action did not cancel the instance")
	}
}

func TestAuthOffWithoutPassword(t *testing.T) {
	f := newOpsFixture(t, OpsConfig{Auth: AuthConfig{User: "eureka", ReadOnlyUser: "viewer", ReadOnlyPassword: "look"}})
	expect(t, f.do(t, "POST", "/eureka/apps/ORDERS", "", opsRegisterBody), 204, "")
	expect(t, f.do(t, "DELETE", "/eureka/apps/ORDERS/i-1", "viewer:look", ""), 200, "")
}

// TestAuthReplication runs the real replication client against a goreka
// server with authentication: the peer URL's credentials must reach it, and
// a peer URL without them is refused.
func TestAuthReplication(t *testing.T) {
	f := newOpsFixture(t, OpsConfig{Auth: AuthConfig{User: "eureka", Password: "p@ss:word"}})
	ts := httptest.NewServer(f.ops)
	t.Cleanup(ts.Close)
	u, _ := url.Parse(ts.URL)

	send := func(userinfo *url.Userinfo, id string) (error, replication.PeerStatus) {
		peerURL := url.URL{Scheme: "http", Host: u.Host, Path: "/eureka/", User: userinfo}
		p, err := replication.ParsePeer(peerURL.String())
		if err != nil {
			t.Fatal(err)
		}
		src := registry.New(registry.Options{})
		rep := replication.New(replication.Default(), src, []replication.Peer{p})
		in := &registry.Instance{InstanceID: id, HostName: "h", App: "ORDERS", IPAddr: "10.0.0.2", Status: registry.StatusUp,
			DataCenterInfo: registry.DataCenterInfo{Name: registry.DataCenterMyOwn}}
		reg, err := src.Register(in, false)
		if err != nil {
			t.Fatal(err)
		}
		rep.OnEvent(registry.Event{Kind: registry.EventRegister, App: "ORDERS", ID: id, Lease: registry.LeaseView{Instance: reg}})
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		err = rep.Flush(ctx)
		return err, rep.Status()[0]
	}
	if err, st := send(nil, "anon"); err == nil || st.Failures.Rejected == 0 {
		t.Fatalf("replication without credentials: err %v, status %+v", err, st)
	}
	if _, ok := f.reg.Get("ORDERS", "anon"); ok {
		t.Fatal("unauthenticated replication was applied")
	}
	if err, st := send(url.UserPassword("eureka", "p@ss:word"), "authed"); err != nil {
		t.Fatalf("replication with the peer URL's credentials: %v (%+v)", err, st)
	}
	if _, ok := f.reg.Get("ORDERS", "authed"); !ok {
		t.Fatal("authenticated replication was not applied")
	}
}

func TestHTTPMetricsAndFetches(t *testing.T) {
	f := newOpsFixture(t, OpsConfig{})
	expect(t, f.do(t, "POST", "/eureka/apps/ORDERS", "", opsRegisterBody), 204, "")
	f.do(t, "PUT", "/eureka/apps/ORDERS/i-1", "", "")
	f.do(t, "PUT", "/eureka/apps/ORDERS/i-1", "", "")
	f.do(t, "PUT", "/eureka/apps/ORDERS/nope", "", "")
	f.do(t, "GET", "/eureka/apps/", "", "")
	f.do(t, "GET", "/eureka/v2/apps/delta", "", "")
	f.do(t, "GET", "/eureka/apps/delta", "", "")
	f.do(t, "GET", "/eureka/apps/ORDERS", "", "")
	f.do(t, "GET", "/eureka/apps/MISSING", "", "") // 404: not a fetch served
	f.do(t, "GET", "/eureka/vips/orders", "", "")
	f.do(t, "GET", "/eureka/svips/orders-secure", "", "")
	f.do(t, "GET", "/wp-login.php", "", "")

	body := f.do(t, "GET", PrometheusPath, "", "").Body.String()
	for _, s := range []string{
		`goreka_http_requests_total{code="200",method="PUT",route="/eureka/apps/:app/:id"} 2`,
		`goreka_http_requests_total{code="404",method="PUT",route="/eureka/apps/:app/:id"} 1`,
		`goreka_http_requests_total{code="204",method="POST",route="/eureka/apps/:app"} 1`,
		`goreka_http_requests_total{code="200",method="GET",route="/eureka/apps/delta"} 2`,
		`goreka_http_requests_total{code="404",method="other",route="unmatched"} 1`,
		`goreka_http_request_duration_seconds_count{method="PUT",route="/eureka/apps/:app/:id"} 3`,
		`goreka_registry_fetches_total{kind="full"} 1`,
		`goreka_registry_fetches_total{kind="delta"} 2`,
		`goreka_registry_fetches_total{kind="app"} 1`,
		`goreka_registry_fetches_total{kind="vip"} 1`,
		`goreka_registry_fetches_total{kind="svip"} 1`,
		`goreka_renews_total{replication="false"} 2`,
		`goreka_registrations_total{replication="false"} 1`,
		`eureka_server_instances{application="ORDERS",status="UP"} 1`,
	} {
		if !strings.Contains(body, s) {
			t.Errorf("metrics lack %s", s)
		}
	}
	if t.Failed() {
		t.Log(body)
	}
}

func TestAccessLog(t *testing.T) {
	var buf bytes.Buffer
	f := newOpsFixture(t, OpsConfig{AccessLog: true, Logger: slog.New(slog.NewJSONHandler(&buf, nil))})
	f.do(t, "PUT", "/eureka/v2/apps/ORDERS/i-9", "", "")
	line := buf.String()
	for _, s := range []string{`"msg":"request"`, `"method":"PUT"`, `"path":"/eureka/v2/apps/ORDERS/i-9"`,
		`"route":"/eureka/apps/:app/:id"`, `"status":404`} {
		if !strings.Contains(line, s) {
			t.Errorf("access log line lacks %s: %s", s, line)
		}
	}
	if strings.Count(line, "\n") != 1 {
		t.Errorf("want one line, got %q", line)
	}

	buf.Reset()
	f = newOpsFixture(t, OpsConfig{Logger: slog.New(slog.NewJSONHandler(&buf, nil))})
	f.do(t, "GET", "/eureka/apps", "", "")
	if buf.Len() != 0 {
		t.Fatalf("access log written while off: %s", buf.String())
	}
}

func TestBodyLimit(t *testing.T) {
	f := newOpsFixture(t, OpsConfig{})
	big := strings.Replace(opsRegisterBody, `"status":"UP"`, `"status":"UP","metadata":{"pad":"`+strings.Repeat("x", 4096)+`"}`, 1)
	w := f.do(t, "POST", "/eureka/apps/ORDERS", "", big)
	if w.Code != http.StatusRequestEntityTooLarge {
		t.Fatalf("oversized registration: %d %s", w.Code, w.Body)
	}
	if len(f.reg.Applications().Apps) != 0 {
		t.Fatal("oversized registration was stored")
	}
}

func TestMatchSegs(t *testing.T) {
	for _, tc := range []struct {
		pattern, path string
		ok            bool
	}{
		{"/", "/", true},
		{"/", "/x", false},
		{"/eureka/apps", "/eureka/apps", true},
		{"/eureka/apps", "/eureka/apps/x", false},
		{"/eureka/apps/:app", "/eureka/apps/X", true},
		{"/eureka/apps/:app", "/eureka/apps/", false},
		{"/eureka/apps/:app/:id", "/eureka/apps/X/1", true},
		{"/goreka/static/*file", "/goreka/static/a/b.css", true},
		{"/goreka/static/*file", "/goreka/other", false},
	} {
		if got := matchSegs(strings.Split(tc.pattern, "/")[1:], tc.path); got != tc.ok {
			t.Errorf("match(%q, %q) = %v", tc.pattern, tc.path, got)
		}
	}
}

// BenchmarkOpsRenew is a heartbeat through authentication, routing, metrics
// and the registry.
func BenchmarkOpsRenew(b *testing.B) {
	m := metrics.New(metrics.Sources{})
	reg := registry.New(registry.Options{OnEvent: m.OnEvent})
	srv := New(Config{}, Deps{Registry: reg})
	ops := srv.EnableOps(OpsConfig{Metrics: m, Auth: AuthConfig{User: "eureka", Password: "s3cret"}})
	in := &registry.Instance{InstanceID: "i-1", HostName: "h", App: "ORDERS", IPAddr: "10.0.0.1", Status: registry.StatusUp,
		DataCenterInfo: registry.DataCenterInfo{Name: registry.DataCenterMyOwn}}
	if _, err := reg.Register(in, false); err != nil {
		b.Fatal(err)
	}
	req := httptest.NewRequest("PUT", "/eureka/apps/ORDERS/i-1", nil)
	req.Header.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte("eureka:s3cret")))
	w := httptest.NewRecorder()
	b.ReportAllocs()
	for b.Loop() {
		ops.ServeHTTP(w, req)
	}
	if w.Code != 200 {
		b.Fatal(w.Code)
	}
}
