package xds

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unsafe"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"

	"github.com/goreka/goreka/registry"
)

// The index's slots and name lists follow registrations, VIP changes and
// removals exactly as a plain map of instances would: every name resolves
// to the instances whose names include it, freed slots are reused, and a
// touched set names every name whose instances changed.
func TestIndexFollowsChanges(t *testing.T) {
	t.Run("hash", func(t *testing.T) { indexFollowsChanges(t, nil) })
	// Every key clashes with a third of the others.
	t.Run("clashes", func(t *testing.T) {
		indexFollowsChanges(t, func(k instKey) uint64 { return uint64(len(k.id) + int(k.id[len(k.id)-1])%3) })
	})
}

func indexFollowsChanges(t *testing.T, hash func(instKey) uint64) {
	x := newIndex()
	x.hash = hash
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
	if hash != nil && len(x.clash) == 0 {
		t.Error("no key clashed")
	}
}

// A request's resource names are replaced by the server's one copy of each
// name a namespace has, before go-control-plane keys its subscription with
// them; names no namespace has are left alone and not added, and a name is
// dropped from the table when its last instance goes.
func TestRequestNamesShareTheServersCopy(t *testing.T) {
	f := newFixture(t, Config{})
	f.register(inst("A", "a1", "10.0.0.1"))
	f.sync()
	cb := f.s.callbacks()
	req := &discovery.DiscoveryRequest{Node: node("e-1"), TypeUrl: resource.EndpointType, ResourceNames: []string{strings.Clone("a"), "nope"}}
	if err := cb.OnStreamRequest(1, req); err != nil {
		t.Fatal(err)
	}
	f.s.names.mu.RLock()
	want, ok := f.s.names.m["a"]
	_, added := f.s.names.m["nope"]
	f.s.names.mu.RUnlock()
	if !ok || unsafe.StringData(req.ResourceNames[0]) != unsafe.StringData(want.name) {
		t.Error("the request's name a is not the server's copy")
	}
	if added {
		t.Error("a name no namespace has was added to the table")
	}
	if err := f.reg.Cancel("A", "a1", false); err != nil {
		t.Fatal(err)
	}
	f.sync()
	f.s.names.mu.RLock()
	defer f.s.names.mu.RUnlock()
	if _, ok := f.s.names.m["a"]; ok {
		t.Error("a is still in the table after its last instance went")
	}
}

// A held lease gives back its instance, revision and down cause.
func TestHeldKeepsRevisionAndDownCause(t *testing.T) {
	in := inst("A", "a1", "10.0.0.1")
	for _, v := range []registry.LeaseView{{Instance: in, Revision: 1<<54 + 3, DownBy: 255}, {Instance: in, Revision: 7}} {
		if got := holdOf(v).view(); got.Instance != in || got.Revision != v.Revision || got.DownBy != v.DownBy {
			t.Errorf("held %d/%d, got back %d/%d", v.Revision, v.DownBy, got.Revision, got.DownBy)
		}
	}
}
