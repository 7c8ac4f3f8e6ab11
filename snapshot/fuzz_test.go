package snapshot

import (
	"testing"

	"github.com/goreka/goreka/registry"
	"github.com/goreka/goreka/registry/clocktest"
)

// FuzzUnmarshal: no input panics, and whatever decodes re-encodes to a
// document that decodes to the same instances and overrides.
func FuzzUnmarshal(f *testing.F) {
	c := clocktest.New(t0)
	r := registry.New(registry.Options{Now: c.Now})
	for _, in := range []*registry.Instance{instance("A", "a-1", registry.StatusUp), instance("B", "b-1", registry.StatusDown)} {
		if _, err := r.Register(in, false); err != nil {
			f.Fatal(err)
		}
	}
	good := Marshal(r.Export(), t0, "s")
	f.Add(good)
	f.Add(good[:len(good)/2])
	f.Add(Marshal(registry.Snapshot{}, t0, ""))
	f.Add(withChecksum(magic + `1,"written":"2026-03-01T12:00:00Z","count":1,"instances":[{"app":"x","hostName":"h"}],"overrides":{}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<20 {
			return
		}
		f1, err := Unmarshal(data)
		if err != nil {
			return
		}
		f2, err := Unmarshal(Marshal(f1.Snapshot, f1.Written, f1.Server))
		if err != nil {
			t.Fatalf("re-encoded snapshot does not decode: %v", err)
		}
		if len(f2.Snapshot.Instances) != len(f1.Snapshot.Instances) || len(f2.Snapshot.Overrides) != len(f1.Snapshot.Overrides) ||
			!f2.Written.Equal(f1.Written) {
			t.Fatalf("round trip changed the snapshot: %+v -> %+v", f1, f2)
		}
	})
}
