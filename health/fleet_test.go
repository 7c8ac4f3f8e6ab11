package health

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/goreka/goreka/eviction"
	"github.com/goreka/goreka/registry"
	"github.com/goreka/goreka/registry/clocktest"
)

// endpoints is a fleet's health endpoints on the loopback: healthy (an
// actuator UP document), 503 (actuator DOWN), an actuator that answers 200
// with "status":"OUT_OF_SERVICE", a refused port and one that never
// answers within the probe timeout.
type endpoints struct {
	healthy, unavailable, outOfService, refused, slow string
	n                                                 *atomic.Int64 // requests served
}

// hits is the number of requests the endpoints received.
func (e endpoints) hits() int64 { return e.n.Load() }

func newEndpoints(t *testing.T) endpoints {
	t.Helper()
	n := new(atomic.Int64)
	serve := func(h http.HandlerFunc) string {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { n.Add(1); h(w, r) }))
		t.Cleanup(s.Close)
		return s.URL + "/actuator/health"
	}
	stop := make(chan struct{})
	slow := serve(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	})
	t.Cleanup(func() { close(stop) }) // runs before the server's Close
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + ln.Addr().String() + "/actuator/health"
	ln.Close()
	return endpoints{
		healthy: serve(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/vnd.spring-boot.actuator.v3+json")
			fmt.Fprint(w, `{"status":"UP","components":{"ping":{"status":"UP"}}}`)
		}),
		unavailable: serve(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprint(w, `{"status":"DOWN"}`)
		}),
		outOfService: serve(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"status":"OUT_OF_SERVICE"}`)
		}),
		refused: refused,
		slow:    slow,
		n:       n,
	}
}

func instance(app, id, url string) *registry.Instance {
	return &registry.Instance{InstanceID: id, HostName: "h-" + id, App: app, IPAddr: "127.0.0.1", Status: registry.StatusUp,
		DataCenterInfo: registry.DataCenterInfo{Name: registry.DataCenterMyOwn}, Port: registry.Port{Number: 8080, Enabled: true},
		HealthCheckURL: url}
}

// world is a registry, an evictor with self-preservation on and a monitor
// on one fake clock.
type world struct {
	t   *testing.T
	c   *clocktest.Clock
	reg *registry.Registry
	ev  *eviction.Evictor
	m   *Monitor
}

func newWorld(t *testing.T, mode Mode, prober Prober) *world {
	t.Helper()
	c := clocktest.New(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	reg := registry.New(registry.Options{Now: c.Now})
	ecfg := eviction.Default()
	ecfg.Now = c.Now
	ecfg.Rand = rand.New(rand.NewPCG(1, 2))
	ev := eviction.New(reg, ecfg)
	cfg := Default()
	cfg.Enabled = true
	cfg.Mode = mode
	cfg.Timeout = 150 * time.Millisecond // real time: the probes are real HTTP
	cfg.Now = c.Now
	cfg.Rand = rand.New(rand.NewPCG(3, 4))
	cfg.Logger = slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelInfo}))
	return &world{t: t, c: c, reg: reg, ev: ev, m: New(reg, ev, prober, cfg)}
}

func (w *world) register(id, url string) {
	w.t.Helper()
	if _, err := w.reg.Register(instance("SVC", id, url), false); err != nil {
		w.t.Fatal(err)
	}
}

func (w *world) renew(ids []string) {
	w.t.Helper()
	for _, id := range ids {
		if err := w.reg.Renew(registry.RenewRequest{App: "SVC", ID: id}); err != nil {
			w.t.Fatalf("renew %s: %v", id, err)
		}
	}
}

// run advances the clock in 10 s steps for d: heartbeats of live every
// 30 s, an eviction run every 60 s, a monitor round every step.
func (w *world) run(d time.Duration, live []string) {
	w.t.Helper()
	for step := time.Duration(0); step < d; step += 10 * time.Second {
		w.c.Advance(10 * time.Second)
		if w.c.Now().Unix()%30 == 0 {
			w.renew(live)
		}
		if w.c.Now().Unix()%60 == 0 {
			w.ev.RunOnce()
		}
		w.m.Check(context.Background())
		w.m.Wait()
	}
}

func (w *world) registered(id string) bool {
	_, ok := w.reg.Get("SVC", id)
	return ok
}

func ids(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%02d", prefix, i)
	}
	return out
}

// fleet registers 100 instances: 60 that keep heartbeating (healthy), 20
// that stop heartbeating but still answer probes, 20 that stop and are
// dead (503, refused, slow, out of service). It runs two minutes of full
// heartbeats, then opens for traffic.
func fleet(w *world, ep endpoints, deadURL func(i int) string) (live, alive, dead []string) {
	live, alive, dead = ids("live", 60), ids("alive", 20), ids("dead", 20)
	for _, id := range live {
		w.register(id, ep.healthy)
	}
	for _, id := range alive {
		w.register(id, ep.healthy)
	}
	for i, id := range dead {
		w.register(id, deadURL(i))
	}
	w.ev.OpenForTraffic(100)
	all := append(append(append([]string{}, live...), alive...), dead...)
	for range 12 { // two minutes: renewals well above the threshold
		w.c.Advance(10 * time.Second)
		if w.c.Now().Unix()%30 == 0 {
			w.renew(all)
		}
	}
	return live, alive, dead
}

// The fleet: self-preservation on, 40 stop heartbeating, 20 of them
// still answer: the 20 dead are evicted on evidence, the 20 alive are held.
func TestSelfPreservationWithEvidence(t *testing.T) {
	ep := newEndpoints(t)
	w := newWorld(t, OnSuspicion, nil)
	kinds := []string{ep.unavailable, ep.refused, ep.slow, ep.outOfService}
	live, alive, dead := fleet(w, ep, func(i int) string { return kinds[i%len(kinds)] })

	w.run(10*time.Minute, live)

	if w.ev.LeaseExpirationEnabled() {
		t.Fatal("self-preservation is not holding: the test proves nothing")
	}
	for _, id := range dead {
		if w.registered(id) {
			lc := w.m.Lifecycle(200)
			t.Fatalf("dead %s still registered; lifecycle %v", id, lc.Counts)
		}
	}
	for _, id := range append(alive, live...) {
		if !w.registered(id) {
			t.Fatalf("%s evicted", id)
		}
	}
	st := w.m.Status()
	if st.GuardActive || st.Counters.EvictedByProbe != 20 {
		t.Fatalf("status %+v", st)
	}
	lc := w.m.Lifecycle(0)
	if lc.Counts[Held] != 20 || lc.Counts[Up] != 60 || lc.Counts[Gone] != 20 {
		t.Fatalf("lifecycle %v", lc.Counts)
	}
	// Eureka's own run evicted nothing: the evictions were the evidence's.
	if es := w.ev.Status(); es.TotalEvicted != 0 || es.HeldBack != 20 && es.HeldBack != 40 {
		t.Fatalf("eviction status: total %d held %d", es.TotalEvicted, es.HeldBack)
	}
}

// The guard: every probe fails (goreka's own network is at fault), so
// nothing is evicted and the alert is raised.
func TestGuardEveryProbeFails(t *testing.T) {
	ep := newEndpoints(t)
	w := newWorld(t, OnSuspicion, nil)
	// Every instance, heartbeating or not, answers nothing.
	ep.healthy = ep.refused
	live, alive, dead := fleet(w, ep, func(int) string { return ep.refused })

	w.run(10*time.Minute, live)

	for _, id := range append(alive, dead...) {
		if !w.registered(id) {
			t.Fatalf("%s evicted while the guard should hold", id)
		}
	}
	st := w.m.Status()
	if !st.GuardActive || st.Alert == "" || st.Counters.GuardTrips == 0 || st.Counters.EvictedByProbe != 0 {
		t.Fatalf("status %+v", st)
	}
	if st.FailingRatio != 1 {
		t.Fatalf("failing ratio %v", st.FailingRatio)
	}
}

// In on-suspicion mode a healthy heartbeating fleet is not probed (the
// controls aside, which are only drawn while there are suspects).
func TestOnSuspicionLeavesHeartbeatingAlone(t *testing.T) {
	var probes atomic.Int64
	p := ProberFunc(func(ctx context.Context, url string) Result { probes.Add(1); return Result{Healthy, "HTTP 200"} })
	w := newWorld(t, OnSuspicion, p)
	live := ids("live", 50)
	for _, id := range live {
		w.register(id, "http://127.0.0.1:1/health")
	}
	w.ev.OpenForTraffic(50)
	w.run(5*time.Minute, live)
	if n := probes.Load(); n != 0 {
		t.Fatalf("%d probes of a heartbeating fleet", n)
	}
}

// ProberFunc adapts a function to Prober (tests).
type ProberFunc func(ctx context.Context, url string) Result

func (f ProberFunc) Probe(ctx context.Context, url string) Result { return f(ctx, url) }

// Periodic mode: a heartbeating instance that fails 3 probes is served as
// DOWN with its reason; it comes back after 2 successes; an operator's
// OUT_OF_SERVICE is never overridden.
func TestPeriodicDownWithHysteresis(t *testing.T) {
	var failing atomic.Bool
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if failing.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		fmt.Fprint(w, `{"status":"UP"}`)
	}))
	t.Cleanup(s.Close)
	ep := newEndpoints(t)
	w := newWorld(t, Periodic, nil)
	live := append([]string{"a", "oos"}, ids("ok", 6)...)
	for _, id := range live {
		u := ep.healthy
		if id == "a" || id == "oos" {
			u = s.URL + "/health"
		}
		w.register(id, u)
	}
	w.ev.OpenForTraffic(len(live))
	if err := w.reg.StatusUpdate("SVC", "oos", registry.StatusOutOfService, time.Time{}, false); err != nil {
		t.Fatal(err)
	}
	status := func(id string) registry.Status {
		v, _ := w.reg.Get("SVC", id)
		return v.Instance.Status
	}
	w.run(2*time.Minute, live)
	if status("a") != registry.StatusUp {
		t.Fatalf("healthy: %s", status("a"))
	}
	failing.Store(true)
	w.run(40*time.Second, live) // one or two failures: not yet
	if got := w.m.Status().DownNow; got != 0 {
		t.Fatalf("DOWN after fewer than 3 failures (%d)", got)
	}
	w.run(2*time.Minute, live)
	if status("a") != registry.StatusDown || status("oos") != registry.StatusOutOfService {
		t.Fatalf("after failures: a %s, oos %s", status("a"), status("oos"))
	}
	lc := w.m.Lifecycle(10)
	var reason string
	for _, e := range lc.Entries {
		if e.ID == "a" && e.Probe != nil {
			reason = e.Probe.DownReason
		}
	}
	if !strings.HasPrefix(reason, "DOWN by probe: 3 failures, HTTP 503") {
		t.Fatalf("reason %q", reason)
	}
	failing.Store(false)
	w.run(40*time.Second, live) // one success: still DOWN
	if status("a") != registry.StatusDown {
		t.Fatalf("UP after one success")
	}
	w.run(time.Minute, live)
	if status("a") != registry.StatusUp {
		t.Fatalf("after successes: %s", status("a"))
	}
}

// The collector exposes the lifecycle and the guard.
func TestCollector(t *testing.T) {
	ep := newEndpoints(t)
	w := newWorld(t, OnSuspicion, nil)
	ep.healthy = ep.refused
	live, _, _ := fleet(w, ep, func(int) string { return ep.refused })
	w.run(10*time.Minute, live)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(w.m.Collector())
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			k := mf.GetName()
			for _, l := range m.GetLabel() {
				k += "{" + l.GetValue() + "}"
			}
			got[k] = m.GetGauge().GetValue() + m.GetCounter().GetValue()
		}
	}
	for k, v := range map[string]float64{
		"goreka_health_probe_guard_active": 1, "goreka_instances_lifecycle{held}": 40, "goreka_instances_lifecycle{up}": 60,
		"goreka_instances_lifecycle{suspect}": 0, "goreka_instances_lifecycle{gone}": 0, "goreka_health_evictions_total": 0,
	} {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s = %v (present %v), want %v", k, g, ok, v)
		}
	}
}

// Static registrations (goreka.static-instances) never heartbeat by design:
// they are never suspects, held or home instances, so nothing probes them,
// in either mode, however long they go without a heartbeat.
func TestStaticRegistrationsAreNotProbed(t *testing.T) {
	for _, mode := range []Mode{OnSuspicion, Periodic} {
		var probes atomic.Int64
		p := ProberFunc(func(ctx context.Context, url string) Result { probes.Add(1); return Result{Unreachable, "refused"} })
		w := newWorld(t, mode, p)
		var static []*registry.Instance
		for _, id := range ids("db", 5) {
			static = append(static, instance("DB", id, "http://127.0.0.1:1/health"))
		}
		if _, err := w.reg.SetStatic(static); err != nil {
			t.Fatal(err)
		}
		w.ev.OpenForTraffic(1)
		w.run(10*time.Minute, nil)
		if n := probes.Load(); n != 0 {
			t.Errorf("mode %v: %d probes of static registrations", mode, n)
		}
		if n := w.reg.Size(); n != 5 {
			t.Errorf("mode %v: %d static registrations left", mode, n)
		}
	}
}
