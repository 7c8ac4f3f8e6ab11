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
func TestUpstreamWatchFetchesOnChange(t *testing.T) {
	var s *server.Server
	var a *api.API
	reg := registry.New(registry.Options{OnEvent: func(e registry.Event) {
		s.Cache().Invalidate(e.App, e.Instance().VIPAddress, e.Instance().SecureVIPAddress)
		a.OnEvent(e)
	}})
	a = api.New(reg, api.Config{})
	cc := cache.DefaultConfig()
	cc.UseReadOnly = false
	s = server.New(server.Config{}, server.Deps{Registry: reg, Cache: &cc})
	s.MountAPI(a)
	var watches atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/watch") {
			watches.Add(1)
		}
		s.ServeHTTP(w, r)
	}))
	t.Cleanup(up.Close)

	site := newSite(t, clocktest.New(time.Now()), func(c *Config) {
		c.Now, c.FetchInterval, c.HeartbeatInterval = time.Now, time.Hour, time.Hour
	}, up.URL+"/eureka/")
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { site.relay.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })

	waitFor := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); !ok(); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("after 20 s: %s", what)
			}
		}
	}
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
