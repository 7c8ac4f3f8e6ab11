package importer_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/goreka/goreka/internal/kubetest"
	"github.com/goreka/goreka/kube"
	"github.com/goreka/goreka/kube/importer"
	"github.com/goreka/goreka/registry"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// These tests run the importer against a real kube-apiserver and etcd
// (internal/kubetest). The endpoints are real HTTP servers listening on
// the non-loopback addresses of a network namespace (the API server
// refuses loopback ones with 422); the test reaches them from the root
// namespace through the namespace's veth, at the imported instance's
// ipAddr and port.

func ptr[T any](v T) *T { return &v }

type env struct {
	t     *testing.T
	api   *kubetest.APIServer
	admin kubernetes.Interface
	netns *kubetest.NetNS
	reg   *registry.Registry
	m     *kube.Metrics
}

func newEnv(t *testing.T, subnet string) *env {
	api := kubetest.Start(t)
	e := &env{t: t, api: api, admin: api.Client(kubetest.Admin), reg: registry.New(registry.Options{}), m: kube.NewMetrics()}
	e.netns = kubetest.NewNetNS(t, "imp"+subnet[len(subnet)-2:], subnet, 2)
	for i := 1; i <= 2; i++ {
		ln, err := e.netns.Listen(fmt.Sprintf("%s:8080", e.netns.Addr(i)))
		if err != nil {
			t.Fatal(err)
		}
		body := fmt.Sprintf("web-%d", i-1)
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, body) })}
		go srv.Serve(ln)
		t.Cleanup(func() { srv.Close() })
	}
	ctx := t.Context()
	if _, err := e.admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Ports: []corev1.ServicePort{{Name: "http", Port: 8080}}}}
	if _, err := e.admin.CoreV1().Services("shop").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.writeSlice(true, true)
	return e
}

// writeSlice writes the Service's one slice (what the EndpointSlice
// controller would): web-0 ready, web-1 as given (or absent).
func (e *env) writeSlice(web1, web1Ready bool) {
	e.t.Helper()
	eps := []discoveryv1.Endpoint{{Addresses: []string{e.netns.Addr(1)}, Conditions: discoveryv1.EndpointConditions{Ready: ptr(true)},
		TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: "shop", Name: "web-0"}, Zone: ptr("zone-a")}}
	if web1 {
		eps = append(eps, discoveryv1.Endpoint{Addresses: []string{e.netns.Addr(2)},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr(web1Ready), Serving: ptr(web1Ready), Terminating: ptr(false)},
			TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: "shop", Name: "web-1"}})
	}
	s := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "web-1x2y", Labels: map[string]string{kube.LabelServiceName: "web"}},
		AddressType: discoveryv1.AddressTypeIPv4, Endpoints: eps,
		Ports: []discoveryv1.EndpointPort{{Name: ptr("http"), Port: ptr(int32(8080))}},
	}
	ctx := e.t.Context()
	cur, err := e.admin.DiscoveryV1().EndpointSlices("shop").Get(ctx, s.Name, metav1.GetOptions{})
	if err == nil {
		s.ResourceVersion = cur.ResourceVersion
		_, err = e.admin.DiscoveryV1().EndpointSlices("shop").Update(ctx, s, metav1.UpdateOptions{})
	} else {
		_, err = e.admin.DiscoveryV1().EndpointSlices("shop").Create(ctx, s, metav1.CreateOptions{})
	}
	if err != nil {
		e.t.Fatal(err)
	}
}

// run starts an importer as user with the given grace; it stops with the test.
func (e *env) run(user string, grace time.Duration) *importer.Importer {
	e.t.Helper()
	im, err := importer.New(importer.Config{
		Kube:   kube.Config{Enabled: true, ClusterID: "c1", ResyncGrace: grace, Import: kube.ImportConfig{Enabled: true}},
		Client: e.api.Client(user), Metrics: e.m, Logger: slog.New(slog.NewTextHandler(e.t.Output(), nil)),
		Registry: func(importer.Target) (*registry.Registry, error) { return e.reg, nil },
		Tick:     50 * time.Millisecond,
	})
	if err != nil {
		e.t.Fatal(err)
	}
	done := make(chan error, 1)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { done <- im.Run(ctx) }()
	e.t.Cleanup(func() { cancel(); <-done })
	return im
}

// until polls cond (the importer and the API server work on their own).
func (e *env) until(what string, within time.Duration, cond func() bool) {
	e.t.Helper()
	for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return
		}
	}
	e.t.Fatalf("not within %s: %s", within, what)
}

func (e *env) status(id string) registry.Status {
	v, ok := e.reg.Get("WEB", id)
	if !ok {
		return ""
	}
	return v.Instance.Status
}

// get calls an imported instance at its address and port.
func (e *env) get(id string) string {
	e.t.Helper()
	v, ok := e.reg.Get("WEB", id)
	if !ok {
		e.t.Fatalf("%s not imported", id)
	}
	resp, err := http.Get(fmt.Sprintf("http://%s:%d/", v.Instance.IPAddr, v.Instance.Port.Number))
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// Import: both endpoints become UP instances that answer at their
// address; web-1 turning not ready is OUT_OF_SERVICE after that one
// update; its removal from the slice withdraws it.
func TestImportFromAPIServer(t *testing.T) {
	e := newEnv(t, "10.244.201")
	im := e.run(kubetest.Admin, 0)
	e.until("both imported UP", 30*time.Second, func() bool {
		return e.status("web-0") == registry.StatusUp && e.status("web-1") == registry.StatusUp
	})
	if got := e.get("web-0") + "," + e.get("web-1"); got != "web-0,web-1" {
		t.Fatalf("the imported instances answered %q", got)
	}
	v, _ := e.reg.Get("WEB", "web-0")
	if md := v.Instance.Metadata; md[kube.MetaSource] != "kubernetes" || md[kube.MetaNamespace] != "shop" || md[kube.MetaService] != "web" ||
		md[kube.MetaZone] != "zone-a" || md[kube.MetaClusterID] != "c1" || !v.Static || v.Source != "kubernetes" {
		t.Fatalf("web-0 %+v", v)
	}
	e.until("ready", 10*time.Second, im.Ready)
	// Bad input: an EndpointSlice without endpoints beside web's (what the
	// EndpointSlice controller writes for a Service without pods), and a
	// Service whose only slice has none; an endpoint without addresses
	// the API server itself refuses (422).
	ctx := t.Context()
	empty := func(name, svc string, eps ...discoveryv1.Endpoint) *discoveryv1.EndpointSlice {
		return &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{kube.LabelServiceName: svc}},
			AddressType: discoveryv1.AddressTypeIPv4, Endpoints: eps, Ports: []discoveryv1.EndpointPort{{Name: ptr("http"), Port: ptr(int32(8080))}}}
	}
	if _, err := e.admin.DiscoveryV1().EndpointSlices("shop").Create(ctx, empty("web-empty", "web", discoveryv1.Endpoint{}), metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
		t.Fatalf("an endpoint without addresses: %v, want 422", err)
	}
	errs := testutil.ToFloat64(e.m.SyncErrors)
	// A probe Service's slice, written after the empty ones: once it is
	// imported, the informer has delivered them and they were reconciled.
	probe := empty("probe-x", "probe", discoveryv1.Endpoint{Addresses: []string{"10.244.201.50"}})
	for _, sl := range []*discoveryv1.EndpointSlice{empty("web-empty", "web"), empty("idle-x", "idle"), probe} {
		if _, err := e.admin.DiscoveryV1().EndpointSlices("shop").Create(ctx, sl, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	e.until("the probe imported", 10*time.Second, func() bool { _, ok := e.reg.Get("PROBE", "10.244.201.50:8080"); return ok })
	var keys []string
	for _, k := range e.reg.ImportedKeys(kube.SourceKubernetes) {
		keys = append(keys, k.App+"/"+k.ID)
	}
	if e.status("web-0") != registry.StatusUp || e.status("web-1") != registry.StatusUp || len(keys) != 3 || testutil.ToFloat64(e.m.SyncErrors) != errs {
		t.Fatalf("beside empty slices: imported %v, sync errors %v -> %v; want web's two and the probe", keys, errs, testutil.ToFloat64(e.m.SyncErrors))
	}
	e.writeSlice(true, false)
	e.until("web-1 OUT_OF_SERVICE", 10*time.Second, func() bool { return e.status("web-1") == registry.StatusOutOfService })
	e.writeSlice(false, false)
	e.until("web-1 withdrawn", 10*time.Second, func() bool { return e.status("web-1") == "" })
	if e.status("web-0") != registry.StatusUp {
		t.Fatal("web-0 lost")
	}
	if n := testutil.ToFloat64(e.m.ImportedInstances); n != 2 { // web-0 and the probe
		t.Errorf("imported instances gauge %v", n)
	}
}

// A user without rights gets 403: the importer logs and counts it and
// drops nothing it (or a snapshot) had; once RBAC grants the rights, it
// syncs, imports, and only then withdraws what no Service accounts for.
func TestForbiddenDropsNothing(t *testing.T) {
	e := newEnv(t, "10.244.202")
	stale := &registry.Instance{App: "WEB", InstanceID: "web-9", HostName: "10.244.202.9", IPAddr: "10.244.202.9",
		Status: registry.StatusUp, DataCenterInfo: registry.DataCenterInfo{Name: registry.DataCenterMyOwn},
		Metadata: map[string]string{kube.MetaSource: kube.SourceKubernetes}}
	if _, err := e.reg.Import(stale); err != nil {
		t.Fatal(err)
	}
	im := e.run(kubetest.Goreka, 0)
	e.until("403s counted", 30*time.Second, func() bool { return testutil.ToFloat64(e.m.SyncErrors) >= 2 })
	if e.status("web-9") != registry.StatusUp || im.Ready() || e.status("web-0") != "" {
		t.Fatalf("while forbidden: web-9 %q ready %v web-0 %q", e.status("web-9"), im.Ready(), e.status("web-0"))
	}
	ctx := t.Context()
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "goreka-import"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"services"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"get", "list", "watch"}},
	}}
	if _, err := e.admin.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "goreka-import"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "goreka-import"},
		Subjects: []rbacv1.Subject{{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: kubetest.Goreka}}}
	if _, err := e.admin.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.until("imported once allowed", 60*time.Second, func() bool { return e.status("web-0") == registry.StatusUp })
	e.until("stale withdrawn after the sync", 10*time.Second, func() bool { return e.status("web-9") == "" })
}

// The API server stopped: goreka keeps every imported instance while it
// is away; restarted, the importer lists again and applies what changed
// meanwhile (web-1 gone), nothing more.
func TestAPIServerOutage(t *testing.T) {
	e := newEnv(t, "10.244.203")
	e.run(kubetest.Admin, 0)
	e.until("both imported", 30*time.Second, func() bool { return e.status("web-1") == registry.StatusUp && e.status("web-0") == registry.StatusUp })
	e.api.Stop() // returns once the process has exited
	// client-go retries a refused watch without a new list (nothing to
	// count): the instances are watched for a while of the outage.
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if e.status("web-0") != registry.StatusUp || e.status("web-1") != registry.StatusUp {
			t.Fatalf("during the outage: web-0 %q web-1 %q", e.status("web-0"), e.status("web-1"))
		}
	}
	e.api.Restart()
	e.writeSlice(false, false)
	e.until("web-1 withdrawn after the restart", 60*time.Second, func() bool { return e.status("web-1") == "" })
	if e.status("web-0") != registry.StatusUp {
		t.Fatal("web-0 lost across the outage")
	}
}
