package xds

import (
	"io"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpoint "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/envoyproxy/go-control-plane/pkg/server/stream/v3"
	"github.com/prometheus/client_golang/prometheus/testutil"
	statuspb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/goreka/goreka/registry"
	"github.com/goreka/goreka/registry/clocktest"
)

// wait is generous: the tests run on a loaded 2-core CI machine, and a
// failure shows up as a timeout, never as a flaky ordering.
const wait = 20 * time.Second

// fixture is a registry attached to an xDS server, with a way to wait until
// the server's resources are at a revision.
type fixture struct {
	t     *testing.T
	clock *clocktest.Clock // the registry's, and the server's unless the test sets Now
	reg   *registry.Registry
	s     *Server

	mu   sync.Mutex
	cond *sync.Cond
	revs map[string]int64
}

func newFixture(t *testing.T, cfg Config) *fixture {
	t.Helper()
	clock := clocktest.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	f := &fixture{t: t, clock: clock, reg: registry.New(registry.Options{Now: clock.Now}), revs: map[string]int64{}}
	f.cond = sync.NewCond(&f.mu)
	if cfg.Now == nil {
		cfg.Now = clock.Now
	}
	f.s = New(cfg)
	f.s.synced = func(ns string, rev int64) {
		f.mu.Lock()
		f.revs[ns] = rev
		f.mu.Unlock()
		f.cond.Broadcast()
	}
	t.Cleanup(f.s.Close)
	f.s.Attach("default", f.reg)
	return f
}

// sync waits until the default namespace's resources hold every change of
// the registry so far.
func (f *fixture) sync() {
	f.t.Helper()
	want := f.reg.Revision()
	timer := time.AfterFunc(wait, f.cond.Broadcast)
	defer timer.Stop()
	deadline := time.Now().Add(wait)
	f.mu.Lock()
	defer f.mu.Unlock()
	for f.revs["default"] < want {
		if time.Now().After(deadline) {
			f.t.Fatalf("xds resources at revision %d after %v, want %d", f.revs["default"], wait, want)
		}
		f.cond.Wait()
	}
}

func (f *fixture) register(ins ...*registry.Instance) {
	f.t.Helper()
	for _, in := range ins {
		if _, err := f.reg.Register(in, false); err != nil {
			f.t.Fatal(err)
		}
	}
}

func node(id string, kv ...string) *core.Node {
	md := map[string]any{}
	for i := 0; i+1 < len(kv); i += 2 {
		md[kv[i]] = kv[i+1]
	}
	st, _ := structpb.NewStruct(md)
	return &core.Node{Id: id, Metadata: st, UserAgentName: "envoy"}
}

func grpcNode(id string) *core.Node {
	n := node(id)
	n.UserAgentName = "gRPC Go"
	return n
}

// sotw opens a state-of-the-world watch of names (nil: wildcard) and
// returns its first answer, or nil if it has none yet.
func sotw(t *testing.T, s *Server, n *core.Node, typeURL string, names ...string) cachev3.Response {
	t.Helper()
	sub := stream.NewSotwSubscription(names, true)
	ch := make(chan cachev3.Response, 1)
	cancel, err := router{s}.CreateWatch(&cachev3.Request{Node: n, TypeUrl: typeURL, ResourceNames: names}, &sub, ch)
	if err != nil {
		t.Fatal(err)
	}
	defer cancel()
	select {
	case r := <-ch:
		return r
	default:
		return nil
	}
}

func names(t *testing.T, r cachev3.Response) []string {
	t.Helper()
	if r == nil {
		return nil
	}
	d, err := r.GetDiscoveryResponse()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, a := range d.GetResources() {
		m, err := a.UnmarshalNew()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, cachev3.GetResourceName(m))
	}
	slices.Sort(out)
	return out
}

func TestGroupsPerNamespaceKindAndZone(t *testing.T) {
	f := newFixture(t, Config{ZonePriority: true})
	a, b := f.s.mustGroup(t, node("pod-1")), f.s.mustGroup(t, node("pod-2"))
	if a != b {
		t.Error("two Envoy nodes of the default namespace got different groups: resources are built per node")
	}
	if g := f.s.mustGroup(t, grpcNode("pod-3")); g == a {
		t.Error("a gRPC node shares the Envoy group")
	}
	if g := f.s.mustGroup(t, node("pod-4", NodeClient, "grpc")); g != f.s.mustGroup(t, grpcNode("pod-5")) {
		t.Error("goreka.client=grpc does not select the gRPC group")
	}
	zoned := node("pod-6")
	zoned.Locality = &core.Locality{Zone: "z1"}
	if g := f.s.mustGroup(t, zoned); g == a {
		t.Error("a node in zone z1 shares the zone-less group (its priorities differ)")
	}
	for i := range maxGroups + 10 {
		n := node("many")
		n.Locality = &core.Locality{Zone: "zone-" + strconv.Itoa(i)}
		f.s.mustGroup(t, n)
	}
	f.s.mu.Lock()
	sp := f.s.spaces["default"]
	f.s.mu.Unlock()
	sp.mu.Lock()
	groups := len(sp.groups)
	sp.mu.Unlock()
	if groups > maxGroups+1 {
		t.Errorf("%d groups after nodes named %d zones, want at most %d", groups, maxGroups+10, maxGroups+1)
	}
	if _, err := f.s.group(node("pod-7", NodeNamespace, "team-a")); err == nil {
		t.Error("a node of a namespace that is not attached was served")
	}
	reg2 := registry.New(registry.Options{})
	f.s.Attach("team-a", reg2)
	if g := f.s.mustGroup(t, node("pod-7", NodeNamespace, "team-a")); g == a {
		t.Error("namespace team-a shares the default namespace's group")
	}
	f.s.Attach("team-a", registry.New(registry.Options{})) // logged, ignored
	if g := f.s.mustGroup(t, node("pod-8", NodeNamespace, "team-a")); g != f.s.mustGroup(t, node("pod-7", NodeNamespace, "team-a")) {
		t.Error("attaching team-a again replaced its groups")
	}
}

func (s *Server) mustGroup(t *testing.T, n *core.Node) *group {
	t.Helper()
	g, err := s.group(n)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestEnvoyAndGRPCShapes(t *testing.T) {
	f := newFixture(t, Config{})
	orders := inst("ORDERS", "o1", "10.0.0.1", MetaGRPCPort, "9090")
	orders.VIPAddress = "orders-vip"
	f.register(orders, inst("USERS", "u1", "10.0.0.2"))
	f.sync()

	env, grpcN := node("envoy-1"), grpcNode("grpc-1")
	if got := names(t, sotw(t, f.s, env, resource.ClusterType)); !slices.Equal(got, []string{"orders", "orders-vip", "users"}) {
		t.Errorf("Envoy clusters %v, want orders, orders-vip, users", got)
	}
	if got := names(t, sotw(t, f.s, env, resource.ListenerType)); len(got) != 0 {
		t.Errorf("Envoy got listeners %v, want none", got)
	}
	// The ADS trap: a gRPC client names the one listener it needs, with
	// other listeners present; it must be answered at once.
	if got := names(t, sotw(t, f.s, grpcN, resource.ListenerType, "orders")); !slices.Equal(got, []string{"orders"}) {
		t.Errorf("gRPC listener for orders: %v", got)
	}
	if got := names(t, sotw(t, f.s, grpcN, resource.RouteType, "orders-vip")); !slices.Equal(got, []string{"orders-vip"}) {
		t.Errorf("gRPC route for orders-vip: %v", got)
	}
	if got := names(t, sotw(t, f.s, grpcN, resource.EndpointType, "users")); !slices.Equal(got, []string{"users"}) {
		t.Errorf("gRPC endpoints for users: %v", got)
	}
}

func TestChangeResendsOnlyItsApplication(t *testing.T) {
	f := newFixture(t, Config{})
	f.register(inst("A", "a1", "10.0.0.1"), inst("A", "a2", "10.0.0.2"), inst("B", "b1", "10.0.0.3"))
	f.sync()

	c := f.s.mustGroup(t, node("envoy-1")).cache(resource.EndpointType)
	sub := stream.NewDeltaSubscription(nil, nil, nil, true) // wildcard
	ch := make(chan cachev3.DeltaResponse, 1)
	req := &cachev3.DeltaRequest{Node: node("envoy-1"), TypeUrl: resource.EndpointType}
	if _, err := c.CreateDeltaWatch(req, &sub, ch); err != nil {
		t.Fatal(err)
	}
	first := <-ch
	if got := deltaNames(t, first); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("first delta answer %v, want a and b", got)
	}
	sub.SetReturnedResources(first.GetNextVersionMap())
	ack := &cachev3.DeltaRequest{Node: node("envoy-1"), TypeUrl: resource.EndpointType, ResponseNonce: "1"}
	cancel, err := c.CreateDeltaWatch(ack, &sub, ch)
	if err != nil {
		t.Fatal(err)
	}
	defer cancel()
	// A status update to the status A already has changes nothing.
	if err := f.reg.StatusUpdate("A", "a1", registry.StatusUp, time.Time{}, false); err != nil {
		t.Fatal(err)
	}
	f.sync()
	select {
	case r := <-ch:
		t.Fatalf("answer without a change: %v", deltaNames(t, r))
	default:
	}

	if err := f.reg.StatusUpdate("B", "b1", registry.StatusOutOfService, time.Time{}, false); err != nil {
		t.Fatal(err)
	}
	f.sync()
	select {
	case r := <-ch:
		if got := deltaNames(t, r); !slices.Equal(got, []string{"b"}) {
			t.Errorf("a change of B resent %v, want only b", got)
		}
		d, _ := r.GetDeltaDiscoveryResponse()
		cla := &endpoint.ClusterLoadAssignment{}
		if err := d.GetResources()[0].GetResource().UnmarshalTo(cla); err != nil {
			t.Fatal(err)
		}
		if h := cla.GetEndpoints()[0].GetLbEndpoints()[0].GetHealthStatus(); h != core.HealthStatus_DRAINING {
			t.Errorf("b1 health %v after OUT_OF_SERVICE, want DRAINING", h)
		}
	case <-time.After(wait):
		t.Fatal("no delta answer after a change of B")
	}
}

func deltaNames(t *testing.T, r cachev3.DeltaResponse) []string {
	t.Helper()
	d, err := r.GetDeltaDiscoveryResponse()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, res := range d.GetResources() {
		out = append(out, res.GetName())
	}
	slices.Sort(out)
	return out
}

func TestLastInstanceGoneKeepsEmptyAssignment(t *testing.T) {
	f := newFixture(t, Config{})
	f.register(inst("A", "a1", "10.0.0.1"), inst("B", "b1", "10.0.0.2"))
	f.sync()
	g := f.s.mustGroup(t, grpcNode("g"))
	if err := f.reg.Cancel("A", "a1", false); err != nil {
		t.Fatal(err)
	}
	f.sync()
	if got := names(t, sotw(t, f.s, grpcNode("g"), resource.ClusterType)); !slices.Equal(got, []string{"b"}) {
		t.Errorf("clusters after A's last instance left: %v, want b", got)
	}
	if got := names(t, sotw(t, f.s, grpcNode("g"), resource.ListenerType)); !slices.Equal(got, []string{"b"}) {
		t.Errorf("listeners after A's last instance left: %v, want b", got)
	}
	cla, ok := g.cache(resource.EndpointType).GetResources()["a"].(*endpoint.ClusterLoadAssignment)
	if !ok || len(cla.GetEndpoints()) != 0 {
		t.Errorf("assignment of a: %v, want an empty one", cla)
	}
}

func TestResyncAfterLag(t *testing.T) {
	f := newFixture(t, Config{Buffer: 1})
	// Hold the namespace's lock so that the feeder cannot drain while
	// changes queue: the subscription overflows and ends lagged.
	f.s.mu.Lock()
	sp := f.s.spaces["default"]
	f.s.mu.Unlock()
	// The feeder has read its first view: at revision 0 sync returned at
	// once, and a feeder that read its view only after the registrations
	// below reached their revision before it noticed the lag (the check
	// below failed 1 run in 50).
	f.register(inst("WARM", "w1", "10.0.1.1"))
	f.sync()
	sp.mu.Lock()
	for i := range 20 {
		f.register(inst("APP", "i"+string(rune('a'+i)), "10.0.0."+strconv.Itoa(i+1)))
	}
	sp.mu.Unlock()
	f.sync()
	cla := f.s.mustGroup(t, node("e")).cache(resource.EndpointType).GetResources()["app"].(*endpoint.ClusterLoadAssignment)
	if n := len(flatten(cla)); n != 20 {
		t.Errorf("after resynchronising: %d endpoints, want 20", n)
	}
	if f.s.resyncs.Load() == 0 {
		t.Error("the subscription never lagged: the test did not exercise the resynchronisation")
	}
}

func TestNilServerDoesNothing(t *testing.T) {
	var s *Server // goreka.xds.enabled false
	s.Attach("default", registry.New(registry.Options{}))
	if err := s.Start(t.Context(), "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if n := testutil.CollectAndCount(s.Collector()); n != 0 {
		t.Errorf("a nil server collected %d metrics", n)
	}
}

func TestClientsPushesAndNACKsAreCounted(t *testing.T) {
	f := newFixture(t, Config{})
	cb := f.s.callbacks()
	g := grpcNode("g-1")
	g.Metadata, _ = structpb.NewStruct(map[string]any{NodeNamespace: "default"})
	for _, req := range []*discovery.DiscoveryRequest{
		{Node: g, TypeUrl: resource.ListenerType, ResourceNames: []string{"echo"}},
		{Node: g, TypeUrl: resource.ListenerType, ResourceNames: []string{"echo"}, VersionInfo: "v1", ResponseNonce: "1",
			ErrorDetail: &statuspb.Status{Code: 3, Message: "listener echo: no router filter"}},
	} {
		if err := cb.OnStreamRequest(1, req); err != nil {
			t.Fatal(err)
		}
	}
	if err := cb.OnStreamRequest(2, &discovery.DiscoveryRequest{Node: node("e-1"), TypeUrl: resource.ClusterType}); err != nil {
		t.Fatal(err)
	}
	cb.OnStreamResponse(t.Context(), 2, nil, &discovery.DiscoveryResponse{TypeUrl: resource.ClusterType})

	if v := testutil.ToFloat64(f.s.clients.WithLabelValues("grpc", "default")); v != 1 {
		t.Errorf("gRPC clients %v, want 1 (one stream, two requests)", v)
	}
	if v := testutil.ToFloat64(f.s.nacks.WithLabelValues("lds")); v != 1 {
		t.Errorf("lds NACKs %v, want 1", v)
	}
	if v := testutil.ToFloat64(f.s.pushes.WithLabelValues("cds")); v != 1 {
		t.Errorf("cds pushes %v, want 1", v)
	}
	cb.OnStreamClosed(1, g)
	cb.OnStreamClosed(2, node("e-1"))
	if v := testutil.ToFloat64(f.s.clients.WithLabelValues("grpc", "default")) + testutil.ToFloat64(f.s.clients.WithLabelValues("envoy", "default")); v != 0 {
		t.Errorf("clients after both streams closed: %v, want 0", v)
	}
}

// A delta stream and a state-of-the-world stream share an id (each server
// numbers its streams from 1): they are two clients, and closing one
// leaves the other counted.
func TestDeltaAndSotwStreamsAreCountedApart(t *testing.T) {
	f := newFixture(t, Config{})
	cb := f.s.callbacks()
	if err := cb.OnStreamRequest(1, &discovery.DiscoveryRequest{Node: node("e-sotw"), TypeUrl: resource.ClusterType}); err != nil {
		t.Fatal(err)
	}
	if err := cb.OnStreamDeltaRequest(1, &discovery.DeltaDiscoveryRequest{Node: node("e-delta"), TypeUrl: resource.ClusterType}); err != nil {
		t.Fatal(err)
	}
	if v := testutil.ToFloat64(f.s.clients.WithLabelValues("envoy", "default")); v != 2 {
		t.Errorf("envoy clients %v, want 2 (a delta and a SotW stream, both id 1)", v)
	}
	cb.OnStreamClosed(1, node("e-sotw"))
	if v := testutil.ToFloat64(f.s.clients.WithLabelValues("envoy", "default")); v != 1 {
		t.Errorf("envoy clients after the SotW stream closed: %v, want 1", v)
	}
	cb.OnDeltaStreamClosed(1, node("e-delta"))
	if n := testutil.CollectAndCount(f.s.clients); n != 0 {
		t.Errorf("%d client series after both streams closed, want none", n)
	}
}

// A node naming a namespace that is not attached is refused and counted
// nowhere: no series per claimed name on an unauthenticated port.
func TestUnknownNamespaceIsNotCounted(t *testing.T) {
	f := newFixture(t, Config{})
	cb := f.s.callbacks()
	for i := range 50 {
		n := node("e", NodeNamespace, "ns-"+strconv.Itoa(i))
		if err := cb.OnStreamRequest(int64(i+1), &discovery.DiscoveryRequest{Node: n, TypeUrl: resource.ClusterType}); err != nil {
			t.Fatal(err)
		}
		if _, err := f.s.group(n); status.Code(err) != codes.NotFound {
			t.Fatalf("group of an unknown namespace: %v, want NotFound", err)
		}
	}
	if n := testutil.CollectAndCount(f.s.clients); n != 0 {
		t.Errorf("%d client series for unattached namespaces, want none", n)
	}
	for i := range 50 {
		cb.OnStreamClosed(int64(i+1), nil)
	}
	if len(f.s.streams) != 0 {
		t.Errorf("%d streams kept after closing", len(f.s.streams))
	}
}

// A delta client sends its node on the first request only: a NACK later on
// the stream is logged with the node recorded then.
func TestDeltaNACKLogsTheStreamsNode(t *testing.T) {
	var logs strings.Builder
	f := newFixture(t, Config{Logger: slog.New(slog.NewTextHandler(&syncWriter{w: &logs}, nil))})
	cb := f.s.callbacks()
	if err := cb.OnStreamDeltaRequest(7, &discovery.DeltaDiscoveryRequest{Node: node("envoy-7"), TypeUrl: resource.ClusterType}); err != nil {
		t.Fatal(err)
	}
	if err := cb.OnStreamDeltaRequest(7, &discovery.DeltaDiscoveryRequest{TypeUrl: resource.ClusterType, ResponseNonce: "1",
		ErrorDetail: &statuspb.Status{Code: 3, Message: "bad cluster"}}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "xds NACK\" node=envoy-7") {
		t.Errorf("NACK log without the stream's node:\n%s", logs.String())
	}
}

type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// A type URL goreka does not serve is refused, and no cache is made for it.
func TestUnknownTypeIsRefusedWithoutACache(t *testing.T) {
	f := newFixture(t, Config{})
	g := f.s.mustGroup(t, node("e"))
	for _, typeURL := range []string{"type.googleapis.com/made.up.One", "type.googleapis.com/made.up.Two"} {
		sub := stream.NewSotwSubscription(nil, true)
		_, err := router{f.s}.CreateWatch(&cachev3.Request{Node: node("e"), TypeUrl: typeURL}, &sub, make(chan cachev3.Response, 1))
		if status.Code(err) != codes.InvalidArgument {
			t.Errorf("SotW watch of %s: %v, want InvalidArgument", typeURL, err)
		}
		dsub := stream.NewDeltaSubscription(nil, nil, nil, true)
		_, err = router{f.s}.CreateDeltaWatch(&cachev3.DeltaRequest{Node: node("e"), TypeUrl: typeURL}, &dsub, make(chan cachev3.DeltaResponse, 1))
		if status.Code(err) != codes.InvalidArgument {
			t.Errorf("delta watch of %s: %v, want InvalidArgument", typeURL, err)
		}
	}
	if len(g.caches) != len(served) {
		t.Errorf("%d caches in the group, want the %d served types only", len(g.caches), len(served))
	}
}

// A status change of one instance moves only its application's assignment:
// the clusters, rebuilt equal, are not resent (a SotW CDS answer is every
// cluster, so resending them would cost O(apps) per change per client).
func TestStatusChangeMovesOnlyEDS(t *testing.T) {
	f := newFixture(t, Config{})
	f.register(inst("A", "a1", "10.0.0.1"), inst("B", "b1", "10.0.0.2"))
	f.sync()
	g := f.s.mustGroup(t, node("envoy-1"))
	watch := func(typeURL string) chan cachev3.Response {
		c := g.cache(typeURL)
		sub := stream.NewSotwSubscription(nil, true)
		ch := make(chan cachev3.Response, 1)
		if _, err := c.CreateWatch(&cachev3.Request{Node: node("envoy-1"), TypeUrl: typeURL}, &sub, ch); err != nil {
			t.Fatal(err)
		}
		first := <-ch
		sub.SetReturnedResources(first.GetReturnedResources())
		ch = make(chan cachev3.Response, 1)
		v, _ := first.GetVersion()
		cancel, err := c.CreateWatch(&cachev3.Request{Node: node("envoy-1"), TypeUrl: typeURL, VersionInfo: v, ResponseNonce: "1"}, &sub, ch)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cancel)
		return ch
	}
	cds, eds := watch(resource.ClusterType), watch(resource.EndpointType)
	if err := f.reg.StatusUpdate("B", "b1", registry.StatusOutOfService, time.Time{}, false); err != nil {
		t.Fatal(err)
	}
	f.sync()
	select {
	case r := <-eds:
		if v, _ := r.GetVersion(); v == "" {
			t.Error("EDS answered without a version")
		}
	case <-time.After(wait):
		t.Fatal("no EDS answer after a status change")
	}
	select {
	case r := <-cds:
		t.Errorf("a status change resent the clusters %v", names(t, r))
	default:
	}
}

// Close ends the feeders and waits for them, whether or not Start ran or
// failed; an Attach after Close starts nothing (it would race Close's
// wait).
func TestCloseWaitsAndAttachAfterCloseIsRefused(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer lis.Close()
	s := New(Config{})
	s.Attach("default", registry.New(registry.Options{}))
	if err := s.Start(t.Context(), lis.Addr().String()); err == nil {
		t.Fatal("Start on a taken port succeeded")
	}
	done := make(chan struct{})
	go func() { s.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(wait):
		t.Fatal("Close after a failed Start did not return: a feeder was left running")
	}
	s.Attach("late", registry.New(registry.Options{}))
	s.mu.Lock()
	_, late := s.spaces["late"]
	s.mu.Unlock()
	if late {
		t.Error("a namespace attached after Close is served")
	}
	s.Close() // again: returns
}
