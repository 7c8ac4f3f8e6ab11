package relay

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/goreka/goreka/cache"
	"github.com/goreka/goreka/registry"
	"github.com/goreka/goreka/registry/clocktest"
	"github.com/goreka/goreka/server"
	"github.com/goreka/goreka/server/api"
)

// A goreka upstream's watch brings a change made upstream into the relay's
// copy without waiting for the fetch interval (an hour here): the watch
// wakes the delta fetch. The relay's own clients' registrations, which the
// watch echoes, do not wake it.
// apiUpstream is a goreka upstream with the read API (its watch), counting
// the watches it answers.
type apiUpstream struct {
	reg     *registry.Registry
	srv     *httptest.Server
	watches atomic.Int64
	hang    atomic.Bool // watches are held open with nothing sent (a silent partition)
	down    atomic.Bool // every other request is refused
}

func newAPIUpstream(t *testing.T) *apiUpstream {
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
		s.ServeHTTP(w, r)
	}))
	t.Cleanup(u.srv.Close)
	return u
}

// runSite runs a relay over upstreams with hour-long timers: only the watch
// brings a change in quickly.
func runSite(t *testing.T, upstreams ...string) *site {
	site := newSite(t, clocktest.New(time.Now()), func(c *Config) {
		c.Now, c.FetchInterval, c.HeartbeatInterval = time.Now, time.Hour, time.Hour
	}, upstreams...)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { site.relay.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return site
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !ok(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("after 20 s: %s", what)
		}
	}
}

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
