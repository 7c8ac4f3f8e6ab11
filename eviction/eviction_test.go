package eviction

import (
	"bytes"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/goreka/goreka/registry"
	"github.com/goreka/goreka/registry/clocktest"
)

// logBuf collects log output; slog handlers may write concurrently.
type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) count(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Count(l.b.String(), s)
}

// env is a registry and an evictor on one fake clock that starts at a
// whole minute, so that renewals fall into predictable minute buckets.
type env struct {
	t      *testing.T
	clock  *clocktest.Clock
	reg    *registry.Registry
	ev     *Evictor
	logs   *logBuf
	mu     sync.Mutex
	events []registry.Event
}

func newEnv(t *testing.T, selfPreservation bool) *env {
	t.Helper()
	e := &env{t: t, clock: clocktest.New(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)), logs: &logBuf{}}
	e.reg = registry.New(registry.Options{
		Now:             e.clock.Now,
		ExpectedClients: 1, // Spring's expected-number-of-clients-sending-renews
		OnEvent: func(ev registry.Event) {
			e.mu.Lock()
			e.events = append(e.events, ev)
			e.mu.Unlock()
		},
	})
	cfg := Default()
	cfg.EnableSelfPreservation = selfPreservation
	cfg.Now = e.clock.Now
	cfg.Rand = rand.New(rand.NewPCG(1, 2))
	cfg.Logger = slog.New(slog.NewTextHandler(e.logs, nil))
	e.ev = New(e.reg, cfg)
	return e
}

func (e *env) register(app, id string, lease time.Duration) {
	e.t.Helper()
	in := &registry.Instance{
		InstanceID: id, HostName: "host-" + id, App: app, IPAddr: "10.0.0.1",
		DataCenterInfo: registry.DataCenterInfo{Name: registry.DataCenterMyOwn},
		LeaseInfo:      registry.LeaseInfo{Duration: lease},
	}
	if _, err := e.reg.Register(in, false); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) renew(app, id string) {
	e.t.Helper()
	if err := e.reg.Renew(registry.RenewRequest{App: app, ID: id}); err != nil {
		e.t.Fatalf("renew %s/%s: %v", app, id, err)
	}
}

func (e *env) evictEvents() []registry.Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []registry.Event
	for _, ev := range e.events {
		if ev.Kind == registry.EventEvict {
			out = append(out, ev)
		}
	}
	return out
}

// fleet registers n instances of app, ids app-0 ... app-(n-1).
func (e *env) fleet(app string, n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("%s-%d", app, i)
		e.register(app, ids[i], 0)
	}
	return ids
}

// simulate advances the clock in 30 s steps for d: at every step each id
// in live renews, and on each whole minute the eviction runs. It returns
// what every run evicted, in order.
func (e *env) simulate(d time.Duration, app string, live func(id string) bool, ids []string) [][]registry.InstanceKey {
	e.t.Helper()
	var runs [][]registry.InstanceKey
	for range d / (30 * time.Second) {
		e.clock.Advance(30 * time.Second)
		for _, id := range ids {
			if live(id) {
				e.renew(app, id)
			}
		}
		if e.clock.Now().Second() == 0 {
			runs = append(runs, e.ev.RunOnce())
		}
	}
	return runs
}

func total(runs [][]registry.InstanceKey) int {
	n := 0
	for _, r := range runs {
		n += len(r)
	}
	return n
}

func TestRunOnceBeforeOpenForTrafficDoesNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t, false)
	e.register("svc", "a", 0)
	e.clock.Advance(10 * time.Minute)
	if got := e.ev.RunOnce(); got != nil {
		t.Fatalf("evicted %v before OpenForTraffic", got)
	}
	if st := e.ev.Status(); !st.LastRun.IsZero() || !st.StartupTime.IsZero() {
		t.Fatalf("status before open: %+v", st)
	}
	e.ev.OpenForTraffic(1)
	if got := e.ev.RunOnce(); len(got) != 1 {
		t.Fatalf("after open: evicted %v", got)
	}
}

// A renewed lease expires 2 × its own duration after the last renewal
// (Eureka's Lease quirk): 180 s for the default 90 s lease, 60 s for a 30 s
// lease; runs at exactly that age keep it (expiry is strictly after).
func TestStoppedInstanceEvictedAfterExpiryNotBefore(t *testing.T) {
	t.Parallel()
	e := newEnv(t, true)
	e.ev.OpenForTraffic(1)
	ids := e.fleet("svc", 19)
	e.register("svc", "slow", 0)               // default 90 s lease
	e.register("svc", "quick", 30*time.Second) // lease-expiration-duration 30 s
	all := append(slices.Clone(ids), "slow", "quick")

	// Five healthy minutes: 21 clients renewing, expected 22, threshold 37.
	runs := e.simulate(5*time.Minute, "svc", func(string) bool { return true }, all)
	if n := total(runs); n != 0 {
		t.Fatalf("healthy fleet lost %d instances", n)
	}
	if st := e.ev.Status(); !st.LeaseExpirationEnabled || st.RenewsLastMinute != 42 || st.Threshold != 37 {
		t.Fatalf("healthy status %+v", st)
	}

	// Both stop after renewing at 12:05:00 (S). Runs at S+1m, S+2m, ...
	stopped := func(id string) bool { return id != "slow" && id != "quick" }
	at := func(i int) []registry.InstanceKey { return runs[i] }
	runs = e.simulate(5*time.Minute, "svc", stopped, all)
	want := map[int][]registry.InstanceKey{
		1: {{App: "SVC", ID: "quick"}}, // S+2m: 120 s > 60 s (S+1m was exactly 60 s: kept)
		3: {{App: "SVC", ID: "slow"}},  // S+4m: 240 s > 180 s (S+3m was exactly 180 s: kept)
	}
	for i := range runs {
		if !slices.Equal(at(i), want[i]) {
			t.Errorf("run at S+%dm evicted %v, want %v", i+1, at(i), want[i])
		}
	}
	if _, ok := e.reg.Get("svc", "slow"); ok {
		t.Fatal("slow still registered")
	}
	evs := e.evictEvents()
	if len(evs) != 2 || evs[0].FromPeer || evs[0].Instance().ActionType != registry.ActionDeleted {
		t.Fatalf("evict events %+v", evs)
	}
	if c := e.reg.RecentlyCancelled(); len(c) != 2 || c[0].ID != "slow" {
		t.Fatalf("recently cancelled %+v", c)
	}
	st := e.ev.Status()
	if st.TotalEvicted != 2 || st.ExpectedClients != 20 || st.HeldBack != 0 {
		t.Fatalf("status after evictions %+v", st)
	}
	if n := e.logs.count("evicted expired lease"); n != 2 {
		t.Fatalf("%d eviction log lines", n)
	}
}

// A run that comes late adds its lateness to every lease's expiry.
func TestLateRunIsCompensated(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		previousRun time.Duration // after the last renewal
		wantEvicted bool
	}{
		{"on time: previous run 60 s before", 180 * time.Second, true},
		{"late by 60 s: previous run 120 s before", 120 * time.Second, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, false)
			e.ev.OpenForTraffic(1)
			e.register("svc", "a", 0)
			e.renew("svc", "a") // expires once now > S + 180 s
			start := e.clock.Now()
			e.clock.Advance(tc.previousRun)
			if got := e.ev.RunOnce(); got != nil {
				t.Fatalf("first run evicted %v", got)
			}
			e.clock.Set(start.Add(240 * time.Second))
			got := e.ev.RunOnce()
			if (len(got) == 1) != tc.wantEvicted {
				t.Fatalf("run at S+240s evicted %v, want evicted=%v", got, tc.wantEvicted)
			}
			if !tc.wantEvicted {
				// The next run, on time again, takes it.
				e.clock.Advance(time.Minute)
				if got := e.ev.RunOnce(); len(got) != 1 {
					t.Fatalf("on-time run after the late one evicted %v", got)
				}
			}
		})
	}
}

// NF §6.3 worked example: a standalone Spring server with one client stays
// in self-preservation for good, as Spring's does.
func TestStandaloneServerWithOneClientStaysInSelfPreservation(t *testing.T) {
	t.Parallel()
	e := newEnv(t, true)
	e.ev.OpenForTraffic(1) // Spring: syncUp found 0, default-open-for-traffic-count 1
	e.register("client", "c1", 0)
	if got := e.reg.ExpectedClients(); got != 2 {
		t.Fatalf("expected clients after registration = %d, want 2", got)
	}
	live := func(string) bool { return true }
	ids := []string{"c1"}

	e.simulate(3*time.Minute, "client", live, ids)
	st := e.ev.Status()
	if st.LeaseExpirationEnabled || st.RenewsLastMinute != 2 || st.Threshold != 3 || st.ExpectedClients != 2 {
		t.Fatalf("at 3 min: %+v", st)
	}
	if st.ActiveSince.IsZero() || st.BelowThreshold || st.Banner != "" {
		t.Fatalf("at 3 min (within wait-time-in-ms-when-sync-empty): %+v", st)
	}
	since := st.ActiveSince

	e.simulate(3*time.Minute, "client", live, ids)
	st = e.ev.Status()
	if !st.BelowThreshold || st.Banner != BannerEmergency || st.ActiveSince != since {
		t.Fatalf("at 6 min: %+v", st)
	}

	// The 15-minute job: 1 instance is not above 0.85 × 2, expected stays 2.
	e.simulate(9*time.Minute, "client", live, ids)
	e.ev.UpdateRenewalThreshold()
	if st := e.ev.Status(); st.ExpectedClients != 2 || st.Threshold != 3 || st.LeaseExpirationEnabled {
		t.Fatalf("after the threshold job: %+v", st)
	}

	// The client dies: it is held, not evicted.
	runs := e.simulate(20*time.Minute, "client", func(string) bool { return false }, ids)
	if n := total(runs); n != 0 {
		t.Fatalf("evicted %d in self-preservation", n)
	}
	if st := e.ev.Status(); st.HeldBack != 1 || st.ActiveSince != since {
		t.Fatalf("after the client died: %+v", st)
	}
	if n := e.logs.count("self-preservation active"); n != 1 {
		t.Fatalf("entering logged %d times, want once", n)
	}
	if n := e.logs.count("expired leases held back"); n != 1 {
		t.Fatalf("held-back warning logged %d times, want once (de-duplicated)", n)
	}
}

func TestHundredInstancesHalfStopSelfPreservationOn(t *testing.T) {
	t.Parallel()
	e := newEnv(t, true)
	e.ev.OpenForTraffic(1)
	ids := e.fleet("svc", 100) // expected 101, threshold 171
	runs := e.simulate(5*time.Minute, "svc", func(string) bool { return true }, ids)
	st := e.ev.Status()
	if total(runs) != 0 || !st.LeaseExpirationEnabled || st.RenewsLastMinute != 200 || st.Threshold != 171 {
		t.Fatalf("healthy: evicted %d, status %+v", total(runs), st)
	}
	healthySince := st.ActiveSince // the first minute is below (only one renewal each counted)

	half := func(id string) bool {
		var n int
		fmt.Sscanf(id, "svc-%d", &n)
		return n%2 == 0
	}
	runs = e.simulate(10*time.Minute, "svc", half, ids)
	if n := total(runs); n != 0 {
		t.Fatalf("self-preservation on: %d evicted", n)
	}
	st = e.ev.Status()
	if st.LeaseExpirationEnabled || st.RenewsLastMinute != 100 || st.HeldBack != 50 || st.ActiveSince.IsZero() {
		t.Fatalf("after half stopped: %+v", st)
	}
	if !healthySince.IsZero() {
		t.Fatalf("self-preservation still marked active while healthy: %v", healthySince)
	}
	if st.Banner != BannerEmergency {
		t.Fatalf("banner %q", st.Banner)
	}

	// The 15-minute job: 100 > 0.85 × 101, so expected becomes 100
	// (threshold 170); still far above the 100 renewals.
	e.ev.UpdateRenewalThreshold()
	if st := e.ev.Status(); st.ExpectedClients != 100 || st.Threshold != 170 || st.LeaseExpirationEnabled {
		t.Fatalf("after the threshold job: %+v", st)
	}

	// The partition heals: everyone renews again, nothing is lost.
	runs = e.simulate(3*time.Minute, "svc", func(string) bool { return true }, ids)
	st = e.ev.Status()
	if total(runs) != 0 || !st.LeaseExpirationEnabled || !st.ActiveSince.IsZero() || st.HeldBack != 0 || e.reg.Size() != 100 {
		t.Fatalf("after recovery: evicted %d, status %+v", total(runs), st)
	}
	if n := e.logs.count("self-preservation ended"); n != 2 {
		// once after the start-up minute, once after recovery
		t.Fatalf("leaving logged %d times, want 2", n)
	}
}

func TestHundredInstancesHalfStopSelfPreservationOff(t *testing.T) {
	t.Parallel()
	e := newEnv(t, false)
	e.ev.OpenForTraffic(1)
	ids := e.fleet("svc", 100)
	e.simulate(5*time.Minute, "svc", func(string) bool { return true }, ids)
	half := func(id string) bool {
		var n int
		fmt.Sscanf(id, "svc-%d", &n)
		return n%2 == 0
	}
	runs := e.simulate(10*time.Minute, "svc", half, ids)
	var sizes []int
	for _, r := range runs {
		if len(r) > 15 {
			t.Fatalf("a run evicted %d > 15", len(r))
		}
		for _, k := range r {
			if half(k.ID) {
				t.Fatalf("evicted a renewing instance %v", k)
			}
		}
		if len(r) > 0 {
			sizes = append(sizes, len(r))
		}
	}
	// The limit follows the shrinking registry: 100 -> 15, 85 -> 13,
	// 72 -> 11, 61 -> 10, and the last one.
	if want := []int{15, 13, 11, 10, 1}; !slices.Equal(sizes, want) {
		t.Fatalf("per-run evictions %v, want %v", sizes, want)
	}
	// Eviction lowered the expectation with each lease (101 -> 51,
	// threshold 86), so the 100 renewals are above it again.
	st := e.ev.Status()
	if e.reg.Size() != 50 || st.TotalEvicted != 50 || st.ExpectedClients != 51 || st.Banner != BannerSelfPreservationOff {
		t.Fatalf("size %d, status %+v", e.reg.Size(), st)
	}
	if n := e.logs.count("eviction limit"); n < 3 {
		t.Fatalf("capped runs not reported: %d", n)
	}
}

func TestCappedRunPicksAtRandom(t *testing.T) {
	t.Parallel()
	pick := func(seed uint64) []string {
		e := newEnv(t, false)
		e.ev.cfg.Rand = rand.New(rand.NewPCG(seed, seed))
		e.ev.OpenForTraffic(1)
		e.fleet("svc", 40) // limit 6, all expired
		e.clock.Advance(10 * time.Minute)
		var ids []string
		for _, k := range e.ev.RunOnce() {
			ids = append(ids, k.ID)
		}
		slices.Sort(ids)
		return ids
	}
	a, b := pick(1), pick(1)
	if len(a) != 6 || !slices.Equal(a, b) {
		t.Fatalf("same seed: %v vs %v", a, b)
	}
	differ := false
	for s := uint64(2); s < 6; s++ {
		if !slices.Equal(a, pick(s)) {
			differ = true
		}
	}
	if !differ {
		t.Fatalf("every seed evicted %v: not random", a)
	}
}

func TestUpdateRenewalThresholdSelfPreservationOffFollowsCount(t *testing.T) {
	t.Parallel()
	e := newEnv(t, false)
	e.ev.OpenForTraffic(10) // say 10 were synced, then 6 of them vanished
	e.fleet("svc", 4)
	if got := e.reg.ExpectedClients(); got != 14 {
		t.Fatalf("expected %d", got)
	}
	e.ev.UpdateRenewalThreshold()
	if got := e.reg.ExpectedClients(); got != 4 {
		t.Fatalf("self-preservation off: expected %d, want the count 4", got)
	}

	on := newEnv(t, true)
	on.ev.OpenForTraffic(10)
	on.fleet("svc", 4)
	on.ev.UpdateRenewalThreshold()
	if got := on.reg.ExpectedClients(); got != 14 {
		t.Fatalf("self-preservation on, 4 <= 0.85 × 14: expected %d, want 14", got)
	}
}

func TestStatusBeforeOpen(t *testing.T) {
	t.Parallel()
	e := newEnv(t, true)
	st := e.ev.Status()
	if !st.SelfPreservationEnabled || st.ExpectedClients != 1 || st.Threshold != 1 || st.BelowThreshold ||
		!st.ActiveSince.IsZero() || st.Banner != "" || len(st.RenewsHistory) != 60 {
		t.Fatalf("%+v", st)
	}
	if off := newEnv(t, false).ev.Status(); off.Banner != BannerSelfPreservationOff || !off.LeaseExpirationEnabled {
		t.Fatalf("self-preservation off: %+v", off)
	}
}

// Static registrations are not expected to renew: the renewal threshold
// counts only the others, and the eviction job never takes them, not even
// when self-preservation is off and everything else expired.
func TestStaticNotCountedNorEvicted(t *testing.T) {
	t.Parallel()
	e := newEnv(t, false)
	e.ev.OpenForTraffic(1)
	e.fleet("svc", 3)
	var static []*registry.Instance
	for i := range 5 {
		static = append(static, &registry.Instance{InstanceID: fmt.Sprint("db-", i), HostName: "db", App: "DB", IPAddr: "10.0.0.9",
			DataCenterInfo: registry.DataCenterInfo{Name: registry.DataCenterMyOwn}})
	}
	if _, err := e.reg.SetStatic(static); err != nil {
		t.Fatal(err)
	}
	e.ev.UpdateRenewalThreshold()
	if got := e.reg.ExpectedClients(); got != 3 {
		t.Fatalf("expected clients %d, want the 3 renewing instances", got)
	}
	for range 10 { // the eviction limit takes a share per run
		e.clock.Advance(time.Hour)
		e.ev.RunOnce()
	}
	if n := e.reg.Size(); n != 5 {
		t.Fatalf("after an hour without heartbeats %d remain, want the 5 static ones", n)
	}
	for _, ev := range e.evictEvents() {
		if ev.Lease.Static {
			t.Fatalf("evicted a static registration: %+v", ev)
		}
	}
}
