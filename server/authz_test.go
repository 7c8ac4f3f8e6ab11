package server

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/goreka/goreka/registry"
	"github.com/goreka/goreka/server/metrics"
)

func TestGlobFold(t *testing.T) {
	for _, tc := range []struct {
		pat, name string
		want      bool
	}{
		{"ORDERS", "ORDERS", true},
		{"ORDERS", "orders", true},
		{"ORDERS", "ORDERS2", false},
		{"ORDERS", "ORDER", false},
		{"PAY*", "PAYMENTS", true},
		{"PAY*", "pay", true},
		{"PAY*", "XPAY", false},
		{"*-API", "ORDERS-API", true},
		{"*-API", "ORDERS-API-V2", false},
		{"A*B*C", "AXXBYYC", true},
		{"A*B*C", "AXXBYY", false},
		{"SVC-?", "SVC-1", true},
		{"SVC-?", "SVC-12", false},
		{"**", "", true},
		{"", "", true},
		{"", "A", false},
	} {
		if got := globFold(tc.pat, tc.name); got != tc.want {
			t.Errorf("globFold(%q, %q) = %v, want %v", tc.pat, tc.name, got, tc.want)
		}
	}
}

func instanceBody(app, id string) string {
	return fmt.Sprintf(`{"instance":{"instanceId":%q,"hostName":"h1","app":%q,"ipAddr":"10.0.0.1","status":"UP",
 "dataCenterInfo":{"@class":"com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo","name":"MyOwn"}}}`, id, app)
}

func perAppFixture(t *testing.T) *opsFixture {
	t.Helper()
	f := newOpsFixture(t, OpsConfig{Auth: AuthConfig{User: "eureka", Password: "s3cret", ReadOnlyUser: "viewer", ReadOnlyPassword: "look",
		Users: []UserConfig{
			{Name: "orders", Password: "o-pw", Apps: []string{"orders"}},
			{Name: "pay", Password: "p-pw", Apps: []string{"PAY*"}},
			{Name: "reader", Password: "r-pw"},
			{Name: "peer", Password: "peer-pw", Roles: []string{"peer"}},
			{Name: "orders-peer", Password: "op-pw", Roles: []string{"peer"}, Apps: []string{"ORDERS"}},
			{Name: "ops", Password: "ops-pw", Roles: []string{"admin"}},
		}}})
	expect(t, f.do(t, "POST", "/eureka/apps/ORDERS", "orders:o-pw", instanceBody("ORDERS", "o-1")), 204, "")
	expect(t, f.do(t, "POST", "/eureka/apps/PAYMENTS", "pay:p-pw", instanceBody("PAYMENTS", "p-1")), 204, "")
	return f
}

// TestPerAppWrites: each write route, per user kind. A refusal is a 403
// naming the user, the action and the app, and the registry is unchanged.
func TestPerAppWrites(t *testing.T) {
	const status = "/eureka/apps/PAYMENTS/p-1/status?value=OUT_OF_SERVICE"
	for _, tc := range []struct {
		name, method, target, user, body string
		code                             int
		refusal                          string // part of the 403 body
	}{
		{"register own app", "POST", "/eureka/apps/ORDERS", "orders:o-pw", instanceBody("ORDERS", "o-2"), 204, ""},
		{"register own app lower case", "POST", "/eureka/apps/orders", "orders:o-pw", instanceBody("ORDERS", "o-3"), 204, ""},
		{"register other app", "POST", "/eureka/apps/PAYMENTS", "orders:o-pw", instanceBody("PAYMENTS", "p-2"), 403, `user "orders" may not register instances of application PAYMENTS`},
		{"renew own app", "PUT", "/eureka/apps/ORDERS/o-1", "orders:o-pw", "", 200, ""},
		{"renew other app", "PUT", "/eureka/apps/PAYMENTS/p-1", "orders:o-pw", "", 403, `user "orders" may not renew instances of application PAYMENTS`},
		{"cancel other app", "DELETE", "/eureka/apps/PAYMENTS/p-1", "orders:o-pw", "", 403, `user "orders" may not cancel instances of application PAYMENTS`},
		{"override other app", "PUT", status, "orders:o-pw", "", 403, `may not override the status of instances of application PAYMENTS`},
		{"delete override other app", "DELETE", status, "orders:o-pw", "", 403, `may not override the status of`},
		{"metadata other app", "PUT", "/eureka/apps/PAYMENTS/p-1/metadata?k=v", "orders:o-pw", "", 403, `may not update the metadata of instances of application PAYMENTS`},
		{"glob user cancels matching app", "PUT", status, "pay:p-pw", "", 200, ""},
		{"user without apps writes nothing", "PUT", "/eureka/apps/ORDERS/o-1", "reader:r-pw", "", 403, `user "reader" may not renew`},
		{"user without apps reads", "GET", "/eureka/apps", "reader:r-pw", "", 200, ""},
		{"per-app user reads other apps", "GET", "/eureka/apps/PAYMENTS", "orders:o-pw", "", 200, ""},
		{"per-app user reads delta", "GET", "/eureka/apps/delta", "orders:o-pw", "", 200, ""},
		{"per-app user and ASG status", "PUT", "/eureka/asg/a1/status?value=ENABLED", "orders:o-pw", "", 403, `user "orders" may not PUT /eureka/asg/:asg/status (needs role admin)`},
		{"per-app user and batch", "POST", "/eureka/peerreplication/batch", "orders:o-pw", `{"replicationList":[]}`, 403, `user "orders" may not post replication batches (needs role peer)`},
		{"peer writes any app", "PUT", "/eureka/apps/PAYMENTS/p-1", "peer:peer-pw", "", 200, ""},
		{"restricted peer direct write", "DELETE", "/eureka/apps/PAYMENTS/p-1", "orders-peer:op-pw", "", 403, `user "orders-peer" may not cancel instances of application PAYMENTS`},
		{"admin role passes to the handler", "PUT", "/eureka/asg/a1/status?value=ENABLED", "ops:ops-pw", "", 400, ""},
		{"admin role cancels any app", "DELETE", "/eureka/apps/PAYMENTS/p-1", "ops:ops-pw", "", 200, ""},
		{"full user unchanged", "PUT", "/eureka/apps/PAYMENTS/p-1", "eureka:s3cret", "", 200, ""},
		{"read-only user unchanged", "DELETE", "/eureka/apps/PAYMENTS/p-1", "viewer:look", "", 403, ""},
		{"wrong password", "PUT", "/eureka/apps/ORDERS/o-1", "orders:p-pw", "", 401, ""},
		{"unknown route", "POST", "/eureka/nothing", "orders:o-pw", "", 404, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := perAppFixture(t)
			before := f.reg.Revision()
			w := f.do(t, tc.method, tc.target, tc.user, tc.body)
			if w.Code != tc.code {
				t.Fatalf("%s %s as %s: %d %q, want %d", tc.method, tc.target, tc.user, w.Code, w.Body.String(), tc.code)
			}
			if tc.code == http.StatusForbidden {
				if !strings.Contains(w.Body.String(), tc.refusal) {
					t.Fatalf("403 body %q does not say %q", w.Body.String(), tc.refusal)
				}
				if after := f.reg.Revision(); after != before {
					t.Fatalf("a refused write changed the registry: revision %d -> %d", before, after)
				}
				if _, ok := f.reg.Get("PAYMENTS", "p-1"); !ok {
					t.Fatal("PAYMENTS/p-1 is gone after a refused write")
				}
			}
		})
	}
}

// TestPerAppBatch: a peer user's batch items are authorized one by one; a
// refused item answers 403 in its place and changes nothing.
func TestPerAppBatch(t *testing.T) {
	f := perAppFixture(t)
	batch := `{"replicationList":[
 {"appName":"ORDERS","id":"o-1","action":"Cancel"},
 {"appName":"PAYMENTS","id":"p-1","action":"Cancel"}]}`
	w := f.do(t, "POST", "/eureka/peerreplication/batch", "orders-peer:op-pw", batch)
	expect(t, w, 200, `{"responseList":[{"statusCode":200},{"statusCode":403}]}`)
	if _, ok := f.reg.Get("ORDERS", "o-1"); ok {
		t.Fatal("the allowed item was not applied")
	}
	if _, ok := f.reg.Get("PAYMENTS", "p-1"); !ok {
		t.Fatal("the refused item was applied")
	}
	w = f.do(t, "POST", "/eureka/peerreplication/batch", "peer:peer-pw", `{"replicationList":[{"appName":"PAYMENTS","id":"p-1","action":"Cancel"}]}`)
	expect(t, w, 200, `{"responseList":[{"statusCode":200}]}`)
	if _, ok := f.reg.Get("PAYMENTS", "p-1"); ok {
		t.Fatal("a peer's item was not applied")
	}
}

// TestPerAppUsersAloneTurnAuthOn: goreka.security.users without
// spring.security.user still requires credentials.
func TestPerAppUsersAloneTurnAuthOn(t *testing.T) {
	f := newOpsFixture(t, OpsConfig{Auth: AuthConfig{Users: []UserConfig{{Name: "orders", Password: "o-pw", Apps: []string{"ORDERS"}}}}})
	expect(t, f.do(t, "GET", "/eureka/apps", "", ""), 401, "")
	expect(t, f.do(t, "POST", "/eureka/apps/ORDERS", "orders:o-pw", instanceBody("ORDERS", "o-1")), 204, "")
}

func TestBadUserConfigClosesTheServer(t *testing.T) {
	for _, users := range [][]UserConfig{
		{{Name: "a", Password: ""}},
		{{Name: "", Password: "x"}},
		{{Name: "a", Password: "x", Roles: []string{"root"}}},
		{{Name: "a", Password: "x"}, {Name: "a", Password: "y"}},
	} {
		f := newOpsFixture(t, OpsConfig{Auth: AuthConfig{Users: users}})
		if w := f.do(t, "GET", "/eureka/apps", "a:x", ""); w.Code != 401 {
			t.Errorf("users %+v: GET answered %d, want 401", users, w.Code)
		}
	}
}

func perAppRenewServer(tb testing.TB, nUsers int) (*Server, *http.Request) {
	m := metrics.New(metrics.Sources{})
	reg := registry.New(registry.Options{OnEvent: m.OnEvent})
	srv := New(Config{}, Deps{Registry: reg})
	users := make([]UserConfig, nUsers)
	for i := range users {
		users[i] = UserConfig{Name: fmt.Sprintf("svc-%d", i), Password: fmt.Sprintf("pw-%d", i), Apps: []string{fmt.Sprintf("SVC-%d", i), fmt.Sprintf("SVC-%d-*", i)}}
	}
	last := nUsers - 1
	srv.EnableOps(OpsConfig{Metrics: m, Auth: AuthConfig{User: "eureka", Password: "s3cret", Users: users}})
	app := fmt.Sprintf("SVC-%d-API", last)
	in := &registry.Instance{InstanceID: "i-1", HostName: "h", App: app, IPAddr: "10.0.0.1", Status: registry.StatusUp,
		DataCenterInfo: registry.DataCenterInfo{Name: registry.DataCenterMyOwn}}
	if _, err := reg.Register(in, false); err != nil {
		tb.Fatal(err)
	}
	req := httptest.NewRequest("PUT", "/eureka/apps/"+app+"/i-1", nil)
	req.Header.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString(fmt.Appendf(nil, "svc-%d:pw-%d", last, last)))
	return srv, req
}

// TestPerAppRenewDoesNotAllocate: with per-app users configured, a
// heartbeat by one of them (matched by a glob) still allocates nothing.
func TestPerAppRenewDoesNotAllocate(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop items, so gin's contexts are allocated")
	}
	srv, req := perAppRenewServer(t, 100)
	w := &discard{h: http.Header{}}
	srv.ServeHTTP(w, req)
	if n := testing.AllocsPerRun(200, func() { srv.ServeHTTP(w, req) }); n != 0 {
		t.Fatalf("heartbeat by a per-app user: %v allocs, want 0", n)
	}
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, req)
	if rec.Code != 200 {
		t.Fatalf("heartbeat by a per-app user: %d %s", rec.Code, rec.Body)
	}
}

// BenchmarkOpsRenewPerAppUser is BenchmarkOpsRenew by one of 1000 per-app
// users, authorized by a glob.
func BenchmarkOpsRenewPerAppUser(b *testing.B) {
	srv, req := perAppRenewServer(b, 1000)
	w := httptest.NewRecorder()
	b.ReportAllocs()
	for b.Loop() {
		srv.ServeHTTP(w, req)
	}
	if w.Code != 200 {
		b.Fatal(w.Code)
	}
}

// TestWriteVerbs: every write action names itself in a refusal, one
// without a verb of its own (a new action) as "write", never a panic.
func TestWriteVerbs(t *testing.T) {
	for a, want := range map[writeAction]string{writeRegister: "register", writeRenew: "renew", writeCancel: "cancel",
		writeStatus: "override the status of", writeMetadata: "update the metadata of", writeOther: "write", writeNoRoute + 1: "write"} {
		if got := a.verb(); got != want {
			t.Errorf("writeAction(%d).verb() = %q, want %q", a, got, want)
		}
	}
}

// TestPerAppRenewals: a relay's aggregated heartbeats posted by a user
// restricted to some applications are authorized item by item, like a
// batch: an item of another application answers 403 in its place and
// renews nothing, the items around it keep their own answers (200, 400
// for an item that is no heartbeat, 404 for an unknown lease), in order.
func TestPerAppRenewals(t *testing.T) {
	f := perAppFixture(t)
	renews := func() float64 {
		t.Helper()
		mfs, err := f.m.Registry().Gather()
		if err != nil {
			t.Fatal(err)
		}
		var n float64
		for _, mf := range mfs {
			if mf.GetName() == "goreka_renews_total" {
				for _, m := range mf.GetMetric() {
					n += m.GetCounter().GetValue()
				}
			}
		}
		return n
	}
	base := renews()
	body := `{"replicationList":[` +
		`{"appName":"ORDERS","id":"o-1","status":"UP","action":"Heartbeat"},` +
		`{"appName":"PAYMENTS","id":"p-1","status":"UP","action":"Heartbeat"},` +
		`{"appName":"ORDERS","id":"o-1","status":"UP","action":"Cancel"},` +
		`{"appName":"ORDERS","id":"o-9","status":"UP","action":"Heartbeat"},` +
		`{"appName":"ORDERS","id":"o-1","status":"UP","action":"Heartbeat"}]}`
	for _, user := range []string{"orders:o-pw", "orders-peer:op-pw"} {
		w := f.do(t, "POST", "/eureka/goreka/renewals", user, body)
		expect(t, w, 200, `{"responseList":[{"statusCode":200},{"statusCode":403},{"statusCode":400},{"statusCode":404},{"statusCode":200}]}`)
	}
	if got := renews() - base; got != 4 {
		t.Fatalf("%v heartbeats accepted, want 4 (ORDERS/o-1 twice per request; the refused PAYMENTS item renews nothing)", got)
	}
	if _, ok := f.reg.Get("ORDERS", "o-1"); !ok {
		t.Fatal("a Cancel item inside renewals was applied")
	}
}
