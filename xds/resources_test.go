package xds

import (
	"fmt"
	"slices"
	"testing"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpoint "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	hcm "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"

	"github.com/goreka/goreka/registry"
)

// inst is an instance of app at ip, UP on port 8080, with metadata kv
// (key, value pairs).
func inst(app, id, ip string, kv ...string) *registry.Instance {
	md := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		md[kv[i]] = kv[i+1]
	}
	return &registry.Instance{
		InstanceID: id, HostName: id, App: app, IPAddr: ip, Status: registry.StatusUp,
		Port: registry.Port{Number: 8080, Enabled: true}, SecurePort: registry.Port{Number: 8443},
		Metadata: md, VIPAddress: "", DataCenterInfo: registry.DataCenterInfo{Name: registry.DataCenterMyOwn},
	}
}

func views(ins ...*registry.Instance) []registry.LeaseView {
	out := make([]registry.LeaseView, len(ins))
	for i, in := range ins {
		out[i] = registry.LeaseView{Instance: in}
	}
	return out
}

// endpoints flattens an assignment: "ip:port" -> its endpoint and locality.
type flat struct {
	ep  *endpoint.LbEndpoint
	loc *endpoint.LocalityLbEndpoints
}

func flatten(cla *endpoint.ClusterLoadAssignment) map[string]flat {
	out := map[string]flat{}
	for _, l := range cla.GetEndpoints() {
		for _, e := range l.GetLbEndpoints() {
			sa := e.GetEndpoint().GetAddress().GetSocketAddress()
			out[fmt.Sprintf("%s:%d", sa.GetAddress(), sa.GetPortValue())] = flat{e, l}
		}
	}
	return out
}

func TestHealthFromStatus(t *testing.T) {
	for _, tc := range []struct {
		status  registry.Status
		down    registry.DownCause
		expired bool
		held    bool
		want    core.HealthStatus
	}{
		{registry.StatusUp, 0, false, true, core.HealthStatus_HEALTHY},
		{registry.StatusDown, 0, false, true, core.HealthStatus_UNHEALTHY},
		{registry.StatusStarting, 0, false, true, core.HealthStatus_UNHEALTHY},
		{registry.StatusOutOfService, 0, false, true, core.HealthStatus_DRAINING},
		{registry.StatusUnknown, 0, false, true, core.HealthStatus_UNKNOWN},
		// Held by self-preservation: expired, served UP to Eureka clients
		// (report-held-as-down off), or DOWN (on).
		{registry.StatusUp, 0, true, true, core.HealthStatus_UNHEALTHY},
		{registry.StatusUp, 0, true, false, core.HealthStatus_HEALTHY},
		{registry.StatusUnknown, 0, true, true, core.HealthStatus_UNHEALTHY},
		{registry.StatusOutOfService, 0, true, true, core.HealthStatus_DRAINING},
		{registry.StatusDown, registry.DownByHeld, true, true, core.HealthStatus_UNHEALTHY},
		{registry.StatusDown, registry.DownByHeld, true, false, core.HealthStatus_UNHEALTHY},
		// The held bit on an instance that is DOWN by its own claim (or an
		// override's): DOWN either way, never the UP it does not claim.
		{registry.StatusDown, registry.DownByHeld, false, false, core.HealthStatus_UNHEALTHY},
		// The prober's verdict.
		{registry.StatusDown, registry.DownByProbe, false, false, core.HealthStatus_UNHEALTHY},
		{registry.StatusUnknown, registry.DownByProbe, false, true, core.HealthStatus_UNHEALTHY},
		{registry.StatusUnknown, registry.DownByProbe, false, false, core.HealthStatus_UNKNOWN},
		// An operator's UP override stands against the prober, as in Eureka.
		{registry.StatusUp, registry.DownByProbe, false, true, core.HealthStatus_HEALTHY},
	} {
		in := inst("A", "a1", "10.0.0.1")
		in.Status = tc.status
		got := health(registry.LeaseView{Instance: in, DownBy: tc.down}, tc.held, tc.expired)
		if got != tc.want {
			t.Errorf("%s down=%d expired=%v held-as-unhealthy=%v: %v, want %v", tc.status, tc.down, tc.expired, tc.held, got, tc.want)
		}
	}
}

func TestPortsAndWeights(t *testing.T) {
	for _, tc := range []struct {
		name   string
		in     *registry.Instance
		kind   Kind
		port   int
		weight uint32
	}{
		{"plain", inst("A", "a", "1.1.1.1"), Envoy, 8080, 1},
		{"grpc port for grpc", inst("A", "a", "1.1.1.1", MetaGRPCPort, "9090"), GRPC, 9090, 1},
		{"legacy grpc port", inst("A", "a", "1.1.1.1", MetaGRPCPortLegacy, "9091"), GRPC, 9091, 1},
		{"grpc port not for envoy", inst("A", "a", "1.1.1.1", MetaGRPCPort, "9090"), Envoy, 8080, 1},
		{"bad grpc port", inst("A", "a", "1.1.1.1", MetaGRPCPort, "x"), GRPC, 8080, 1},
		{"weight", inst("A", "a", "1.1.1.1", MetaWeight, "90"), Envoy, 8080, 90},
		{"weight clamped", inst("A", "a", "1.1.1.1", MetaWeight, "1000"), Envoy, 8080, 128},
		{"weight zero", inst("A", "a", "1.1.1.1", MetaWeight, "0"), Envoy, 8080, 1},
		{"weight junk", inst("A", "a", "1.1.1.1", MetaWeight, "heavy"), Envoy, 8080, 1},
	} {
		if p := servingPort(tc.in, tc.kind); p != tc.port {
			t.Errorf("%s: port %d, want %d", tc.name, p, tc.port)
		}
		if w := weight(tc.in); w != tc.weight {
			t.Errorf("%s: weight %d, want %d", tc.name, w, tc.weight)
		}
	}
	secure := inst("A", "a", "1.1.1.1")
	secure.Port.Enabled, secure.SecurePort.Enabled = false, true
	if p := servingPort(secure, Envoy); p != 8443 {
		t.Errorf("only the secure port enabled: %d, want 8443", p)
	}
	both := inst("A", "a", "1.1.1.1")
	both.SecurePort.Enabled = true
	if p := servingPort(both, Envoy); p != 8080 {
		t.Errorf("both ports enabled: %d, want the non-secure 8080", p)
	}
}

func TestZones(t *testing.T) {
	md := inst("A", "a", "1.1.1.1", MetaZone, "z1")
	aws := inst("A", "b", "1.1.1.2")
	aws.DataCenterInfo = registry.DataCenterInfo{Name: registry.DataCenterAmazon, Metadata: map[string]string{"availability-zone": "us-east-1a"}}
	both := inst("A", "c", "1.1.1.3", MetaZone, "z2")
	both.DataCenterInfo = aws.DataCenterInfo
	for in, want := range map[*registry.Instance]string{md: "z1", aws: "us-east-1a", both: "z2", inst("A", "d", "1.1.1.4"): ""} {
		if z := zoneOf(in); z != want {
			t.Errorf("%s: zone %q, want %q", in.ID(), z, want)
		}
	}
}

func TestAssignmentEnvoy(t *testing.T) {
	vs := views(
		inst("A", "a1", "10.0.0.1", MetaZone, "z1", MetaWeight, "90", "version", "v1"),
		inst("A", "a2", "10.0.0.2", MetaZone, "z1", MetaWeight, "10", "version", "v2"),
		inst("A", "a3", "10.0.0.3", MetaZone, "z2"),
		inst("A", "noip", ""),
	)
	vs[2].Instance.Status = registry.StatusOutOfService
	cla := assignment("a", vs, buildOptions{kind: Envoy})
	if len(cla.Endpoints) != 2 {
		t.Fatalf("localities %d, want 2 (one per zone): %v", len(cla.Endpoints), cla)
	}
	eps := flatten(cla)
	if len(eps) != 3 {
		t.Fatalf("endpoints %v, want 3 (no endpoint without an IP)", eps)
	}
	z1 := eps["10.0.0.1:8080"].loc
	if z1.GetLocality().GetZone() != "z1" || z1.GetLoadBalancingWeight().GetValue() != 100 || z1.GetPriority() != 0 {
		t.Errorf("z1 locality: %v, want zone z1, weight 90+10, priority 0", z1)
	}
	if w := eps["10.0.0.2:8080"].ep.GetLoadBalancingWeight().GetValue(); w != 10 {
		t.Errorf("a2 weight %d, want 10", w)
	}
	if v := eps["10.0.0.2:8080"].ep.GetMetadata().GetFilterMetadata()["envoy.lb"].GetFields()["version"].GetStringValue(); v != "v2" {
		t.Errorf("envoy.lb version = %q, want v2", v)
	}
	if h := eps["10.0.0.3:8080"].ep.GetHealthStatus(); h != core.HealthStatus_DRAINING {
		t.Errorf("OUT_OF_SERVICE health %v, want DRAINING", h)
	}
	if w := eps["10.0.0.3:8080"].loc.GetLoadBalancingWeight().GetValue(); w != 1 {
		t.Errorf("z2 locality weight %d, want 1 (never unset)", w)
	}
}

func TestAssignmentGRPCLocalityPerInstance(t *testing.T) {
	vs := views(
		inst("ECHO", "e1", "10.0.0.1", MetaGRPCPort, "50051", MetaWeight, "90"),
		inst("ECHO", "e2", "10.0.0.2", MetaGRPCPort, "50052", MetaWeight, "10"),
	)
	cla := assignment("echo", vs, buildOptions{kind: GRPC})
	if len(cla.Endpoints) != 2 {
		t.Fatalf("localities %d, want one per instance", len(cla.Endpoints))
	}
	eps := flatten(cla)
	e1, e2 := eps["10.0.0.1:50051"], eps["10.0.0.2:50052"]
	if e1.ep == nil || e2.ep == nil {
		t.Fatalf("endpoints on the gRPC ports: %v", eps)
	}
	if e1.loc.GetLoadBalancingWeight().GetValue() != 90 || e2.loc.GetLoadBalancingWeight().GetValue() != 10 {
		t.Errorf("locality weights %d/%d, want 90/10", e1.loc.GetLoadBalancingWeight().GetValue(), e2.loc.GetLoadBalancingWeight().GetValue())
	}
	if e1.loc.GetLocality().GetSubZone() != "e1" {
		t.Errorf("sub_zone %q, want the instance id", e1.loc.GetLocality().GetSubZone())
	}
}

func TestZonePriority(t *testing.T) {
	vs := views(
		inst("A", "a1", "10.0.0.1", MetaZone, "z1"),
		inst("A", "a2", "10.0.0.2", MetaZone, "z2"),
		inst("A", "a3", "10.0.0.3"),
	)
	prio := func(cla *endpoint.ClusterLoadAssignment) map[string]uint32 {
		out := map[string]uint32{}
		for _, l := range cla.Endpoints {
			out[l.GetLocality().GetZone()] = l.GetPriority()
		}
		return out
	}
	if got := prio(assignment("a", vs, buildOptions{kind: Envoy, zone: "z1"})); got["z1"] != 0 || got["z2"] != 1 || got[""] != 1 {
		t.Errorf("node in z1: %v, want z1 0, others 1", got)
	}
	// No endpoint in the node's zone: priority 0 must exist (grpc-go
	// rejects gaps), so every locality is 0.
	if got := prio(assignment("a", vs, buildOptions{kind: Envoy, zone: "z9"})); got["z1"] != 0 || got["z2"] != 0 {
		t.Errorf("node in z9: %v, want all 0", got)
	}
	if got := prio(assignment("a", vs, buildOptions{kind: Envoy})); got["z1"] != 0 || got["z2"] != 0 {
		t.Errorf("node without a zone: %v, want all 0", got)
	}
}

func TestBuildShapes(t *testing.T) {
	vs := views(inst("ECHO", "e1", "10.0.0.1", MetaGRPCPort, "50051"))
	env := build("echo", vs, buildOptions{kind: Envoy})
	if env.listener != nil || env.route != nil {
		t.Error("Envoy got a listener or route")
	}
	if env.cluster.GetTypedExtensionProtocolOptions()["envoy.extensions.upstreams.http.v3.HttpProtocolOptions"] == nil {
		t.Error("Envoy cluster of gRPC instances without HTTP/2 protocol options")
	}
	if plain := build("a", views(inst("A", "a1", "10.0.0.1")), buildOptions{kind: Envoy}); plain.cluster.GetTypedExtensionProtocolOptions() != nil {
		t.Error("HTTP/2 options on a cluster without gRPC instances")
	}
	g := build("echo", vs, buildOptions{kind: GRPC})
	if g.listener.GetName() != "echo" || g.route.GetName() != "echo" || g.cluster.GetName() != "echo" || g.cla.GetClusterName() != "echo" {
		t.Fatalf("names: %q %q %q %q", g.listener.GetName(), g.route.GetName(), g.cluster.GetName(), g.cla.GetClusterName())
	}
	m := &hcm.HttpConnectionManager{}
	if err := g.listener.GetApiListener().GetApiListener().UnmarshalTo(m); err != nil {
		t.Fatal(err)
	}
	fs := m.GetHttpFilters()
	if len(fs) == 0 || fs[len(fs)-1].GetName() != routerFilter {
		t.Errorf("filters %v: the router must be last", fs)
	}
	if m.GetRds().GetRouteConfigName() != "echo" || m.GetRds().GetConfigSource().GetAds() == nil {
		t.Errorf("rds %v, want echo over ADS", m.GetRds())
	}
	if c := g.route.GetVirtualHosts()[0].GetRoutes()[0].GetRoute().GetCluster(); c != "echo" {
		t.Errorf("route to %q, want echo", c)
	}
	empty := build("echo", nil, buildOptions{kind: GRPC})
	if empty.cluster != nil || empty.listener != nil || empty.cla == nil || len(empty.cla.Endpoints) != 0 {
		t.Errorf("no instances: %+v, want only an empty assignment", empty)
	}
}

func TestNames(t *testing.T) {
	in := inst("ORDERS", "o1", "10.0.0.1")
	in.VIPAddress = "orders,orders-v2, ,orders-v2"
	if got := namesOf(in); !slices.Equal(got, []string{"orders", "orders-v2"}) {
		t.Errorf("names %v, want [orders orders-v2]", got)
	}
}

// Two leases at one ip:port (a re-registration under a new id on the same
// host and port): one endpoint, the healthiest, then the newest.
func TestOneEndpointPerAddress(t *testing.T) {
	old, renewed := inst("A", "a-old", "10.0.0.1"), inst("A", "a-new", "10.0.0.1")
	down := inst("A", "a-down", "10.0.0.1")
	down.Status = registry.StatusDown
	vs := []registry.LeaseView{{Instance: down, Revision: 9}, {Instance: old, Revision: 3}, {Instance: renewed, Revision: 7}, {Instance: inst("A", "b", "10.0.0.2"), Revision: 1}}
	for _, kind := range []Kind{Envoy, GRPC} {
		cla := assignment("a", vs, buildOptions{kind: kind})
		n := 0
		for _, l := range cla.GetEndpoints() {
			n += len(l.GetLbEndpoints())
		}
		if n != 2 {
			t.Fatalf("%v: %d endpoints for two addresses, want 2: %v", kind, n, cla)
		}
		e := flatten(cla)["10.0.0.1:8080"].ep
		if e.GetEndpoint().GetHostname() != "a-new" || e.GetHealthStatus() != core.HealthStatus_HEALTHY {
			t.Errorf("%v: 10.0.0.1:8080 served as %s %v, want a-new HEALTHY (healthiest, then newest)", kind, e.GetEndpoint().GetHostname(), e.GetHealthStatus())
		}
	}
}
