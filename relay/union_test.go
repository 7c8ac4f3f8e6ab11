package relay

import (
	"fmt"
	"testing"
	"time"

	"github.com/goreka/goreka/registry"
	"github.com/goreka/goreka/registry/clocktest"
)

// The delta document's hash counts the copy without building each
// application's served views (shadow.count); it must count exactly what
// is served: a copy instance this relay also holds (its own echo) and one
// removed here that the copy still lists are hidden, everything else is
// counted. Full's hash, built from the served applications, is the
// reference; a count that skipped the check of either kind of
// application would count the hidden instances again.
func TestDeltaHashCountsWhatIsServed(t *testing.T) {
	clock := clocktest.New(time.Unix(1_700_000_000, 0))
	up := newUpstream(t, clock)
	s := newSite(t, clock, nil, up.url())
	for _, app := range []string{"ALONE", "ECHOED", "REMOVED"} {
		for i := range 3 {
			in := inst(app, fmt.Sprintf("%s-%d", app, i))
			if app == "ALONE" && i == 2 {
				in.Status = registry.StatusOutOfService
			}
			if _, err := up.reg.Register(in, false); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := s.relay.FetchOnce(t.Context()); err != nil {
		t.Fatal(err)
	}
	// ECHOED-0 is this relay's own client too (the copy holds its echo);
	// REMOVED-0 was registered and cancelled here after the fetch, so the
	// copy still lists it.
	echo := inst("ECHOED", "ECHOED-0")
	echo.Status = registry.StatusDown
	if _, err := s.reg.Register(echo, false); err != nil {
		t.Fatal(err)
	}
	if _, err := s.reg.Register(inst("REMOVED", "REMOVED-0"), false); err != nil {
		t.Fatal(err)
	}
	if err := s.reg.Cancel("REMOVED", "REMOVED-0", false); err != nil {
		t.Fatal(err)
	}

	full := s.relay.Full(s.reg.Applications())
	served := map[registry.Status]int{}
	for _, a := range full.Apps {
		for _, v := range a.Instances {
			served[v.Instance.Status]++
		}
	}
	if got, want := served, (map[registry.Status]int{registry.StatusUp: 6, registry.StatusDown: 1, registry.StatusOutOfService: 1}); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("served statuses %v, want %v (the echo once, as the local DOWN; the removed one hidden)", got, want)
	}
	if d := s.relay.Delta(s.reg.Delta()); d.HashCode != full.HashCode || d.HashCode != registry.HashCode(served) {
		t.Fatalf("delta hash %q, full %q, served %q", d.HashCode, full.HashCode, registry.HashCode(served))
	}
}
