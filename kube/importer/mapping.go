package importer

import (
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/goreka/goreka/kube"
	gns "github.com/goreka/goreka/namespace"
	"github.com/goreka/goreka/registry"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// Target is the goreka namespace an imported instance goes to
// (namespace.Default for /eureka/).
type Target = string

// Mapping says how a Service becomes instances.
type Mapping struct {
	ClusterID     string
	PortName      string // "" takes the first port
	NamespaceMode string // kube.NamespaceModeDefault or kube.NamespaceModeNamespaces
}

// App is the application a Service's endpoints are imported as.
func App(service string) string { return strings.ToUpper(service) }

// Target is the goreka namespace of a Kubernetes namespace's Services.
func (m Mapping) Target(namespace string) Target {
	if m.NamespaceMode == kube.NamespaceModeNamespaces {
		return namespace // Kubernetes' default is goreka's
	}
	return gns.Default
}

// Skipped is an endpoint or slice not imported, and why (logged).
type Skipped struct {
	Slice, Reason string
}

// Instances maps one Service's EndpointSlices to instances, keyed by
// instance id. svc may be nil (slices without their Service are still
// imported). Two endpoints with the same id (one pod in two slices) keep
// the first ready one.
func (m Mapping) Instances(namespace, service string, svc *corev1.Service, slices []*discoveryv1.EndpointSlice) (map[string]*registry.Instance, []Skipped) {
	out := map[string]*registry.Instance{}
	var skipped []Skipped
	if svc != nil && kube.OwnedBy(svc.Labels, m.ClusterID) {
		return out, nil // goreka exported it: no ping-pong
	}
	for _, s := range slices {
		if kube.OwnedBy(s.Labels, m.ClusterID) {
			continue
		}
		if s.AddressType != discoveryv1.AddressTypeIPv4 && s.AddressType != discoveryv1.AddressTypeIPv6 {
			skipped = append(skipped, Skipped{s.Name, "address type " + string(s.AddressType) + " is not an IP"})
			continue
		}
		port, grpc, ok := m.ports(s.Ports)
		if !ok {
			want := "any port"
			if m.PortName != "" {
				want = "a port named " + m.PortName
			}
			skipped = append(skipped, Skipped{s.Name, "has no " + want})
			continue
		}
		if len(s.Endpoints) == 0 {
			skipped = append(skipped, Skipped{s.Name, "has no endpoints"})
			continue
		}
		for _, ep := range s.Endpoints {
			if len(ep.Addresses) == 0 {
				skipped = append(skipped, Skipped{s.Name, "has an endpoint without addresses"})
				continue
			}
			in := m.instance(namespace, service, ep, port, grpc)
			if prev, dup := out[in.InstanceID]; dup && (prev.Status == registry.StatusUp || in.Status != registry.StatusUp) {
				continue
			}
			out[in.InstanceID] = in
		}
	}
	return out, skipped
}

// ports picks the instance's port and the gRPC port (0 if none).
func (m Mapping) ports(ps []discoveryv1.EndpointPort) (port, grpc int, ok bool) {
	for i, p := range ps {
		if p.Port == nil {
			continue
		}
		name := ""
		if p.Name != nil {
			name = *p.Name
		}
		if name == "grpc" && grpc == 0 {
			grpc = int(*p.Port)
		}
		if !ok && (m.PortName == "" && i == 0 || m.PortName != "" && name == m.PortName) {
			port, ok = int(*p.Port), true
		}
	}
	return port, grpc, ok
}

func (m Mapping) instance(namespace, service string, ep discoveryv1.Endpoint, port, grpc int) *registry.Instance {
	addr := ep.Addresses[0]
	id := net.JoinHostPort(addr, strconv.Itoa(port))
	if ep.TargetRef != nil && ep.TargetRef.Name != "" {
		id = ep.TargetRef.Name
	}
	md := map[string]string{
		kube.MetaSource:    kube.SourceKubernetes,
		kube.MetaClusterID: m.ClusterID,
		kube.MetaNamespace: namespace,
		kube.MetaService:   service,
	}
	if ep.Zone != nil && *ep.Zone != "" {
		md[kube.MetaZone] = *ep.Zone
	}
	if grpc != 0 {
		md[kube.MetaGRPCPort] = strconv.Itoa(grpc)
	}
	return &registry.Instance{
		InstanceID:     id,
		App:            App(service),
		HostName:       addr,
		IPAddr:         addr,
		Status:         Status(ep.Conditions),
		Port:           registry.Port{Number: port, Enabled: true},
		VIPAddress:     service,
		CountryID:      1,
		DataCenterInfo: registry.DataCenterInfo{Name: registry.DataCenterMyOwn},
		Metadata:       md,
	}
}

// Status is an endpoint's Eureka status: OUT_OF_SERVICE when terminating,
// UP when ready (an unset ready is ready, as Kubernetes reads it),
// OUT_OF_SERVICE when explicitly not serving, DOWN otherwise.
func Status(c discoveryv1.EndpointConditions) registry.Status {
	switch {
	case c.Terminating != nil && *c.Terminating:
		return registry.StatusOutOfService
	case c.Ready == nil || *c.Ready:
		return registry.StatusUp
	case c.Serving != nil && !*c.Serving:
		return registry.StatusOutOfService
	}
	return registry.StatusDown
}

func (s Skipped) String() string { return fmt.Sprintf("EndpointSlice %s %s", s.Slice, s.Reason) }
