package importer

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/goreka/goreka/kube"
	gns "github.com/goreka/goreka/namespace"
	"github.com/goreka/goreka/registry"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// Config is what an Importer needs; cmd/goreka fills it from
// goreka.kubernetes.*.
type Config struct {
	Kube kube.Config
	// Client is the API server's; nil: kube.NewClient(Kube).
	Client kubernetes.Interface
	// Registry returns the registry of a goreka namespace; an error (an
	// unknown namespace) skips the Service, logged and counted.
	Registry func(Target) (*registry.Registry, error)
	// Targets lists the goreka namespaces that exist (for the sweep of
	// imported instances no Service accounts for); nil: the default one.
	Targets func() []Target
	Metrics *kube.Metrics    // nil: a private set
	Now     func() time.Time // the clock of resync-grace; nil: time.Now
	Logger  *slog.Logger
	// Tick is how often the grace is looked at again while removals wait
	// (0: one second); the decision reads Now.
	Tick time.Duration
}

// Importer keeps the registries' imported instances equal to the
// Services' EndpointSlices.
type Importer struct {
	cfg Config
	m   Mapping
	log *slog.Logger

	mu     sync.Mutex
	dirty  map[svcKey]bool
	wake   chan struct{}
	synced time.Time // when every informer had synced; zero before
	ready  bool      // synced and the grace passed: removals allowed
	swept  bool      // the first sweep after ready is done
	owned  map[svcKey]map[instKey]bool
	owner  map[instKey]svcKey
	// refused are the Services refused a key another Service holds: when
	// the holder lets it go, they are reconciled again.
	refused map[instKey]map[svcKey]bool
	sources []source
}

type svcKey struct{ ns, name string }

type instKey struct {
	target Target
	app    string
	id     string
}

// source is the informers of one watched namespace ("" = all).
type source struct {
	factory  informers.SharedInformerFactory
	slices   cache.SharedIndexInformer
	services cache.SharedIndexInformer
	handlers []cache.ResourceEventHandlerRegistration // the importer's, one per informer
}

const byService = "service"

// New builds an Importer (and its client, unless given); Run starts it.
func New(cfg Config) (*Importer, error) {
	if cfg.Client == nil {
		c, err := kube.NewClient(cfg.Kube)
		if err != nil {
			return nil, err
		}
		cfg.Client = c
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Metrics == nil {
		cfg.Metrics = kube.NewMetrics()
	}
	cfg.Metrics.ServeImport()
	if cfg.Tick <= 0 {
		cfg.Tick = time.Second
	}
	if cfg.Targets == nil {
		cfg.Targets = func() []Target { return []Target{gns.Default} }
	}
	k := cfg.Kube
	return &Importer{cfg: cfg, log: cfg.Logger,
		m:     Mapping{ClusterID: k.ClusterID, PortName: k.Import.PortName, NamespaceMode: k.Import.NamespaceMode},
		dirty: map[svcKey]bool{}, wake: make(chan struct{}, 1),
		owned: map[svcKey]map[instKey]bool{}, owner: map[instKey]svcKey{}, refused: map[instKey]map[svcKey]bool{}}, nil
}

// Run watches the API server and applies what it says until ctx is done.
func (im *Importer) Run(ctx context.Context) error {
	if err := im.start(ctx); err != nil {
		return err
	}
	defer im.stop()
	im.log.Info("importing Kubernetes Services", "namespaces", im.cfg.Kube.Import.Namespaces, "cluster_id", im.cfg.Kube.ClusterID,
		"resync_grace", im.cfg.Kube.ResyncGrace)
	t := time.NewTicker(im.cfg.Tick)
	defer t.Stop()
	for {
		im.step()
		select {
		case <-ctx.Done():
			return nil
		case <-im.wake:
		case <-t.C:
		}
	}
}

// start builds and starts the informers.
func (im *Importer) start(ctx context.Context) error {
	nss := im.cfg.Kube.Import.Namespaces
	if len(nss) == 0 {
		nss = []string{metav1.NamespaceAll}
	}
	for _, ns := range nss {
		f := informers.NewSharedInformerFactoryWithOptions(im.cfg.Client, 0, informers.WithNamespace(ns))
		s := source{factory: f, slices: f.Discovery().V1().EndpointSlices().Informer(), services: f.Core().V1().Services().Informer()}
		if err := s.slices.AddIndexers(cache.Indexers{byService: sliceService}); err != nil {
			return err
		}
		for _, inf := range []cache.SharedIndexInformer{s.slices, s.services} {
			reg, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
				AddFunc:    im.enqueue,
				UpdateFunc: func(_, o any) { im.enqueue(o) },
				DeleteFunc: im.enqueue,
			})
			if err != nil {
				return err
			}
			s.handlers = append(s.handlers, reg)
			if err := inf.SetWatchErrorHandlerWithContext(im.watchError); err != nil {
				return err
			}
		}
		im.sources = append(im.sources, s)
	}
	for _, s := range im.sources {
		s.factory.Start(ctx.Done())
	}
	return nil
}

// stop waits for the informers to end (ctx is done).
func (im *Importer) stop() {
	for _, s := range im.sources {
		s.factory.Shutdown()
	}
}

// watchError logs a failed list or watch (403, connection refused): the
// informer keeps its last state and retries with backoff.
func (im *Importer) watchError(_ context.Context, r *cache.Reflector, err error) {
	im.cfg.Metrics.SyncErrors.Inc()
	im.log.Warn("Kubernetes list/watch failed; imported instances are kept until it succeeds", "reflector", r.TypeDescription(), "err", err)
}

func sliceService(obj any) ([]string, error) {
	s, ok := obj.(*discoveryv1.EndpointSlice)
	if !ok || s.Labels[kube.LabelServiceName] == "" {
		return nil, nil
	}
	return []string{s.Namespace + "/" + s.Labels[kube.LabelServiceName]}, nil
}

func (im *Importer) enqueue(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	var k svcKey
	switch o := obj.(type) {
	case *discoveryv1.EndpointSlice:
		if o.Labels[kube.LabelServiceName] == "" {
			return
		}
		k = svcKey{o.Namespace, o.Labels[kube.LabelServiceName]}
	case *corev1.Service:
		k = svcKey{o.Namespace, o.Name}
	default:
		return
	}
	im.mu.Lock()
	im.dirty[k] = true
	im.mu.Unlock()
	select {
	case im.wake <- struct{}{}:
	default:
	}
}

// releaseLocked lets key ik go: the Services refused it are reconciled
// again (the next step), so that one of them takes it.
func (im *Importer) releaseLocked(ik instKey) {
	delete(im.owner, ik)
	for k := range im.refused[ik] {
		im.dirty[k] = true
	}
	if len(im.refused[ik]) > 0 {
		select {
		case im.wake <- struct{}{}:
		default:
		}
	}
	delete(im.refused, ik)
}

// hasSynced reports whether every informer has synced and delivered its
// initial list to the handler (the registration's HasSynced: an
// informer's own can be true before its handlers ran, and a restored
// instance of a Service not yet enqueued would be swept).
func (im *Importer) hasSynced() bool {
	for _, s := range im.sources {
		for _, h := range s.handlers {
			if !h.HasSynced() {
				return false
			}
		}
	}
	return len(im.sources) > 0
}

// step reconciles the dirty Services and, once removals are allowed,
// sweeps what no Service accounts for.
func (im *Importer) step() {
	im.mu.Lock()
	if !im.ready && im.synced.IsZero() && im.hasSynced() {
		im.synced = im.cfg.Now()
		im.log.Info("Kubernetes informers synced; removals wait for the resync grace", "grace", im.cfg.Kube.ResyncGrace)
	}
	if !im.ready && !im.synced.IsZero() && !im.cfg.Now().Before(im.synced.Add(im.cfg.Kube.ResyncGrace)) {
		im.ready = true
		// Services whose removals waited are looked at again.
		for k := range im.owned {
			im.dirty[k] = true
		}
	}
	dirty := im.dirty
	im.dirty = map[svcKey]bool{}
	ready := im.ready
	im.mu.Unlock()

	for _, k := range slices.SortedFunc(maps.Keys(dirty), func(a, b svcKey) int {
		if a.ns != b.ns {
			return cmpStr(a.ns, b.ns)
		}
		return cmpStr(a.name, b.name)
	}) {
		im.reconcile(k, ready)
	}
	if ready && !im.swept {
		im.swept = true
		im.sweep()
	}
	im.count()
}

func cmpStr(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// lookup reads a Service and its slices from the informers' caches.
func (im *Importer) lookup(k svcKey) (*corev1.Service, []*discoveryv1.EndpointSlice) {
	var svc *corev1.Service
	var out []*discoveryv1.EndpointSlice
	for _, s := range im.sources {
		if o, ok, _ := s.services.GetIndexer().GetByKey(k.ns + "/" + k.name); ok {
			svc = o.(*corev1.Service)
		}
		objs, _ := s.slices.GetIndexer().ByIndex(byService, k.ns+"/"+k.name)
		for _, o := range objs {
			out = append(out, o.(*discoveryv1.EndpointSlice))
		}
	}
	slices.SortFunc(out, func(a, b *discoveryv1.EndpointSlice) int { return cmpStr(a.Name, b.Name) })
	return svc, out
}

// reconcile makes one Service's imported instances what its slices say;
// removals only when ready.
func (im *Importer) reconcile(k svcKey, ready bool) {
	svc, sl := im.lookup(k)
	want, skipped := im.m.Instances(k.ns, k.name, svc, sl)
	for _, s := range skipped {
		im.log.Info("Kubernetes endpoints not imported", "namespace", k.ns, "service", k.name, "why", s.String())
	}
	target := im.m.Target(k.ns)
	reg, err := im.cfg.Registry(target)
	if err != nil {
		if len(want) > 0 {
			im.cfg.Metrics.SyncErrors.Inc()
			im.log.Warn("Kubernetes Service not imported", "namespace", k.ns, "service", k.name, "goreka_namespace", target, "err", err)
		}
		return
	}
	im.mu.Lock()
	had := im.owned[k]
	im.mu.Unlock()
	now := map[instKey]bool{}
	for _, id := range slices.Sorted(maps.Keys(want)) {
		in := want[id]
		ik := instKey{target, in.App, id}
		im.mu.Lock()
		other, taken := im.owner[ik]
		if !taken {
			im.owner[ik] = k
		} else if other != k {
			if im.refused[ik] == nil {
				im.refused[ik] = map[svcKey]bool{}
			}
			im.refused[ik][k] = true
		}
		im.mu.Unlock()
		if taken && other != k {
			im.cfg.Metrics.SyncErrors.Inc()
			im.log.Warn("Kubernetes endpoint not imported: another Service's endpoint has the same application and id",
				"namespace", k.ns, "service", k.name, "app", in.App, "id", id, "imported_from", other.ns+"/"+other.name)
			continue
		}
		if v, ok := reg.Get(in.App, id); ok && v.Source == "" && !v.Static {
			// A pod whose own Eureka client registers with its pod name as
			// instance id: the import takes the key over (its client's
			// writes are refused from now on, its heartbeats ignored).
			im.log.Warn("Kubernetes endpoint replaces a client's registration of the same application and id",
				"namespace", k.ns, "service", k.name, "app", in.App, "id", id)
		}
		if _, err := reg.Import(in); err != nil {
			im.cfg.Metrics.SyncErrors.Inc()
			im.log.Warn("Kubernetes endpoint not imported", "namespace", k.ns, "service", k.name, "id", id, "err", err)
			if !taken && !had[ik] { // a claim that imported nothing is not held (another Service may take the key)
				im.mu.Lock()
				im.releaseLocked(ik)
				im.mu.Unlock()
			}
			continue
		}
		now[ik] = true
	}
	for ik := range had {
		if now[ik] {
			continue
		}
		if !ready {
			now[ik] = true // kept until removals are allowed
			continue
		}
		if err := reg.Withdraw(ik.app, ik.id); err != nil && !errors.Is(err, registry.ErrNotFound) {
			im.log.Warn("imported instance not withdrawn", "app", ik.app, "id", ik.id, "err", err)
		}
		im.mu.Lock()
		if im.owner[ik] == k {
			im.releaseLocked(ik)
		}
		im.mu.Unlock()
	}
	im.mu.Lock()
	if len(now) == 0 {
		delete(im.owned, k)
	} else {
		im.owned[k] = now
	}
	im.mu.Unlock()
}

// sweep withdraws the imported instances no Service accounts for: a
// restored snapshot's, or those of Services deleted while goreka was
// down. It runs once, when removals become allowed.
func (im *Importer) sweep() {
	im.mu.Lock()
	keep := maps.Clone(im.owner)
	im.mu.Unlock()
	n := 0
	for _, target := range im.cfg.Targets() {
		reg, err := im.cfg.Registry(target)
		if err != nil {
			continue
		}
		for _, k := range reg.ImportedKeys(kube.SourceKubernetes) {
			if _, ok := keep[instKey{target, k.App, k.ID}]; ok {
				continue
			}
			if reg.Withdraw(k.App, k.ID) == nil {
				n++
			}
		}
	}
	im.log.Info("Kubernetes import reconciled", "withdrawn_stale", n)
}

// count sets the imported-instances gauge.
func (im *Importer) count() {
	im.mu.Lock()
	n := 0
	for _, s := range im.owned {
		n += len(s)
	}
	im.mu.Unlock()
	im.cfg.Metrics.ImportedInstances.Set(float64(n))
}

// Ready reports whether removals are allowed (informers synced and the
// grace passed).
func (im *Importer) Ready() bool {
	im.mu.Lock()
	defer im.mu.Unlock()
	return im.ready
}
