package export

import (
	"cmp"
	"fmt"
	"hash/fnv"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/goreka/goreka/kube"
	"github.com/goreka/goreka/registry"
)

// Limits of the objects goreka writes.
const (
	// MaxSliceEndpoints is how many endpoints one EndpointSlice holds, the
	// convention of the built-in controller (--max-endpoints-per-slice).
	MaxSliceEndpoints = 100
	// maxEndpointsAddresses is what the built-in controller keeps in one
	// core/v1 Endpoints object; more are truncated and the object says so.
	maxEndpointsAddresses = 1000
	overCapacity          = "endpoints.kubernetes.io/over-capacity"
)

// Port names on the exported objects, one per Eureka port.
const (
	PortHTTP  = "http"  // the instance's port
	PortHTTPS = "https" // its securePort, when enabled
	PortGRPC  = "grpc"  // metadata gRPC_port
)

// ServiceName maps an Eureka application name to a DNS-1035 label, the
// name of its Service: lower case; every character other than a-z, 0-9
// and '-' becomes '-'; a name that does not start with a letter gets the
// prefix "x-"; trailing '-' are dropped; a name longer than 63 keeps 54
// characters and a hash of the whole name. "" when nothing is left.
func ServiceName(app string) string {
	b := []byte(strings.ToLower(app))
	for i, c := range b {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' {
			b[i] = '-'
		}
	}
	s := strings.Trim(string(b), "-")
	if s == "" {
		return ""
	}
	if s[0] < 'a' || s[0] > 'z' {
		s = "x-" + s
	}
	if len(s) > 63 {
		h := fnv.New32a()
		h.Write([]byte(app))
		s = fmt.Sprintf("%s-%08x", strings.TrimRight(s[:54], "-"), h.Sum32())
	}
	return s
}

// port is one named port of an endpoint.
type port struct {
	name   string
	number int32
}

// endpoint is one exported instance: an address, its ports and its
// conditions.
type endpoint struct {
	ip       netip.Addr
	id       string // the instance id, for a stable order and the log
	ports    []port // sorted by name
	status   registry.Status
	zone     string
	portsKey string // ports joined, the slice group
}

// exportable returns the endpoint of an instance, or a reason why it is
// not exported: an instance imported from Kubernetes, one without an IP
// address the API server accepts, one without a port.
func exportable(in *registry.Instance) (endpoint, string) {
	if kube.Imported(in.Metadata) {
		return endpoint{}, "imported"
	}
	ip, err := netip.ParseAddr(in.IPAddr)
	if err != nil {
		return endpoint{}, "no IP address"
	}
	ip = ip.Unmap()
	if ip.IsLoopback() || ip.IsUnspecified() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() || ip.IsMulticast() || ip.Zone() != "" {
		// The API server refuses these in Endpoints and EndpointSlices.
		return endpoint{}, "address the API server refuses"
	}
	e := endpoint{ip: ip, id: in.ID(), status: in.Status, zone: in.Metadata["zone"]}
	if in.Port.Enabled && validPort(in.Port.Number) {
		e.ports = append(e.ports, port{PortHTTP, int32(in.Port.Number)})
	}
	if in.SecurePort.Enabled && validPort(in.SecurePort.Number) {
		e.ports = append(e.ports, port{PortHTTPS, int32(in.SecurePort.Number)})
	}
	if g, err := strconv.Atoi(in.Metadata["gRPC_port"]); err == nil && validPort(g) {
		e.ports = append(e.ports, port{PortGRPC, int32(g)})
	}
	if len(e.ports) == 0 {
		return endpoint{}, "no port"
	}
	slices.SortFunc(e.ports, func(a, b port) int { return strings.Compare(a.name, b.name) })
	var k strings.Builder
	for _, p := range e.ports {
		fmt.Fprintf(&k, "%s=%d,", p.name, p.number)
	}
	e.portsKey = k.String()
	return e, ""
}

func validPort(n int) bool { return n > 0 && n < 65536 }

// endpoints returns an application's exported endpoints, sorted by
// address and instance id, one per (address, ports): two registrations of
// one address and ports are one endpoint, ready if either is.
func endpoints(instances []*registry.Instance) []endpoint {
	var out []endpoint
	for _, in := range instances {
		if e, why := exportable(in); why == "" {
			out = append(out, e)
		}
	}
	slices.SortFunc(out, func(a, b endpoint) int {
		return cmp.Or(a.ip.Compare(b.ip), strings.Compare(a.portsKey, b.portsKey), cmp.Compare(rank(a.status), rank(b.status)), strings.Compare(a.id, b.id))
	})
	return slices.CompactFunc(out, func(a, b endpoint) bool { return a.ip == b.ip && a.portsKey == b.portsKey })
}

// rank orders statuses so that the readiest copy of a duplicate is kept.
func rank(s registry.Status) int {
	switch s {
	case registry.StatusUp:
		return 0
	case registry.StatusOutOfService:
		return 1
	}
	return 2
}

func (e endpoint) addressType() discoveryv1.AddressType {
	if e.ip.Is4() {
		return discoveryv1.AddressTypeIPv4
	}
	return discoveryv1.AddressTypeIPv6
}

// sliceEndpoint is e as an EndpointSlice endpoint: ready and serving when
// UP, terminating when OUT_OF_SERVICE (a drain), none of them otherwise.
func (e endpoint) sliceEndpoint() discoveryv1.Endpoint {
	up := e.status == registry.StatusUp
	oos := e.status == registry.StatusOutOfService
	ep := discoveryv1.Endpoint{
		Addresses:  []string{e.ip.String()},
		Conditions: discoveryv1.EndpointConditions{Ready: &up, Serving: &up, Terminating: &oos},
	}
	if e.zone != "" {
		z := e.zone
		ep.Zone = &z
	}
	return ep
}

func slicePorts(ps []port) []discoveryv1.EndpointPort {
	out := make([]discoveryv1.EndpointPort, len(ps))
	for i, p := range ps {
		name, num, proto := p.name, p.number, corev1.ProtocolTCP
		out[i] = discoveryv1.EndpointPort{Name: &name, Port: &num, Protocol: &proto}
	}
	return out
}

// servicePorts returns the Service's ports: one per port name any
// endpoint has, numbered as most of its endpoints are (the lowest number
// on a tie). A number already taken by another name is left out (a
// Service may not list it twice); the endpoints still carry it.
func servicePorts(eps []endpoint) []corev1.ServicePort {
	counts := map[port]int{}
	for _, e := range eps {
		for _, p := range e.ports {
			counts[p]++
		}
	}
	best := map[string]port{}
	for p, n := range counts {
		b, ok := best[p.name]
		if !ok || n > counts[b] || (n == counts[b] && p.number < b.number) {
			best[p.name] = p
		}
	}
	var out []corev1.ServicePort
	taken := map[int32]bool{}
	for _, name := range []string{PortHTTP, PortHTTPS, PortGRPC} {
		p, ok := best[name]
		if !ok || taken[p.number] {
			continue
		}
		taken[p.number] = true
		out = append(out, corev1.ServicePort{Name: name, Protocol: corev1.ProtocolTCP, Port: p.number, TargetPort: intstr.FromInt32(p.number)})
	}
	return out
}

// subsets returns the core/v1 Endpoints subsets of eps: one per port set,
// UP endpoints as addresses, the others as not-ready addresses, at most
// maxEndpointsAddresses in all (truncated reports whether some were left
// out).
func subsets(eps []endpoint) (out []corev1.EndpointSubset, truncated bool) {
	byPorts := map[string]*corev1.EndpointSubset{}
	var keys []string
	n := 0
	for _, e := range eps {
		if n == maxEndpointsAddresses {
			truncated = true
			break
		}
		n++
		s := byPorts[e.portsKey]
		if s == nil {
			s = &corev1.EndpointSubset{}
			for _, p := range e.ports {
				s.Ports = append(s.Ports, corev1.EndpointPort{Name: p.name, Port: p.number, Protocol: corev1.ProtocolTCP})
			}
			byPorts[e.portsKey] = s
			keys = append(keys, e.portsKey)
		}
		a := corev1.EndpointAddress{IP: e.ip.String()}
		if e.status == registry.StatusUp {
			s.Addresses = append(s.Addresses, a)
		} else {
			s.NotReadyAddresses = append(s.NotReadyAddresses, a)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		out = append(out, *byPorts[k])
	}
	return out, truncated
}

// sliceGroup is the endpoints that may share a slice: one address type
// and one port set.
type sliceGroup struct {
	addressType discoveryv1.AddressType
	ports       []port
	key         string // addressType/portsKey
	endpoints   []endpoint
}

func groups(eps []endpoint) []*sliceGroup {
	byKey := map[string]*sliceGroup{}
	var out []*sliceGroup
	for _, e := range eps {
		k := string(e.addressType()) + "/" + e.portsKey
		g := byKey[k]
		if g == nil {
			g = &sliceGroup{addressType: e.addressType(), ports: e.ports, key: k}
			byKey[k] = g
			out = append(out, g)
		}
		g.endpoints = append(g.endpoints, e)
	}
	slices.SortFunc(out, func(a, b *sliceGroup) int { return strings.Compare(a.key, b.key) })
	return out
}

// groupKeyOf is the group a slice's address type and ports belong to, as
// groups names it.
func groupKeyOf(s *discoveryv1.EndpointSlice) string {
	ps := make([]port, 0, len(s.Ports))
	for _, p := range s.Ports {
		if p.Name == nil || p.Port == nil {
			return ""
		}
		ps = append(ps, port{*p.Name, *p.Port})
	}
	slices.SortFunc(ps, func(a, b port) int { return strings.Compare(a.name, b.name) })
	var k strings.Builder
	k.WriteString(string(s.AddressType) + "/")
	for _, p := range ps {
		fmt.Fprintf(&k, "%s=%d,", p.name, p.number)
	}
	return k.String()
}

// sliceName names the n-th slice of a group of service svc.
func sliceName(svc, groupKey string, n int) string {
	h := fnv.New32a()
	h.Write([]byte(groupKey))
	return fmt.Sprintf("%s-%06x-%d", svc, h.Sum32()&0xffffff, n)
}

// packed is one slice's desired content: its name and endpoints.
type packed struct {
	name      string
	group     *sliceGroup
	endpoints []discoveryv1.Endpoint
}

// pack spreads a group's endpoints over slices of at most
// MaxSliceEndpoints, keeping each endpoint in the slice that holds it now
// (current: the service's slices of this group, by name) so that one new
// instance rewrites one slice, not every slice after it. New endpoints
// fill the existing slices with room in name order, then new slices.
func pack(svc string, g *sliceGroup, current []*discoveryv1.EndpointSlice) []packed {
	want := map[string]endpoint{}
	for _, e := range g.endpoints {
		want[e.ip.String()] = e
	}
	placed := map[string]bool{}
	var out []packed
	used := map[string]bool{}
	for _, s := range current {
		p := packed{name: s.Name, group: g}
		used[s.Name] = true
		for _, ep := range s.Endpoints {
			if len(ep.Addresses) == 0 || len(p.endpoints) == MaxSliceEndpoints {
				continue
			}
			a := ep.Addresses[0]
			if e, ok := want[a]; ok && !placed[a] {
				placed[a] = true
				p.endpoints = append(p.endpoints, e.sliceEndpoint())
			}
		}
		out = append(out, p)
	}
	var rest []endpoint
	for _, e := range g.endpoints {
		if !placed[e.ip.String()] {
			rest = append(rest, e)
		}
	}
	for i := range out {
		for len(rest) > 0 && len(out[i].endpoints) < MaxSliceEndpoints {
			out[i].endpoints = append(out[i].endpoints, rest[0].sliceEndpoint())
			rest = rest[1:]
		}
	}
	for n := 0; len(rest) > 0; n++ {
		name := sliceName(svc, g.key, n)
		if used[name] {
			continue
		}
		p := packed{name: name, group: g}
		for len(rest) > 0 && len(p.endpoints) < MaxSliceEndpoints {
			p.endpoints = append(p.endpoints, rest[0].sliceEndpoint())
			rest = rest[1:]
		}
		out = append(out, p)
	}
	return out
}
