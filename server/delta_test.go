package server

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/goreka/goreka/cache"
	"github.com/goreka/goreka/compat"
	"github.com/goreka/goreka/registry"
)

// javaClient models what the Java client's DiscoveryClient does with
// deltas (updateDelta + getReconcileHashCode): ADDED and MODIFIED upsert,
// DELETED removes, then the local hash must equal the delta's
// apps__hashcode or the client falls back to a full fetch.
type javaClient struct {
	apps map[string]map[string]registry.Status
}

func (jc *javaClient) replace(doc *registry.Applications) {
	jc.apps = map[string]map[string]registry.Status{}
	jc.apply(doc, true)
}

func (jc *javaClient) apply(doc *registry.Applications, full bool) {
	for _, a := range doc.Apps {
		for _, v := range a.Instances {
			in := v.Instance
			switch {
			case full || in.ActionType == registry.ActionAdded || in.ActionType == registry.ActionModified:
				if jc.apps[a.Name] == nil {
					jc.apps[a.Name] = map[string]registry.Status{}
				}
				jc.apps[a.Name][in.ID()] = in.Status
			case in.ActionType == registry.ActionDeleted:
				delete(jc.apps[a.Name], in.ID())
			}
		}
	}
}

func (jc *javaClient) hash() string {
	counts := map[registry.Status]int{}
	for _, g := range jc.apps {
		for _, s := range g {
			counts[s]++
		}
	}
	return registry.HashCode(counts)
}

// TestDeltaThroughCacheNeverMismatches fetches /eureka/apps/delta through
// the router and goreka's default response cache (readOnly tier refreshed
// on change) while writers register, cancel, override and renew, and
// checks after every delta that a Java-like client's hash matches.
func TestDeltaThroughCacheNeverMismatches(t *testing.T) {
	reg := registry.New(registry.Options{ExpectedClients: 1})
	cfg := cache.DefaultConfig()
	cfg.MinRefreshGap = 5 * time.Millisecond
	s := New(Config{}, Deps{Registry: reg, Cache: &cfg})
	c := s.Cache()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { c.Run(ctx) })

	fetch := func(path string) *registry.Applications {
		r := httptest.NewRequest("GET", path, nil)
		r.Header.Set("Accept", "application/json")
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		if w.Code != 200 {
			t.Fatalf("GET %s = %d", path, w.Code)
		}
		doc, err := compat.DecodeApplications(w.Body.Bytes(), compat.JSON)
		if err != nil {
			t.Fatal(err)
		}
		return doc
	}

	statuses := []registry.Status{registry.StatusUp, registry.StatusDown, registry.StatusOutOfService, registry.StatusStarting}
	stop := make(chan struct{})
	for w := range 3 {
		wg.Go(func() {
			rnd := rand.New(rand.NewPCG(uint64(w), 11))
			for {
				select {
				case <-stop:
					return
				default:
				}
				app := fmt.Sprintf("APP%d", rnd.IntN(4))
				id := fmt.Sprintf("%s-%d", app, rnd.IntN(15))
				switch rnd.IntN(5) {
				case 0, 1:
					reg.Register(&registry.Instance{InstanceID: id, HostName: "h", App: app, IPAddr: "10.0.0.1",
						Status: statuses[rnd.IntN(len(statuses))], DataCenterInfo: registry.DataCenterInfo{Name: registry.DataCenterMyOwn}}, false)
				case 2:
					reg.Cancel(app, id, false)
				case 3:
					reg.StatusUpdate(app, id, statuses[rnd.IntN(len(statuses))], time.Time{}, false)
				case 4:
					reg.Renew(registry.RenewRequest{App: app, ID: id})
				}
				time.Sleep(200 * time.Microsecond) // a write rate, not a timing assertion
			}
		})
	}

	jc := &javaClient{}
	jc.replace(fetch("/eureka/apps/"))
	deltas, mismatches := 0, 0
	deadline := time.Now().Add(1500 * time.Millisecond)
	for time.Now().Before(deadline) {
		d := fetch("/eureka/apps/delta")
		deltas++
		jc.apply(d, false)
		if jc.hash() != d.HashCode {
			mismatches++
			jc.replace(fetch("/eureka/apps/"))
		}
		time.Sleep(2 * time.Millisecond)
	}
	close(stop)
	cancel()
	wg.Wait()
	if deltas < 20 {
		t.Fatalf("only %d deltas fetched", deltas)
	}
	if mismatches != 0 {
		t.Fatalf("%d of %d deltas left the client with a hash mismatch (each costs a full fetch)", mismatches, deltas)
	}
}
