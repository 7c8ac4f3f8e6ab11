package registry

import (
	"fmt"
	"testing"
	"time"
)

// TestIndexMatchesTheApplicationMaps: after registrations, re-registrations
// and cancels, the flat index holds exactly the leases of r.apps.
func TestIndexMatchesTheApplicationMaps(t *testing.T) {
	r, _, _ := newReg(t)
	for i := range 300 {
		app := fmt.Sprintf("APP-%d", i%7)
		if _, err := r.Register(inst(app, fmt.Sprintf("i-%d", i), StatusUp), false); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 300; i += 3 {
		if err := r.Cancel(fmt.Sprintf("APP-%d", i%7), fmt.Sprintf("i-%d", i), false); err != nil {
			t.Fatal(err)
		}
	}
	for i := 1; i < 300; i += 3 {
		if _, err := r.Register(inst(fmt.Sprintf("APP-%d", i%7), fmt.Sprintf("i-%d", i), StatusDown), false); err != nil {
			t.Fatal(err)
		}
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	n := 0
	for app, group := range r.apps {
		for id, l := range group {
			n++
			if got := r.leaseLocked(app, id); got != l {
				t.Errorf("%s/%s: index has %p, apps %p", app, id, got, l)
			}
		}
	}
	chained := 0
	for _, head := range r.byKey {
		for l := head; l != nil; l = l.next {
			chained++
		}
	}
	if chained != n || n != 200 {
		t.Errorf("index holds %d leases, apps %d, want 200", chained, n)
	}
	if r.leaseLocked("APP-0", "i-0") != nil {
		t.Error("a cancelled lease is still in the index")
	}
}

// TestIndexChainsLeasesOfOneHash: leases whose keys share a hash are found
// and removed one by one through the chain.
func TestIndexChainsLeasesOfOneHash(t *testing.T) {
	r := New(Options{})
	a := &lease{inst: &Instance{App: "A", InstanceID: "1"}}
	b := &lease{inst: &Instance{App: "B", InstanceID: "2"}}
	r.indexLocked("A", "1", nil, a)
	h := r.keyHash("A", "1")
	// b under another key, chained in front of a in a's slot, as a
	// collision would put it.
	b.next = a
	r.byKey[h] = b
	if r.leaseLocked("A", "1") != a {
		t.Fatal("A/1 not found behind another key in its chain")
	}
	if r.leaseLocked("A", "2") != nil {
		t.Fatal("A/2 found")
	}
	r.indexLocked("A", "1", a, nil)
	if r.byKey[h] != b || b.next != nil || r.leaseLocked("A", "1") != nil {
		t.Fatal("removing A/1 did not unchain it alone")
	}
	r.byKey[h] = nil
	delete(r.byKey, h)
}

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
