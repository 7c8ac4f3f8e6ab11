package export

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/goreka/goreka/internal/kubetest"
	"github.com/goreka/goreka/kube"
	"github.com/goreka/goreka/kube/importer"
	"github.com/goreka/goreka/registry"
)

// exportRules are the rights the exporter needs in its namespace, the
// Helm chart's Role (deploy/helm/goreka/templates/rbac.yaml) but for its
// Lease rule, which names the one Lease of the release's cluster id (the
// tests here run several cluster ids in one namespace): the tests run as a
// user that has these and nothing else.
var exportRules = []rbacv1.PolicyRule{
	{APIGroups: []string{""}, Resources: []string{"services", "endpoints"}, Verbs: []string{"get", "list", "watch", "create", "update", "delete"}},
	{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"get", "list", "watch", "create", "update", "delete"}},
	{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "create", "update"}},
}

// space is one test's Kubernetes namespace on the shared API server, in
// which user kubetest.Goreka has exportRules.
type space struct {
	t     *testing.T
	name  string
	admin kubernetes.Interface
	user  kubernetes.Interface
}

func newSpace(t *testing.T, api *kubetest.APIServer, name string) *space {
	t.Helper()
	admin := api.Client(kubetest.Admin)
	ctx := t.Context()
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.RbacV1().Roles(name).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "goreka-export"}, Rules: exportRules}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.RbacV1().RoleBindings(name).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "goreka-export"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "goreka-export"},
		Subjects: []rbacv1.Subject{{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: kubetest.Goreka}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return &space{t: t, name: name, admin: admin, user: api.Client(kubetest.Goreka)}
}

// runner is an exporter running (Run) until stop.
type runner struct {
	e    *Exporter
	stop context.CancelFunc
	done chan struct{}
}

// start runs an exporter; hooks see it before Run.
func (sp *space) start(reg *registry.Registry, id, cluster string, hooks ...func(*Exporter)) *runner {
	cfg := Config{Client: sp.user, Namespace: sp.name, ClusterID: cluster, Endpoints: true, Identity: id,
		LeaseDuration: 2 * time.Second, RenewDeadline: 1500 * time.Millisecond, RetryPeriod: 250 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})).With("exporter", id)}
	r := &runner{e: New(cfg, reg), done: make(chan struct{})}
	for _, h := range hooks {
		h(r.e)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.stop = cancel
	go func() { defer close(r.done); r.e.Run(ctx) }()
	sp.t.Cleanup(r.halt)
	return r
}

// halt stops the exporter and waits for Run to return.
func (r *runner) halt() { r.stop(); <-r.done }

// reconciled waits until nothing is due (a leader has reconciled what
// was marked; a follower's marks are taken at its next term).
func (r *runner) reconciled(t *testing.T) {
	t.Helper()
	if !r.leading() {
		return
	}
	waitFor(t, 30*time.Second, "nothing due", func() bool { n, _ := r.e.peek(); return n == 0 })
}

func (r *runner) leading() bool { return testutil.ToFloat64(r.e.m.Leader) == 1 }

func (r *runner) writes() float64 {
	n := 0.0
	for _, v := range []string{"create", "update", "delete"} {
		for _, res := range []string{"services", "endpointslices", "endpoints"} {
			n += testutil.ToFloat64(r.e.m.APIWrites.WithLabelValues(v, res))
		}
	}
	return n
}

// waitFor polls cond (against the real API server) until it holds.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool, detail ...*string) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			if len(detail) > 0 {
				what += ": " + *detail[0]
			}
			t.Fatalf("after %v: %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (sp *space) svc(name string) *corev1.Service {
	s, err := sp.admin.CoreV1().Services(sp.name).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	return s
}

func (sp *space) slicesOf(name string) []discoveryv1.EndpointSlice {
	l, err := sp.admin.DiscoveryV1().EndpointSlices(sp.name).List(context.Background(), metav1.ListOptions{LabelSelector: kube.LabelServiceName + "=" + name})
	if err != nil {
		sp.t.Fatal(err)
	}
	return l.Items
}

func (sp *space) endpoints(name string) *corev1.Endpoints {
	o, err := sp.admin.CoreV1().Endpoints(sp.name).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	return o
}

// serving returns the serving condition of ip in name's slices ("" if absent).
func (sp *space) serving(name, ip string) string {
	for _, s := range sp.slicesOf(name) {
		for _, ep := range s.Endpoints {
			if slices.Contains(ep.Addresses, ip) {
				return cond(ep.Conditions.Serving)
			}
		}
	}
	return ""
}

func readyIPs(ep *corev1.Endpoints) []string {
	var out []string
	if ep == nil {
		return nil
	}
	for _, s := range ep.Subsets {
		for _, a := range s.Addresses {
			out = append(out, a.IP)
		}
	}
	return out
}

func up(app, id, ip string, port int) *registry.Instance {
	return &registry.Instance{App: app, InstanceID: id, HostName: id, IPAddr: ip, Status: registry.StatusUp,
		Port: registry.Port{Number: port, Enabled: true}, DataCenterInfo: registry.DataCenterInfo{Name: registry.DataCenterMyOwn}}
}

func mustRegister(t *testing.T, reg *registry.Registry, ins ...*registry.Instance) {
	t.Helper()
	for _, in := range ins {
		if _, err := reg.Register(in, false); err != nil {
			t.Fatal(err)
		}
	}
}

// The export against a real kube-apiserver (validation, defaulting,
// resourceVersion conflicts, RBAC: the exporter runs as a user with the
// chart's Role only). The instances' addresses are 10.244.x.y, which the
// API server accepts; nothing here connects to them.
func TestAgainstAPIServer(t *testing.T) {
	api := kubetest.Start(t)

	t.Run("export", func(t *testing.T) {
		t.Parallel()
		sp := newSpace(t, api, "export")
		reg := registry.New(registry.Options{})
		mustRegister(t, reg, up("ORDERS", "o1", "10.244.1.1", 8080), up("ORDERS", "o2", "10.244.1.2", 8080), up("PAY_MENTS", "p1", "10.244.1.3", 9000))
		r := sp.start(reg, "a", "c1")
		waitFor(t, 30*time.Second, "orders and pay-ments exported", func() bool {
			return sp.svc("orders") != nil && len(readyIPs(sp.endpoints("orders"))) == 2 && len(readyIPs(sp.endpoints("pay-ments"))) == 1
		})
		if s := sp.svc("orders"); s.Spec.ClusterIP == "" || s.Spec.ClusterIP == corev1.ClusterIPNone || len(s.Spec.Selector) != 0 {
			t.Errorf("want a selectorless ClusterIP Service: %+v", s.Spec)
		}
		if sp.serving("orders", "10.244.1.1") != "true" {
			t.Errorf("o1 not serving")
		}
		// OUT_OF_SERVICE: serving=false in the slice within 1 s, and out
		// of the Endpoints' ready addresses.
		t0 := time.Now()
		if err := reg.StatusUpdate("ORDERS", "o1", registry.StatusOutOfService, time.Now(), false); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 10*time.Second, "o1 serving=false", func() bool { return sp.serving("orders", "10.244.1.1") == "false" })
		if d := time.Since(t0); d > time.Second {
			t.Errorf("OUT_OF_SERVICE took %v to reach the slice, want under 1 s", d)
		}
		waitFor(t, 5*time.Second, "o1 out of the ready addresses", func() bool {
			return slices.Equal(readyIPs(sp.endpoints("orders")), []string{"10.244.1.2"})
		})
		t.Logf("OUT_OF_SERVICE -> serving=false and out of Endpoints' ready addresses in %v", time.Since(t0))
		// Cancelled: gone.
		for _, id := range []string{"o1", "o2"} {
			if err := reg.Cancel("ORDERS", id, false); err != nil {
				t.Fatal(err)
			}
		}
		waitFor(t, 10*time.Second, "orders deleted", func() bool {
			return sp.svc("orders") == nil && len(sp.slicesOf("orders")) == 0 && sp.endpoints("orders") == nil
		})
		if sp.svc("pay-ments") == nil {
			t.Error("pay-ments went with orders")
		}
		// Idempotent after a restart: a new exporter that finds every
		// object in place writes nothing.
		r.halt()
		r2 := sp.start(reg, "b", "c1")
		waitFor(t, 30*time.Second, "the restarted exporter leads", r2.leading)
		r2.e.markAll(time.Now())
		r2.reconciled(t)
		if w := r2.writes(); w != 0 {
			t.Errorf("the restarted exporter wrote %v objects", w)
		}
	})

	t.Run("collisions and objects not ours", func(t *testing.T) {
		t.Parallel()
		sp := newSpace(t, api, "collide")
		ctx := t.Context()
		foreign := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "billing", Labels: map[string]string{"team": "x"}},
			Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "billing"}, Ports: []corev1.ServicePort{{Name: "web", Port: 80}}}}
		if _, err := sp.admin.CoreV1().Services(sp.name).Create(ctx, foreign, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		// goreka's labels, another group's cluster id.
		other := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "stock", Labels: map[string]string{kube.LabelManagedBy: kube.ManagedBy, kube.LabelClusterID: "c2"},
			Annotations: map[string]string{kube.AnnotationOwner: "c2"}}, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 81}}}}
		if _, err := sp.admin.CoreV1().Services(sp.name).Create(ctx, other, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		before := map[string]string{}
		for _, n := range []string{"billing", "stock"} {
			before[n] = sp.svc(n).ResourceVersion
		}
		reg := registry.New(registry.Options{})
		mustRegister(t, reg, up("BILLING", "b1", "10.244.2.1", 8080), up("STOCK", "s1", "10.244.2.2", 8080),
			up("MY_APP", "m1", "10.244.2.3", 8080), up("MY.APP", "m2", "10.244.2.4", 8080), up("FREE", "f1", "10.244.2.5", 8080))
		r := sp.start(reg, "a", "c1")
		waitFor(t, 30*time.Second, "free and my-app exported", func() bool { return sp.svc("free") != nil && sp.svc("my-app") != nil })
		waitFor(t, 5*time.Second, "three refusals counted", func() bool { return testutil.ToFloat64(r.e.m.SyncErrors) == 3 })
		for n, rv := range before {
			if s := sp.svc(n); s.ResourceVersion != rv || len(sp.slicesOf(n)) != 0 || sp.endpoints(n) != nil {
				t.Errorf("%s was touched: rv %s -> %s, %d slices", n, rv, s.ResourceVersion, len(sp.slicesOf(n)))
			}
		}
		if a := sp.svc("my-app").Annotations[AnnotationApp]; a != "MY.APP" {
			t.Errorf("my-app holds %s", a)
		}
	})

	t.Run("leader election", func(t *testing.T) {
		t.Parallel()
		sp := newSpace(t, api, "leader")
		// One registry per node, as in a peer group (replication keeps them equal).
		regA, regB := registry.New(registry.Options{}), registry.New(registry.Options{})
		for _, reg := range []*registry.Registry{regA, regB} {
			mustRegister(t, reg, up("ORDERS", "o1", "10.244.3.1", 8080))
		}
		a := sp.start(regA, "node-a", "c1", func(e *Exporter) { e.keepLease = true }) // dies holding the Lease
		waitFor(t, 30*time.Second, "node-a leads", a.leading)
		b := sp.start(regB, "node-b", "c1")
		waitFor(t, 30*time.Second, "orders exported", func() bool { return len(readyIPs(sp.endpoints("orders"))) == 1 })
		if b.leading() || b.writes() != 0 {
			t.Fatalf("node-b leads (%v) or wrote (%v) while node-a leads", b.leading(), b.writes())
		}
		// node-a dies without releasing the Lease: node-b takes over
		// after the lease duration, within it plus the renew deadline
		// (client-go's retries are jittered up to 2.2 retry periods, and
		// it must observe the stale record first).
		a.halt()
		t0 := time.Now()
		waitFor(t, 10*time.Second, "node-b leads", b.leading)
		if d := time.Since(t0); d > a.e.cfg.LeaseDuration+a.e.cfg.RenewDeadline || d < a.e.cfg.LeaseDuration-a.e.cfg.RenewDeadline {
			t.Errorf("takeover after %v, lease duration %v", d, a.e.cfg.LeaseDuration)
		}
		t.Logf("takeover after %v (lease duration %v)", time.Since(t0), a.e.cfg.LeaseDuration)
		mustRegister(t, regA, up("ORDERS", "o2", "10.244.3.2", 8080))
		mustRegister(t, regB, up("ORDERS", "o2", "10.244.3.2", 8080))
		waitFor(t, 10*time.Second, "node-b writes", func() bool { return len(readyIPs(sp.endpoints("orders"))) == 2 })
		// A graceful stop releases the Lease: node-c takes over at once.
		c := sp.start(regA, "node-c", "c1")
		b.halt()
		t1 := time.Now()
		waitFor(t, 10*time.Second, "node-c leads", c.leading)
		t.Logf("handover after a graceful stop: %v", time.Since(t1))
	})

	t.Run("two groups", func(t *testing.T) {
		t.Parallel()
		twoGroups(t, api)
	})
}

// twoGroups runs two goreka groups of different cluster ids, each of two
// exporters (one leads), against one namespace: both export the same
// application names, churn runs for GOREKA_K8S_CHURN (default 3 s; make
// kube-churn runs the 5 minutes in CI, beside the Eureka clients'
// suite), and in the end each object is written by its owner only and
// the counts are what the registries say.
func twoGroups(t *testing.T, api *kubetest.APIServer) {
	sp := newSpace(t, api, "groups")
	d := 3 * time.Second
	if v := os.Getenv("GOREKA_K8S_CHURN"); v != "" {
		var err error
		if d, err = time.ParseDuration(v); err != nil {
			t.Fatal(err)
		}
	}
	type group struct {
		id   string
		regs [2]*registry.Registry
		run  [2]*runner
		// steps counts the churn's changes made on both nodes of the
		// group (one every 40 ms while it runs): the cycles done are
		// counted, not inferred from the churn's duration.
		steps atomic.Int64
	}
	var gs []*group
	for gi, id := range []string{"east", "west"} {
		g := &group{id: id}
		for i := range g.regs {
			g.regs[i] = registry.New(registry.Options{})
			g.run[i] = sp.start(g.regs[i], fmt.Sprint(id, i), id)
			// Both directions: every node also imports the namespace.
			reg := g.regs[i]
			im, err := importer.New(importer.Config{Client: sp.user,
				Kube:     kube.Config{Enabled: true, ClusterID: id, ResyncGrace: time.Second, Import: kube.ImportConfig{Enabled: true, Namespaces: []string{sp.name}}},
				Registry: func(importer.Target) (*registry.Registry, error) { return reg, nil }})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { defer close(done); _ = im.Run(ctx) }()
			t.Cleanup(func() { cancel(); <-done })
		}
		// Each group has apps of its own and one both have (SHARED: the
		// first to write it holds it; the other is refused).
		for a := range 3 {
			for i := range 4 {
				in := up(fmt.Sprintf("%s-APP%d", id, a), fmt.Sprint("i", i), fmt.Sprintf("10.244.%d.%d", 10+gi, a*10+i+1), 8080)
				for _, reg := range g.regs {
					mustRegister(t, reg, in.Clone())
				}
			}
		}
		gs = append(gs, g)
	}
	for _, g := range gs {
		for _, reg := range g.regs {
			mustRegister(t, reg, up("SHARED", "s-"+g.id, "10.244.20.1", 8080))
		}
	}
	total := func() float64 {
		n := 0.0
		for _, g := range gs {
			for _, r := range g.run {
				n += r.writes()
			}
		}
		return n
	}
	created := func() float64 {
		n := 0.0
		for _, g := range gs {
			for _, r := range g.run {
				n += testutil.ToFloat64(r.e.m.APIWrites.WithLabelValues("create", "services"))
			}
		}
		return n
	}
	// The first export done (each group's leader has written its objects).
	for _, g := range gs {
		waitFor(t, 30*time.Second, g.id+" leads", func() bool { return g.run[0].leading() || g.run[1].leading() })
		for _, r := range g.run {
			r.reconciled(t)
		}
	}
	before, createdBefore := total(), created()
	// OUT_OF_SERVICE as the API server's watchers see it: an endpoint of a
	// slice turning terminating (goreka's OUT_OF_SERVICE) in a watch event,
	// counted from the informer's old and new object, not from what the
	// churn did.
	var oosSeen atomic.Int64
	factory := informers.NewSharedInformerFactoryWithOptions(sp.admin, 0, informers.WithNamespace(sp.name))
	slicesInf := factory.Discovery().V1().EndpointSlices().Informer()
	terminating := func(obj any) map[string]bool {
		out := map[string]bool{}
		if s, ok := obj.(*discoveryv1.EndpointSlice); ok {
			for _, ep := range s.Endpoints {
				for _, a := range ep.Addresses {
					out[a] = ep.Conditions.Terminating != nil && *ep.Conditions.Terminating
				}
			}
		}
		return out
	}
	turned := func(old, cur any) {
		was := terminating(old)
		for a, term := range terminating(cur) {
			if term && !was[a] {
				oosSeen.Add(1)
			}
		}
	}
	if _, err := slicesInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { turned(nil, obj) },
		UpdateFunc: turned,
	}); err != nil {
		t.Fatal(err)
	}
	watchCtx, stopWatch := context.WithCancel(context.Background())
	factory.Start(watchCtx.Done())
	t.Cleanup(func() { stopWatch(); factory.Shutdown() })
	if !cache.WaitForCacheSync(t.Context().Done(), slicesInf.HasSynced) {
		t.Fatal("the EndpointSlice informer never synced")
	}
	oosBefore := oosSeen.Load()
	// Churn: every instance in turn is set OUT_OF_SERVICE, then each is
	// cancelled, then each registers again UP, over and over on both
	// groups, one change every 40 ms: each cycle of 36 changes (1.44 s)
	// leaves every application without instances for 9 changes (360 ms,
	// longer than the exporters' coalescing), so its Service is deleted
	// and created again.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var oosMade atomic.Int64
	for gi, g := range gs {
		wg.Go(func() {
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				case <-time.After(40 * time.Millisecond):
				}
				a, i := n%12/4, n%4
				app, id := fmt.Sprintf("%s-APP%d", g.id, a), fmt.Sprint("i", i)
				ip := fmt.Sprintf("10.244.%d.%d", 10+gi, a*10+i+1)
				for _, reg := range g.regs {
					switch n / 12 % 3 {
					case 0:
						_ = reg.StatusUpdate(app, id, registry.StatusOutOfService, time.Now(), false)
					case 1:
						_ = reg.Cancel(app, id, false)
					case 2:
						_, _ = reg.Register(up(app, id, ip, 8080), false)
					}
				}
				if n/12%3 == 0 {
					oosMade.Add(1)
				}
				g.steps.Add(1)
			}
		})
	}
	time.Sleep(d) // the churn's length, not a wait for an outcome
	close(stop)
	wg.Wait()
	// Whole cycles (36 changes) the slower group completed.
	cycles := float64(min(gs[0].steps.Load(), gs[1].steps.Load()) / 36)
	// The churn reached the API server: about 6 Services created again
	// per cycle; a churn that never emptied an application (the same
	// operation on an instance every time) creates none.
	if c := created() - createdBefore; c < max(2, cycles) {
		t.Errorf("%v of churn (%.0f cycles): %v Services created again, want %.0f at least (%v writes)", d, cycles, c, max(2, cycles), total()-before)
	}
	// And so did OUT_OF_SERVICE, as terminating endpoints in watch events.
	// Each cycle sets 24 instances OUT_OF_SERVICE, for 480 ms each; a
	// change the coalescing overtakes (the instance cancelled before its
	// slice's write) is never seen: f2's 5-minute run saw 4,934 of 4,944, so
	// a quarter of those made (and one per cycle) is a bound that a lost
	// watch event class fails.
	// Counted a moment after the churn: the last writes may be in flight.
	var oos int64
	var seen string
	waitFor(t, 5*time.Second, "OUT_OF_SERVICE seen by a watch as terminating endpoints", func() bool {
		oos = oosSeen.Load() - oosBefore
		want := max(2, cycles, float64(oosMade.Load())/4)
		seen = fmt.Sprintf("%d seen of %d made in %.0f cycles, want %.0f at least", oos, oosMade.Load(), cycles, want)
		return float64(oos) >= want
	}, &seen)
	t.Logf("churn %v: %.0f cycles (%d and %d steps), %v writes, %v Services created again, %d of %d OUT_OF_SERVICE changes seen by a watch as terminating endpoints",
		d, cycles, gs[0].steps.Load(), gs[1].steps.Load(), total()-before, created()-createdBefore, oos, oosMade.Load())
	// Settle: every instance back UP (cancelled first: its override goes).
	for gi, g := range gs {
		for a := range 3 {
			for i := range 4 {
				app, id := fmt.Sprintf("%s-APP%d", g.id, a), fmt.Sprint("i", i)
				for _, reg := range g.regs {
					_ = reg.Cancel(app, id, false) // and its override with it
					mustRegister(t, reg, up(app, id, fmt.Sprintf("10.244.%d.%d", 10+gi, a*10+i+1), 8080))
				}
			}
		}
	}
	var last string
	waitFor(t, 30*time.Second, "every app back with 4 ready addresses", func() bool {
		last = ""
		for _, g := range gs {
			for a := range 3 {
				n := fmt.Sprintf("%s-app%d", g.id, a)
				if ips := readyIPs(sp.endpoints(n)); len(ips) != 4 {
					last += fmt.Sprintf("%s: %v; ", n, ips)
				}
			}
		}
		if last != "" {
			for _, g := range gs {
				last += fmt.Sprintf("%s leading %v %v; ", g.id, g.run[0].leading(), g.run[1].leading())
				for _, a := range g.regs[0].Applications().Apps {
					if a.Name == strings.ToUpper(g.id)+"-APP0" {
						for _, lv := range a.Instances {
							last += fmt.Sprintf("%s=%s/%s ", lv.Instance.ID(), lv.Instance.Status, lv.Instance.OverriddenStatus)
						}
					}
				}
			}
		}
		return last == ""
	}, &last)
	ctx := t.Context()
	svcs, _ := sp.admin.CoreV1().Services(sp.name).List(ctx, metav1.ListOptions{})
	sl, _ := sp.admin.DiscoveryV1().EndpointSlices(sp.name).List(ctx, metav1.ListOptions{})
	eps, _ := sp.admin.CoreV1().Endpoints(sp.name).List(ctx, metav1.ListOptions{})
	// 3 apps per group and SHARED once.
	if len(svcs.Items) != 7 || len(sl.Items) != 7 || len(eps.Items) != 7 {
		t.Errorf("%d services, %d slices, %d endpoints; want 7 each", len(svcs.Items), len(sl.Items), len(eps.Items))
	}
	check := func(kind string, o metav1.Object) {
		name := o.GetName()
		if s := o.GetLabels()[kube.LabelServiceName]; s != "" {
			name = s
		}
		want := ""
		for _, g := range gs {
			if len(name) > len(g.id) && name[:len(g.id)] == g.id {
				want = g.id
			}
		}
		id := o.GetLabels()[kube.LabelClusterID]
		if !kube.Owns(o.GetLabels(), o.GetAnnotations(), id) || (want != "" && id != want) {
			t.Errorf("%s %s: owner %q, want %q", kind, o.GetName(), id, want)
		}
		// managedFields names every writer: only the owner's group.
		for _, mf := range o.GetManagedFields() {
			if mf.Manager != "goreka-"+id {
				t.Errorf("%s %s (owner %s) written by %s", kind, o.GetName(), id, mf.Manager)
			}
		}
	}
	for i := range svcs.Items {
		check("service", &svcs.Items[i])
	}
	for i := range sl.Items {
		check("endpointslice", &sl.Items[i])
	}
	for i := range eps.Items {
		check("endpoints", &eps.Items[i])
	}
	// Both directions: each group imported the other's Services (and
	// SHARED, held by one of them), never its own.
	for gi, g := range gs {
		other := gs[1-gi].id
		for _, reg := range g.regs {
			for _, a := range reg.Applications().Apps {
				for _, lv := range a.Instances {
					md := lv.Instance.Metadata
					if !kube.Imported(md) {
						continue
					}
					if svc := md[kube.MetaService]; len(svc) >= len(g.id) && svc[:len(g.id)] == g.id {
						t.Errorf("group %s imported its own Service %s", g.id, svc)
					}
				}
			}
			if n := len(reg.ImportedKeys(kube.SourceKubernetes)); n < 12 {
				t.Errorf("group %s imported %d instances, want %s's 12 at least", g.id, n, other)
			}
		}
	}
	// Stable: a full reconcile changes nothing.
	for _, g := range gs {
		for _, r := range g.run {
			r.reconciled(t)
		}
	}
	w := total()
	// A full reconcile of every node writes nothing more.
	for _, g := range gs {
		for _, r := range g.run {
			r.e.markAll(time.Now())
			r.reconciled(t)
		}
	}
	if w2 := total(); w2 != w {
		t.Errorf("a full reconcile after the churn wrote: %v -> %v", w, w2)
	}
	t.Logf("churn %v: %v writes in all", d, w)
}
