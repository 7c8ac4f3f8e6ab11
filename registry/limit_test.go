package registry

import (
	"errors"
	"testing"
)

func TestMaxInstancesRefusesNewInstancesOnly(t *testing.T) {
	r := New(Options{MaxInstances: 2})
	mustRegister(t, r, inst("A", "a1", StatusUp), false)
	mustRegister(t, r, inst("B", "b1", StatusUp), false)
	rev := r.Revision()
	_, err := r.Register(inst("A", "a2", StatusUp), false)
	var le *LimitError
	if !errors.As(err, &le) || le.Max != 2 {
		t.Fatalf("third instance: err = %v, want *LimitError{2}", err)
	}
	if r.Size() != 2 || r.Revision() != rev {
		t.Fatalf("refused registration changed the registry: size %d, revision %d -> %d", r.Size(), rev, r.Revision())
	}
	// Re-registering a stored instance is not a new lease.
	if _, err := r.Register(inst("A", "a1", StatusDown), true); err != nil {
		t.Fatalf("re-registration at the limit: %v", err)
	}
	if err := r.Cancel("B", "b1", false); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Register(inst("A", "a2", StatusUp), false); err != nil {
		t.Fatalf("after a cancel there is room: %v", err)
	}
}

// TestRestoreKeepsMaxInstances: a snapshot written under a higher limit
// restores no more than Options.MaxInstances leases (found in review).
func TestRestoreKeepsMaxInstances(t *testing.T) {
	full := New(Options{})
	for _, id := range []string{"a1", "a2", "a3"} {
		mustRegister(t, full, inst("A", id, StatusUp), false)
	}
	r := New(Options{MaxInstances: 2})
	if n := r.Restore(full.Export()); n != 2 || r.Size() != 2 {
		t.Fatalf("restored %d, size %d; want 2, 2", n, r.Size())
	}
}
