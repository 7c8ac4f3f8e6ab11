package relay

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/goreka/goreka/cache"
	"github.com/goreka/goreka/region"
	"github.com/goreka/goreka/registry"
	"github.com/goreka/goreka/registry/clocktest"
	"github.com/goreka/goreka/server"
	"github.com/goreka/goreka/server/api"
)

// apiUpstream is a goreka upstream with the read API (its watch), counting
// the watches it answers.
type apiUpstream struct {
	reg     *registry.Registry
	srv     *httptest.Server
	watches atomic.Int64
	fetches atomic.Int64 // GET apps/ and apps/delta answered
	hang    atomic.Bool  // watches are held open with nothing sent (a silent partition)
	down    atomic.Bool  // every other request is refused
}

func newAPIUpstream(t testing.TB) *apiUpstream {
	u := &apiUpstream{}
	var s *server.Server
	var a *api.API
	u.reg = registry.New(registry.Options{OnEvent: func(e registry.Event) {
		s.Cache().Invalidate(e.App, e.Instance().VIPAddress, e.Instance().SecureVIPAddress)
		a.OnEvent(e)
	}})
	a = api.New(u.reg, api.Config{})
	cc := cache.DefaultConfig()
	cc.UseReadOnly = false
	s = server.New(server.Config{}, server.Deps{Registry: u.reg, Cache: &cc})
	s.MountAPI(a)
	u.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/watch") {
			u.watches.Add(1)
			if u.hang.Load() {
				<-r.Context().Done()
				return
			}
		} else if u.down.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		if strings.HasSuffix(r.URL.Path, "/apps/") || strings.HasSuffix(r.URL.Path, "/apps/delta") {
			u.fetches.Add(1)
		}
		s.ServeHTTP(w, r)
	}))
	t.Cleanup(u.srv.Close)
	return u
}

// runSite runs a relay over upstreams with hour-long timers: only the watch
// brings a change in quickly.
func runSite(t testing.TB, upstreams ...string) *site {
	site := newSite(t, clocktest.New(time.Now()), func(c *Config) {
		c.Now, c.FetchInterval, c.HeartbeatInterval = time.Now, time.Hour, time.Hour
	}, upstreams...)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { site.relay.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return site
}

func waitFor(t testing.TB, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !ok(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("after 20 s: %s", what)
		}
	}
}

// A goreka upstream's watch brings a change made upstream into the relay's
// copy without waiting for the fetch interval (an hour here): while the
// copy has no revision to order the watch's changes against (this
// upstream's registry was empty, at revision 0), the watch wakes the delta
// fetch. The relay's own clients' registrations, which the watch echoes,
// do not wake it.
func TestUpstreamWatchFetchesOnChange(t *testing.T) {
	u := newAPIUpstream(t)
	reg, watches := u.reg, &u.watches
	site := runSite(t, u.srv.URL+"/eureka/")
	waitFor := func(what string, ok func() bool) { t.Helper(); waitFor(t, what, ok) }
	waitFor("the relay watches its goreka upstream", func() bool { return watches.Load() > 0 })
	if _, err := reg.Register(inst("BILLING", "b1"), false); err != nil {
		t.Fatal(err)
	}
	waitFor("a registration upstream in the relay's copy", func() bool {
		return strings.Contains(idsOf(site.relay.Full(site.reg.Applications())), "BILLING/b1")
	})

	site.reg.Register(inst("LOCAL", "l1"), false)
	waitFor("the relay's own instance, once forwarded, no longer wakes the fetch", func() bool {
		return !site.relay.wakesCopy(key{"LOCAL", "l1"})
	})
	if _, ok := reg.Get("LOCAL", "l1"); !ok || !site.relay.wakesCopy(key{"BILLING", "b1"}) {
		t.Fatal("not forwarded, or an upstream instance does not wake the fetch")
	}
}

// When the relay's fetches fail over to the next upstream, its watch
// follows at once: the stream of a silently partitioned endpoint stayed
// blocked for minutes, and no change woke the fetch meanwhile.
func TestWatchFollowsAnEndpointSwitch(t *testing.T) {
	n1, n2 := newAPIUpstream(t), newAPIUpstream(t)
	n1.hang.Store(true)
	site := runSite(t, n1.srv.URL+"/eureka/", n2.srv.URL+"/eureka/")
	waitFor(t, "the relay watches its first upstream", func() bool { return n1.watches.Load() > 0 })
	n1.down.Store(true)
	if err := site.relay.FetchOnce(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := site.relay.Upstream(); got != n2.srv.URL+"/eureka/" {
		t.Fatalf("upstream in use %s after the first failed", got)
	}
	waitFor(t, "the watch follows the switch to the second upstream", func() bool { return n2.watches.Load() > 0 })
	if _, err := n2.reg.Register(inst("BILLING", "b1"), false); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a registration at the second upstream in the relay's copy", func() bool {
		return strings.Contains(idsOf(site.relay.Full(site.reg.Applications())), "BILLING/b1")
	})
}

// A goreka upstream's watch puts its changes into the relay's copy
// directly: a registration, a status change and a cancel upstream reach
// the relay's documents with no fetch after them (the fetch interval is
// an hour here, and before, the watch only woke a delta fetch, which
// waited for the upstream's delta rebuild). The relay's own instance,
// echoed by the watch, is still served once, as the local one.
func TestWatchAppliesUpstreamChanges(t *testing.T) {
	u := newAPIUpstream(t)
	u.reg.Register(inst("CORE", "c0"), false) // a revision above 0 for the first copy to name
	site := runSite(t, u.srv.URL+"/eureka/")
	served := func() string { return idsOf(site.relay.Full(site.reg.Applications())) }
	waitFor(t, "the relay's first copy and its watch", func() bool {
		return u.watches.Load() > 0 && site.relay.remotes[0].Revision() > 0
	})
	site.reg.Register(inst("LOCAL", "l1"), false)
	waitFor(t, "the relay's own instance forwarded", func() bool { _, ok := u.reg.Get("LOCAL", "l1"); return ok })
	fetched := u.fetches.Load()

	if _, err := u.reg.Register(inst("BILLING", "b1"), false); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a registration upstream in the relay's copy", func() bool { return strings.Contains(served(), "BILLING/b1") })
	if err := u.reg.StatusUpdate("BILLING", "b1", registry.StatusOutOfService, time.Now(), false); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a status change upstream in the relay's copy", func() bool {
		v, ok := site.relay.Instance("BILLING", "b1")
		return ok && v.Instance.Status == registry.StatusOutOfService
	})
	if err := u.reg.Cancel("BILLING", "b1", false); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a cancel upstream in the relay's copy", func() bool { return !strings.Contains(served(), "BILLING/b1") })
	if n := u.fetches.Load() - fetched; n != 0 {
		t.Fatalf("%d fetches of the upstream's documents: the watch's changes did not reach the copy by themselves", n)
	}
	if got := strings.Count(served(), "LOCAL/l1"); got != 1 {
		t.Fatalf("the relay's own instance served %d times: %s", got, served())
	}
}

// BenchmarkUpstreamVisibility is the time from a registration at a goreka
// upstream to its instance in a relay's copy (what the relay's documents
// are built from), the watch's changes applied directly or, as before,
// waking a delta fetch (which waits watchGap for the upstream's delta
// rebuild; the upstream here serves every document fresh, so its own
// rebuild gap is not in the figure).
func BenchmarkUpstreamVisibility(b *testing.B) {
	for _, direct := range []bool{true, false} {
		name := map[bool]string{true: "watch-applied", false: "fetch-woken"}[direct]
		b.Run(name, func(b *testing.B) {
			applyDirect = direct
			defer func() { applyDirect = true }()
			u := newAPIUpstream(b)
			u.reg.Register(inst("CORE", "c0"), false)
			site := runSite(b, u.srv.URL+"/eureka/")
			waitFor(b, "the relay's first copy and its watch", func() bool {
				return u.watches.Load() > 0 && site.relay.remotes[0].Revision() > 0
			})
			b.ResetTimer()
			for i := range b.N {
				id := fmt.Sprintf("b%d", i)
				if _, err := u.reg.Register(inst("BILLING", id), false); err != nil {
					b.Fatal(err)
				}
				for {
					if _, ok := site.relay.Instance("BILLING", id); ok {
						break
					}
					time.Sleep(100 * time.Microsecond)
				}
			}
		})
	}
}

// A change of the upstream's delta alone (its recently-changed queue moved
// on, the instances did not) is no change of the relay's documents: the
// relay serves its own delta, so OnCopyChange is not called (each fetch
// interval rebuilt the union's documents for it).
func TestUpstreamDeltaAloneChangesNoDocument(t *testing.T) {
	clock := clocktest.New(time.Unix(1_700_000_000, 0))
	up := newUpstream(t, clock)
	if _, err := up.reg.Register(inst("CORE", "c1"), false); err != nil {
		t.Fatal(err)
	}
	s := newSite(t, clock, nil, up.url())
	calls := 0
	s.relay.cfg.OnCopyChange = func(region.Change) { calls++ }
	if err := s.relay.FetchOnce(t.Context()); err != nil {
		t.Fatal(err)
	}
	s.relay.cp.mu.Lock()
	from := s.relay.cp.from
	s.relay.cp.mu.Unlock()
	if from == nil || calls == 0 {
		t.Fatalf("the first fetch: copy %v, %d OnCopyChange calls", from != nil, calls)
	}
	calls = 0
	s.relay.onRemoteChange(region.Change{Region: from.Name(), Delta: true})
	if calls != 0 {
		t.Fatalf("%d OnCopyChange calls for a change of the upstream's delta alone", calls)
	}
}
