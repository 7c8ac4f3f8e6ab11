package export

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	"github.com/goreka/goreka/kube"
	"github.com/goreka/goreka/registry"
	"github.com/goreka/goreka/registry/clocktest"
)

const ns = "eureka"

type fixture struct {
	t      *testing.T
	ctx    context.Context
	clock  *clocktest.Clock
	reg    *registry.Registry
	client *fake.Clientset
	e      *Exporter
}

// newFixture is an exporter over a fake clientset holding objs, driven by
// the test (no Run: no leader election, no feeder goroutine).
func newFixture(t *testing.T, objs ...runtime.Object) *fixture {
	t.Helper()
	f := &fixture{t: t, ctx: t.Context(), clock: clocktest.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)), client: fake.NewClientset(objs...)}
	f.reg = registry.New(registry.Options{Now: f.clock.Now})
	f.e = f.exporter(f.reg)
	return f
}

func (f *fixture) exporter(reg *registry.Registry) *Exporter {
	e := New(Config{Client: f.client, Namespace: ns, ClusterID: "c1", Endpoints: true, Now: f.clock.Now}, reg)
	for _, fa := range e.factories {
		fa.Start(f.ctx.Done())
	}
	if !cache.WaitForCacheSync(f.ctx.Done(), e.synced...) {
		f.t.Fatal("informers did not sync")
	}
	e.reset(reg.Applications())
	f.t.Cleanup(func() {
		for _, fa := range e.factories {
			fa.Shutdown()
		}
	})
	return e
}

// step applies the queued changes, moves past the coalescing window and
// reconciles what is due; then waits for the informers to deliver
// goreka's own writes (so that the next step reads them).
func (f *fixture) step() {
	f.t.Helper()
	f.stepOf(f.e)
}

func (f *fixture) stepOf(e *Exporter) {
	f.t.Helper()
	e.catchUp()
	f.clock.Advance(e.cfg.Coalesce)
	e.Step(f.ctx, f.clock.Now())
	deadline := time.Now().Add(10 * time.Second)
	for e.services.pending()+e.slicesSt.pending()+e.endpoints.pending() > 0 {
		if time.Now().After(deadline) {
			f.t.Fatal("informers did not deliver goreka's writes", e.services.pending(), e.slicesSt.pending(), e.endpoints.pending(), e.services.overlay)
		}
		time.Sleep(time.Millisecond)
	}
}

// settle steps until a step writes nothing.
func (f *fixture) settle() {
	f.t.Helper()
	for range 10 {
		n := f.writes()
		f.step()
		if f.writes() == n {
			return
		}
	}
	f.t.Fatal("writes do not stop")
}

func (f *fixture) writes() int {
	n := 0
	for _, a := range f.client.Actions() {
		switch a.GetVerb() {
		case "create", "update", "delete", "patch":
			n++
		}
	}
	return n
}

func (f *fixture) register(app, id, ip string, port int, mut ...func(*registry.Instance)) {
	f.t.Helper()
	in := &registry.Instance{App: app, InstanceID: id, HostName: id, IPAddr: ip, Status: registry.StatusUp,
		Port: registry.Port{Number: port, Enabled: true}, Metadata: map[string]string{}, DataCenterInfo: registry.DataCenterInfo{Name: registry.DataCenterMyOwn}}
	for _, m := range mut {
		m(in)
	}
	if _, err := f.reg.Register(in, false); err != nil {
		f.t.Fatal(err)
	}
}

// imported stores an instance as the importer does (registry.Import).
func (f *fixture) imported(app, id, ip string, port int) {
	f.t.Helper()
	in := &registry.Instance{App: app, InstanceID: id, HostName: ip, IPAddr: ip, Status: registry.StatusUp,
		Port: registry.Port{Number: port, Enabled: true}, DataCenterInfo: registry.DataCenterInfo{Name: registry.DataCenterMyOwn},
		Metadata: map[string]string{kube.MetaSource: kube.SourceKubernetes}}
	if _, err := f.reg.Import(in); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) service(name string) *corev1.Service {
	s, err := f.client.CoreV1().Services(ns).Get(f.ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	return s
}

func (f *fixture) slices(name string) []discoveryv1.EndpointSlice {
	l, err := f.client.DiscoveryV1().EndpointSlices(ns).List(f.ctx, metav1.ListOptions{LabelSelector: kube.LabelServiceName + "=" + name})
	if err != nil {
		f.t.Fatal(err)
	}
	slices.SortFunc(l.Items, func(a, b discoveryv1.EndpointSlice) int { return cmpString(a.Name, b.Name) })
	return l.Items
}

func (f *fixture) endpointsOf(name string) *corev1.Endpoints {
	o, err := f.client.CoreV1().Endpoints(ns).Get(f.ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	return o
}

func TestServiceName(t *testing.T) {
	long := "A" + string(make([]byte, 0)) + "VERY_LONG_APPLICATION_NAME_THAT_GOES_ON_AND_ON_PAST_SIXTY_THREE_CHARACTERS"
	for _, tc := range []struct{ app, want string }{
		{"ORDERS", "orders"},
		{"MY_APP.V2", "my-app-v2"},
		{"3SCALE", "x-3scale"},
		{"_EDGE_", "edge"},
		{"__", ""},
		{long, ServiceName(long)},
	} {
		got := ServiceName(tc.app)
		if got != tc.want {
			t.Errorf("ServiceName(%q) = %q, want %q", tc.app, got, tc.want)
		}
		if got != "" && (len(got) > 63 || got[0] < 'a' || got[0] > 'z' || got[len(got)-1] == '-') {
			t.Errorf("ServiceName(%q) = %q: not a DNS-1035 label", tc.app, got)
		}
	}
	if a, b := ServiceName(long), ServiceName(long+"X"); len(a) != 63 || a == b {
		t.Errorf("long names %q %q: want 63 characters and distinct", a, b)
	}
}

func cond(b *bool) string {
	if b == nil {
		return "nil"
	}
	return fmt.Sprint(*b)
}

// An application becomes a selectorless Service, a goreka-managed slice
// with the statuses as conditions and the ports by name, and an Endpoints
// object that the mirroring controller skips.
func TestExportsAnApplication(t *testing.T) {
	f := newFixture(t)
	f.register("ORDERS", "a", "10.244.0.1", 8080, func(in *registry.Instance) {
		in.SecurePort = registry.Port{Number: 8443, Enabled: true}
		in.Metadata["gRPC_port"] = "9090"
		in.Metadata["zone"] = "zone-a"
	})
	f.register("ORDERS", "b", "10.244.0.2", 8080, func(in *registry.Instance) {
		in.SecurePort = registry.Port{Number: 8443, Enabled: true}
		in.Metadata["gRPC_port"] = "9090"
		in.Status = registry.StatusOutOfService
	})
	f.register("ORDERS", "c", "10.244.0.3", 8080, func(in *registry.Instance) {
		in.SecurePort = registry.Port{Number: 8443, Enabled: true}
		in.Metadata["gRPC_port"] = "9090"
		in.Status = registry.StatusDown
	})
	// Not exported: loopback, no address, imported from Kubernetes.
	f.register("ORDERS", "lo", "127.0.0.1", 8080)
	f.register("ORDERS", "none", "host.example", 8080)
	f.imported("ORDERS", "imp", "10.244.0.9", 8080)
	f.imported("IMPORTED", "i", "10.244.1.1", 80)
	f.settle()

	svc := f.service("orders")
	if svc == nil {
		t.Fatal("no Service orders")
	}
	if !kube.Owns(svc.Labels, svc.Annotations, "c1") || svc.Annotations[AnnotationApp] != "ORDERS" || len(svc.Spec.Selector) != 0 {
		t.Errorf("service meta %v %v selector %v", svc.Labels, svc.Annotations, svc.Spec.Selector)
	}
	var ports []string
	for _, p := range svc.Spec.Ports {
		ports = append(ports, fmt.Sprintf("%s:%d", p.Name, p.Port))
	}
	if want := []string{"http:8080", "https:8443", "grpc:9090"}; !slices.Equal(ports, want) {
		t.Errorf("service ports %v, want %v", ports, want)
	}
	sl := f.slices("orders")
	if len(sl) != 1 {
		t.Fatalf("%d slices", len(sl))
	}
	s := sl[0]
	if s.Labels[kube.LabelManagedBy] != kube.ManagedBy || s.Labels[kube.LabelClusterID] != "c1" || s.AddressType != discoveryv1.AddressTypeIPv4 {
		t.Errorf("slice %v %v", s.Labels, s.AddressType)
	}
	var got []string
	for _, ep := range s.Endpoints {
		z := ""
		if ep.Zone != nil {
			z = *ep.Zone
		}
		got = append(got, fmt.Sprintf("%s r=%s s=%s t=%s z=%s", ep.Addresses[0], cond(ep.Conditions.Ready), cond(ep.Conditions.Serving), cond(ep.Conditions.Terminating), z))
	}
	want := []string{
		"10.244.0.1 r=true s=true t=false z=zone-a",
		"10.244.0.2 r=false s=false t=true z=",
		"10.244.0.3 r=false s=false t=false z=",
	}
	if !slices.Equal(got, want) {
		t.Errorf("endpoints\n%v\nwant\n%v", got, want)
	}
	var sp []string
	for _, p := range s.Ports {
		sp = append(sp, fmt.Sprintf("%s:%d", *p.Name, *p.Port))
	}
	if !slices.Equal(sp, []string{"grpc:9090", "http:8080", "https:8443"}) {
		t.Errorf("slice ports %v", sp)
	}
	ep := f.endpointsOf("orders")
	if ep == nil || ep.Labels[kube.LabelSkipMirror] != "true" || len(ep.Subsets) != 1 {
		t.Fatalf("endpoints %+v", ep)
	}
	if a, nr := ep.Subsets[0].Addresses, ep.Subsets[0].NotReadyAddresses; len(a) != 1 || a[0].IP != "10.244.0.1" || len(nr) != 2 {
		t.Errorf("endpoints addresses %v not ready %v", a, nr)
	}
	if f.service("imported") != nil {
		t.Error("an application imported from Kubernetes was exported")
	}
	if g := testutil.ToFloat64(f.e.m.ExportedServices); g != 1 {
		t.Errorf("exported services gauge %v", g)
	}

	// Gone from the registry: gone from Kubernetes.
	if err := f.reg.Withdraw("ORDERS", "imp"); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a", "b", "c", "lo", "none"} {
		if err := f.reg.Cancel("ORDERS", id, false); err != nil {
			t.Fatal(err)
		}
	}
	f.settle()
	if f.service("orders") != nil || len(f.slices("orders")) != 0 || f.endpointsOf("orders") != nil {
		t.Error("objects left after the application was cancelled")
	}
}

// Slices hold at most 100 endpoints; one more instance rewrites one
// slice, not every slice after it.
func TestSplitsSlicesAt100(t *testing.T) {
	f := newFixture(t)
	for i := range 250 {
		f.register("BIG", fmt.Sprint("i", i), fmt.Sprintf("10.244.%d.%d", i/200, i%200+1), 8080)
	}
	f.settle()
	sl := f.slices("big")
	total := 0
	for _, s := range sl {
		if len(s.Endpoints) > MaxSliceEndpoints {
			t.Errorf("slice %s has %d endpoints", s.Name, len(s.Endpoints))
		}
		total += len(s.Endpoints)
	}
	if len(sl) != 3 || total != 250 {
		t.Fatalf("%d slices, %d endpoints", len(sl), total)
	}
	ep := f.endpointsOf("big")
	if n := len(ep.Subsets[0].Addresses); n != 250 {
		t.Errorf("Endpoints has %d addresses", n)
	}
	before := f.writes()
	f.register("BIG", "new", "10.244.0.0", 8080) // sorts first
	f.settle()
	if d := f.writes() - before; d != 2 { // one slice, the Endpoints
		t.Errorf("one new instance: %d writes, want 2", d)
	}
}

// A Service name someone else holds is refused, counted and never
// touched; of two applications sanitizing to one name, one is exported
// and the other refused.
func TestCollisionsAreRefused(t *testing.T) {
	foreign := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "payments", Namespace: ns, Labels: map[string]string{"team": "x"}},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "payments"}, Ports: []corev1.ServicePort{{Name: "web", Port: 80}}}}
	// Labelled as goreka's of this cluster id, but without the annotation:
	// not created by this goreka.
	lookalike := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "billing", Namespace: ns,
		Labels: map[string]string{kube.LabelManagedBy: kube.ManagedBy, kube.LabelClusterID: "c1"}}}
	other := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "stock", Namespace: ns,
		Labels: map[string]string{kube.LabelManagedBy: kube.ManagedBy, kube.LabelClusterID: "c2"}, Annotations: map[string]string{kube.AnnotationOwner: "c2"}}}
	f := newFixture(t, foreign, lookalike, other)
	f.register("PAYMENTS", "p", "10.244.0.1", 8080)
	f.register("BILLING", "b", "10.244.0.2", 8080)
	f.register("STOCK", "s", "10.244.0.3", 8080)
	f.register("MY_APP", "m1", "10.244.0.4", 8080)
	f.register("MY.APP", "m2", "10.244.0.5", 8081)
	f.settle()

	for _, want := range []*corev1.Service{foreign, lookalike, other} {
		got := f.service(want.Name)
		if got == nil || !equalMeta(got, want) || len(got.Spec.Ports) != len(want.Spec.Ports) {
			t.Errorf("%s changed: %+v", want.Name, got)
		}
		if len(f.slices(want.Name)) != 0 || f.endpointsOf(want.Name) != nil {
			t.Errorf("%s got goreka's endpoints", want.Name)
		}
	}
	s := f.service("my-app")
	if s == nil || s.Annotations[AnnotationApp] != "MY.APP" { // "MY.APP" < "MY_APP"
		t.Fatalf("my-app: %+v", s)
	}
	if sl := f.slices("my-app"); len(sl) != 1 || sl[0].Endpoints[0].Addresses[0] != "10.244.0.5" {
		t.Errorf("my-app slices %+v", sl)
	}
	if n := testutil.ToFloat64(f.e.m.SyncErrors); n != 4 {
		t.Errorf("sync errors %v, want 4 (three names taken, one clash)", n)
	}
	// Refusals are logged and counted once, not on every reconcile.
	f.e.markAll(f.clock.Now())
	f.settle()
	if n := testutil.ToFloat64(f.e.m.SyncErrors); n != 4 {
		t.Errorf("sync errors after a resync %v, want 4", n)
	}
	// The holder goes: the other application takes the name over.
	if err := f.reg.Cancel("MY.APP", "m2", false); err != nil {
		t.Fatal(err)
	}
	f.settle()
	if s := f.service("my-app"); s == nil || s.Annotations[AnnotationApp] != "MY_APP" {
		t.Errorf("my-app after MY.APP left: %+v", s)
	}
}

func equalMeta(a, b *corev1.Service) bool {
	return fmt.Sprint(a.Labels, a.Annotations, a.Spec.Selector) == fmt.Sprint(b.Labels, b.Annotations, b.Spec.Selector)
}

// Objects goreka did not create are neither changed nor deleted, also
// when they carry goreka's labels: a slice and an Endpoints object of a
// Service goreka exports, without goreka's annotation.
func TestObjectsNotOursAreUntouched(t *testing.T) {
	strange := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "orders-manual", Namespace: ns,
		Labels: map[string]string{kube.LabelServiceName: "orders", kube.LabelManagedBy: kube.ManagedBy, kube.LabelClusterID: "c1"}},
		AddressType: discoveryv1.AddressTypeIPv4, Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.1.1.1"}}}}
	f := newFixture(t, strange)
	f.register("ORDERS", "a", "10.244.0.1", 8080)
	f.settle()
	if err := f.reg.Cancel("ORDERS", "a", false); err != nil {
		t.Fatal(err)
	}
	f.settle()
	got, err := f.client.DiscoveryV1().EndpointSlices(ns).Get(f.ctx, "orders-manual", metav1.GetOptions{})
	if err != nil || len(got.Endpoints) != 1 || got.Endpoints[0].Addresses[0] != "10.1.1.1" {
		t.Errorf("a slice goreka did not create was changed or deleted: %+v %v", got, err)
	}
	for _, a := range f.client.Actions() {
		if n, ok := a.(interface{ GetName() string }); ok && n.GetName() == "orders-manual" && a.GetVerb() != "get" {
			t.Errorf("goreka %s %s", a.GetVerb(), n.GetName())
		}
	}
}

// A restart storm is not a write storm: N registrations arriving over a
// few coalescing windows cost a few writes per object, and a restarted
// exporter that finds everything in place writes nothing.
func TestWritesAreCoalescedAndIdempotent(t *testing.T) {
	f := newFixture(t)
	const apps, per = 20, 10
	// 200 registrations, STARTING then UP, spread over 1 s.
	for i := range apps * per {
		app := fmt.Sprint("APP", i%apps)
		f.register(app, fmt.Sprint("i", i), fmt.Sprintf("10.244.%d.%d", i/250, i%250+1), 8080, func(in *registry.Instance) { in.Status = registry.StatusStarting })
		if err := f.reg.StatusUpdate(app, fmt.Sprint("i", i), registry.StatusUp, f.clock.Now(), false); err != nil {
			t.Fatal(err)
		}
		if i%50 == 49 {
			f.step() // each step moves the clock by one coalescing window
		}
	}
	f.settle()
	w := f.writes()
	// Each application: one Service, one slice and one Endpoints, created
	// in the first window it appears in and updated in each later one at
	// most: 4 windows -> at most 3 + 2*3 writes per application.
	if w > apps*9 || w < apps*3 {
		t.Errorf("%d registrations and %d status changes: %d writes (%.2f per change)", apps*per, apps*per, w, float64(w)/float64(2*apps*per))
	}
	t.Logf("%d changes -> %d writes (%.3f per change)", 2*apps*per, w, float64(w)/float64(2*apps*per))

	// A new exporter (a restart, another leader) over the same registry
	// and API objects: a full reconcile compares and writes nothing.
	e2 := f.exporter(f.reg)
	e2.markAll(f.clock.Now())
	before := f.writes()
	f.stepOf(e2)
	if d := f.writes() - before; d != 0 {
		t.Errorf("a reconcile after restart wrote %d objects", d)
	}
	// Heartbeats are not changes: nothing is written.
	if err := f.reg.Renew(registry.RenewRequest{App: "APP1", ID: "i1"}); err != nil {
		t.Fatal(err)
	}
	before = f.writes()
	f.settle()
	if d := f.writes() - before; d != 0 {
		t.Errorf("a heartbeat wrote %d objects", d)
	}
}

// An Endpoints object with goreka's labels but not its owner annotation is
// not goreka's: the export does not overwrite it (nor add the annotation).
func TestEndpointsNotOursAreNotOverwritten(t *testing.T) {
	lookalike := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: ns,
		Labels: map[string]string{kube.LabelManagedBy: kube.ManagedBy, kube.LabelClusterID: "c1"}},
		Subsets: []corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{{IP: "10.9.9.9"}}}}}
	f := newFixture(t, lookalike)
	f.register("ORDERS", "a", "10.244.0.1", 8080)
	f.settle()
	got := f.endpointsOf("orders")
	if got == nil || len(got.Subsets) != 1 || got.Subsets[0].Addresses[0].IP != "10.9.9.9" || got.Annotations[kube.AnnotationOwner] != "" {
		t.Errorf("an Endpoints object goreka did not create was changed: %+v", got)
	}
	for _, a := range f.client.Actions() {
		if a.GetResource().Resource == "endpoints" && (a.GetVerb() == "update" || a.GetVerb() == "delete") {
			t.Errorf("goreka %s endpoints", a.GetVerb())
		}
	}
}
