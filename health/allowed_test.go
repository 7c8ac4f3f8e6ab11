package health

import (
	"context"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/goreka/goreka/registry"
)

// A health URL whose address is outside the allowed networks gets no
// request at all (the refusal is made when connecting, after name
// resolution: "localhost" is refused as well as 127.0.0.1), and an
// allowed one is probed as usual.
func TestHTTPProberAllowedNetworks(t *testing.T) {
	ep := newEndpoints(t)
	probe := func(p HTTPProber, url string) Result {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		return p.Probe(ctx, url)
	}
	other := NewHTTPProber([]netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("fd00::/8")})
	for _, u := range []string{ep.healthy, strings.Replace(ep.unavailable, "127.0.0.1", "localhost", 1)} {
		got := probe(other, u)
		if got.Outcome != NotAllowed || got.Failed() || got.Counts() || !strings.Contains(got.Detail, "not in goreka.health.probe.allowed-networks") {
			t.Errorf("%s outside the allowed networks: %+v", u, got)
		}
	}
	if n := ep.hits(); n != 0 {
		t.Errorf("%d requests reached the endpoints", n)
	}
	loop := NewHTTPProber([]netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")})
	if got := probe(loop, ep.healthy); got.Outcome != Healthy {
		t.Errorf("allowed: %+v", got)
	}
	if got := probe(loop, ep.unavailable); got.Outcome != Unhealthy {
		t.Errorf("allowed, 503: %+v", got)
	}
	if got := probe(NewHTTPProber(nil), ep.healthy); got.Outcome != Healthy {
		t.Errorf("no list (any network): %+v", got)
	}
}

// An instance whose health URL is not allowed is judged as if never
// probed: periodic mode never serves it DOWN (its endpoint answers 503),
// its probes do not enter the guard's window, and a report gets no
// verdict either.
func TestNotAllowedIsNoEvidence(t *testing.T) {
	ep := newEndpoints(t)
	w := newWorld(t, Periodic, NewHTTPProber([]netip.Prefix{netip.MustParsePrefix("192.0.2.0/24")}))
	live := []string{"a", "b"}
	w.register("a", ep.unavailable)
	w.register("b", ep.refused)
	w.ev.OpenForTraffic(len(live))
	w.run(3*time.Minute, live)
	if _, err := w.m.Report("SVC", "a", "10.1.1.1", "connect timed out"); err != nil {
		t.Fatal(err)
	}
	w.m.Wait()
	w.run(time.Minute, live)
	for _, id := range live {
		if v, _ := w.reg.Get("SVC", id); v.Instance.Status != registry.StatusUp {
			t.Errorf("%s: %s, want UP (no evidence)", id, v.Instance.Status)
		}
	}
	st := w.m.Status()
	if st.Counters.Probes[NotAllowed] == 0 || st.WindowProbes != 0 || st.GuardActive || st.DownNow != 0 {
		t.Errorf("status %+v: want not-allowed probes only, none in the window", st)
	}
	if n := ep.hits(); n != 0 {
		t.Errorf("%d requests reached the endpoints", n)
	}
}
