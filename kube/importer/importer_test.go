package importer

import (
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/goreka/goreka/kube"
	"github.com/goreka/goreka/registry"
	"github.com/goreka/goreka/registry/clocktest"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// fixture is an Importer over a fake clientset, stepped by the test (no
// Run loop), on a fake clock.
type fixture struct {
	t     *testing.T
	im    *Importer
	reg   *registry.Registry
	clock *clocktest.Clock
	cs    *fake.Clientset
}

func newFixture(t *testing.T, reg *registry.Registry) *fixture {
	clock := clocktest.New(time.Unix(1_800_000_000, 0))
	if reg == nil {
		reg = registry.New(registry.Options{Now: clock.Now})
	}
	cs := fake.NewClientset()
	im, err := New(Config{
		Kube:   kube.Config{Enabled: true, ClusterID: "c1", ResyncGrace: 30 * time.Second, Import: kube.ImportConfig{Enabled: true}},
		Client: cs, Now: clock.Now, Logger: slog.New(slog.DiscardHandler),
		Registry: func(Target) (*registry.Registry, error) { return reg, nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := im.start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(im.stop)
	return &fixture{t: t, im: im, reg: reg, clock: clock, cs: cs}
}

// until steps the importer until cond holds; the informers deliver on
// their own goroutines.
func (f *fixture) until(what string, cond func() bool) {
	f.t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		f.im.step()
		if cond() {
			return
		}
	}
	f.t.Fatalf("not reached: %s", what)
}

// cached waits until the informers hold n slices of service web.
func (f *fixture) cached(n int) {
	f.t.Helper()
	f.until("slices in the cache", func() bool {
		_, sl := f.im.lookup(svcKey{"shop", "web"})
		return len(sl) == n
	})
}

func (f *fixture) ids() []string {
	var out []string
	for _, k := range f.reg.ImportedKeys(kube.SourceKubernetes) {
		out = append(out, k.App+"/"+k.ID)
	}
	return out
}

func (f *fixture) create(s *discoveryv1.EndpointSlice) {
	f.t.Helper()
	if _, err := f.cs.DiscoveryV1().EndpointSlices(s.Namespace).Create(f.t.Context(), s, metav1.CreateOptions{}); err != nil {
		f.t.Fatal(err)
	}
}

// Additions apply at once; a removal waits until the informers synced and
// the grace passed on the clock, then applies.
func TestRemovalsWaitForSyncAndGrace(t *testing.T) {
	f := newFixture(t, nil)
	if _, err := f.cs.CoreV1().Services("shop").Create(t.Context(), &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.create(slice("shop", "web", "web-a", []discoveryv1.EndpointPort{port("http", 8080)}, ep("10.244.0.2", "web-0", nil, nil, nil)))
	f.create(slice("shop", "web", "web-b", []discoveryv1.EndpointPort{port("http", 8080)}, ep("10.244.0.3", "web-1", nil, nil, nil)))
	f.until("both imported", func() bool { return slices.Equal(f.ids(), []string{"WEB/web-0", "WEB/web-1"}) })
	if err := f.cs.DiscoveryV1().EndpointSlices("shop").Delete(t.Context(), "web-b", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.cached(1)
	f.im.step()
	if !slices.Equal(f.ids(), []string{"WEB/web-0", "WEB/web-1"}) || f.im.Ready() {
		t.Fatalf("within the grace: %v ready %v; want nothing removed", f.ids(), f.im.Ready())
	}
	f.clock.Advance(29 * time.Second)
	f.im.step()
	if len(f.ids()) != 2 {
		t.Fatalf("1 s before the grace ends: %v", f.ids())
	}
	f.clock.Advance(time.Second)
	f.im.step()
	if !slices.Equal(f.ids(), []string{"WEB/web-0"}) || !f.im.Ready() {
		t.Fatalf("after the grace: %v", f.ids())
	}
	// A status change is not a removal: it applies at once.
	s := slice("shop", "web", "web-a", []discoveryv1.EndpointPort{port("http", 8080)}, ep("10.244.0.2", "web-0", ptr(false), ptr(false), nil))
	if _, err := f.cs.DiscoveryV1().EndpointSlices("shop").Update(t.Context(), s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.until("web-0 not serving", func() bool {
		v, _ := f.reg.Get("WEB", "web-0")
		return v.Instance.Status == registry.StatusOutOfService
	})
	// Once allowed, a removal is immediate.
	if err := f.cs.DiscoveryV1().EndpointSlices("shop").Delete(t.Context(), "web-a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.until("web-0 withdrawn", func() bool { return len(f.ids()) == 0 })
}

// A restarted goreka's restored imported instances stay until the
// importer is ready, then the ones no slice accounts for are withdrawn.
func TestRestoredSweptAfterGrace(t *testing.T) {
	clock := clocktest.New(time.Unix(1_800_000_000, 0))
	old := registry.New(registry.Options{Now: clock.Now})
	m := Mapping{ClusterID: "c1"}
	for _, id := range []string{"web-0", "gone-0"} {
		got, _ := m.Instances("shop", "web", nil, []*discoveryv1.EndpointSlice{slice("shop", "web", "x", []discoveryv1.EndpointPort{port("http", 80)}, ep("10.244.0.9", id, nil, nil, nil))})
		if _, err := old.Import(got[id]); err != nil {
			t.Fatal(err)
		}
	}
	reg := registry.New(registry.Options{Now: clock.Now, KeepImported: true})
	if n := reg.Restore(old.Export()); n != 2 {
		t.Fatalf("restored %d", n)
	}
	f := newFixture(t, reg)
	f.create(slice("shop", "web", "web-a", []discoveryv1.EndpointPort{port("http", 80)}, ep("10.244.0.9", "web-0", nil, nil, nil)))
	f.cached(1)
	f.im.step()
	if !slices.Equal(f.ids(), []string{"WEB/gone-0", "WEB/web-0"}) {
		t.Fatalf("before the grace: %v", f.ids())
	}
	f.clock.Advance(30 * time.Second)
	f.im.step()
	if !slices.Equal(f.ids(), []string{"WEB/web-0"}) {
		t.Fatalf("after the grace: %v, want the stale restored one withdrawn", f.ids())
	}
}

// Two Services whose endpoints would be the same application and id (two
// namespaces' web in the default goreka namespace, one pod name): the
// first keeps it, the second is refused with a log line and a metric.
func TestCollisionRefused(t *testing.T) {
	f := newFixture(t, nil)
	f.create(slice("shop", "web", "web-a", []discoveryv1.EndpointPort{port("http", 80)}, ep("10.244.0.2", "web-0", nil, nil, nil)))
	f.until("imported", func() bool { return len(f.ids()) == 1 })
	f.create(slice("blog", "web", "web-b", []discoveryv1.EndpointPort{port("http", 80)}, ep("10.244.1.2", "web-0", nil, nil, nil)))
	f.until("blog's slice cached", func() bool {
		_, sl := f.im.lookup(svcKey{"blog", "web"})
		return len(sl) == 1
	})
	f.im.step()
	if v, _ := f.reg.Get("WEB", "web-0"); v.Instance.IPAddr != "10.244.0.2" || v.Instance.Metadata[kube.MetaNamespace] != "shop" {
		t.Fatalf("the first Service's endpoint was overwritten: %+v", v.Instance)
	}
	// The holder's endpoint goes (after the grace, when removals apply):
	// the refused Service takes the key, though its own slice did not
	// change and no informer event names it.
	f.clock.Advance(time.Minute)
	f.im.step()
	if err := f.cs.DiscoveryV1().EndpointSlices("shop").Delete(t.Context(), "web-a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.until("blog's web-0 imported once shop's is gone", func() bool {
		v, ok := f.reg.Get("WEB", "web-0")
		return ok && v.Instance.IPAddr == "10.244.1.2" && v.Instance.Metadata[kube.MetaNamespace] == "blog"
	})
}
