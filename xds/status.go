package xds

import (
	"cmp"
	"maps"
	"slices"
	"sort"
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/grpc/status"
)

// ClientInfo is one connected xDS stream, as Clients reports it.
type ClientInfo struct {
	// Node is the node id the client sent (node.id).
	Node string
	// Kind is the resources' shape it gets (Envoy or GRPC).
	Kind Kind
	// Namespace is the namespace it sees; Served is false when that
	// namespace is not attached (the stream's watches are refused).
	Namespace string
	Served    bool
	// Zone is the locality zone the node declared ("" = none).
	Zone string
	// UserAgent is node.user_agent_name and its version, as sent.
	UserAgent string
	// Delta tells an incremental (delta) stream from a state-of-the-world one.
	Delta bool
	// Since is when the stream's first request arrived.
	Since time.Time
	// Acked is the last version the client ACKed, by type URL.
	Acked map[string]string
	// LastNACK is the last response the client rejected, nil if none.
	LastNACK *NACK
}

// NACK is a response a client rejected.
type NACK struct {
	TypeURL string
	// Version is the version the client kept (state of the world; "" for delta).
	Version string
	// Rejected is the version of the response it rejected, when known.
	Rejected string
	Nonce    string
	// Detail is the client's error message (Envoy's or gRPC's reason).
	Detail string
	At     time.Time
}

// Clients returns the connected xDS streams, ordered by namespace, node
// id, then connection time. Nil on a nil Server.
func (s *Server) Clients() []ClientInfo {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	out := make([]ClientInfo, 0, len(s.streams))
	for sk, si := range s.streams {
		c := ClientInfo{
			Node: si.node.GetId(), Kind: si.key.kind, Namespace: si.key.ns, Served: si.counted,
			Zone: si.node.GetLocality().GetZone(), UserAgent: userAgent(si.node),
			Delta: sk.delta, Since: si.since, Acked: maps.Clone(si.acked),
		}
		if c.Acked == nil {
			c.Acked = map[string]string{}
		}
		if si.nack != nil {
			n := *si.nack
			c.LastNACK = &n
		}
		out = append(out, c)
	}
	s.mu.Unlock()
	slices.SortFunc(out, func(a, b ClientInfo) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Node, b.Node), a.Since.Compare(b.Since))
	})
	return out
}

func userAgent(n *core.Node) string {
	v := n.GetUserAgentVersion()
	if bv := n.GetUserAgentBuildVersion().GetVersion(); v == "" && bv != nil {
		v = bv.String()
	}
	if v == "" {
		return n.GetUserAgentName()
	}
	return n.GetUserAgentName() + " " + v
}

// sentVersions is how many responses per type a stream remembers, to name
// the version a delta ACK or NACK (which carries only the nonce) refers to.
const sentVersions = 8

type sent struct{ nonce, version string }

// responded records a response sent on a stream, whose change was
// received at (zero: unknown). A response to a change made after the
// stream's previous response of that type is a push: its latency, from the
// change to now, is observed (a client's first answer, or an answer to a
// new subscription, is not).
func (s *Server) responded(sk streamKey, typeURL, nonce, version string, at time.Time) {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	si := s.streams[sk]
	if si == nil {
		return
	}
	if si.lastSent == nil {
		si.lastSent = map[string]time.Time{}
	}
	if prev, ok := si.lastSent[typeURL]; ok && !at.IsZero() && at.After(prev) {
		s.latency.WithLabelValues(typeName(typeURL)).Observe(now.Sub(at).Seconds())
	}
	si.lastSent[typeURL] = now
	if si.sent == nil {
		si.sent = map[string][]sent{}
	}
	l := append(si.sent[typeURL], sent{nonce, version})
	if len(l) > sentVersions {
		l = slices.Delete(l, 0, len(l)-sentVersions)
	}
	si.sent[typeURL] = l
}

// requested records what a request says of the previous response: an ACK
// (a nonce, no error) or a NACK. version is the request's version_info
// ("" on delta streams: the version is looked up by nonce).
func (s *Server) requested(sk streamKey, typeURL, version, nonce string, detail *status.Status) {
	if nonce == "" {
		return // a first request or a new subscription: neither ACK nor NACK
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	si := s.streams[sk]
	if si == nil || !isServed(typeURL) {
		return
	}
	var rejected string
	for _, x := range si.sent[typeURL] {
		if x.nonce == nonce {
			rejected = x.version
		}
	}
	if detail == nil {
		if version == "" {
			version = rejected
		}
		if version == "" {
			return
		}
		if si.acked == nil {
			si.acked = map[string]string{}
		}
		si.acked[typeURL] = version
		return
	}
	si.nack = &NACK{TypeURL: typeURL, Version: version, Rejected: rejected, Nonce: nonce, Detail: detail.Message(), At: s.now()}
}

func isServed(typeURL string) bool { return slices.Contains(served, typeURL) }

// Resolution is what one name resolves to for one client kind: the
// resources a client of that kind subscribed to it would be sent.
type Resolution struct {
	Namespace string
	Name      string
	Kind      Kind
	// Zone is the client zone the priorities are for ("" = none: all 0).
	Zone string
	// Revision is the registry revision the namespace's resources are at.
	Revision int64
	// Cluster is the cluster's name, "" when the name has no instance left
	// (its assignment is then empty).
	Cluster string
	// HTTP2 is set when the cluster speaks HTTP/2 upstream (Envoy, and
	// instances that declare a gRPC port).
	HTTP2 bool
	// Listener is the api_listener name (gRPC clients only, else "").
	Listener string
	// Endpoints are the assignment's endpoints, by priority, zone, address.
	Endpoints []Endpoint
}

// Endpoint is one endpoint of a Resolution.
type Endpoint struct {
	Address  string
	Port     uint32
	Hostname string
	// Health is the xDS health status: HEALTHY, UNHEALTHY, DRAINING, UNKNOWN.
	Health   string
	Weight   uint32
	Zone     string
	SubZone  string // the instance id for gRPC clients (one locality each)
	Priority uint32
	// LocalityWeight is the weight of the endpoint's locality.
	LocalityWeight uint32
	// Metadata is filter_metadata["envoy.lb"]: the instance's metadata.
	Metadata map[string]string
}

// Resolve tells what name (a lower-cased application name or a VIP
// address) resolves to in namespace for clients of kind, without zone
// priorities. ok is false when the namespace is not attached or the name
// is unknown there.
func (s *Server) Resolve(namespace, name string, kind Kind) (Resolution, bool) {
	return s.ResolveZone(namespace, name, kind, "")
}

// ResolveZone is Resolve for a client that declares zone: with
// goreka.xds.zone-priority on, its zone's endpoints get priority 0.
func (s *Server) ResolveZone(namespace, name string, kind Kind, zone string) (Resolution, bool) {
	if s == nil {
		return Resolution{}, false
	}
	s.mu.Lock()
	sp := s.spaces[namespace]
	s.mu.Unlock()
	if sp == nil {
		return Resolution{}, false
	}
	if !s.cfg.ZonePriority {
		zone = ""
	}
	o := buildOptions{kind: kind, zone: zone, heldAsUnhealthy: s.cfg.HeldAsUnhealthy}
	sp.mu.Lock()
	o = sp.optsLocked(o)
	views := sp.idx.views(name)
	known := sp.idx.known(name)
	rev := sp.idx.rev
	r := build(name, views, o)
	sp.mu.Unlock()
	if !known {
		return Resolution{}, false
	}
	out := Resolution{Namespace: namespace, Name: name, Kind: kind, Zone: zone, Revision: rev}
	if r.cluster != nil {
		out.Cluster = r.cluster.GetName()
		out.HTTP2 = len(r.cluster.GetTypedExtensionProtocolOptions()) > 0
	}
	if r.listener != nil {
		out.Listener = r.listener.GetName()
	}
	for _, l := range r.cla.GetEndpoints() {
		for _, e := range l.GetLbEndpoints() {
			sa := e.GetEndpoint().GetAddress().GetSocketAddress()
			ep := Endpoint{
				Address: sa.GetAddress(), Port: sa.GetPortValue(), Hostname: e.GetEndpoint().GetHostname(),
				Health: e.GetHealthStatus().String(), Weight: e.GetLoadBalancingWeight().GetValue(),
				Zone: l.GetLocality().GetZone(), SubZone: l.GetLocality().GetSubZone(),
				Priority: l.GetPriority(), LocalityWeight: l.GetLoadBalancingWeight().GetValue(),
			}
			if f := e.GetMetadata().GetFilterMetadata()[lbMetadataKey].GetFields(); len(f) > 0 {
				ep.Metadata = make(map[string]string, len(f))
				for k, v := range f {
					ep.Metadata[k] = v.GetStringValue()
				}
			}
			out.Endpoints = append(out.Endpoints, ep)
		}
	}
	sort.SliceStable(out.Endpoints, func(i, j int) bool {
		a, b := out.Endpoints[i], out.Endpoints[j]
		return cmp.Or(cmp.Compare(a.Priority, b.Priority), cmp.Compare(a.Zone, b.Zone), cmp.Compare(a.Address, b.Address), cmp.Compare(a.Port, b.Port)) < 0
	})
	return out, true
}
