package xdsview

import (
	"context"
	"reflect"
	"strconv"
	"testing"
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	statuspb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/goreka/goreka/registry"
	"github.com/goreka/goreka/server/api/wire"
	"github.com/goreka/goreka/xds"
)

func TestNilServerIsNoXDS(t *testing.T) {
	if v := New(nil, "default"); v != nil {
		t.Errorf("New(nil) = %#v, want a nil api.XDS (xDS off)", v)
	}
}

func register(t *testing.T, reg *registry.Registry, id string, port int, zone, weight string) {
	t.Helper()
	in := &registry.Instance{InstanceID: id, App: "ECHO", HostName: id + ".local", IPAddr: "127.0.0.1",
		Port: registry.Port{Number: port, Enabled: true}, VIPAddress: "echo", Status: registry.StatusUp,
		Metadata:       map[string]string{"zone": zone, "weight": weight, "gRPC_port": strconv.Itoa(port + 1000)},
		DataCenterInfo: registry.DataCenterInfo{Name: registry.DataCenterMyOwn}}
	if _, err := reg.Register(in, false); err != nil {
		t.Fatal(err)
	}
}

// The view shows one namespace's clients, with the type URLs' short
// names, and resolves names there, in the read API's shapes.
func TestViewOfARealServer(t *testing.T) {
	reg, other := registry.New(registry.Options{}), registry.New(registry.Options{})
	s := xds.New(xds.Config{ZonePriority: true, HeldAsUnhealthy: true})
	s.Attach("default", reg)
	s.Attach("dev", other)
	register(t, reg, "e1", 8081, "z1", "90")
	register(t, reg, "e2", 8082, "z2", "10")
	if err := s.Start(t.Context(), "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	v, dev := New(s, "default"), New(s, "dev")

	// Resolve waits for the feeder's first view (an ADS round trip below
	// proves it); resolve after the stream has been answered.
	cc, err := grpc.NewClient(s.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	st, err := discovery.NewAggregatedDiscoveryServiceClient(cc).StreamAggregatedResources(ctx)
	if err != nil {
		t.Fatal(err)
	}
	n := &core.Node{Id: "grpc-1", UserAgentName: "gRPC Go", Locality: &core.Locality{Zone: "z1"}}
	send := func(r *discovery.DiscoveryRequest) {
		t.Helper()
		if err := st.Send(r); err != nil {
			t.Fatal(err)
		}
	}
	send(&discovery.DiscoveryRequest{Node: n, TypeUrl: resource.ListenerType, ResourceNames: []string{"echo"}})
	lds, err := st.Recv()
	if err != nil {
		t.Fatal(err)
	}
	send(&discovery.DiscoveryRequest{TypeUrl: resource.ListenerType, ResourceNames: []string{"echo"}, VersionInfo: lds.GetVersionInfo(), ResponseNonce: lds.GetNonce()})
	// The stream handles requests in order: once this one is answered the
	// ACK above is recorded.
	send(&discovery.DiscoveryRequest{TypeUrl: resource.ClusterType, ResourceNames: []string{"echo"}})
	cds, err := st.Recv()
	if err != nil {
		t.Fatal(err)
	}
	// NACK the cluster; the answer to the next request says it is recorded.
	send(&discovery.DiscoveryRequest{TypeUrl: resource.ClusterType, ResourceNames: []string{"echo"}, ResponseNonce: cds.GetNonce(),
		ErrorDetail: &statuspb.Status{Code: 3, Message: "cluster echo: bad"}})
	send(&discovery.DiscoveryRequest{TypeUrl: resource.RouteType, ResourceNames: []string{"echo"}})
	if _, err := st.Recv(); err != nil {
		t.Fatal(err)
	}

	got := v.Clients()
	if len(got) != 1 {
		t.Fatalf("Clients = %+v, want grpc-1's stream", got)
	}
	c := got[0]
	if _, err := time.Parse(time.RFC3339, c.Since); err != nil || c.UserAgent != "gRPC Go" || c.Delta {
		t.Errorf("client %+v: since %q (%v), want RFC 3339, user agent gRPC Go, not delta", c, c.Since, err)
	}
	c.Since, c.UserAgent = "", ""
	nack := c.LastNACK
	c.LastNACK = nil
	want := wire.XDSClient{Node: "grpc-1", Kind: "grpc", Namespace: "default", Zone: "z1", Acked: map[string]string{"lds": lds.GetVersionInfo()}}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("client %+v, want %+v", c, want)
	}
	if nack == nil || nack.Type != "cds" || nack.Rejected != cds.GetVersionInfo() || nack.Detail != "cluster echo: bad" || nack.At == "" {
		t.Errorf("last NACK %+v, want cds %s rejected with its detail", nack, cds.GetVersionInfo())
	}
	if got := dev.Clients(); len(got) != 0 {
		t.Errorf("dev's Clients = %+v, want none (the client is default's)", got)
	}

	r, ok := v.Resolve("echo", "grpc", "z1")
	if !ok || r.Kind != "grpc" || r.Cluster == "" || r.Listener != "echo" || r.Revision != reg.Revision() || len(r.Endpoints) != 2 {
		t.Fatalf("Resolve(echo, grpc, z1) = %v %+v", ok, r)
	}
	e1, e2 := r.Endpoints[0], r.Endpoints[1]
	if e1.Port != 9081 || e1.SubZone != "e1" || e1.Zone != "z1" || e1.Priority != 0 || e1.LocalityWeight != 90 || e1.Health != "HEALTHY" || e1.HostName != "e1.local" ||
		e2.Port != 9082 || e2.Zone != "z2" || e2.Priority != 1 || e2.LocalityWeight != 10 {
		t.Errorf("endpoints %+v", r.Endpoints)
	}
	if r, ok := v.Resolve("echo", "envoy", ""); !ok || r.Kind != "envoy" || r.Listener != "" || !r.HTTP2 || len(r.Endpoints) != 2 ||
		r.Endpoints[0].Port != 8081 || r.Endpoints[0].Weight != 90 || r.Endpoints[1].Priority != 0 {
		t.Errorf("Resolve(echo, envoy) = %v %+v", ok, r)
	}
	if _, ok := v.Resolve("nothing", "envoy", ""); ok {
		t.Error("an unknown name resolved")
	}
	if _, ok := dev.Resolve("echo", "envoy", ""); ok {
		t.Error("default's name resolved in dev")
	}
}
