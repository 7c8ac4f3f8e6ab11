package server

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/goreka/goreka/cache"
	"github.com/goreka/goreka/compat"
	"github.com/goreka/goreka/document"
	"github.com/goreka/goreka/region"
)

// regionFixture is a local server whose remote region "west" is another
// server (the populated fixture) behind httptest.
func regionFixture(t *testing.T, disableFallback bool) (*fixture, *region.Set) {
	t.Helper()
	west := newFixture(t)
	west.populate(t)
	ws := httptest.NewServer(west.srv)
	t.Cleanup(ws.Close)

	f := newFixture(t)
	r, err := region.New(region.Config{Name: "west", URL: ws.URL + "/eureka/", Now: f.clock.Now, GZip: true})
	if err != nil {
		t.Fatal(err)
	}
	set := region.NewSet([]*region.Remote{r}, nil)
	docs := document.New(document.Config{Registry: f.reg, Regions: document.Regions{Set: set, DisableTransparentFallback: disableFallback}})
	cfg := cache.DefaultConfig()
	cfg.UseReadOnly = false
	cfg.Now = f.clock.Now
	f.srv = New(Config{}, Deps{Registry: f.reg, Docs: docs, Cache: &cfg, Now: f.clock.Now})
	// Local: one more ORDER-SERVICE instance (merged with west's) and an
	// application of its own.
	for i, b := range []string{
		`{"instance":{"instanceId":"local-1","hostName":"local-1","app":"ORDER-SERVICE","ipAddr":"10.1.0.1","status":"UP","vipAddress":"order-service","dataCenterInfo":{"@class":"com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo","name":"MyOwn"}}}`,
		`{"instance":{"instanceId":"local-2","hostName":"local-2","app":"LOCAL","ipAddr":"10.1.0.2","status":"STARTING","dataCenterInfo":{"@class":"com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo","name":"MyOwn"}}}`,
	} {
		if w := f.do(t, "POST", "/eureka/apps/"+[]string{"ORDER-SERVICE", "LOCAL"}[i], b, map[string]string{"Content-Type": "application/json"}); w.Code != 204 {
			t.Fatalf("register: %d", w.Code)
		}
	}
	return f, set
}

func TestRegionReadsBeforeAndAfterFirstFetch(t *testing.T) {
	f, set := regionFixture(t, false)
	for _, p := range []string{"/eureka/apps?regions=west", "/eureka/apps/delta?regions=west", "/eureka/apps?regions=nowhere"} {
		if w := f.do(t, "GET", p, "", nil); w.Code != 403 {
			t.Fatalf("GET %s before west answered: %d, want 403", p, w.Code)
		}
	}
	for _, p := range []string{"/eureka/apps", "/eureka/apps/delta", "/eureka/apps/LOCAL"} {
		if w := f.do(t, "GET", p, "", nil); w.Code != 200 {
			t.Fatalf("GET %s before west answered: %d, want 200", p, w.Code)
		}
	}
	if err := set.Remotes()[0].FetchOnce(t.Context()); err != nil {
		t.Fatal(err)
	}
	f.srv.Cache().Invalidate("", "", "")
	for _, p := range []string{"/eureka/apps?regions=west", "/eureka/apps?regions=West,nowhere", "/eureka/apps/delta?regions=west"} {
		if w := f.do(t, "GET", p, "", nil); w.Code != 200 {
			t.Fatalf("GET %s after west answered: %d, want 200", p, w.Code)
		}
	}
}

// The plain full registry with transparent fallback is built from chunks
// and a remote-only segment; it must be byte for byte the whole encode of
// getApplicationsFromMultipleRegions(all regions), in every variant.
func TestFallbackDocumentEqualsWholeEncode(t *testing.T) {
	f, set := regionFixture(t, false)
	if err := set.Remotes()[0].FetchOnce(t.Context()); err != nil {
		t.Fatal(err)
	}
	f.srv.Cache().Invalidate("", "", "")
	check := func(step string) {
		t.Helper()
		want := set.Full(f.reg.Applications(), set.Names())
		if want.HashCode != "DOWN_1_OUT_OF_SERVICE_1_STARTING_1_UP_2_" {
			t.Fatalf("%s: merged hash %q", step, want.HashCode)
		}
		for _, accept := range []string{"application/json", "application/xml"} {
			for _, compact := range []bool{false, true} {
				hdr := map[string]string{"Accept": accept}
				if compact {
					hdr["X-Eureka-Accept"] = "compact"
				}
				got := f.do(t, "GET", "/eureka/apps", "", hdr).Body.Bytes()
				fm := compat.XML
				if accept == "application/json" {
					fm = compat.JSON
				}
				if exp := compat.AppendApplications(nil, fm, compact, want); !bytes.Equal(got, exp) {
					t.Fatalf("%s %s compact=%v:\n got %s\nwant %s", step, accept, compact, got, exp)
				}
				// ?regions=west is the same document (Eureka builds both with getApplicationsFromMultipleRegions).
				if got2 := f.do(t, "GET", "/eureka/apps?regions=west", "", hdr).Body.Bytes(); !bytes.Equal(got2, got) {
					t.Fatalf("%s %s compact=%v: ?regions=west differs from the fallback document", step, accept, compact)
				}
			}
		}
	}
	check("first")
	// A local change: the document follows, the remote part is kept.
	f.clock.Advance(time.Second)
	if w := f.do(t, "DELETE", "/eureka/apps/LOCAL/local-2", "", nil); w.Code != 200 {
		t.Fatalf("cancel: %d", w.Code)
	}
	f.srv.Cache().Invalidate("LOCAL", "", "") // cmd/goreka wires registry events to this
	want := set.Full(f.reg.Applications(), set.Names())
	got := f.do(t, "GET", "/eureka/apps", "", map[string]string{"Accept": "application/json"}).Body.Bytes()
	if exp := compat.AppendApplications(nil, compat.JSON, false, want); !bytes.Equal(got, exp) {
		t.Fatalf("after a local cancel:\n got %s\nwant %s", got, exp)
	}

	// Single reads fall back to west.
	if w := f.do(t, "GET", "/eureka/apps/PAYMENT", "", nil); w.Code != 200 {
		t.Fatalf("GET apps/PAYMENT (only in west): %d", w.Code)
	}
	if w := f.do(t, "GET", "/eureka/apps/PAYMENT/i-0abc", "", nil); w.Code != 200 {
		t.Fatalf("GET apps/PAYMENT/i-0abc (only in west): %d", w.Code)
	}
	if w := f.do(t, "GET", "/eureka/instances/i-0abc", "", nil); w.Code != 200 {
		t.Fatalf("GET instances/i-0abc (only in west): %d", w.Code)
	}
	if w := f.do(t, "GET", "/eureka/vips/payment", "", map[string]string{"Accept": "application/json"}); w.Code != 200 || !bytes.Contains(w.Body.Bytes(), []byte("i-0abc")) {
		t.Fatalf("GET vips/payment: %d %s", w.Code, w.Body.String())
	}
}

func TestDisabledFallbackServesLocalOnly(t *testing.T) {
	f, set := regionFixture(t, true)
	if err := set.Remotes()[0].FetchOnce(t.Context()); err != nil {
		t.Fatal(err)
	}
	f.srv.Cache().Invalidate("", "", "")
	hdr := map[string]string{"Accept": "application/json"}
	got := f.do(t, "GET", "/eureka/apps", "", hdr).Body.Bytes()
	if exp := compat.AppendApplications(nil, compat.JSON, false, f.reg.Applications()); !bytes.Equal(got, exp) {
		t.Fatalf("plain apps with fallback disabled:\n got %s\nwant %s", got, exp)
	}
	if w := f.do(t, "GET", "/eureka/apps/PAYMENT", "", nil); w.Code != 404 {
		t.Fatalf("GET apps/PAYMENT with fallback disabled: %d, want 404", w.Code)
	}
	// The instance read looks in the regions whatever the setting
	// (getInstanceByAppAndId(app, id) includes them).
	if w := f.do(t, "GET", "/eureka/apps/PAYMENT/i-0abc", "", nil); w.Code != 200 {
		t.Fatalf("GET apps/PAYMENT/i-0abc with fallback disabled: %d, want 200", w.Code)
	}
	// ?regions= still merges.
	d, err := compat.DecodeApplications(f.do(t, "GET", "/eureka/apps?regions=west", "", hdr).Body.Bytes(), compat.JSON)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, a := range d.Apps {
		n += len(a.Instances)
	}
	if n != 5 {
		t.Fatalf("?regions=west with fallback disabled: %d instances, want 5", n)
	}
}

func TestDashboardShowsRemoteRegions(t *testing.T) {
	f, set := regionFixture(t, false)
	f.srv.MountDashboard("", DashboardSourceFunc(func() DashboardData { return DashboardData{Now: f.clock.Now()} }))
	page := f.do(t, "GET", "/", "", nil).Body.String()
	if !strings.Contains(page, `id="remoteRegions"`) || !strings.Contains(page, "never answered") {
		t.Fatalf("dashboard before the first fetch lacks the region row:\n%s", page)
	}
	if err := set.Remotes()[0].FetchOnce(t.Context()); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(5 * time.Second)
	var live struct {
		RemoteRegions []regionView `json:"remoteRegions"`
	}
	if err := json.Unmarshal(f.do(t, "GET", "/goreka/api/dashboard", "", nil).Body.Bytes(), &live); err != nil {
		t.Fatal(err)
	}
	if len(live.RemoteRegions) != 1 {
		t.Fatalf("remoteRegions = %+v", live.RemoteRegions)
	}
	r := live.RemoteRegions[0]
	if r.Name != "west" || r.State != "fetching" || !r.Healthy || r.Apps != 2 || r.Instances != 3 || !strings.Contains(r.LastSuccess, "5s ago") {
		t.Fatalf("remote region row %+v", r)
	}
}
