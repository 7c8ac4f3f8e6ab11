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

	"github.com/gin-gonic/gin"

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
	ops *Ops // readiness and shutdown; the Server is the handler
	m   *metrics.Metrics
}

func newOpsFixture(t *testing.T, cfg OpsConfig) *opsFixture {
	t.Helper()
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	f := &opsFixture{}
	f.m = metrics.New(metrics.Sources{Instances: func() []registry.AppStatusCount { return f.reg.AppStatusCounts() }})
	f.reg = registry.New(registry.Options{Now: clock, OnRenew: func(rn registry.Renewal) { f.m.OnRenew(rn) }, OnEvent: func(e registry.Event) {
		f.m.OnEvent(e)
		if e.Changed && f.srv != nil {
			f.srv.Cache().Invalidate(e.App, e.Instance().VIPAddress, e.Instance().SecureVIPAddress)
		}
	}})
	cc := cache.DefaultConfig()
	cc.UseReadOnly = false
	cc.Now = clock
	f.srv = New(Config{MaxBodyBytes: 2048}, Deps{Registry: f.reg, Cache: &cc, Now: clock})
	if cfg.Metrics == nil {
		cfg.Metrics = f.m
	}
	f.ops = f.srv.EnableOps(cfg)
	return f
}

// do serves one request through the server and its ops middleware; userinfo is "user:pass" or "".
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
	f.srv.ServeHTTP(w, req)
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
	f.srv.ServeHTTP(w, req)
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
	ts := httptest.NewServer(f.srv)
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
		`goreka_http_requests_total{code="200",method="PUT",namespace="default",route="/eureka/apps/:app/:id"} 2`,
		`goreka_http_requests_total{code="404",method="PUT",namespace="default",route="/eureka/apps/:app/:id"} 1`,
		`goreka_http_requests_total{code="204",method="POST",namespace="default",route="/eureka/apps/:app"} 1`,
		`goreka_http_requests_total{code="200",method="GET",namespace="default",route="/eureka/apps/delta"} 2`,
		`goreka_http_requests_total{code="404",method="other",namespace="default",route="unmatched"} 1`,
		`goreka_http_request_duration_seconds_count{method="PUT",namespace="default",route="/eureka/apps/:app/:id"} 3`,
		`goreka_registry_fetches_total{kind="full",namespace="default"} 1`,
		`goreka_registry_fetches_total{kind="delta",namespace="default"} 2`,
		`goreka_registry_fetches_total{kind="app",namespace="default"} 1`,
		`goreka_registry_fetches_total{kind="vip",namespace="default"} 1`,
		`goreka_registry_fetches_total{kind="svip",namespace="default"} 1`,
		`goreka_renews_total{namespace="default",replication="false"} 2`,
		`goreka_registrations_total{namespace="default",replication="false"} 1`,
		`eureka_server_instances{application="ORDERS",namespace="default",status="UP"} 1`,
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

// TestRouteLabels: requests are labelled with gin's matched route pattern,
// wildcards included, whatever the spelling of the path; 404 and 405 answers
// are "unmatched" under method "other", so scanners cannot grow the label
// set; a refusal by the auth middleware is labelled with the route refused.
func TestRouteLabels(t *testing.T) {
	f := newOpsFixture(t, OpsConfig{Auth: AuthConfig{User: "eureka", Password: "s3cret"}})
	f.srv.Engine().GET("/goreka/static/*file", func(c *gin.Context) { c.Status(http.StatusNoContent) })
	const cred = "eureka:s3cret"
	expect(t, f.do(t, "GET", "/goreka/static/a/b.css", cred, ""), 204, "")
	expect(t, f.do(t, "GET", "/eureka/v2/apps/delta/", cred, ""), 200, "-")
	expect(t, f.do(t, "DELETE", "/eureka/apps", cred, ""), 405, "405 method not allowed")
	expect(t, f.do(t, "BREW", "/eureka/apps", cred, ""), 405, "405 method not allowed")
	expect(t, f.do(t, "GET", "/eureka/apps/X/1/nope", cred, ""), 404, "404 page not found")
	expect(t, f.do(t, "GET", "/eureka/apps/X/1/nope", "", ""), 401, "")
	expect(t, f.do(t, "PUT", "/eureka/apps/X/1", "", ""), 401, "")
	if w := f.do(t, "HEAD", LivenessPath+"/", "", ""); w.Code != 200 {
		t.Fatalf("HEAD liveness: %d", w.Code)
	}

	body := f.do(t, "GET", MetricsPath, cred, "").Body.String()
	for _, s := range []string{
		`goreka_http_requests_total{code="204",method="GET",namespace="default",route="/goreka/static/*file"} 1`,
		`goreka_http_requests_total{code="200",method="GET",namespace="default",route="/eureka/apps/delta"} 1`,
		`goreka_http_requests_total{code="405",method="other",namespace="default",route="unmatched"} 2`,
		`goreka_http_requests_total{code="404",method="other",namespace="default",route="unmatched"} 1`,
		`goreka_http_requests_total{code="401",method="other",namespace="default",route="unmatched"} 1`,
		`goreka_http_requests_total{code="401",method="PUT",namespace="default",route="/eureka/apps/:app/:id"} 1`,
		`goreka_http_requests_total{code="200",method="HEAD",namespace="default",route="/actuator/health/liveness"} 1`,
		`goreka_registry_fetches_total{kind="delta",namespace="default"} 1`,
		// Bound at EnableOps: exposed before their first request.
		`goreka_http_request_duration_seconds_count{method="GET",namespace="default",route="/eureka/vips/:vip"} 0`,
	} {
		if !strings.Contains(body, s) {
			t.Errorf("metrics lack %s", s)
		}
	}
	if strings.Contains(body, `method="BREW"`) || strings.Contains(body, `method="DELETE",route="/eureka/apps"`) {
		t.Error("an unmatched request got its own series")
	}
	if t.Failed() {
		t.Log(body)
	}
}

// TestAccessLogUnmatched: a 404 from gin is logged once, with the bytes of
// its body and the raw path.
func TestAccessLogUnmatched(t *testing.T) {
	var buf bytes.Buffer
	f := newOpsFixture(t, OpsConfig{AccessLog: true, Logger: slog.New(slog.NewJSONHandler(&buf, nil))})
	expect(t, f.do(t, "GET", "/v2/nope/", "", ""), 404, "404 page not found")
	line := buf.String()
	for _, s := range []string{`"path":"/v2/nope/"`, `"route":"unmatched"`, `"status":404`, `"bytes":18`} {
		if !strings.Contains(line, s) {
			t.Errorf("access log line lacks %s: %s", s, line)
		}
	}
	if strings.Count(line, "\n") != 1 {
		t.Errorf("want one line, got %q", line)
	}
}

// TestRecoveredPanicIsCounted: a handler's panic answers 500, and the
// instrumentation outside the recovery counts that 500.
func TestRecoveredPanicIsCounted(t *testing.T) {
	f := newOpsFixture(t, OpsConfig{})
	f.srv.Engine().GET("/boom", func(*gin.Context) { panic("boom") })
	expect(t, f.do(t, "GET", "/boom", "", ""), 500, "")
	body := f.do(t, "GET", MetricsPath, "", "").Body.String()
	if s := `goreka_http_requests_total{code="500",method="GET",namespace="default",route="/boom"} 1`; !strings.Contains(body, s) {
		t.Fatalf("metrics lack %s:\n%s", s, body)
	}
}

// TestOpsRenewDoesNotAllocate: a heartbeat through the whole edge (router,
// authentication, metrics) allocates nothing once its route is bound.
func TestOpsRenewDoesNotAllocate(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop items, so gin's contexts are allocated")
	}
	srv, req := opsRenewServer(t)
	w := &discard{h: http.Header{}}
	srv.ServeHTTP(w, req)
	if n := testing.AllocsPerRun(200, func() { srv.ServeHTTP(w, req) }); n != 0 {
		t.Fatalf("heartbeat through the edge: %v allocs, want 0", n)
	}
}

func opsRenewServer(tb testing.TB) (*Server, *http.Request) {
	m := metrics.New(metrics.Sources{})
	reg := registry.New(registry.Options{OnEvent: m.OnEvent, OnRenew: m.OnRenew})
	srv := New(Config{}, Deps{Registry: reg})
	srv.EnableOps(OpsConfig{Metrics: m, Auth: AuthConfig{User: "eureka", Password: "s3cret"}})
	in := &registry.Instance{InstanceID: "i-1", HostName: "h", App: "ORDERS", IPAddr: "10.0.0.1", Status: registry.StatusUp,
		DataCenterInfo: registry.DataCenterInfo{Name: registry.DataCenterMyOwn}}
	if _, err := reg.Register(in, false); err != nil {
		tb.Fatal(err)
	}
	req := httptest.NewRequest("PUT", "/eureka/apps/ORDERS/i-1", nil)
	req.Header.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte("eureka:s3cret")))
	return srv, req
}

// BenchmarkOpsRenew is a heartbeat through authentication, routing, metrics
// and the registry.
func BenchmarkOpsRenew(b *testing.B) {
	srv, req := opsRenewServer(b)
	w := httptest.NewRecorder()
	b.ReportAllocs()
	for b.Loop() {
		srv.ServeHTTP(w, req)
	}
	if w.Code != 200 {
		b.Fatal(w.Code)
	}
}
