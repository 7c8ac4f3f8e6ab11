package metrics

import (
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/goreka/goreka/cache"
	"github.com/goreka/goreka/registry"
)

// value returns the value of the series name{labels} and whether it exists.
func value(t *testing.T, m *Metrics, name string, labels ...string) (float64, bool) {
	t.Helper()
	mfs, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, s := range mf.GetMetric() {
			have := map[string]string{}
			for _, lp := range s.GetLabel() {
				have[lp.GetName()] = lp.GetValue()
			}
			for i := 0; i+1 < len(labels); i += 2 {
				if have[labels[i]] != labels[i+1] {
					continue next
				}
			}
			return metricValue(s), true
		}
	}
	return 0, false
}

func metricValue(s *dto.Metric) float64 {
	switch {
	case s.Counter != nil:
		return s.Counter.GetValue()
	case s.Gauge != nil:
		return s.Gauge.GetValue()
	case s.Histogram != nil:
		return float64(s.Histogram.GetSampleCount())
	}
	return s.GetUntyped().GetValue()
}

func want(t *testing.T, m *Metrics, v float64, name string, labels ...string) {
	t.Helper()
	got, ok := value(t, m, name, labels...)
	if !ok {
		t.Fatalf("%s%v: no such series", name, labels)
	}
	if got != v {
		t.Fatalf("%s%v = %v, want %v", name, labels, got, v)
	}
}

func absent(t *testing.T, m *Metrics, name string, labels ...string) {
	t.Helper()
	if v, ok := value(t, m, name, labels...); ok {
		t.Fatalf("%s%v = %v, want no series", name, labels, v)
	}
}

// TestInstancesFromRegistryEvents drives a real registry and checks the
// per-application, per-status gauge and the event counters against it.
func TestInstancesFromRegistryEvents(t *testing.T) {
	var reg *registry.Registry
	m := New(Sources{Instances: func() []registry.AppStatusCount { return reg.AppStatusCounts() }})
	now := time.Unix(1_700_000_000, 0)
	reg = registry.New(registry.Options{Now: func() time.Time { return now }, OnEvent: m.OnEvent, OnRenew: m.OnRenew})
	for _, in := range []*registry.Instance{inst("A", "a1", registry.StatusUp), inst("A", "a2", registry.StatusUp), inst("B", "b1", registry.StatusStarting)} {
		if _, err := reg.Register(in, false); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := reg.Register(inst("B", "b2", registry.StatusUp), true); err != nil {
		t.Fatal(err)
	}
	want(t, m, 2, "eureka_server_instances", "application", "A", "status", "UP")
	want(t, m, 1, "eureka_server_instances", "application", "B", "status", "STARTING")
	want(t, m, 1, "eureka_server_instances", "application", "B", "status", "UP")
	want(t, m, 3, "goreka_registrations_total", "replication", "false")
	want(t, m, 1, "goreka_registrations_total", "replication", "true")

	// Re-registration moves b1 from STARTING to UP; the STARTING series goes.
	if _, err := reg.Register(inst("B", "b1", registry.StatusUp), false); err != nil {
		t.Fatal(err)
	}
	want(t, m, 2, "eureka_server_instances", "application", "B", "status", "UP")
	absent(t, m, "eureka_server_instances", "application", "B", "status", "STARTING")

	for range 3 {
		if err := reg.Renew(registry.RenewRequest{App: "A", ID: "a1"}); err != nil {
			t.Fatalf("renew: %v", err)
		}
	}
	reg.Renew(registry.RenewRequest{App: "A", ID: "a2", FromPeer: true})
	want(t, m, 3, "goreka_renews_total", "replication", "false")
	want(t, m, 1, "goreka_renews_total", "replication", "true")

	if err := reg.StatusUpdate("A", "a2", registry.StatusOutOfService, time.Time{}, false); err != nil {
		t.Fatal(err)
	}
	want(t, m, 1, "eureka_server_instances", "application", "A", "status", "UP")
	want(t, m, 1, "eureka_server_instances", "application", "A", "status", "OUT_OF_SERVICE")
	want(t, m, 1, "goreka_status_updates_total", "replication", "false")

	if err := reg.Cancel("A", "a1", false); err != nil {
		t.Fatal(err)
	}
	want(t, m, 1, "goreka_cancels_total", "replication", "false")
	absent(t, m, "eureka_server_instances", "application", "A", "status", "UP")

	if err := reg.Evict("A", "a2"); err != nil {
		t.Fatal(err)
	}
	want(t, m, 1, "goreka_evictions_total")
	absent(t, m, "eureka_server_instances", "application", "A")
	if got := reg.AppStatusCounts(); len(got) != 1 || got[0] != (registry.AppStatusCount{App: "B", Status: registry.StatusUp, Count: 2}) {
		t.Fatalf("counts kept = %v, want B's 2 UP only", got)
	}
}

// TestCountsFollowConcurrentWrites: the registry delivers changes in
// revision order, one at a time, so the instance gauges equal the registry's
// own counts after concurrent writers, and never go negative on the way.
func TestCountsFollowConcurrentWrites(t *testing.T) {
	var reg *registry.Registry
	m := New(Sources{Instances: func() []registry.AppStatusCount { return reg.AppStatusCounts() }})
	var neg atomic.Bool
	reg = registry.New(registry.Options{OnEvent: func(e registry.Event) {
		m.OnEvent(e)
		for _, c := range reg.AppStatusCounts() {
			if c.Count < 0 {
				neg.Store(true)
			}
		}
	}})
	statuses := []registry.Status{registry.StatusUp, registry.StatusDown, registry.StatusOutOfService}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			rnd := rand.New(rand.NewPCG(uint64(w), 1))
			for range 500 {
				id := fmt.Sprint("i-", rnd.IntN(5))
				switch rnd.IntN(4) {
				case 0, 1:
					_, _ = reg.Register(inst("A", id, statuses[rnd.IntN(len(statuses))]), false)
				case 2:
					_ = reg.StatusUpdate("A", id, statuses[rnd.IntN(len(statuses))], time.Time{}, false)
				default:
					_ = reg.Cancel("A", id, false)
				}
			}
		})
	}
	wg.Wait()
	if neg.Load() {
		t.Error("an instance count went below zero")
	}
	counts := map[registry.Status]int{}
	for _, app := range reg.Applications().Apps {
		for _, v := range app.Instances {
			counts[v.Instance.Status]++
		}
	}
	for _, st := range statuses {
		if counts[st] == 0 {
			absent(t, m, "eureka_server_instances", "application", "A", "status", string(st))
			continue
		}
		want(t, m, float64(counts[st]), "eureka_server_instances", "application", "A", "status", string(st))
	}
}

func TestScrapeTimeSources(t *testing.T) {
	cs := cache.Stats{Hits: 10, ReadOnlyHits: 7, Misses: 4, Rebuilds: 2, ReadOnlyKeys: 5, ReadWriteKeys: 6, OldestPayload: 1500 * time.Millisecond}
	m := New(Sources{Cache: func() cache.Stats { return cs }})
	want(t, m, 7, "goreka_cache_hits_total", "tier", "read_only")
	want(t, m, 3, "goreka_cache_hits_total", "tier", "read_write")
	want(t, m, 4, "goreka_cache_misses_total")
	want(t, m, 2, "goreka_cache_rebuilds_total")
	want(t, m, 1.5, "goreka_cache_payload_age_seconds")

	// The values move with their sources between scrapes.
	cs.Misses++
	want(t, m, 5, "goreka_cache_misses_total")
}

// TestMustRegisterServesExtraCollectors: collectors of other packages'
// state (eviction, replication; their own tests cover their series) are
// gathered and served with the rest.
func TestMustRegisterServesExtraCollectors(t *testing.T) {
	m := New(Sources{})
	depth := 3.0
	m.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "test_extra", Help: "An extra collector."},
		func() float64 { return depth }))
	want(t, m, 3, "test_extra")
	depth = 4
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if !strings.Contains(rec.Body.String(), `test_extra{namespace="default"} 4`) {
		t.Fatalf("exposition lacks the extra collector:\n%s", rec.Body)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("registering a collector twice did not panic")
		}
	}()
	m.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "test_extra", Help: "An extra collector."},
		func() float64 { return 0 }))
}

func TestFetchAndHTTPCounters(t *testing.T) {
	m := New(Sources{})
	want(t, m, 0, "goreka_registry_fetches_total", "kind", "delta")
	m.Fetch(FetchDelta)
	m.FetchCounter(FetchFull).Inc()
	want(t, m, 1, "goreka_registry_fetches_total", "kind", "delta")
	want(t, m, 1, "goreka_registry_fetches_total", "kind", "full")

	obs, count := m.HTTPRoute("PUT", "/eureka/apps/:app/:id")
	obs.Observe(0.002)
	count(200)
	count(200)
	count(404)
	want(t, m, 2, "goreka_http_requests_total", "method", "PUT", "route", "/eureka/apps/:app/:id", "code", "200")
	want(t, m, 1, "goreka_http_requests_total", "code", "404")
	want(t, m, 1, "goreka_http_request_duration_seconds", "route", "/eureka/apps/:app/:id")
}

// TestExposition checks the text format carries the families a scrape
// config expects, Go runtime and process metrics included.
func TestExposition(t *testing.T) {
	reg := registry.New(registry.Options{})
	m := New(Sources{Instances: reg.AppStatusCounts})
	if _, err := reg.Register(inst("A", "a1", registry.StatusUp), false); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(m.Handler())
	t.Cleanup(srv.Close)
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("Content-Type = %q", ct)
	}
	for _, s := range []string{
		`eureka_server_instances{application="A",namespace="default",status="UP"} 1`,
		"# TYPE goreka_registrations_total counter",
		"go_goroutines ",
		"go_memstats_heap_alloc_bytes ",
	} {
		if !strings.Contains(string(b), s) {
			t.Errorf("exposition lacks %q", s)
		}
	}
}

func TestCodeText(t *testing.T) {
	for code, s := range map[int]string{200: "200", 404: "404", 503: "503", 99: "other", 1000: "other"} {
		if got := codeText(code); got != s {
			t.Errorf("codeText(%d) = %q, want %q", code, got, s)
		}
	}
}

// BenchmarkHeartbeatEvent is the renew hot path: it must not allocate.
func BenchmarkHeartbeatEvent(b *testing.B) {
	m := New(Sources{})
	rn := registry.Renewal{App: "A", ID: "1", Instance: &registry.Instance{Status: registry.StatusUp}}
	b.ReportAllocs()
	for b.Loop() {
		m.OnRenew(rn)
	}
}

func TestHeartbeatEventDoesNotAllocate(t *testing.T) {
	m := New(Sources{})
	rn := registry.Renewal{App: "A", ID: "1", Instance: &registry.Instance{Status: registry.StatusUp}}
	if n := testing.AllocsPerRun(100, func() { m.OnRenew(rn) }); n != 0 {
		t.Fatalf("heartbeat: %v allocs, want 0", n)
	}
}

func inst(app, id string, st registry.Status) *registry.Instance {
	return &registry.Instance{InstanceID: id, App: app, HostName: id, IPAddr: "10.0.0.1", Status: st,
		DataCenterInfo: registry.DataCenterInfo{Name: registry.DataCenterMyOwn},
		LeaseInfo:      registry.LeaseInfo{RenewalInterval: 30 * time.Second, Duration: 90 * time.Second}}
}

// TestNamespaceSeries: another namespace's set shares the registry and the
// metric names; every series says its namespace, the runtime's none.
func TestNamespaceSeries(t *testing.T) {
	var defReg, devReg *registry.Registry
	m := New(Sources{Instances: func() []registry.AppStatusCount { return defReg.AppStatusCounts() }})
	dev := m.Namespace("dev", Sources{Instances: func() []registry.AppStatusCount { return devReg.AppStatusCounts() }})
	defReg = registry.New(registry.Options{OnEvent: m.OnEvent})
	devReg = registry.New(registry.Options{OnEvent: dev.OnEvent})
	for _, w := range []struct {
		reg     *registry.Registry
		app, id string
	}{{defReg, "A", "a1"}, {devReg, "A", "a1"}, {devReg, "B", "b1"}} {
		if _, err := w.reg.Register(inst(w.app, w.id, registry.StatusUp), false); err != nil {
			t.Fatal(err)
		}
	}
	dev.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "test_extra", Help: "An extra collector."}, func() float64 { return 1 }))
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	b := rec.Body.String()
	for _, s := range []string{
		`eureka_server_instances{application="A",namespace="default",status="UP"} 1`,
		`eureka_server_instances{application="A",namespace="dev",status="UP"} 1`,
		`eureka_server_instances{application="B",namespace="dev",status="UP"} 1`,
		`goreka_registrations_total{namespace="dev",replication="false"} 2`,
		`goreka_registrations_total{namespace="default",replication="false"} 1`,
		`test_extra{namespace="dev"} 1`,
		"\ngo_goroutines ",
	} {
		if !strings.Contains(b, s) {
			t.Errorf("exposition lacks %q", s)
		}
	}
	if strings.Contains(b, `application="B",namespace="default"`) {
		t.Error("dev's instance counted in the default namespace")
	}
}

// instancesOf is Sources.Instances of *reg, a registry built after its
// metric set (whose OnEvent it calls).
func instancesOf(reg **registry.Registry) func() []registry.AppStatusCount {
	return func() []registry.AppStatusCount { return (*reg).AppStatusCounts() }
}

// TestNamespaceHandler: another namespace's Handler (/ns/{name}/metrics)
// serves only its own series; the default one's (/metrics) serves all.
func TestNamespaceHandler(t *testing.T) {
	var defReg, devReg, stagingReg *registry.Registry
	m := New(Sources{Instances: instancesOf(&defReg)})
	dev := m.Namespace("dev", Sources{Instances: instancesOf(&devReg)})
	staging := m.Namespace("staging", Sources{Instances: instancesOf(&stagingReg)})
	defReg = registry.New(registry.Options{OnEvent: m.OnEvent})
	devReg = registry.New(registry.Options{OnEvent: dev.OnEvent})
	stagingReg = registry.New(registry.Options{OnEvent: staging.OnEvent})
	for _, w := range []struct {
		reg *registry.Registry
		app string
	}{{defReg, "DEFAPP"}, {devReg, "DEVAPP"}, {stagingReg, "SECRETAPP"}} {
		if _, err := w.reg.Register(inst(w.app, "i-1", registry.StatusUp), false); err != nil {
			t.Fatal(err)
		}
	}
	scrape := func(m *Metrics) string {
		rec := httptest.NewRecorder()
		m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		if rec.Code != 200 {
			t.Fatalf("scrape: %d %s", rec.Code, rec.Body)
		}
		return rec.Body.String()
	}
	b := scrape(dev)
	if !strings.Contains(b, `eureka_server_instances{application="DEVAPP",namespace="dev",status="UP"} 1`) ||
		!strings.Contains(b, `goreka_registrations_total{namespace="dev",replication="false"} 1`) {
		t.Errorf("dev's exposition lacks its own series:\n%s", b)
	}
	for _, leak := range []string{"SECRETAPP", "DEFAPP", `namespace="staging"`, `namespace="default"`, "go_goroutines", "process_"} {
		if strings.Contains(b, leak) {
			t.Errorf("dev's exposition holds %q", leak)
		}
	}
	all := scrape(m)
	for _, want := range []string{"SECRETAPP", "DEFAPP", "DEVAPP", "\ngo_goroutines "} {
		if !strings.Contains(all, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	// Gathering again is not affected by the filtering of the first.
	if strings.Contains(scrape(dev), "SECRETAPP") {
		t.Error("second dev scrape leaks")
	}
}
