package registry

import (
	"testing"
	"time"
)

// TestRecentQueueKeepsOneEntryPerInstance: an instance registered and
// cancelled again and again holds one entry of the recently-changed queue
// (its newest), which the delta lists in its current state, and pruning
// forgets it.
func TestRecentQueueKeepsOneEntryPerInstance(t *testing.T) {
	r, clk, _ := newReg(t)
	if _, err := r.Register(inst("A", "keep", StatusUp), false); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if _, err := r.Register(inst("A", "a1", StatusUp), false); err != nil {
			t.Fatal(err)
		}
		if err := r.Cancel("A", "a1", false); err != nil {
			t.Fatal(err)
		}
	}
	live := 0
	for _, c := range r.recent {
		if c.l != nil {
			live++
		}
	}
	if live != 2 || r.recentCount["A"] != 2 || len(r.recentSeq) != 2 {
		t.Fatalf("%d live entries, count %d, %d sequence numbers; want 2 of each", live, r.recentCount["A"], len(r.recentSeq))
	}
	d := r.Delta()
	if len(d.Apps) != 1 || len(d.Apps[0].Instances) != 2 {
		t.Fatalf("delta %+v", d.Apps)
	}
	for _, v := range d.Apps[0].Instances {
		if v.Instance.ID() == "a1" && v.Instance.ActionType != ActionDeleted {
			t.Fatalf("a1 listed as %s, want DELETED", v.Instance.ActionType)
		}
	}
	clk.Advance(time.Minute)
	r.PruneRecentlyChanged(30 * time.Second)
	if len(r.recent) != 0 || len(r.recentSeq) != 0 || len(r.recentCount) != 0 {
		t.Fatalf("after pruning: %d entries, %d sequence numbers, counts %v", len(r.recent), len(r.recentSeq), r.recentCount)
	}
}
