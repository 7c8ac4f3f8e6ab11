package server

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/goreka/goreka/registry"
	"github.com/goreka/goreka/server/api"
	"github.com/goreka/goreka/server/metrics"
)

// TestToolAPIIsNotARegistryFetch: goreka's read API (what `goreka ctl
// apps`, `status` and `watch` call) is no Eureka registry fetch, whatever
// its path ends with. With the rate limiter and the per-client fetch limit
// both on, it is never throttled, draws from no allowance and moves no
// fetch counter, while Eureka's full fetch is still refused past its limit.
func TestToolAPIIsNotARegistryFetch(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	var a *api.API
	reg := registry.New(registry.Options{Now: clock, OnEvent: func(e registry.Event) { a.OnEvent(e) }})
	a = api.New(reg, api.Config{Now: clock})
	rl := RateLimitConfig{Enabled: true, BurstSize: 2, RegistryFetchAverageRate: 1, FullFetchAverageRate: 1}
	fl := FetchLimitConfig{Enabled: true, FullPerMinute: 1, DeltaPerMinute: 1, Burst: 2, MaxClients: 10, IdentifyBy: FetchLimitByAddress}
	srv := New(Config{RateLimit: rl, FetchLimit: fl}, Deps{Registry: reg, Now: clock})
	srv.MountAPI(a)
	m := metrics.New(metrics.Sources{})
	srv.EnableOps(OpsConfig{Metrics: m})
	in := &registry.Instance{InstanceID: "i-1", HostName: "h", App: "ORDERS", IPAddr: "10.0.0.2", Status: registry.StatusUp,
		DataCenterInfo: registry.DataCenterInfo{Name: registry.DataCenterMyOwn}}
	if _, err := reg.Register(in, false); err != nil {
		t.Fatal(err)
	}
	f := &fixture{srv: srv}
	hdr := map[string]string{"Accept": "application/json", IdentityNameHeader: "goreka-ctl"}
	for i := range 20 {
		for _, p := range []string{"/goreka/api/v1/apps", "/goreka/api/v1/apps/", "/goreka/api/v1/instances?app=orders"} {
			if w := f.do(t, "GET", p, "", hdr); w.Code != 200 {
				t.Fatalf("GET %s #%d: %d, want 200", p, i+1, w.Code)
			}
		}
	}
	kinds := []string{metrics.FetchFull, metrics.FetchDelta, metrics.FetchApp, metrics.FetchVIP, metrics.FetchSVIP}
	for _, k := range kinds {
		if n := testutil.ToFloat64(m.FetchCounter(k)); n != 0 {
			t.Errorf("fetch counter %s: %v after tool API reads, want 0", k, n)
		}
	}
	for tg := targetFull; tg <= targetApp; tg++ {
		if n := srv.limiter.limited[tg][0].Load() + srv.limiter.limited[tg][1].Load(); n != 0 {
			t.Errorf("rate limiter counted %d %s fetches, want 0", n, targetNames[tg])
		}
	}
	if n := srv.fetchLimit.throttledFull.Load() + srv.fetchLimit.throttledDelta.Load(); n != 0 {
		t.Errorf("fetch limit throttled %d, want 0", n)
	}
	if n := srv.fetchLimit.tracked(); n != 0 {
		t.Errorf("fetch limit tracks %d clients after tool API reads only, want 0", n)
	}

	// Eureka's full fetch is still limited: 2 of burst, then 503.
	var got string
	for range 3 {
		got += map[int]string{200: "o", 503: "x"}[f.do(t, "GET", "/eureka/apps", "", hdr).Code]
	}
	if got != "oox" {
		t.Fatalf("GET /eureka/apps: %s, want oox", got)
	}
	if n := testutil.ToFloat64(m.FetchCounter(metrics.FetchFull)); n != 2 {
		t.Errorf("full fetches counted %v, want 2", n)
	}
}

// TestRouteTableNamesRegisteredRoutes: every entry of the route table is a
// route the server registers, so that a renamed route cannot silently lose
// its fetch kind, limits or write action.
func TestRouteTableNamesRegisteredRoutes(t *testing.T) {
	srv := New(Config{PProf: true}, Deps{Registry: registry.New(registry.Options{})})
	srv.MountXDS(http.NotFoundHandler())
	registered := map[routeKey]bool{}
	for _, ri := range srv.Engine().Routes() {
		registered[routeKey{ri.Method, strings.ReplaceAll(ri.Path, "\\:", ":")}] = true
	}
	for k := range routeTable {
		if !registered[k] {
			t.Errorf("route table entry %s %s is no registered route", k.method, k.path)
		}
	}
}

// eurekaRoutes is the classification of every route the server registers
// under /eureka, written out: a route{} is a plain read or an admin write
// (no fetch kind, never limited, admins only).
var eurekaRoutes = map[routeKey]route{
	{"GET", "/eureka/apps"}:                       {fetchKind: metrics.FetchFull, rate: targetFull, perClient: targetFull},
	{"GET", "/eureka/apps/delta"}:                 {fetchKind: metrics.FetchDelta, rate: targetDelta, perClient: targetDelta},
	{"GET", "/eureka/apps/:app"}:                  {fetchKind: metrics.FetchApp, rate: targetApp},
	{"POST", "/eureka/apps/:app"}:                 {write: writeRegister},
	{"GET", "/eureka/apps/:app/:id"}:              {},
	{"PUT", "/eureka/apps/:app/:id"}:              {write: writeRenew},
	{"DELETE", "/eureka/apps/:app/:id"}:           {write: writeCancel},
	{"PUT", "/eureka/apps/:app/:id/status"}:       {write: writeStatus},
	{"DELETE", "/eureka/apps/:app/:id/status"}:    {write: writeStatus},
	{"PUT", "/eureka/apps/:app/:id/metadata"}:     {write: writeMetadata},
	{"GET", "/eureka/instances/:id"}:              {},
	{"GET", "/eureka/vips/:vip"}:                  {fetchKind: metrics.FetchVIP},
	{"GET", "/eureka/svips/:vip"}:                 {fetchKind: metrics.FetchSVIP},
	{"PUT", "/eureka/asg/:asg/status"}:            {write: writeOther},
	{"POST", "/eureka/peerreplication/batch"}:     {write: writeBatch},
	{"POST", "/eureka/goreka/renewals"}:           {write: writeRenewals},
	{"GET", "/eureka/status"}:                     {},
	{"GET", "/eureka/serverinfo/statusoverrides"}: {},
}

// TestEurekaRoutesClassified: every route under /eureka has its
// classification listed in eurekaRoutes, and the route table gives it
// exactly that, so that a new /eureka route cannot be added without
// deciding its fetch kind, limits and write action.
func TestEurekaRoutesClassified(t *testing.T) {
	srv := New(Config{}, Deps{Registry: registry.New(registry.Options{})})
	seen := map[routeKey]bool{}
	for _, ri := range srv.Engine().Routes() {
		if ri.Path != "/eureka" && !strings.HasPrefix(ri.Path, "/eureka/") {
			continue
		}
		k := routeKey{ri.Method, ri.Path}
		seen[k] = true
		want, ok := eurekaRoutes[k]
		if !ok {
			t.Errorf("route %s %s has no classification in eurekaRoutes (and, if it is a fetch or an app write, none in routeTable)", k.method, k.path)
			continue
		}
		if got := routeTable[k]; got != want {
			t.Errorf("route %s %s: route table %+v, want %+v", k.method, k.path, got, want)
		}
	}
	for k := range eurekaRoutes {
		if !seen[k] {
			t.Errorf("eurekaRoutes lists %s %s, which is no registered route", k.method, k.path)
		}
	}
}
