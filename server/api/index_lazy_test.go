package api

import (
	"fmt"
	"slices"
	"testing"

	"github.com/goreka/goreka/registry"
)

// The secondary indexes are built by the first query that needs them and
// then follow every change, as if they had been maintained from the start.
func TestSecondaryIndexBuiltByFirstQuery(t *testing.T) {
	x := NewIndex(nil)
	rev := int64(0)
	apply := func(kind registry.EventKind, app, id string, st registry.Status, vip, zone string) {
		rev++
		in := &registry.Instance{InstanceID: id, HostName: id, App: app, Status: st, VIPAddress: vip,
			Metadata: map[string]string{"zone": zone}}
		x.Apply(registry.Event{Kind: kind, Revision: rev, App: app, ID: id, Changed: true, Lease: registry.LeaseView{Instance: in}})
	}
	ids := func(f Filter) []string {
		_, es := x.Select(f, nil, -1)
		var out []string
		for _, en := range es {
			out = append(out, en.key.id)
		}
		return out
	}
	for i := range 6 {
		st := registry.StatusUp
		if i%3 == 0 {
			st = registry.StatusDown
		}
		apply(registry.EventRegister, fmt.Sprint("APP", i%2), fmt.Sprint("i", i), st, fmt.Sprint("vip", i%2), fmt.Sprint("z", i%3))
	}
	if x.secondary || x.status != nil {
		t.Fatal("secondary indexes built before any query needed them")
	}
	if got := ids(Filter{App: "APP0"}); !slices.Equal(got, []string{"i0", "i2", "i4"}) || x.secondary {
		t.Fatalf("app query: %v (secondary built: %v)", got, x.secondary)
	}
	if got := ids(Filter{Status: registry.StatusDown}); !slices.Equal(got, []string{"i0", "i3"}) || !x.secondary {
		t.Fatalf("status query: %v (secondary built: %v)", got, x.secondary)
	}
	// Changes after the build reach the secondary indexes.
	apply(registry.EventStatusUpdate, "APP1", "i1", registry.StatusDown, "vip1", "z1")
	apply(registry.EventCancel, "APP0", "i0", registry.StatusDown, "vip0", "z0")
	apply(registry.EventRegister, "APP0", "i6", registry.StatusUp, "vip1", "z0")
	for _, tc := range []struct {
		f    Filter
		want []string
	}{
		{Filter{Status: registry.StatusDown}, []string{"i1", "i3"}},
		{Filter{VIP: "vip1"}, []string{"i6", "i1", "i3", "i5"}},
		{Filter{Meta: []KV{{"zone", "z0"}}}, []string{"i6", "i3"}},
		{Filter{Status: registry.StatusUp, Meta: []KV{{"zone", "z2"}}}, []string{"i2", "i5"}},
	} {
		if got := ids(tc.f); !slices.Equal(got, tc.want) {
			t.Errorf("%+v: %v, want %v", tc.f, got, tc.want)
		}
	}
}
