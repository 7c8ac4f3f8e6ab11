// Package xdsview shows the xDS server's status (package xds) in the read
// API's shapes (package wire): the view of one namespace that the read
// API's /xds endpoints and the dashboard's xDS section read (api.XDS). It
// is a package of its own so that neither server nor server/api imports
// the xDS protocol's libraries.
package xdsview

import (
	"strings"
	"time"

	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"

	"github.com/goreka/goreka/server/api"
	"github.com/goreka/goreka/server/api/wire"
	"github.com/goreka/goreka/xds"
)

// New returns namespace ns's view of s, or nil (no xDS served) when s is
// nil.
func New(s *xds.Server, ns string) api.XDS {
	if s == nil {
		return nil
	}
	return view{s, ns}
}

type view struct {
	s  *xds.Server
	ns string
}

// typeNames are the short names of the ACKed types.
var typeNames = map[string]string{
	resource.ClusterType: "cds", resource.EndpointType: "eds",
	resource.ListenerType: "lds", resource.RouteType: "rds",
}

// typeName is a type URL's short name (the URL itself if it has none).
func typeName(u string) string {
	if n, ok := typeNames[u]; ok {
		return n
	}
	return u
}

func rfc3339(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

// Clients lists the streams of the namespace's nodes, in xds's order.
func (v view) Clients() []wire.XDSClient {
	var out []wire.XDSClient
	for _, c := range v.s.Clients() {
		if c.Namespace != v.ns {
			continue
		}
		acked := make(map[string]string, len(c.Acked))
		for t, ver := range c.Acked {
			acked[typeName(t)] = ver
		}
		wc := wire.XDSClient{Node: c.Node, Kind: c.Kind.String(), Namespace: c.Namespace, Zone: c.Zone, Acked: acked,
			UserAgent: c.UserAgent, Delta: c.Delta, Since: rfc3339(c.Since)}
		if n := c.LastNACK; n != nil {
			wc.LastNACK = &wire.XDSNACK{Type: typeName(n.TypeURL), Rejected: n.Rejected, Detail: n.Detail, At: rfc3339(n.At)}
		}
		out = append(out, wc)
	}
	return out
}

// Resolve is xds's ResolveZone in the namespace.
func (v view) Resolve(name, kind, zone string) (wire.XDSResolution, bool) {
	k := xds.Envoy
	if strings.EqualFold(kind, api.XDSKindGRPC) {
		k = xds.GRPC
	}
	r, ok := v.s.ResolveZone(v.ns, name, k, zone)
	if !ok {
		return wire.XDSResolution{}, false
	}
	out := wire.XDSResolution{Name: r.Name, Kind: r.Kind.String(), Zone: r.Zone, Cluster: r.Cluster, HTTP2: r.HTTP2,
		Listener: r.Listener, Revision: r.Revision, Endpoints: make([]wire.XDSEndpoint, 0, len(r.Endpoints))}
	for _, e := range r.Endpoints {
		out.Endpoints = append(out.Endpoints, wire.XDSEndpoint{HostName: e.Hostname, Address: e.Address, Port: int(e.Port),
			Health: e.Health, Weight: int(e.Weight), Zone: e.Zone, SubZone: e.SubZone, Priority: int(e.Priority), LocalityWeight: int(e.LocalityWeight)})
	}
	return out, true
}
