package xds

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	cluster "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpoint "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listener "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	route "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcm "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	upstreamhttp "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/goreka/goreka/registry"
)

// Kind is the kind of xDS client a node is: the two kinds get differently
// shaped resources and never share a group.
type Kind uint8

// The client kinds.
const (
	// Envoy gets clusters and endpoints only: its listeners and routes are
	// the user's (or another control plane's).
	Envoy Kind = iota
	// GRPC is a proxyless gRPC client (grpc-go, grpc-java, grpcio): it also
	// gets an api_listener Listener and a RouteConfiguration per name, and
	// endpoints on the gRPC port.
	GRPC
)

func (k Kind) String() string {
	if k == GRPC {
		return "grpc"
	}
	return "envoy"
}

// Metadata keys goreka reads from instances.
const (
	// MetaGRPCPort is the grpc-spring convention for an instance's gRPC port.
	MetaGRPCPort = "gRPC_port"
	// MetaGRPCPortLegacy is grpc-spring's older spelling.
	MetaGRPCPortLegacy = "gRPC.port"
	// MetaZone is Spring Cloud's zone key (eureka.instance.metadata-map.zone).
	MetaZone = "zone"
	// MetaWeight is the endpoint weight, 1 to 128.
	MetaWeight = "weight"
)

// lbMetadataKey is the filter_metadata key Envoy's subset load balancer reads.
const lbMetadataKey = "envoy.lb"

// routerFilter is the name of the HTTP router filter; gRPC clients need it
// last in the HttpConnectionManager's filters (an empty list is rejected).
const routerFilter = "envoy.filters.http.router"

// buildOptions are the settings that shape resources, per group.
type buildOptions struct {
	kind Kind
	// zone is the node's own zone when zone priority applies ("" = none:
	// every locality has priority 0).
	zone string
	// heldAsUnhealthy serves a lease whose heartbeats stopped (expired, not
	// evicted: held by self-preservation) or that the health evidence calls
	// dead as UNHEALTHY; false serves each by the status goreka serves to
	// Eureka clients.
	heldAsUnhealthy bool
	// expired tells the leases past their expiry (the namespace's last
	// sweep); nil: none.
	expired map[instKey]struct{}
	// remote tells the instances of remote regions, by their region.
	remote map[*registry.Instance]string
}

// isExpired tells whether o's sweep found v's lease expired.
func (o buildOptions) isExpired(v registry.LeaseView) bool {
	if len(o.expired) == 0 {
		return false
	}
	_, ok := o.expired[instKey{strings.ToUpper(v.Instance.App), v.Instance.ID()}]
	return ok
}

// resources is what one name resolves to for one group.
type resources struct {
	cluster  *cluster.Cluster
	cla      *endpoint.ClusterLoadAssignment
	listener *listener.Listener        // gRPC only
	route    *route.RouteConfiguration // gRPC only
}

// build returns the resources of name over its instances (any order). An
// empty instance list gives only an empty ClusterLoadAssignment: the name
// has no cluster (nor listener) any more, but an EDS-only Envoy that
// declared the cluster itself is told that it has no endpoints.
func build(name string, views []registry.LeaseView, o buildOptions) resources {
	out := resources{cla: assignment(name, views, o)}
	if len(views) == 0 {
		return out
	}
	out.cluster = edsCluster(name, views, o)
	if o.kind == GRPC {
		out.listener = apiListener(name)
		out.route = routeConfig(name)
	}
	return out
}

func adsSource() *core.ConfigSource {
	return &core.ConfigSource{
		ResourceApiVersion:    core.ApiVersion_V3,
		ConfigSourceSpecifier: &core.ConfigSource_Ads{Ads: &core.AggregatedConfigSource{}},
	}
}

// edsCluster is an EDS cluster fed over ADS, with HTTP/2 when its instances
// serve gRPC (Envoy only: proxyless clients speak HTTP/2 anyway).
func edsCluster(name string, views []registry.LeaseView, o buildOptions) *cluster.Cluster {
	c := &cluster.Cluster{
		Name:                 name,
		ClusterDiscoveryType: &cluster.Cluster_Type{Type: cluster.Cluster_EDS},
		EdsClusterConfig:     &cluster.Cluster_EdsClusterConfig{EdsConfig: adsSource()},
		ConnectTimeout:       durationpb.New(5 * time.Second),
		LbPolicy:             cluster.Cluster_ROUND_ROBIN,
	}
	if o.kind == Envoy && slices.ContainsFunc(views, func(v registry.LeaseView) bool { return grpcPort(v.Instance) > 0 }) {
		opts, err := anypb.New(&upstreamhttp.HttpProtocolOptions{
			UpstreamProtocolOptions: &upstreamhttp.HttpProtocolOptions_ExplicitHttpConfig_{
				ExplicitHttpConfig: &upstreamhttp.HttpProtocolOptions_ExplicitHttpConfig{
					ProtocolConfig: &upstreamhttp.HttpProtocolOptions_ExplicitHttpConfig_Http2ProtocolOptions{
						Http2ProtocolOptions: &core.Http2ProtocolOptions{},
					},
				},
			},
		})
		if err == nil { // marshalling a well-formed message does not fail
			c.TypedExtensionProtocolOptions = map[string]*anypb.Any{
				"envoy.extensions.upstreams.http.v3.HttpProtocolOptions": opts,
			}
		}
	}
	return c
}

// apiListener is the Listener a proxyless gRPC client resolves xds:///name
// with: an api_listener whose HttpConnectionManager takes its routes from
// RDS over ADS and ends with the router filter.
func apiListener(name string) *listener.Listener {
	routerAny, _ := anypb.New(&routerv3.Router{})
	m, _ := anypb.New(&hcm.HttpConnectionManager{
		RouteSpecifier: &hcm.HttpConnectionManager_Rds{Rds: &hcm.Rds{
			ConfigSource:    adsSource(),
			RouteConfigName: name,
		}},
		HttpFilters: []*hcm.HttpFilter{{
			Name:       routerFilter,
			ConfigType: &hcm.HttpFilter_TypedConfig{TypedConfig: routerAny},
		}},
	})
	return &listener.Listener{Name: name, ApiListener: &listener.ApiListener{ApiListener: m}}
}

// routeConfig sends every call of the listener name to the cluster name.
// The route configuration belongs to that one listener, so its virtual
// host matches any authority.
func routeConfig(name string) *route.RouteConfiguration {
	return &route.RouteConfiguration{
		Name: name,
		VirtualHosts: []*route.VirtualHost{{
			Name:    name,
			Domains: []string{"*"},
			Routes: []*route.Route{{
				Match: &route.RouteMatch{PathSpecifier: &route.RouteMatch_Prefix{Prefix: ""}},
				Action: &route.Route_Route{Route: &route.RouteAction{
					ClusterSpecifier: &route.RouteAction_Cluster{Cluster: name},
				}},
			}},
		}},
	}
}

// assignment builds the ClusterLoadAssignment of name. Envoy gets one
// locality per zone, the endpoints weighted (its ROUND_ROBIN honours
// endpoint weights); a gRPC client gets one locality per instance (sub_zone
// = the instance id), because grpc-go's round_robin ignores endpoint
// weights and only the weights of localities split its traffic. Either way
// a locality's weight is the sum of its endpoints' weights, never 0.
func assignment(name string, views []registry.LeaseView, o buildOptions) *endpoint.ClusterLoadAssignment {
	type loc struct {
		region, zone, sub string
		weight            uint32
		eps               []*endpoint.LbEndpoint
	}
	locs := map[[3]string]*loc{}
	for _, v := range dedupe(views, o) {
		in := v.Instance
		port := servingPort(in, o.kind)
		w := weight(in)
		zone := zoneOf(in)
		k := [3]string{o.remote[in], zone, ""}
		if o.kind == GRPC {
			k[2] = in.ID()
		}
		l := locs[k]
		if l == nil {
			l = &loc{region: k[0], zone: zone, sub: k[2]}
			locs[k] = l
		}
		l.weight += w
		l.eps = append(l.eps, &endpoint.LbEndpoint{
			HostIdentifier: &endpoint.LbEndpoint_Endpoint{Endpoint: &endpoint.Endpoint{
				Address: &core.Address{Address: &core.Address_SocketAddress{SocketAddress: &core.SocketAddress{
					Address:       in.IPAddr,
					PortSpecifier: &core.SocketAddress_PortValue{PortValue: uint32(port)},
				}}},
				Hostname: in.HostName,
			}},
			HealthStatus:        o.health(v),
			LoadBalancingWeight: wrapperspb.UInt32(w),
			Metadata:            lbMetadata(in.Metadata),
		})
	}
	// Priorities: the node's own zone 0, the other local zones 1, remote
	// regions 2 (without zone priority: local 0, remote regions 2); then
	// the levels present are renumbered, because grpc-go rejects
	// priorities that do not run 0, 1, ... without a gap.
	level := func(l *loc) uint32 {
		switch {
		case l.region != "":
			return 2
		case o.zone != "" && l.zone != o.zone:
			return 1
		}
		return 0
	}
	var present [3]bool
	for _, l := range locs {
		present[level(l)] = true
	}
	var rank [3]uint32
	for i, n := 0, uint32(0); i < len(present); i++ {
		rank[i] = n
		if present[i] {
			n++
		}
	}
	keys := slices.SortedFunc(func(yield func([3]string) bool) {
		for k := range locs {
			if !yield(k) {
				return
			}
		}
	}, func(a, b [3]string) int {
		return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1]), cmp.Compare(a[2], b[2]))
	})
	cla := &endpoint.ClusterLoadAssignment{ClusterName: name}
	for _, k := range keys {
		l := locs[k]
		prio := rank[level(l)]
		slices.SortFunc(l.eps, func(a, b *endpoint.LbEndpoint) int {
			return cmp.Compare(socketKey(a), socketKey(b))
		})
		cla.Endpoints = append(cla.Endpoints, &endpoint.LocalityLbEndpoints{
			Locality:            &core.Locality{Region: l.region, Zone: l.zone, SubZone: l.sub},
			LbEndpoints:         l.eps,
			LoadBalancingWeight: wrapperspb.UInt32(max(l.weight, 1)),
			Priority:            prio,
		})
	}
	return cla
}

// dedupe keeps one view per socket address (ip:port), dropping those
// without one: grpc-go NACKs a whole assignment that lists an address
// twice, which happens when an instance re-registers under a new id on the
// same host and port, or two leases share an address. The healthiest is
// kept, then the newest revision, then the smallest id (deterministic).
func dedupe(views []registry.LeaseView, o buildOptions) []registry.LeaseView {
	type addr struct {
		ip   string
		port int
	}
	best := map[addr]int{}
	out := make([]registry.LeaseView, 0, len(views))
	for _, v := range views {
		port := servingPort(v.Instance, o.kind)
		if v.Instance.IPAddr == "" || port <= 0 {
			continue // EDS endpoints are IP literals with a port
		}
		a := addr{v.Instance.IPAddr, port}
		i, ok := best[a]
		if !ok {
			best[a] = len(out)
			out = append(out, v)
			continue
		}
		if better(v, out[i], o) {
			out[i] = v
		}
	}
	return out
}

// better tells whether v should be served rather than w at one address.
func better(v, w registry.LeaseView, o buildOptions) bool {
	if rv, rw := o.remote[v.Instance] != "", o.remote[w.Instance] != ""; rv != rw {
		return rw // a local instance before a remote region's copy
	}
	if hv, hw := healthRank(o.health(v)), healthRank(o.health(w)); hv != hw {
		return hv < hw
	}
	if v.Revision != w.Revision {
		return v.Revision > w.Revision
	}
	return v.Instance.ID() < w.Instance.ID()
}

// healthRank orders health statuses, the healthiest first.
func healthRank(h core.HealthStatus) int {
	switch h {
	case core.HealthStatus_HEALTHY:
		return 0
	case core.HealthStatus_UNKNOWN:
		return 1
	case core.HealthStatus_DRAINING:
		return 2
	}
	return 3
}

func socketKey(e *endpoint.LbEndpoint) string {
	sa := e.GetEndpoint().GetAddress().GetSocketAddress()
	return fmt.Sprintf("%s:%05d", sa.GetAddress(), sa.GetPortValue())
}

// servingPort is the port clients of kind reach the instance on: for a
// gRPC client its gRPC port (metadata gRPC_port), else the non-secure port,
// or the secure port when only it is enabled. 0 means none.
func servingPort(in *registry.Instance, k Kind) int {
	if k == GRPC {
		if p := grpcPort(in); p > 0 {
			return p
		}
	}
	if !in.Port.Enabled && in.SecurePort.Enabled {
		return in.SecurePort.Number
	}
	return in.Port.Number
}

// grpcPort is the instance's declared gRPC port, 0 if none or invalid.
func grpcPort(in *registry.Instance) int {
	for _, k := range []string{MetaGRPCPort, MetaGRPCPortLegacy} {
		if s, ok := in.Metadata[k]; ok {
			if p, err := strconv.Atoi(strings.TrimSpace(s)); err == nil && p > 0 && p < 65536 {
				return p
			}
		}
	}
	return 0
}

// weight is the metadata weight clamped to 1..128; 1 when unset or not a
// number.
func weight(in *registry.Instance) uint32 {
	w, err := strconv.Atoi(strings.TrimSpace(in.Metadata[MetaWeight]))
	if err != nil || w < 1 {
		return 1
	}
	return uint32(min(w, 128))
}

// zoneOf is the instance's zone: metadata zone (Spring Cloud), else the
// Amazon data center's availability zone, else "".
func zoneOf(in *registry.Instance) string {
	if z := in.Metadata[MetaZone]; z != "" {
		return z
	}
	if in.DataCenterInfo.Name == registry.DataCenterAmazon {
		return in.DataCenterInfo.Metadata["availability-zone"]
	}
	return ""
}

// health is v's xDS health status under o.
func (o buildOptions) health(v registry.LeaseView) core.HealthStatus {
	return health(v, o.heldAsUnhealthy, o.isExpired(v))
}

// health maps an instance's served status (the one goreka serves to
// Eureka clients) to an xDS health status. With heldAsUnhealthy, a lease
// whose heartbeats stopped (expired: held by self-preservation, or not
// evicted yet) or that goreka's own evidence holds DOWN (DownBy: the
// prober's verdict, a held lease under goreka.eviction.report-held-as-down)
// is UNHEALTHY whatever it would otherwise be, but for DRAINING and an
// operator's UP override (which MarkDown never replaces). Without it the
// served status alone decides: what a Eureka client sees.
func health(v registry.LeaseView, heldAsUnhealthy, expired bool) core.HealthStatus {
	s := v.Instance.Status
	h := core.HealthStatus_UNKNOWN
	switch s {
	case registry.StatusUp:
		h = core.HealthStatus_HEALTHY
	case registry.StatusDown, registry.StatusStarting:
		h = core.HealthStatus_UNHEALTHY
	case registry.StatusOutOfService:
		h = core.HealthStatus_DRAINING
	}
	if !heldAsUnhealthy || h == core.HealthStatus_UNHEALTHY || h == core.HealthStatus_DRAINING {
		return h
	}
	if expired || v.DownBy != 0 && s != registry.StatusUp {
		return core.HealthStatus_UNHEALTHY
	}
	return h
}

// lbMetadata puts every metadata entry under filter_metadata["envoy.lb"],
// for Envoy's subset load balancer (version=v2 canaries).
func lbMetadata(md map[string]string) *core.Metadata {
	if len(md) == 0 {
		return nil
	}
	fields := make(map[string]*structpb.Value, len(md))
	for k, v := range md {
		fields[k] = structpb.NewStringValue(v)
	}
	return &core.Metadata{FilterMetadata: map[string]*structpb.Struct{lbMetadataKey: {Fields: fields}}}
}
