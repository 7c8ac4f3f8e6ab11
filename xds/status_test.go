package xds

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	statuspb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/goreka/goreka/registry"
)

// ads opens a real ADS stream (gRPC over loopback) to s.
func ads(t *testing.T, s *Server) discovery.AggregatedDiscoveryService_StreamAggregatedResourcesClient {
	t.Helper()
	if s.Addr() == nil {
		if err := s.Start(t.Context(), "127.0.0.1:0"); err != nil {
			t.Fatal(err)
		}
	}
	cc, err := grpc.NewClient(s.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), wait)
	t.Cleanup(cancel)
	st, err := discovery.NewAggregatedDiscoveryServiceClient(cc).StreamAggregatedResources(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func roundTrip(t *testing.T, st discovery.AggregatedDiscoveryService_StreamAggregatedResourcesClient, req *discovery.DiscoveryRequest) *discovery.DiscoveryResponse {
	t.Helper()
	if err := st.Send(req); err != nil {
		t.Fatal(err)
	}
	resp, err := st.Recv()
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// Clients reports each stream's node, kind, namespace, zone, connection
// time, the version it ACKed per type and its last NACK, as the client
// sent them over a real ADS stream.
func TestClientsReportsACKsAndNACKs(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	f := newFixture(t, Config{Now: func() time.Time { return at }})
	f.register(inst("ORDERS", "o1", "10.0.0.1"), inst("USERS", "u1", "10.0.0.2"))
	f.sync()

	n := node("envoy-7")
	n.Locality = &core.Locality{Zone: "z1"}
	st := ads(t, f.s)
	cds := roundTrip(t, st, &discovery.DiscoveryRequest{Node: n, TypeUrl: resource.ClusterType})
	// ACK the clusters; ask for endpoints (the stream handles requests in
	// order, so the ACK is recorded once the endpoints arrive).
	if err := st.Send(&discovery.DiscoveryRequest{TypeUrl: resource.ClusterType, VersionInfo: cds.GetVersionInfo(), ResponseNonce: cds.GetNonce()}); err != nil {
		t.Fatal(err)
	}
	eds := roundTrip(t, st, &discovery.DiscoveryRequest{TypeUrl: resource.EndpointType, ResourceNames: []string{"orders"}})
	// NACK the endpoints, then ask again for the clusters to know it landed.
	if err := st.Send(&discovery.DiscoveryRequest{TypeUrl: resource.EndpointType, ResourceNames: []string{"orders"}, ResponseNonce: eds.GetNonce(),
		ErrorDetail: &statuspb.Status{Code: 3, Message: "bad endpoint"}}); err != nil {
		t.Fatal(err)
	}
	f.register(inst("ORDERS", "o2", "10.0.0.3"))
	if _, err := st.Recv(); err != nil { // the pushes after the change
		t.Fatal(err)
	}

	cs := f.s.Clients()
	if len(cs) != 1 {
		t.Fatalf("Clients() = %+v, want one", cs)
	}
	c := cs[0]
	if c.Node != "envoy-7" || c.Kind != Envoy || c.Namespace != "default" || !c.Served || c.Zone != "z1" || c.Delta || !c.Since.Equal(at) {
		t.Errorf("client %+v", c)
	}
	if c.Acked[resource.ClusterType] != cds.GetVersionInfo() || cds.GetVersionInfo() == "" {
		t.Errorf("ACKed CDS version %q, want %q", c.Acked[resource.ClusterType], cds.GetVersionInfo())
	}
	if _, ok := c.Acked[resource.EndpointType]; ok {
		t.Errorf("EDS reported ACKed (%q); it was NACKed", c.Acked[resource.EndpointType])
	}
	if c.LastNACK == nil || c.LastNACK.TypeURL != resource.EndpointType || c.LastNACK.Detail != "bad endpoint" ||
		c.LastNACK.Rejected != eds.GetVersionInfo() || c.LastNACK.Nonce != eds.GetNonce() || !c.LastNACK.At.Equal(at) {
		t.Errorf("last NACK %+v, want EDS %q rejected with bad endpoint", c.LastNACK, eds.GetVersionInfo())
	}
}

// Resolve answers what a client of each kind gets for a name: the cluster,
// and the endpoints with their address, port, health, weight, zone,
// priority and metadata.
func TestResolve(t *testing.T) {
	f := newFixture(t, Config{ZonePriority: true, HeldAsUnhealthy: true})
	a := inst("ORDERS", "o1", "10.0.0.1", MetaGRPCPort, "9090", MetaZone, "z1", MetaWeight, "90", "version", "v1")
	a.VIPAddress = "orders-vip"
	b := inst("ORDERS", "o2", "10.0.0.2", MetaZone, "z2", MetaWeight, "10")
	b.Status = registry.StatusOutOfService
	b.VIPAddress = "orders-vip"
	f.register(a, b)
	f.sync()

	r, ok := f.s.Resolve("default", "orders", Envoy)
	if !ok {
		t.Fatal("orders does not resolve")
	}
	if r.Cluster != "orders" || !r.HTTP2 || r.Listener != "" || r.Revision != f.reg.Revision() || len(r.Endpoints) != 2 {
		t.Fatalf("Envoy resolution %+v", r)
	}
	e0, e1 := r.Endpoints[0], r.Endpoints[1]
	if e0.Address != "10.0.0.1" || e0.Port != 8080 || e0.Health != "HEALTHY" || e0.Weight != 90 || e0.Zone != "z1" || e0.Priority != 0 || e0.Metadata["version"] != "v1" {
		t.Errorf("Envoy endpoint 0: %+v", e0)
	}
	if e1.Address != "10.0.0.2" || e1.Health != "DRAINING" || e1.Weight != 10 || e1.Zone != "z2" {
		t.Errorf("Envoy endpoint 1: %+v", e1)
	}

	g, ok := f.s.ResolveZone("default", "orders-vip", GRPC, "z2")
	if !ok || g.Listener != "orders-vip" || g.Cluster != "orders-vip" || len(g.Endpoints) != 2 {
		t.Fatalf("gRPC resolution %+v", g)
	}
	if e := g.Endpoints[0]; e.Address != "10.0.0.2" || e.Priority != 0 || e.Zone != "z2" {
		t.Errorf("gRPC endpoint 0 from zone z2: %+v, want 10.0.0.2 of z2 at priority 0", e)
	}
	if e := g.Endpoints[1]; e.Port != 9090 || e.SubZone != "o1" || e.Priority != 1 || e.LocalityWeight != 90 {
		t.Errorf("gRPC endpoint from zone z2: %+v, want port 9090, sub-zone o1, priority 1, locality weight 90", e)
	}
	if _, ok := f.s.Resolve("default", "nope", Envoy); ok {
		t.Error("an unknown name resolved")
	}
	if _, ok := f.s.Resolve("team-a", "orders", Envoy); ok {
		t.Error("a name resolved in a namespace that is not attached")
	}
	var nilS *Server
	if _, ok := nilS.Resolve("default", "orders", Envoy); ok || nilS.Clients() != nil {
		t.Error("a nil server resolved or listed clients")
	}
}

// version_info is the registry revision of the change that produced the
// response, and echoing it back (an ACK) causes no resend.
func TestVersionIsTheRegistryRevision(t *testing.T) {
	f := newFixture(t, Config{})
	f.register(inst("A", "a1", "10.0.0.1"), inst("B", "b1", "10.0.0.2"))
	f.sync()
	rev1 := strconv.FormatInt(f.reg.Revision(), 10)

	st := ads(t, f.s)
	cds := roundTrip(t, st, &discovery.DiscoveryRequest{Node: node("e"), TypeUrl: resource.ClusterType})
	if cds.GetVersionInfo() != rev1 {
		t.Fatalf("CDS version_info %q, want the registry revision %s", cds.GetVersionInfo(), rev1)
	}
	if err := st.Send(&discovery.DiscoveryRequest{TypeUrl: resource.ClusterType, VersionInfo: cds.GetVersionInfo(), ResponseNonce: cds.GetNonce()}); err != nil {
		t.Fatal(err)
	}
	eds := roundTrip(t, st, &discovery.DiscoveryRequest{TypeUrl: resource.EndpointType, ResourceNames: []string{"a"}})
	if eds.GetVersionInfo() != rev1 {
		t.Fatalf("EDS version_info %q, want %s", eds.GetVersionInfo(), rev1)
	}
	if err := st.Send(&discovery.DiscoveryRequest{TypeUrl: resource.EndpointType, ResourceNames: []string{"a"}, VersionInfo: eds.GetVersionInfo(), ResponseNonce: eds.GetNonce()}); err != nil {
		t.Fatal(err)
	}

	// B's change moves nothing the stream watches; A's is the next answer,
	// at A's revision (and not a resend of the ACKed versions).
	if err := f.reg.StatusUpdate("B", "b1", registry.StatusOutOfService, time.Time{}, false); err != nil {
		t.Fatal(err)
	}
	if err := f.reg.StatusUpdate("A", "a1", registry.StatusOutOfService, time.Time{}, false); err != nil {
		t.Fatal(err)
	}
	revA := strconv.FormatInt(f.reg.Revision(), 10)
	got, err := st.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if got.GetTypeUrl() != resource.EndpointType || got.GetVersionInfo() != revA {
		t.Fatalf("after A's status change: %s at %q, want EDS at revision %s", typeName(got.GetTypeUrl()), got.GetVersionInfo(), revA)
	}
	// A registration adds a cluster: CDS at the registration's revision.
	f.register(inst("C", "c1", "10.0.0.3"))
	revC := strconv.FormatInt(f.reg.Revision(), 10)
	got, err = st.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if got.GetTypeUrl() != resource.ClusterType || got.GetVersionInfo() != revC {
		t.Fatalf("after C registered: %s at %q, want CDS at revision %s", typeName(got.GetTypeUrl()), got.GetVersionInfo(), revC)
	}
}

// A version the cache has not reached (a client of a previous goreka with
// a higher revision) is answered with the full state, as a new client is.
func TestVersionAheadIsAnsweredInFull(t *testing.T) {
	f := newFixture(t, Config{})
	f.register(inst("A", "a1", "10.0.0.1"))
	f.sync()
	g := f.s.mustGroup(t, node("e"))
	c := g.cache(resource.ClusterType)
	if v := c.cacheVersion("999999"); v != "999999" {
		t.Errorf("a revision ahead maps to %q, want it unchanged", v)
	}
	rev := strconv.FormatInt(f.reg.Revision(), 10)
	if v := c.cacheVersion(rev); !strings.HasPrefix(v, c.prefix) {
		t.Errorf("the current revision maps to %q, want a version of prefix %q", v, c.prefix)
	}
	if got, _ := f.s.vers.revision(c.prefix + "0"); got != rev {
		t.Errorf("the cache's first version is revision %q, want %s", got, rev)
	}
	if got, _ := f.s.vers.revision("other-7"); got != "other-7" {
		t.Errorf("an unknown version became %q", got)
	}
}
