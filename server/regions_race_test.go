package server

import (
	"bytes"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/goreka/goreka/cache"
	"github.com/goreka/goreka/compat"
	"github.com/goreka/goreka/document"
	"github.com/goreka/goreka/region"
)

// A fetch landing between the overlay's read of a region's copy and the
// key of the kept remote-only segment left the segment stale for good: the
// plain /apps served old remote statuses under a newer hash.
func TestRegionSegmentKeyedByTheCopiesItHolds(t *testing.T) {
	west := newFixture(t)
	west.populate(t)
	ws := httptest.NewServer(west.srv)
	t.Cleanup(ws.Close)
	f := newFixture(t)
	var c *cache.Cache
	r, err := region.New(region.Config{Name: "west", URL: ws.URL + "/eureka/", Now: f.clock.Now, DisableDelta: true,
		// The race is the subject, not the timeout: under -race the local
		// GET loop can hold both cores past the default 1 s read timeout.
		ReadTimeout: time.Minute,
		OnChange:    func(region.Change) { c.Invalidate("", "", "") }})
	if err != nil {
		t.Fatal(err)
	}
	set := region.NewSet([]*region.Remote{r}, nil)
	docs := document.New(document.Config{Registry: f.reg, Regions: document.Regions{Set: set}})
	cfg := cache.DefaultConfig()
	cfg.UseReadOnly = false
	cfg.Now = f.clock.Now
	f.srv = New(Config{}, Deps{Registry: f.reg, Docs: docs, Cache: &cfg, Now: f.clock.Now})
	c = f.srv.Cache()
	if err := r.FetchOnce(t.Context()); err != nil {
		t.Fatal(err)
	}
	hdr := map[string]string{"Accept": "application/json"}
	for round := 0; round < 300; round++ {
		st := []string{"OUT_OF_SERVICE", "UP"}[round%2]
		if w := west.do(t, "PUT", "/eureka/apps/PAYMENT/i-0abc/status?value="+st, "", nil); w.Code != 200 {
			t.Fatalf("west status: %d", w.Code)
		}
		west.srv.Cache().Invalidate("PAYMENT", "", "")
		var wg sync.WaitGroup
		stop := make(chan struct{})
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				c.Invalidate("", "", "") // local churn: any local change drops ALL_APPS
				f.do(t, "GET", "/eureka/apps", "", hdr)
			}
		})
		if err := r.FetchOnce(t.Context()); err != nil {
			t.Fatal(err)
		}
		close(stop)
		wg.Wait()
		got := f.do(t, "GET", "/eureka/apps", "", hdr).Body.Bytes()
		want := compat.AppendApplications(nil, compat.JSON, false, set.Full(f.reg.Applications(), set.Names()))
		if !bytes.Equal(got, want) {
			i := 0
			for i < len(got) && i < len(want) && got[i] == want[i] {
				i++
			}
			t.Fatalf("round %d (%s): served document is stale at byte %d:\n got ...%s\nwant ...%s", round, st, i, got[max(0, i-200):min(len(got), i+60)], want[max(0, i-200):min(len(want), i+60)])
		}
	}
}
