package eviction

import (
	"fmt"
	"testing"
	"time"
)

// After a restart the renews meter counts whole minutes from
// OpenForTraffic, as Eureka's MeasuredRate started in postInit does: 0 in
// the first minute, then a full minute of renewals. Counted in wall-clock
// minutes, a node opened at 12:00:30 read only the half minute
// 12:00:00-12:01:00 until 12:02:00, so self-preservation held expired
// leases up to a minute longer than Eureka after every restart (the chaos
// run's restart storm).
func TestRenewsMeterStartsAtOpenForTraffic(t *testing.T) {
	e := newEnv(t, true)
	e.clock.Advance(30 * time.Second) // 12:00:30: the node starts mid-minute
	var ids []string
	for i := range 10 {
		id := fmt.Sprintf("live-%d", i)
		e.register("LIVE", id, 90*time.Second)
		ids = append(ids, id)
	}
	e.register("GONE", "gone-1", 10*time.Second) // never renews
	e.ev.OpenForTraffic(11)                      // threshold (int)(11 x 2 x 0.85) = 18
	tick := func() {                             // every live client renews every 30 s
		for _, id := range ids {
			e.renew("LIVE", id)
		}
	}
	tick()
	e.clock.Advance(30 * time.Second) // 12:01:00
	tick()
	e.clock.Advance(29 * time.Second) // 12:01:29: still the first minute
	if st := e.ev.Status(); st.RenewsLastMinute != 0 || st.LeaseExpirationEnabled {
		t.Fatalf("first minute after opening: renews %d, expiration %v; want 0 and false as in Eureka", st.RenewsLastMinute, st.LeaseExpirationEnabled)
	}
	if got := e.ev.RunOnce(); len(got) != 0 {
		t.Fatalf("evicted %v during the first minute", got)
	}
	e.clock.Advance(2 * time.Second) // 12:01:31: one full minute since opening
	st := e.ev.Status()
	if st.RenewsLastMinute != 20 || st.Threshold != 18 || !st.LeaseExpirationEnabled {
		t.Fatalf("a minute after opening: renews %d threshold %d expiration %v; want 20 > 18, enabled",
			st.RenewsLastMinute, st.Threshold, st.LeaseExpirationEnabled)
	}
	got := e.ev.RunOnce()
	if len(got) != 1 || got[0].ID != "gone-1" {
		t.Fatalf("evicted %v, want gone-1", got)
	}
	// A second OpenForTraffic (a later start-up sync) does not move the
	// meter again: minutes stay aligned on the first opening.
	e.clock.Advance(29 * time.Second) // 12:02:00
	tick()
	e.ev.OpenForTraffic(10)
	e.clock.Advance(31 * time.Second) // 12:02:31
	if st := e.ev.Status(); st.RenewsLastMinute != 10 {
		t.Fatalf("renews last minute %d, want the 10 of 12:01:30-12:02:30", st.RenewsLastMinute)
	}
}
