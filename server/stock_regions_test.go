package server

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/goreka/goreka/cache"
	"github.com/goreka/goreka/compat"
	"github.com/goreka/goreka/document"
	"github.com/goreka/goreka/region"
	"github.com/goreka/goreka/registry"
	"github.com/goreka/goreka/registry/clocktest"
)

// The regions target (testdata/stock/eureka-2.0.4-regions) runs the stock
// scenario on a server with one remote region, "west", served by the test
// itself (stockRemote) to the stock server and to goreka alike: ORDER-SERVICE
// (also local in the scenario: its instances merge) and REMOTE-ONLY. The
// region is fetched once, at start-up (fetch interval 1 h), so its last delta
// is its full registry (RemoteRegionRegistry.storeFullRegistry). The plain
// reads of stockReads then show transparent fallback; stockRegionReads add
// the ?regions= reads and the fallback of single reads.

var stockRegionReads = []stockRead{
	{"apps-regions", "/eureka/apps/?regions=west"},
	{"apps-regions-unknown", "/eureka/apps/?regions=nowhere"},
	{"delta-regions", "/eureka/apps/delta?regions=west"},
	{"app-remote", "/eureka/apps/REMOTE-ONLY"},
	{"instance-remote", "/eureka/apps/REMOTE-ONLY/r-1"},
	{"instances-remote", "/eureka/instances/r-2"},
	{"vip-remote", "/eureka/vips/remote-only"},
}

// stockRemoteArgs name the remote region for the stock server.
func stockRemoteArgs(url string) []string {
	return []string{"--eureka.server.remote-region-urls-with-name.west=" + url,
		"--eureka.server.remote-region-registry-fetch-interval=3600"}
}

// stockRemoteDoc is the remote region's registry, the same bytes every run.
func stockRemoteDoc() []byte {
	clk := clocktest.New(time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC))
	reg := registry.New(registry.Options{Now: clk.Now})
	for _, in := range []*registry.Instance{
		{InstanceID: "r-1", HostName: "r-1.west", App: "REMOTE-ONLY", IPAddr: "10.8.0.1", Status: registry.StatusUp,
			Port: registry.Port{Number: 8080, Enabled: true}, VIPAddress: "remote-only", SecureVIPAddress: "remote-only",
			DataCenterInfo: registry.DataCenterInfo{Name: "MyOwn"}, Metadata: map[string]string{"zone": "west-1"}},
		{InstanceID: "r-2", HostName: "r-2.west", App: "REMOTE-ONLY", IPAddr: "10.8.0.2", Status: registry.StatusDown,
			Port: registry.Port{Number: 8080, Enabled: true}, VIPAddress: "remote-only",
			DataCenterInfo: registry.DataCenterInfo{Name: "MyOwn"}},
		{InstanceID: "host-w:order-service:8080", HostName: "host-w", App: "ORDER-SERVICE", IPAddr: "10.8.0.3", Status: registry.StatusUp,
			Port: registry.Port{Number: 8080, Enabled: true}, VIPAddress: "order-service", SecureVIPAddress: "order-service",
			DataCenterInfo: registry.DataCenterInfo{Name: "MyOwn"}},
	} {
		in.Normalize()
		if _, err := reg.Register(in, false); err != nil {
			panic(err)
		}
		clk.Advance(time.Second)
	}
	return compat.AppendApplications(nil, compat.JSON, false, reg.Applications())
}

// stockRemote serves stockRemoteDoc as a region's GET apps/ and apps/delta.
func stockRemote(t *testing.T) *httptest.Server {
	doc := stockRemoteDoc()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/eureka/apps/", "/eureka/apps/delta":
			w.Header().Set("Content-Type", "application/json")
			w.Write(doc)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// newStockRegionFixture is newStockFixture with the remote region west at
// url, fetched once.
func newStockRegionFixture(t *testing.T, codecs compat.Codecs, url string) *fixture {
	t.Helper()
	clk := clocktest.New(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	r, err := region.New(region.Config{Name: "west", URL: url, Now: clk.Now, GZip: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.FetchOnce(t.Context()); err != nil {
		t.Fatal(err)
	}
	var c *cache.Cache
	reg := registry.New(registry.Options{Now: clk.Now, ExpectedClients: 1, SelfID: "eureka-1", OnEvent: func(e registry.Event) {
		if in := e.Instance(); e.Changed {
			c.Invalidate(e.App, in.VIPAddress, in.SecureVIPAddress)
		}
	}})
	cfg := cache.DefaultConfig()
	cfg.UseReadOnly = false
	cfg.Now = clk.Now
	docs := document.New(document.Config{Registry: reg, Codecs: codecs, Regions: document.Regions{Set: region.NewSet([]*region.Remote{r}, nil)}})
	srv := New(Config{}, Deps{Registry: reg, Docs: docs, Cache: &cfg, Now: clk.Now})
	c = srv.Cache()
	return &fixture{srv: srv, reg: reg, clock: clk}
}
