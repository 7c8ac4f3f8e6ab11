package server

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/goreka/goreka/registry"
	"github.com/goreka/goreka/server/api"
	"github.com/goreka/goreka/server/api/wire"
	"github.com/goreka/goreka/server/metrics"
)

// TestReadAPIBehindTheEdge mounts the read API on a Server with basic auth:
// the read-only user may query it and watch it, anonymous callers may not.
func TestReadAPIBehindTheEdge(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	var a *api.API
	reg := registry.New(registry.Options{Now: clock, OnEvent: func(e registry.Event) { a.OnEvent(e) }})
	a = api.New(reg, api.Config{Now: clock})
	srv := New(Config{}, Deps{Registry: reg, Now: clock})
	srv.MountAPI(a)
	srv.EnableOps(OpsConfig{Auth: AuthConfig{User: "eureka", Password: "s3cret", ReadOnlyUser: "viewer", ReadOnlyPassword: "look"}})
	f := &opsFixture{reg: reg, srv: srv}
	in := &registry.Instance{InstanceID: "i-1", HostName: "h", App: "ORDERS", IPAddr: "10.0.0.2",
		DataCenterInfo: registry.DataCenterInfo{Name: registry.DataCenterMyOwn}}
	if _, err := reg.Register(in, false); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/goreka/api/v1/instances", "/goreka/api/v1/apps", "/goreka/api/v1/prometheus-sd",
		"/goreka/api/v1/changes?since=0"} {
		expect(t, f.do(t, "GET", path, "", ""), 401, "")
		rec := f.do(t, "GET", path, "viewer:look", "")
		if rec.Code != 200 || !json.Valid(rec.Body.Bytes()) {
			t.Errorf("read-only user, GET %s: %d %s", path, rec.Code, rec.Body)
		}
		if rec := f.do(t, "GET", path, "eureka:s3cret", ""); rec.Code != 200 {
			t.Errorf("full user, GET %s: %d", path, rec.Code)
		}
	}
	var page wire.InstancesPage
	if err := json.Unmarshal(f.do(t, "GET", "/goreka/api/v1/instances?app=orders", "viewer:look", "").Body.Bytes(), &page); err != nil {
		t.Fatal(err)
	}
	if len(page.Instances) != 1 || page.Instances[0].ID != "i-1" || page.Revision != reg.Revision() {
		t.Errorf("page %+v", page)
	}
	// Only GET routes: a write verb is refused for the read-only user and
	// not routed for anyone.
	expect(t, f.do(t, "DELETE", "/goreka/api/v1/instances", "viewer:look", ""), 403, "")
	if rec := f.do(t, "POST", "/goreka/api/v1/instances", "eureka:s3cret", ""); rec.Code != 405 {
		t.Errorf("POST: %d", rec.Code)
	}
}

// TestXDSRESTBehindTheEdge: the REST-JSON xDS routes are POSTs that read:
// the read-only user may use them, anonymous callers may not, and they
// are counted under their own route (not the unmatched one).
func TestXDSRESTBehindTheEdge(t *testing.T) {
	reg := registry.New(registry.Options{})
	srv := New(Config{}, Deps{Registry: reg})
	var got []string
	srv.MountXDS(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got = append(got, r.URL.Path) }))
	srv.MountXDS(nil) // disabled: nothing more
	m := metrics.New(metrics.Sources{})
	srv.EnableOps(OpsConfig{Metrics: m, Auth: AuthConfig{User: "eureka", Password: "s3cret", ReadOnlyUser: "viewer", ReadOnlyPassword: "look",
		Users: []UserConfig{{Name: "team", Password: "dev-only", Namespaces: []string{"dev"}}}}})
	f := &opsFixture{reg: reg, srv: srv}
	for _, p := range routesXDS {
		expect(t, f.do(t, "POST", p, "", "{}"), 401, "")
		if rec := f.do(t, "POST", p, "viewer:look", "{}"); rec.Code != 200 {
			t.Errorf("read-only user, POST %s: %d %s", p, rec.Code, rec.Body)
		}
		// A user of namespace dev only reaches the handler, which checks
		// the namespace its node names (package xds).
		if rec := f.do(t, "POST", p, "team:dev-only", "{}"); rec.Code != 200 {
			t.Errorf("dev's user, POST %s: %d %s", p, rec.Code, rec.Body)
		}
	}
	if len(got) != 2*len(routesXDS) {
		t.Errorf("handler saw %v, want each of %v twice", got, routesXDS)
	}
	if rt := srv.ops.route("POST", routesXDS[0]); !rt.reads || rt.label != routesXDS[0] {
		t.Errorf("route of POST %s: %+v", routesXDS[0], rt.route)
	}
}
