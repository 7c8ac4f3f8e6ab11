package importer

import (
	"testing"

	"github.com/goreka/goreka/kube"
	"github.com/goreka/goreka/registry"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func ptr[T any](v T) *T { return &v }

func port(name string, n int32) discoveryv1.EndpointPort {
	return discoveryv1.EndpointPort{Name: ptr(name), Port: ptr(n)}
}

func slice(ns, svc, name string, ports []discoveryv1.EndpointPort, eps ...discoveryv1.Endpoint) *discoveryv1.EndpointSlice {
	return &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{kube.LabelServiceName: svc}},
		AddressType: discoveryv1.AddressTypeIPv4, Ports: ports, Endpoints: eps,
	}
}

func ep(addr, pod string, ready, serving, terminating *bool) discoveryv1.Endpoint {
	e := discoveryv1.Endpoint{Addresses: []string{addr}, Conditions: discoveryv1.EndpointConditions{Ready: ready, Serving: serving, Terminating: terminating}}
	if pod != "" {
		e.TargetRef = &corev1.ObjectReference{Kind: "Pod", Name: pod, Namespace: "shop"}
	}
	return e
}

func TestStatus(t *testing.T) {
	yes, no := ptr(true), ptr(false)
	for _, c := range []struct {
		ready, serving, terminating *bool
		want                        registry.Status
	}{
		{nil, nil, nil, registry.StatusUp},
		{yes, yes, no, registry.StatusUp},
		{no, yes, yes, registry.StatusOutOfService}, // terminating, still serving
		{no, no, yes, registry.StatusOutOfService},
		{no, no, no, registry.StatusOutOfService}, // not serving
		{no, yes, no, registry.StatusDown},        // serving but not ready
		{no, nil, nil, registry.StatusDown},
	} {
		if got := Status(discoveryv1.EndpointConditions{Ready: c.ready, Serving: c.serving, Terminating: c.terminating}); got != c.want {
			t.Errorf("ready %v serving %v terminating %v: %s, want %s", c.ready, c.serving, c.terminating, got, c.want)
		}
	}
}

func TestInstances(t *testing.T) {
	m := Mapping{ClusterID: "c1"}
	zoned := ep("10.244.0.2", "web-0", nil, nil, nil)
	zoned.Zone = ptr("zone-a")
	sl := []*discoveryv1.EndpointSlice{
		slice("shop", "web", "web-abc", []discoveryv1.EndpointPort{port("http", 8080), port("grpc", 9090)},
			zoned, ep("10.244.0.3", "", ptr(false), ptr(false), nil), discoveryv1.Endpoint{}),
	}
	got, skipped := m.Instances("shop", "web", nil, sl)
	if len(got) != 2 || len(skipped) != 1 || skipped[0].Reason != "has an endpoint without addresses" {
		t.Fatalf("%d instances, skipped %v", len(got), skipped)
	}
	w := got["web-0"]
	want := map[string]string{kube.MetaSource: "kubernetes", kube.MetaClusterID: "c1", kube.MetaNamespace: "shop",
		kube.MetaService: "web", kube.MetaZone: "zone-a", kube.MetaGRPCPort: "9090"}
	if w == nil || w.App != "WEB" || w.IPAddr != "10.244.0.2" || w.HostName != "10.244.0.2" || w.Port != (registry.Port{Number: 8080, Enabled: true}) ||
		w.Status != registry.StatusUp || len(w.Metadata) != len(want) {
		t.Fatalf("web-0 = %+v", w)
	}
	for k, v := range want {
		if w.Metadata[k] != v {
			t.Errorf("metadata %s = %q, want %q", k, w.Metadata[k], v)
		}
	}
	if o := got["10.244.0.3:8080"]; o == nil || o.Status != registry.StatusOutOfService {
		t.Fatalf("endpoint without a pod: %+v, want id ip:port, OUT_OF_SERVICE", o)
	}
	// A named port.
	m.PortName = "grpc"
	if got, _ := m.Instances("shop", "web", nil, sl); got["web-0"].Port.Number != 9090 {
		t.Errorf("port-name grpc: %d", got["web-0"].Port.Number)
	}
	m.PortName = "admin"
	if got, skipped := m.Instances("shop", "web", nil, sl); len(got) != 0 || len(skipped) != 1 {
		t.Errorf("no port named admin: %d instances, skipped %v", len(got), skipped)
	}
}

// What goreka's export wrote with this cluster id is not imported back;
// another group's is. A slice with no endpoints is skipped with a reason.
func TestInstancesSkipsOwnExport(t *testing.T) {
	m := Mapping{ClusterID: "c1"}
	own := slice("shop", "web", "web-goreka", []discoveryv1.EndpointPort{port("http", 80)}, ep("10.0.0.1", "", nil, nil, nil))
	own.Labels[kube.LabelManagedBy], own.Labels[kube.LabelClusterID] = kube.ManagedBy, "c1"
	other := slice("shop", "web", "web-other", []discoveryv1.EndpointPort{port("http", 80)}, ep("10.0.0.2", "", nil, nil, nil))
	other.Labels[kube.LabelManagedBy], other.Labels[kube.LabelClusterID] = kube.ManagedBy, "c2"
	empty := slice("shop", "web", "web-empty", []discoveryv1.EndpointPort{port("http", 80)})
	got, skipped := m.Instances("shop", "web", nil, []*discoveryv1.EndpointSlice{own, other, empty})
	if len(got) != 1 || got["10.0.0.2:80"] == nil || len(skipped) != 1 || skipped[0].Reason != "has no endpoints" {
		t.Fatalf("%v skipped %v", got, skipped)
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{kube.LabelManagedBy: kube.ManagedBy, kube.LabelClusterID: "c1"}}}
	if got, _ := m.Instances("shop", "web", svc, []*discoveryv1.EndpointSlice{other}); len(got) != 0 {
		t.Fatalf("a Service goreka exported was imported: %v", got)
	}
}

func TestTarget(t *testing.T) {
	m := Mapping{NamespaceMode: kube.NamespaceModeDefault}
	if m.Target("shop") != "default" {
		t.Error("default mode")
	}
	m.NamespaceMode = kube.NamespaceModeNamespaces
	if m.Target("shop") != "shop" || m.Target("default") != "default" {
		t.Error("namespaces mode")
	}
}
