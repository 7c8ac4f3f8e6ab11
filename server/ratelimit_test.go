package server

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/goreka/goreka/cache"
	"github.com/goreka/goreka/registry"
	"github.com/goreka/goreka/registry/clocktest"
)

// targetRE is RateLimitingFilter's TARGET_RE, which the route table's
// rate-limit targets must agree with on the paths the filter is mapped to
// (Eureka's /apps and /apps/*).
var targetRE = regexp.MustCompile(`^.*/apps(/[^/]*)?$`)

func TestRouteTableMatchesNetflix(t *testing.T) {
	paths := []string{"/eureka/apps", "/eureka/apps/", "/eureka/apps/delta", "/eureka/apps/ORDER", "/eureka/apps/ORDER/",
		"/eureka/apps/ORDER/i-1", "/eureka/apps/ORDER/i-1/status", "/eureka/vips/x", "/eureka/svips/x", "/eureka/instances/i-1",
		"/apps", "/xapps", "/eureka/apps/apps", "/eureka/apps/apps/", "/eureka/apps/delta/", "/eureka/myapps", "/", "/eureka/status", "/v2/apps", "/eureka/v2/apps/delta",
		"/eureka/v2/apps/ORDER", "/eureka/vips/apps", "/goreka/api/v1/apps", "/goreka/api/v1/apps/ORDER", "/ns/apps"}
	for _, p := range paths {
		want := "none"
		// The filter is mapped to Eureka's apps paths only, and sees them
		// under the context path, where ServeHTTP normalises them.
		if np := normalizePath(p); np == "/eureka/apps" || strings.HasPrefix(np, "/eureka/apps/") {
			if m := targetRE.FindStringSubmatch(np); m != nil {
				switch m[1] {
				case "", "/":
					want = "full"
				case "/delta":
					want = "delta"
				default:
					want = "application"
				}
			}
		}
		// Two fetches with a burst of 1: the second is a candidate of its
		// target, if the filter sees the route at all.
		f := newLimitFixture(t, RateLimitConfig{BurstSize: 1, RegistryFetchAverageRate: 1, FullFetchAverageRate: 1})
		f.codes(t, 2, p, "c")
		got := "none"
		for _, target := range []string{"full", "delta", "application"} {
			if limited(f, target, "false") > 0 {
				got = target
			}
		}
		if got != want {
			t.Errorf("GET %s: rate-limit target %s, want %s", p, got, want)
		}
	}
}

func TestTokenBucket(t *testing.T) {
	var b tokenBucket
	now := int64(1_700_000_000_000)
	steps := []struct {
		at   int64
		want bool
	}{{0, true}, {0, true}, {0, false}, {999, false}, {1000, true}, {1000, false}, {3500, true}, {3500, true}, {3500, false}, {4000, true}}
	for i, s := range steps {
		if got := b.acquire(2, 1, now+s.at); got != s.want {
			t.Fatalf("step %d at +%d ms: %v, want %v", i, s.at, got, s.want)
		}
	}
	if !b.acquire(0, 1, now) || !b.acquire(2, 0, now) {
		t.Fatal("a burst or rate of 0 must admit everything")
	}
}

type limitFixture struct {
	srv   *Server
	clock *clocktest.Clock
}

func newLimitFixture(t *testing.T, rl RateLimitConfig) *limitFixture {
	t.Helper()
	clk := clocktest.New(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	reg := registry.New(registry.Options{Now: clk.Now, ExpectedClients: 1})
	cfg := cache.DefaultConfig()
	cfg.UseReadOnly = false
	cfg.Now = clk.Now
	srv := New(Config{RateLimit: rl}, Deps{Registry: reg, Cache: &cfg, Now: clk.Now})
	f := &limitFixture{srv: srv, clock: clk}
	w := (&fixture{srv: srv}).do(t, "POST", "/eureka/apps/A", `{"instance":{"instanceId":"a-1","hostName":"a-1","app":"A","ipAddr":"10.0.0.1","status":"UP","vipAddress":"a","dataCenterInfo":{"name":"MyOwn"}}}`, map[string]string{"Content-Type": "application/json"})
	if w.Code != 204 {
		t.Fatalf("register: %d", w.Code)
	}
	return f
}

// get fetches path as the named client and returns the status.
func (f *limitFixture) get(t *testing.T, path, client string) int {
	t.Helper()
	hdr := map[string]string{"Accept": "application/json"}
	if client != "" {
		hdr[IdentityNameHeader] = client
	}
	w := (&fixture{srv: f.srv}).do(t, "GET", path, "", hdr)
	if w.Code == 503 && w.Body.Len() != 0 {
		t.Fatalf("503 with a body: %q", w.Body.String())
	}
	return w.Code
}

func (f *limitFixture) codes(t *testing.T, n int, path, client string) string {
	var b strings.Builder
	for range n {
		b.WriteString(map[int]string{200: "o", 503: "x"}[f.get(t, path, client)])
	}
	return b.String()
}

func limited(f *limitFixture, target, enforced string) float64 {
	t := map[string]fetchTarget{"full": targetFull, "delta": targetDelta, "application": targetApp}[target]
	e := map[string]int{"false": 0, "true": 1}[enforced]
	return float64(f.srv.limiter.limited[t][e].Load())
}

func TestRateLimiterRules(t *testing.T) {
	on := RateLimitConfig{Enabled: true, BurstSize: 3, RegistryFetchAverageRate: 1000, FullFetchAverageRate: 1}

	t.Run("non-standard client is throttled after the burst, 503 without body", func(t *testing.T) {
		f := newLimitFixture(t, on)
		if got := f.codes(t, 5, "/eureka/apps/", "my-script"); got != "oooxx" {
			t.Fatalf("full fetches %s, want oooxx", got)
		}
		if got := limited(f, "full", "true"); got != 2 {
			t.Fatalf("throttled full fetches counted %v, want 2", got)
		}
	})
	t.Run("standard clients are privileged", func(t *testing.T) {
		f := newLimitFixture(t, on)
		for _, c := range []string{"DefaultClient", "DefaultServer"} {
			if got := f.codes(t, 6, "/eureka/apps/", c); got != "oooooo" {
				t.Fatalf("%s: %s, want never throttled", c, got)
			}
		}
		if got := f.codes(t, 4, "/eureka/apps/", ""); got != "ooox" {
			t.Fatalf("no identity header: %s, want throttled like any client (the privileged ones drew no token)", got)
		}
		// The header name is case-insensitive, its value is not.
		w := (&fixture{srv: f.srv}).do(t, "GET", "/eureka/apps/", "", map[string]string{"discoveryidentity-name": "DefaultClient"})
		if w.Code != 200 {
			t.Fatalf("lower-case header name: %d", w.Code)
		}
		if got := f.codes(t, 1, "/eureka/apps/", "defaultclient"); got != "x" {
			t.Fatalf("value defaultclient: %s, want throttled", got)
		}
	})
	t.Run("privileged clients are never throttled", func(t *testing.T) {
		cfg := on
		cfg.PrivilegedClients = []string{"gateway"}
		f := newLimitFixture(t, cfg)
		if got := f.codes(t, 6, "/eureka/apps/", "gateway"); got != "oooooo" {
			t.Fatalf("gateway: %s", got)
		}
		if got := f.codes(t, 4, "/eureka/apps/", "other"); got != "ooox" {
			t.Fatalf("other: %s", got)
		}
	})
	t.Run("throttle-standard-clients drops the privilege", func(t *testing.T) {
		cfg := on
		cfg.ThrottleStandardClients = true
		cfg.PrivilegedClients = []string{"gateway"}
		f := newLimitFixture(t, cfg)
		if got := f.codes(t, 4, "/eureka/apps/", "DefaultClient"); got != "ooox" {
			t.Fatalf("DefaultClient: %s", got)
		}
		if got := f.codes(t, 1, "/eureka/apps/", "gateway"); got != "x" {
			t.Fatalf("gateway: %s", got)
		}
	})
	t.Run("full fetches have their own, lower bucket", func(t *testing.T) {
		f := newLimitFixture(t, on)
		if got := f.codes(t, 4, "/eureka/apps/", "c"); got != "ooox" {
			t.Fatalf("full: %s", got)
		}
		// 10 ms refill 10 tokens at 1000/s in the fetch bucket and none at
		// 1/s in the full-fetch bucket. The throttled full fetch still takes
		// a token from the fetch bucket, as in Netflix.
		f.clock.Advance(10 * time.Millisecond)
		if got := f.codes(t, 1, "/eureka/apps/", "c") + f.codes(t, 2, "/eureka/apps/delta", "c") + f.codes(t, 1, "/eureka/apps/A", "c"); got != "xoox" {
			t.Fatalf("full, delta, delta, app: %s, want xoox", got)
		}
		f.clock.Advance(time.Second)
		if got := f.codes(t, 2, "/eureka/apps/", "c"); got != "ox" {
			t.Fatalf("a second later: %s, want one more full fetch", got)
		}
	})
	t.Run("delta and application fetches share the fetch bucket", func(t *testing.T) {
		cfg := on
		cfg.RegistryFetchAverageRate = 1
		f := newLimitFixture(t, cfg)
		if got := f.codes(t, 2, "/eureka/apps/delta", "c") + f.codes(t, 2, "/eureka/apps/A", "c"); got != "ooox" {
			t.Fatalf("%s, want ooox", got)
		}
		if limited(f, "application", "true") != 1 || limited(f, "delta", "true") != 0 {
			t.Fatalf("counts application %v delta %v", limited(f, "application", "true"), limited(f, "delta", "true"))
		}
	})
	t.Run("other requests are never limited", func(t *testing.T) {
		cfg := on
		cfg.BurstSize = 1
		f := newLimitFixture(t, cfg)
		fx := &fixture{srv: f.srv}
		for range 5 {
			for _, p := range []string{"/eureka/vips/a", "/eureka/svips/a", "/eureka/apps/A/a-1", "/eureka/instances/a-1"} {
				if c := f.get(t, p, "c"); c == 503 {
					t.Fatalf("GET %s throttled", p)
				}
			}
			if w := fx.do(t, "PUT", "/eureka/apps/A/a-1", "", nil); w.Code != 200 {
				t.Fatalf("heartbeat %d", w.Code)
			}
		}
	})
	t.Run("off by default: nothing throttled, candidates counted", func(t *testing.T) {
		cfg := DefaultRateLimitConfig()
		if cfg.Enabled || cfg.ThrottleStandardClients {
			t.Fatal("the limiter must be off by default")
		}
		cfg.BurstSize = 2
		f := newLimitFixture(t, cfg)
		if got := f.codes(t, 5, "/eureka/apps/", "c"); got != "ooooo" {
			t.Fatalf("%s", got)
		}
		if limited(f, "full", "false") != 3 || limited(f, "full", "true") != 0 {
			t.Fatalf("candidates %v enforced %v, want 3 and 0", limited(f, "full", "false"), limited(f, "full", "true"))
		}
	})
}

func TestRateLimitCollector(t *testing.T) {
	f := newLimitFixture(t, RateLimitConfig{Enabled: true, BurstSize: 1, RegistryFetchAverageRate: 1, FullFetchAverageRate: 1})
	f.codes(t, 3, "/eureka/apps/", "c")
	f.codes(t, 1, "/eureka/apps/delta", "c")
	want := `# HELP goreka_rate_limited_requests_total ` + descHelp + `
# TYPE goreka_rate_limited_requests_total counter
goreka_rate_limited_requests_total{enforced="false",target="application"} 0
goreka_rate_limited_requests_total{enforced="false",target="delta"} 0
goreka_rate_limited_requests_total{enforced="false",target="full"} 0
goreka_rate_limited_requests_total{enforced="true",target="application"} 0
goreka_rate_limited_requests_total{enforced="true",target="delta"} 1
goreka_rate_limited_requests_total{enforced="true",target="full"} 2
`
	if err := testutil.CollectAndCompare(f.srv.RateLimitCollector(), strings.NewReader(want)); err != nil {
		t.Fatal(err)
	}
}
