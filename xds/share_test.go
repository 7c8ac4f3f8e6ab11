package xds

import (
	"testing"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpoint "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
)

// Zone groups share their kind's clusters, listeners and routes (one
// cache), and hold the zone-less assignment's parts (the same bytes) for
// every name; a name with endpoints in the zone is rendered for the zone,
// kept right on changes.
func TestZoneGroupsShareZoneIndependentResources(t *testing.T) {
	f := newFixture(t, Config{ZonePriority: true})
	f.register(inst("A", "a1", "10.0.0.1", MetaZone, "z1"), inst("A", "a2", "10.0.0.2", MetaZone, "z2"),
		inst("B", "b1", "10.0.0.3", MetaZone, "z2"))
	f.sync()
	zoned := func(kind, zone string) *core.Node {
		n := node("n-" + zone)
		if kind == "grpc" {
			n = grpcNode("g-" + zone)
		}
		n.Locality = &core.Locality{Zone: zone}
		return n
	}
	plain, z1 := f.s.mustGroup(t, node("e")), f.s.mustGroup(t, zoned("envoy", "z1"))
	for _, typ := range []string{resource.ClusterType, resource.ListenerType, resource.RouteType} {
		if plain.cache(typ) != z1.cache(typ) {
			t.Errorf("%s: the z1 group has a cache of its own", typeName(typ))
		}
	}
	if plain.cache(resource.EndpointType) == z1.cache(resource.EndpointType) {
		t.Fatal("the z1 group shares the zone-less EDS cache: its priorities would be lost")
	}
	if g1, g2 := f.s.mustGroup(t, zoned("grpc", "z1")), f.s.mustGroup(t, grpcNode("g")); g1.cache(resource.ClusterType) != g2.cache(resource.ClusterType) || g1.cache(resource.ClusterType) == plain.cache(resource.ClusterType) {
		t.Error("gRPC zone groups do not share the gRPC clusters, or share Envoy's")
	}
	check := func(when string) {
		t.Helper()
		pe, ze := plain.cache(resource.EndpointType).snapshot(), z1.cache(resource.EndpointType).snapshot()
		if pe["b"].cla == nil || pe["b"] != ze["b"] {
			t.Errorf("%s: b (no endpoint in z1) is a copy in the z1 group, want the zone-less resource (its parts)", when)
		}
		if pe["a"].cla == nil || pe["a"].cla != ze["a"].cla || pe["a"].zone != "" || ze["a"].zone != "z1" {
			t.Errorf("%s: a (an endpoint in z1) is not the zone-less parts rendered for z1 in z1's group", when)
		}
		if r, _ := f.s.ResolveZone("default", "a", Envoy, "z1"); len(r.Endpoints) == 0 || r.Endpoints[0].Address != "10.0.0.1" || r.Endpoints[0].Priority != 0 {
			t.Errorf("%s: a from z1 %+v, want 10.0.0.1 first at priority 0", when, r.Endpoints)
		}
	}
	check("at start")
	f.register(inst("B", "b2", "10.0.0.4", MetaZone, "z3"), inst("A", "a3", "10.0.0.5", MetaZone, "z1"))
	f.sync()
	check("after a change")
	ze := z1.cache(resource.EndpointType).GetResources()
	if got := len(flatten(ze["a"].(*endpoint.ClusterLoadAssignment))); got != 3 {
		t.Errorf("z1's assignment of a has %d endpoints after a3 registered, want 3", got)
	}
}
