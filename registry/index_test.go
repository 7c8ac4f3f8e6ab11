package registry

import (
	"fmt"
	"testing"
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
	a := &lease{inst: &Instance{}}
	b := &lease{inst: &Instance{}}
	r.indexLocked("A", "1", nil, a)
	h := r.keyHash("A", "1")
	// b under another key, chained in front of a in a's slot, as a
	// collision would put it.
	b.app, b.id, b.next = "B", "2", a
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
