package server

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/goreka/goreka/eviction"
	"github.com/goreka/goreka/registry"
	"github.com/goreka/goreka/server/api"
	"github.com/goreka/goreka/server/api/wire"
)

// TestReadAPIBehindTheStartupGate: while Eureka's reads answer 403 (the
// start-up sync has not finished), so do the read API and the Consul
// catalog, with a body saying why; once the server opens for traffic they
// all answer. The gate is the real one (eviction.Evictor), without the wait
// for the sync so that the test does not block.
func TestReadAPIBehindTheStartupGate(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	var a *api.API
	reg := registry.New(registry.Options{Now: clock, OnEvent: func(e registry.Event) { a.OnEvent(e) }})
	a = api.New(reg, api.Config{Now: clock})
	ec := eviction.Default()
	ec.Now = clock
	ec.SyncReadWait = 0
	ev := eviction.New(reg, ec)
	srv := New(Config{}, Deps{Registry: reg, Gate: ev, Now: clock})
	srv.MountAPI(a)
	srv.MountConsulAPI(a)
	srv.EnableOps(OpsConfig{})
	f := &opsFixture{reg: reg, srv: srv}
	in := &registry.Instance{InstanceID: "i-1", HostName: "h", App: "ORDERS", IPAddr: "10.0.0.2",
		DataCenterInfo: registry.DataCenterInfo{Name: registry.DataCenterMyOwn}}
	if _, err := reg.Register(in, true); err != nil { // as the start-up sync copies it
		t.Fatal(err)
	}
	reads := []string{"/goreka/api/v1/instances", "/goreka/api/v1/apps", "/goreka/api/v1/prometheus-sd",
		"/goreka/api/v1/changes?since=0", "/goreka/api/v1/watch?since=0",
		"/v1/catalog/services", "/v1/catalog/service/orders", "/v1/health/service/orders", "/v1/agent/self"}
	expect(t, f.do(t, "GET", "/eureka/apps", "", ""), 403, "")
	for _, path := range reads {
		rec := f.doBounded(t, path)
		var body wire.ErrorAnswer
		if rec.Code != 403 || json.Unmarshal(rec.Body.Bytes(), &body) != nil || !strings.Contains(body.Error, "start-up sync") {
			t.Errorf("before open, GET %s: %d %s, want 403 naming the start-up sync", path, rec.Code, rec.Body)
		}
	}
	// Bad parameters are not checked before the gate: nothing is answered
	// from the registry, not even a 400.
	if rec := f.do(t, "GET", "/goreka/api/v1/instances?bogus=1", "", ""); rec.Code != 403 {
		t.Errorf("before open, bad parameter: %d, want 403", rec.Code)
	}

	ev.OpenAfterSync(1)
	expect(t, f.do(t, "GET", "/eureka/apps", "", ""), 200, "-")
	for _, path := range reads {
		if path == "/goreka/api/v1/watch?since=0" {
			continue // a stream: served in watch_test.go; here only the gate matters
		}
		if rec := f.do(t, "GET", path, "", ""); rec.Code != 200 {
			t.Errorf("after open, GET %s: %d %s", path, rec.Code, rec.Body)
		}
	}
	var page wire.InstancesPage
	if err := json.Unmarshal(f.do(t, "GET", "/goreka/api/v1/instances", "", "").Body.Bytes(), &page); err != nil || len(page.Instances) != 1 {
		t.Errorf("after open: %+v %v", page, err)
	}
}

// doBounded is a GET that gives up after a few seconds: without the gate
// the watch would stream until the client leaves.
func (f *opsFixture) doBounded(t *testing.T, target string) *httptest.ResponseRecorder {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
	defer cancel()
	req := httptest.NewRequestWithContext(ctx, "GET", target, nil)
	w := httptest.NewRecorder()
	f.srv.ServeHTTP(w, req)
	return w
}
