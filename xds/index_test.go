package xds

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/goreka/goreka/registry"
)

// The index's slots and name lists follow registrations, VIP changes and
// removals exactly as a plain map of instances would: every name resolves
// to the instances whose names include it, freed slots are reused, and a
// touched set names every name whose instances changed.
func TestIndexFollowsChanges(t *testing.T) {
	x := newIndex()
	model := map[instKey]*registry.Instance{}
	rnd := rand.New(rand.NewPCG(1, 2))
	vips := []string{"", "v1", "v2", "v1,v2", "a"}
	rev := int64(0)
	for step := range 3000 {
		app := fmt.Sprintf("A%d", rnd.IntN(3))
		id := fmt.Sprintf("i%d", rnd.IntN(8))
		k := instKey{app, id}
		rev++
		e := registry.Event{Revision: rev, Changed: true, App: app, ID: id}
		touched := map[string]struct{}{}
		want := map[string]struct{}{}
		if old := model[k]; old != nil {
			for _, n := range namesOf(old) {
				want[n] = struct{}{}
			}
		}
		if rnd.IntN(3) == 0 {
			e.Kind = registry.EventCancel
			delete(model, k)
		} else {
			in := inst(app, id, "10.0.0.1")
			in.VIPAddress = vips[rnd.IntN(len(vips))]
			e.Kind = registry.EventRegister
			e.Lease = registry.LeaseView{Instance: in, Revision: rev}
			model[k] = in
			for _, n := range namesOf(in) {
				want[n] = struct{}{}
			}
		}
		x.apply(e, touched)
		if !maps.Equal(touched, want) {
			t.Fatalf("step %d: touched %v, want %v", step, slices.Sorted(maps.Keys(touched)), slices.Sorted(maps.Keys(want)))
		}
		byName := map[string][]string{}
		for k, in := range model {
			for _, n := range namesOf(in) {
				byName[n] = append(byName[n], k.app+"/"+k.id)
			}
		}
		for n := range x.names() {
			if _, ok := byName[n]; !ok {
				t.Fatalf("step %d: the index knows %q, which no instance has", step, n)
			}
		}
		for n, ids := range byName {
			var got []string
			for _, v := range x.views(n) {
				got = append(got, v.Instance.App+"/"+v.Instance.ID())
			}
			slices.Sort(got)
			slices.Sort(ids)
			if !slices.Equal(got, ids) || !x.known(n) {
				t.Fatalf("step %d: %q resolves to %v, want %v", step, n, got, ids)
			}
		}
		if live := len(x.slots) - len(x.free); live != len(model) {
			t.Fatalf("step %d: %d live slots for %d instances", step, live, len(model))
		}
	}
	if len(x.slots) > 24 {
		t.Errorf("%d slots for at most 24 instances: freed slots are not reused", len(x.slots))
	}
}
