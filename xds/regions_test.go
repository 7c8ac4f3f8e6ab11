package xds

import (
	"testing"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpoint "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"

	"github.com/goreka/goreka/region"
	"github.com/goreka/goreka/registry"
	"github.com/goreka/goreka/replication/peertest"
)

// A remote region's instances (fetched by package region from a Eureka
// server) are served beside the local ones at priority 2 for a zoned node
// (its zone 0, the other local zones 1), in localities of their region;
// a name only the region has gets a cluster; the region's next copy is
// pushed.
func TestRemoteRegionsAtPriorityTwo(t *testing.T) {
	peer := peertest.New(t)
	remote := inst("ORDERS", "r1", "10.9.0.1", MetaZone, "far-a")
	if _, err := peer.Registry().Register(remote, false); err != nil {
		t.Fatal(err)
	}
	if _, err := peer.Registry().Register(inst("BILLING", "b1", "10.9.0.2"), false); err != nil {
		t.Fatal(err)
	}
	r, err := region.New(region.Config{Name: "us-west", URL: peer.ServiceURL()})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.FetchOnce(t.Context()); err != nil {
		t.Fatal(err)
	}
	set := region.NewSet([]*region.Remote{r}, nil)

	f := newFixture(t, Config{ZonePriority: true})
	f.register(inst("ORDERS", "o1", "10.0.0.1", MetaZone, "z1"), inst("ORDERS", "o2", "10.0.0.2", MetaZone, "z2"))
	f.sync()
	changed := f.s.AttachRegions("default", set)

	res, ok := f.s.ResolveZone("default", "orders", Envoy, "z1")
	if !ok || len(res.Endpoints) != 3 {
		t.Fatalf("orders from z1: %+v", res)
	}
	prio := map[string]uint32{}
	for _, e := range res.Endpoints {
		prio[e.Address] = e.Priority
	}
	if prio["10.0.0.1"] != 0 || prio["10.0.0.2"] != 1 || prio["10.9.0.1"] != 2 {
		t.Errorf("priorities %v, want own zone 0, other zone 1, remote region 2", prio)
	}
	// Without a zone of its own: local 0, remote 1 (no gap).
	res, _ = f.s.Resolve("default", "orders", Envoy)
	for _, e := range res.Endpoints {
		if want := map[bool]uint32{true: 1, false: 0}[e.Address == "10.9.0.1"]; e.Priority != want {
			t.Errorf("zone-less node: %s at priority %d, want %d", e.Address, e.Priority, want)
		}
	}
	// The locality names the region, through a real group's cache.
	zoned := node("e-z1")
	zoned.Locality = &core.Locality{Zone: "z1"}
	g := f.s.mustGroup(t, zoned)
	cla := g.cache(resource.EndpointType).GetResources()["orders"].(*endpoint.ClusterLoadAssignment)
	var regions []string
	for _, l := range cla.GetEndpoints() {
		regions = append(regions, l.GetLocality().GetRegion())
	}
	if len(regions) != 3 || regions[2] != "us-west" {
		t.Errorf("localities' regions %q, want the last us-west", regions)
	}
	if _, ok := f.s.Resolve("default", "billing", Envoy); !ok {
		t.Error("billing, only in the remote region, does not resolve")
	}
	if got := names(t, sotw(t, f.s, node("e"), resource.ClusterType)); len(got) != 2 {
		t.Errorf("clusters %v, want billing and orders", got)
	}

	// The region loses ORDERS' instance: the next copy is pushed.
	if err := peer.Registry().Cancel("ORDERS", "r1", false); err != nil {
		t.Fatal(err)
	}
	if err := r.FetchOnce(t.Context()); err != nil {
		t.Fatal(err)
	}
	changed()
	if res, _ := f.s.ResolveZone("default", "orders", Envoy, "z1"); len(res.Endpoints) != 2 {
		t.Errorf("orders after the region's change: %+v, want the two local endpoints", res.Endpoints)
	}
	var nilS *Server
	nilS.AttachRegions("default", set)()
	f.s.AttachRegions("default", region.NewSet(nil, nil))()
}

// A local instance wins over a remote region's copy at the same address.
func TestLocalBeforeRemoteAtOneAddress(t *testing.T) {
	local, far := inst("A", "l", "10.0.0.1"), inst("A", "r", "10.0.0.1")
	far.Status = registry.StatusUp
	o := buildOptions{remote: map[*registry.Instance]string{far: "west"}}
	vs := dedupe(views(far, local), o)
	if len(vs) != 1 || vs[0].Instance != local {
		t.Errorf("kept %v, want the local instance", vs)
	}
}
