package server

import (
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/goreka/goreka/cache"
	"github.com/goreka/goreka/registry"
	"github.com/goreka/goreka/registry/clocktest"
)

type fetchFixture struct {
	srv   *Server
	clock *clocktest.Clock
}

func newFetchFixture(t *testing.T, fl FetchLimitConfig, rl RateLimitConfig) *fetchFixture {
	t.Helper()
	clk := clocktest.New(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	reg := registry.New(registry.Options{Now: clk.Now, ExpectedClients: 1})
	cfg := cache.DefaultConfig()
	cfg.UseReadOnly = false
	cfg.Now = clk.Now
	srv := New(Config{FetchLimit: fl, RateLimit: rl}, Deps{Registry: reg, Cache: &cfg, Now: clk.Now})
	w := (&fixture{srv: srv}).do(t, "POST", "/eureka/apps/A", `{"instance":{"instanceId":"a-1","hostName":"a-1","app":"A","ipAddr":"10.0.0.1","status":"UP","vipAddress":"a","dataCenterInfo":{"name":"MyOwn"}}}`, map[string]string{"Content-Type": "application/json"})
	if w.Code != 204 {
		t.Fatalf("register: %d", w.Code)
	}
	return &fetchFixture{srv: srv, clock: clk}
}

// who is a client: its remote address and identity headers.
type who struct{ addr, name, id string }

func (f *fetchFixture) get(t *testing.T, path string, c who) int {
	t.Helper()
	r := httptest.NewRequest("GET", path, nil)
	r.RemoteAddr = c.addr
	r.Header.Set("Accept", "application/json")
	if c.name != "" {
		r.Header.Set(IdentityNameHeader, c.name)
	}
	if c.id != "" {
		r.Header.Set(IdentityIDHeader, c.id)
	}
	w := httptest.NewRecorder()
	f.srv.ServeHTTP(w, r)
	if w.Code == 503 && w.Body.Len() != 0 {
		t.Fatalf("503 with a body: %q", w.Body.String())
	}
	return w.Code
}

// codes is n fetches of path by c: o for 200, x for 503.
func (f *fetchFixture) codes(t *testing.T, n int, path string, c who) string {
	t.Helper()
	var b strings.Builder
	for range n {
		switch code := f.get(t, path, c); code {
		case 200:
			b.WriteByte('o')
		case 503:
			b.WriteByte('x')
		default:
			t.Fatalf("GET %s: %d", path, code)
		}
	}
	return b.String()
}

var (
	loopA   = who{addr: "10.1.0.1:40000"}
	loopA2  = who{addr: "10.1.0.1:40001"} // the same host, another connection
	otherB  = who{addr: "10.1.0.2:40000"}
	javaOne = who{addr: "10.9.0.1:5000", name: "DefaultClient", id: "10.0.0.11"}
	javaTwo = who{addr: "10.9.0.1:5001", name: "DefaultClient", id: "10.0.0.12"}
)

func TestFetchLimitRules(t *testing.T) {
	on := FetchLimitConfig{Enabled: true, FullPerMinute: 6, DeltaPerMinute: 60, Burst: 3, MaxClients: 100, IdentifyBy: FetchLimitByIdentity}

	t.Run("full-fetch loop throttled after the burst, 503 without body, others unaffected", func(t *testing.T) {
		f := newFetchFixture(t, on, RateLimitConfig{})
		if got := f.codes(t, 5, "/eureka/apps/", loopA); got != "oooxx" {
			t.Fatalf("loop: %s, want oooxx", got)
		}
		if got := f.codes(t, 1, "/eureka/apps", loopA2); got != "x" {
			t.Fatalf("same IP, other port: %s, want throttled (one client)", got)
		}
		if got := f.codes(t, 3, "/eureka/apps/", otherB); got != "ooo" {
			t.Fatalf("another client: %s, want its own burst", got)
		}
		if got := f.codes(t, 3, "/eureka/apps/delta", loopA); got != "ooo" {
			t.Fatalf("the looping client's deltas: %s, want their own bucket", got)
		}
		if got := f.srv.fetchLimit.throttledFull.Load(); got != 3 {
			t.Fatalf("throttled full fetches %d, want 3", got)
		}
	})
	t.Run("full-per-minute refills on the clock", func(t *testing.T) {
		f := newFetchFixture(t, on, RateLimitConfig{})
		f.codes(t, 3, "/eureka/apps/", loopA)
		f.clock.Advance(9 * time.Second)
		if got := f.codes(t, 1, "/eureka/apps/", loopA); got != "x" {
			t.Fatalf("after 9 s: %s, want throttled (6/min is one per 10 s)", got)
		}
		f.clock.Advance(time.Second)
		if got := f.codes(t, 2, "/eureka/apps/", loopA); got != "ox" {
			t.Fatalf("after 10 s: %s, want one", got)
		}
		f.clock.Advance(time.Hour)
		if got := f.codes(t, 4, "/eureka/apps/", loopA); got != "ooox" {
			t.Fatalf("after an hour: %s, want the burst, no more", got)
		}
	})
	t.Run("delta-per-minute", func(t *testing.T) {
		f := newFetchFixture(t, on, RateLimitConfig{})
		if got := f.codes(t, 4, "/eureka/apps/delta", otherB); got != "ooox" {
			t.Fatalf("deltas: %s", got)
		}
		f.clock.Advance(time.Second)
		if got := f.codes(t, 2, "/eureka/apps/delta", otherB); got != "ox" {
			t.Fatalf("a second later at 60/min: %s", got)
		}
		if got := f.srv.fetchLimit.throttledDelta.Load(); got != 2 {
			t.Fatalf("throttled deltas %d, want 2", got)
		}
	})
	t.Run("identity headers separate clients behind one address", func(t *testing.T) {
		f := newFetchFixture(t, on, RateLimitConfig{})
		if got := f.codes(t, 4, "/eureka/apps/", javaOne); got != "ooox" {
			t.Fatalf("java one: %s", got)
		}
		if got := f.codes(t, 3, "/eureka/apps/", javaTwo); got != "ooo" {
			t.Fatalf("java two (same address, other DiscoveryIdentity-Id): %s", got)
		}
		// A name without an id is not an identity: the address is.
		nameOnly := who{addr: "10.9.0.1:5002", name: "DefaultClient"}
		noID := who{addr: "10.9.0.1:5003"}
		if got := f.codes(t, 3, "/eureka/apps/", nameOnly) + f.codes(t, 1, "/eureka/apps/", noID); got != "ooox" {
			t.Fatalf("name only, then nothing, from one address: %s, want one client", got)
		}
	})
	t.Run("identify-by address ignores the headers", func(t *testing.T) {
		cfg := on
		cfg.IdentifyBy = FetchLimitByAddress
		f := newFetchFixture(t, cfg, RateLimitConfig{})
		if got := f.codes(t, 2, "/eureka/apps/", javaOne) + f.codes(t, 2, "/eureka/apps/", javaTwo); got != "ooox" {
			t.Fatalf("%s, want one client", got)
		}
	})
	t.Run("apps/apps is a full fetch, as RateLimitingFilter's greedy regexp reads it", func(t *testing.T) {
		f := newFetchFixture(t, on, RateLimitConfig{})
		var got strings.Builder
		for _, p := range []string{"/eureka/apps/apps", "/eureka/apps/apps/", "/eureka/v2/apps/apps", "/eureka/apps"} {
			if f.get(t, p, loopA) == 503 {
				got.WriteByte('x')
			} else {
				got.WriteByte('o')
			}
		}
		if got.String() != "ooox" {
			t.Fatalf("%s, want the full-fetch burst of 3 shared with GET apps", got.String())
		}
	})
	t.Run("other reads and writes are never limited", func(t *testing.T) {
		cfg := on
		cfg.Burst = 1
		f := newFetchFixture(t, cfg, RateLimitConfig{})
		for _, p := range []string{"/eureka/apps/A", "/eureka/apps/A/a-1", "/eureka/vips/a", "/eureka/svips/a", "/eureka/instances/a-1"} {
			for range 5 {
				if c := f.get(t, p, loopA); c == 503 {
					t.Fatalf("GET %s throttled", p)
				}
			}
		}
		for range 5 {
			if w := (&fixture{srv: f.srv}).do(t, "PUT", "/eureka/apps/A/a-1", "", nil); w.Code != 200 {
				t.Fatalf("heartbeat %d", w.Code)
			}
		}
		if n := f.srv.fetchLimit.tracked(); n != 0 {
			t.Fatalf("%d clients tracked, want 0 (nothing limited was fetched)", n)
		}
	})
	t.Run("off by default: nothing throttled, nothing tracked", func(t *testing.T) {
		cfg := DefaultFetchLimitConfig()
		if cfg.Enabled {
			t.Fatal("the per-client fetch limit must be off by default")
		}
		cfg.Burst = 1
		f := newFetchFixture(t, cfg, RateLimitConfig{})
		if got := f.codes(t, 20, "/eureka/apps/", loopA); got != strings.Repeat("o", 20) {
			t.Fatalf("%s", got)
		}
		if f.srv.fetchLimit != nil {
			t.Fatal("a limiter was built while off")
		}
	})
	t.Run("a throttled client draws no token of the global limiter", func(t *testing.T) {
		f := newFetchFixture(t, on, RateLimitConfig{Enabled: true, BurstSize: 5, RegistryFetchAverageRate: 1, FullFetchAverageRate: 1})
		f.codes(t, 20, "/eureka/apps/", loopA) // 3 admitted, 17 refused by the per-client limit
		if got := f.codes(t, 3, "/eureka/apps/", otherB); got != "oox" {
			t.Fatalf("another client: %s, want the global burst's 2 remaining tokens", got)
		}
	})
}

func TestFetchLimitBoundedMemory(t *testing.T) {
	cfg := FetchLimitConfig{Enabled: true, FullPerMinute: 6, DeltaPerMinute: 60, Burst: 2, MaxClients: 3}
	t.Run("the cap drops the least recently seen client", func(t *testing.T) {
		f := newFetchFixture(t, cfg, RateLimitConfig{})
		c := func(i int) who { return who{addr: fmt.Sprintf("10.2.0.%d:1", i)} }
		for i := 1; i <= 3; i++ {
			f.codes(t, 2, "/eureka/apps/", c(i)) // each used its burst
		}
		f.codes(t, 1, "/eureka/apps/", c(1)) // 1 is now the most recent
		if got := f.codes(t, 1, "/eureka/apps/", c(4)); got != "o" {
			t.Fatalf("new client: %s", got)
		}
		if n := f.srv.fetchLimit.tracked(); n != 3 {
			t.Fatalf("tracked %d, want the cap 3", n)
		}
		if d := f.srv.fetchLimit.dropped.Load(); d != 1 {
			t.Fatalf("dropped %d, want 1", d)
		}
		if got := f.codes(t, 1, "/eureka/apps/", c(1)) + f.codes(t, 1, "/eureka/apps/", c(3)); got != "xx" {
			t.Fatalf("clients 1 and 3 still tracked and empty: %s", got)
		}
		if got := f.codes(t, 1, "/eureka/apps/", c(2)); got != "o" {
			t.Fatalf("client 2 was dropped and starts again with a burst: %s", got)
		}
	})
	t.Run("idle clients are forgotten once their buckets have refilled", func(t *testing.T) {
		f := newFetchFixture(t, cfg, RateLimitConfig{})
		f.codes(t, 2, "/eureka/apps/", loopA)
		f.codes(t, 1, "/eureka/apps/", otherB)
		// Burst 2 at the slowest rate 6/min refills in 20 s.
		f.clock.Advance(19 * time.Second)
		f.codes(t, 1, "/eureka/apps/delta", javaOne)
		if n := f.srv.fetchLimit.tracked(); n != 3 {
			t.Fatalf("after 19 s: %d tracked, want 3", n)
		}
		f.clock.Advance(time.Second)
		f.codes(t, 1, "/eureka/apps/delta", javaOne)
		if n := f.srv.fetchLimit.tracked(); n != 1 {
			t.Fatalf("after 20 s: %d tracked, want 1", n)
		}
		if d := f.srv.fetchLimit.dropped.Load(); d != 0 {
			t.Fatalf("idle clients counted as dropped: %d", d)
		}
	})
	t.Run("header values are cut", func(t *testing.T) {
		f := newFetchFixture(t, cfg, RateLimitConfig{})
		long := who{addr: "10.3.0.1:1", name: strings.Repeat("n", 10000), id: strings.Repeat("i", 10000)}
		f.codes(t, 1, "/eureka/apps/", long)
		for k := range f.srv.fetchLimit.clients {
			if len(k) > 2*maxIdentityPart+4 {
				t.Fatalf("key of %d bytes", len(k))
			}
		}
	})
}

// TestFetchLimitJavaLikeFleet: a script loops on full fetches while a fleet
// of clients behaving like Netflix's and Spring's (a full fetch at start,
// then a delta every 30 s, a full fetch again on every 10th cycle as after
// a hash mismatch) runs for ten minutes behind one address: the script is
// held to its allowance, no fleet fetch is refused.
func TestFetchLimitJavaLikeFleet(t *testing.T) {
	cfg := DefaultFetchLimitConfig()
	cfg.Enabled = true
	f := newFetchFixture(t, cfg, RateLimitConfig{})
	var fleet []who
	for i := range 20 {
		fleet = append(fleet, who{addr: fmt.Sprintf("10.8.0.1:%d", 6000+i), name: "DefaultClient", id: fmt.Sprintf("10.0.1.%d", i)})
	}
	spring := who{addr: "10.8.0.2:7000"} // Spring's clients send no identity header
	fleet = append(fleet, spring)
	script := who{addr: "10.8.0.3:8000", name: "my-script", id: "loop"}
	loop := map[int]int{}
	refused := 0
	for step := range 600 { // one second per step
		for range 10 {
			loop[f.get(t, "/eureka/apps/", script)]++
		}
		if step%30 != 0 {
			f.clock.Advance(time.Second)
			continue
		}
		for _, c := range fleet {
			path := "/eureka/apps/delta"
			if step%300 == 0 {
				path = "/eureka/apps/"
			}
			if f.get(t, path, c) != 200 {
				refused++
			}
		}
		f.clock.Advance(time.Second)
	}
	if refused != 0 {
		t.Fatalf("%d fleet fetches refused", refused)
	}
	// Burst 10, then 6 a minute for ten minutes: 10 + 60 (+1 at the edge).
	if ok := loop[200]; ok < 69 || ok > 71 || loop[503] != 6000-ok {
		t.Fatalf("script answers %v, want about 70 x 200 and the rest 503", loop)
	}
}

func TestFetchLimitCollector(t *testing.T) {
	f := newFetchFixture(t, FetchLimitConfig{Enabled: true, FullPerMinute: 1, DeltaPerMinute: 1, Burst: 1, MaxClients: 1}, RateLimitConfig{})
	f.codes(t, 3, "/eureka/apps/", loopA)
	f.codes(t, 2, "/eureka/apps/delta", loopA)
	f.codes(t, 1, "/eureka/apps/delta", otherB)
	want := `# HELP goreka_fetch_limit_dropped_clients_total Tracked clients forgotten before their allowance refilled because goreka.fetch-limit.max-clients was reached.
# TYPE goreka_fetch_limit_dropped_clients_total counter
goreka_fetch_limit_dropped_clients_total 1
# HELP goreka_fetch_limit_throttled_requests_total Registry fetches answered 503 because one client was over its own limit (goreka.fetch-limit.*), by kind (full, delta).
# TYPE goreka_fetch_limit_throttled_requests_total counter
goreka_fetch_limit_throttled_requests_total{kind="delta"} 1
goreka_fetch_limit_throttled_requests_total{kind="full"} 2
# HELP goreka_fetch_limit_tracked_clients Clients whose fetch allowance goreka.fetch-limit tracks now (at most goreka.fetch-limit.max-clients).
# TYPE goreka_fetch_limit_tracked_clients gauge
goreka_fetch_limit_tracked_clients 1
`
	if err := testutil.CollectAndCompare(f.srv.FetchLimitCollector(), strings.NewReader(want)); err != nil {
		t.Fatal(err)
	}
	off := newFetchFixture(t, FetchLimitConfig{}, RateLimitConfig{})
	if n := testutil.CollectAndCount(off.srv.FetchLimitCollector()); n != 4 {
		t.Fatalf("off: %d series, want 4 zeros", n)
	}
}

// TestLimitersSharedAcrossNamespaces: a namespace's Server built with
// Deps.Limiters of the default one draws from the same allowances, so a
// looping client gets one allowance per process, not one per namespace
// (Eureka's rate limiter is global; per-client: one allowance per client).
func TestLimitersSharedAcrossNamespaces(t *testing.T) {
	for _, tc := range []struct {
		name string
		fl   FetchLimitConfig
		rl   RateLimitConfig
	}{
		{"fetch-limit", FetchLimitConfig{Enabled: true, FullPerMinute: 1, Burst: 2, MaxClients: 10}, RateLimitConfig{}},
		{"rate-limiter", FetchLimitConfig{}, RateLimitConfig{Enabled: true, BurstSize: 2, RegistryFetchAverageRate: 1, FullFetchAverageRate: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			def := newFetchFixture(t, tc.fl, tc.rl)
			reg := registry.New(registry.Options{Now: def.clock.Now})
			cc := cache.DefaultConfig()
			cc.UseReadOnly, cc.Now = false, def.clock.Now
			dev := New(Config{}, Deps{Registry: reg, Cache: &cc, Now: def.clock.Now, Limiters: def.srv.Limiters()})
			def.srv.SetNamespaces(nsMap{"dev": dev})
			c := who{addr: "10.1.1.1:5000", name: "loop"}
			if a, b := def.get(t, "/eureka/apps", c), def.get(t, "/eureka/apps", c); a != 200 || b != 200 {
				t.Fatalf("burst: %d %d", a, b)
			}
			if got := def.get(t, "/eureka/apps", c); got != 503 {
				t.Fatalf("over the allowance: %d, want 503", got)
			}
			for _, p := range []string{"/ns/dev/eureka/apps", "/ns/dev/eureka/apps/"} {
				if got := def.get(t, p, c); got != 503 {
					t.Fatalf("%s after the allowance was used at /eureka/apps: %d, want 503 (one allowance per process)", p, got)
				}
			}
			// The default Server's collectors count every namespace's 503s.
			if n := def.srv.limiter.limited[targetFull][1].Load(); tc.rl.Enabled && n != 3 {
				t.Errorf("throttled full fetches counted: %d, want 3 (both namespaces)", n)
			}
			if tc.fl.Enabled && def.srv.fetchLimit.throttledFull.Load() != 3 {
				t.Errorf("throttled full fetches counted: %d, want 3 (both namespaces)", def.srv.fetchLimit.throttledFull.Load())
			}
		})
	}
}
