package xds

import (
	"strconv"
	"testing"
	"time"

	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"

	"github.com/goreka/goreka/registry"
)

func (f *fixture) health(name, addr string) string {
	f.t.Helper()
	r, ok := f.s.Resolve("default", name, Envoy)
	if !ok {
		f.t.Fatalf("%s does not resolve", name)
	}
	for _, e := range r.Endpoints {
		if e.Address == addr {
			return e.Health
		}
	}
	f.t.Fatalf("%s has no endpoint %s: %+v", name, addr, r.Endpoints)
	return ""
}

func (f *fixture) sweep() {
	f.s.mu.Lock()
	sp := f.s.spaces["default"]
	f.s.mu.Unlock()
	f.s.sweep(sp, f.reg)
}

// A lease whose heartbeats stopped (expired, not evicted: what
// self-preservation holds) is UNHEALTHY with held-as-unhealthy, though
// goreka still serves it UP to Eureka clients; a heartbeat makes it
// HEALTHY again. Without the setting it is what Eureka clients see: UP.
func TestExpiredLeaseIsUnhealthy(t *testing.T) {
	for _, held := range []bool{true, false} {
		t.Run("held-as-unhealthy="+strconv.FormatBool(held), func(t *testing.T) {
			f := newFixture(t, Config{HeldAsUnhealthy: held})
			f.register(inst("A", "a1", "10.0.0.1"), inst("A", "a2", "10.0.0.2"))
			f.sync()
			g := f.s.mustGroup(t, node("e"))
			rev := strconv.FormatInt(f.reg.Revision(), 10)

			f.clock.Advance(registry.DefaultLeaseDuration + time.Second)
			if err := f.reg.Renew(registry.RenewRequest{App: "A", ID: "a2"}); err != nil {
				t.Fatal(err)
			}
			f.sweep()
			want := map[bool]string{true: "UNHEALTHY", false: "HEALTHY"}[held]
			if got := f.health("a", "10.0.0.1"); got != want {
				t.Errorf("expired a1: %s, want %s", got, want)
			}
			if got := f.health("a", "10.0.0.2"); got != "HEALTHY" {
				t.Errorf("renewed a2: %s, want HEALTHY", got)
			}
			if v, _ := f.reg.Get("A", "a1"); v.Instance.Status != registry.StatusUp {
				t.Fatalf("the registry serves a1 %s; the test wants a held lease served UP", v.Instance.Status)
			}
			if held {
				// The sweep's change is versioned at the revision it was
				// made at, told apart from the change before it.
				if v := g.cache(resource.EndpointType).latest(); v != rev+".1" {
					t.Errorf("EDS version after the sweep %q, want %s.1", v, rev)
				}
			}

			if err := f.reg.Renew(registry.RenewRequest{App: "A", ID: "a1"}); err != nil {
				t.Fatal(err)
			}
			f.sweep()
			if got := f.health("a", "10.0.0.1"); got != "HEALTHY" {
				t.Errorf("a1 after its heartbeat: %s, want HEALTHY", got)
			}
		})
	}
}

// A lease served DOWN by goreka's own evidence (the prober's verdict, or
// a held lease under report-held-as-down) is UNHEALTHY whatever the
// setting: without it the status Eureka clients see (DOWN) decides, never
// an UP the instance may not claim. An instance DOWN by its own claim
// with the held bit set stays UNHEALTHY too.
func TestMarkedDownIsUnhealthyEitherWay(t *testing.T) {
	for _, held := range []bool{true, false} {
		f := newFixture(t, Config{HeldAsUnhealthy: held})
		own := inst("A", "a3", "10.0.0.3")
		own.Status = registry.StatusDown
		f.register(inst("A", "a1", "10.0.0.1"), inst("A", "a2", "10.0.0.2"), own)
		if err := f.reg.MarkDown("A", "a1", registry.DownByProbe, true); err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{"a2", "a3"} {
			if err := f.reg.MarkDown("A", id, registry.DownByHeld, true); err != nil {
				t.Fatal(err)
			}
		}
		f.sync()
		for _, addr := range []string{"10.0.0.1", "10.0.0.2", "10.0.0.3"} {
			if got := f.health("a", addr); got != "UNHEALTHY" {
				t.Errorf("held-as-unhealthy=%v: %s is %s, want UNHEALTHY", held, addr, got)
			}
		}
	}
}
