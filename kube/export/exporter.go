package export

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/goreka/goreka/kube"
	"github.com/goreka/goreka/registry"
)

// AnnotationApp names the Eureka application an exported object was
// written for: of two applications whose names sanitize to one Service
// name, the one that holds the Service keeps it.
const AnnotationApp = "goreka.io/app"

// Defaults of Config's zero values.
const (
	DefaultCoalesce      = 250 * time.Millisecond
	DefaultResync        = 5 * time.Minute
	DefaultLeaseDuration = 15 * time.Second
	DefaultRenewDeadline = 10 * time.Second
	DefaultRetryPeriod   = 2 * time.Second
)

// Config is the exporter's configuration (goreka.kubernetes.export.*).
type Config struct {
	Client    kubernetes.Interface
	Namespace string // where Services, EndpointSlices, Endpoints and the Lease are written
	ClusterID string // the cluster-id label and owner annotation of every object written
	// Endpoints also writes a core/v1 Endpoints object per Service.
	Endpoints bool
	// Coalesce is how long a change waits before it is written: every
	// change of an application within that time is one write per object.
	// 0 = DefaultCoalesce.
	Coalesce time.Duration
	// Grace is how long after Run nothing is written, so that a restarted
	// goreka's registry (start-up sync, re-registrations) fills before the
	// exported objects are compared with it; a new leader of a peer group
	// that has run longer writes at once.
	Grace time.Duration
	// Resync is the period of the full reconcile that repairs objects
	// changed behind goreka's back. 0 = DefaultResync.
	Resync time.Duration
	// Identity is this node's name in the Lease; "" = host name and pid.
	Identity string
	// LeaseName is the Lease of the peer group's leader election; "" =
	// "goreka-export-" + ClusterID.
	LeaseName                                 string
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// Buffer is the change stream's buffer (events). 0 = 4096.
	Buffer  int
	Metrics *kube.Metrics
	Logger  *slog.Logger
	Now     func() time.Time
}

// Exporter writes a registry's applications to Kubernetes while it leads
// its peer group (see the package doc).
type Exporter struct {
	cfg Config
	log *slog.Logger
	m   *kube.Metrics
	now func() time.Time

	reg *registry.Registry
	sub *registry.Subscription

	services  *store[*corev1.Service]
	slicesSt  *store[*discoveryv1.EndpointSlice]
	endpoints *store[*corev1.Endpoints]
	factories []informers.SharedInformerFactory
	synced    []cache.InformerSynced
	// leadMu is held for a term as leader: a new term's writes never
	// overlap the last one's.
	leadMu sync.Mutex

	mu      sync.Mutex
	apps    map[string]map[string]*registry.Instance // app -> id -> instance, imported ones left out
	byName  map[string]map[string]bool               // Service name -> the apps of apps it names
	pending map[string]time.Time                     // Service name -> when it is due
	retries map[string]time.Duration                 // Service name -> backoff after a failed write
	refused map[string]string                        // Service name -> why, logged once
	owned   map[string]bool                          // Service names exported by this node as leader
	wake    chan struct{}
	busy    int // Services taken by Step and not finished

	// keepLease (tests) leaves the Lease held when Run ends, as a killed
	// process does.
	keepLease bool
}

// New returns an exporter of reg. It subscribes to reg's change stream
// at once, so that no change after New is missed; Run does the rest.
func New(cfg Config, reg *registry.Registry) *Exporter {
	if cfg.Coalesce <= 0 {
		cfg.Coalesce = DefaultCoalesce
	}
	if cfg.Resync <= 0 {
		cfg.Resync = DefaultResync
	}
	if cfg.LeaseDuration <= 0 {
		cfg.LeaseDuration = DefaultLeaseDuration
	}
	if cfg.RenewDeadline <= 0 {
		cfg.RenewDeadline = DefaultRenewDeadline
	}
	if cfg.RetryPeriod <= 0 {
		cfg.RetryPeriod = DefaultRetryPeriod
	}
	if cfg.Buffer <= 0 {
		cfg.Buffer = 4096
	}
	if cfg.LeaseName == "" {
		cfg.LeaseName = LeaseName(cfg.ClusterID)
	}
	if cfg.Identity == "" {
		h, _ := os.Hostname()
		cfg.Identity = h + "-" + strconv.Itoa(os.Getpid())
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Metrics == nil {
		cfg.Metrics = kube.NewMetrics()
	}
	cfg.Metrics.ServeExport()
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	e := &Exporter{
		cfg: cfg, log: cfg.Logger, m: cfg.Metrics, now: cfg.Now, reg: reg,
		apps:    map[string]map[string]*registry.Instance{},
		byName:  map[string]map[string]bool{},
		pending: map[string]time.Time{},
		retries: map[string]time.Duration{},
		refused: map[string]string{},
		owned:   map[string]bool{},
		wake:    make(chan struct{}, 1),
	}
	e.sub = reg.Subscribe(cfg.Buffer)
	// Every Service of the namespace (a name taken by someone else is a
	// collision); only goreka's own slices and Endpoints of this cluster id.
	all := informers.NewSharedInformerFactoryWithOptions(cfg.Client, 0, informers.WithNamespace(cfg.Namespace))
	svcInf := all.Core().V1().Services().Informer()
	ownSel := labels.SelectorFromSet(labels.Set{kube.LabelManagedBy: kube.ManagedBy, kube.LabelClusterID: cfg.ClusterID}).String()
	own := informers.NewSharedInformerFactoryWithOptions(cfg.Client, 0, informers.WithNamespace(cfg.Namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = ownSel }))
	sliceInf := own.Discovery().V1().EndpointSlices().Informer()
	_ = sliceInf.AddIndexers(cache.Indexers{kube.LabelServiceName: func(o any) ([]string, error) {
		return []string{o.(*discoveryv1.EndpointSlice).Labels[kube.LabelServiceName]}, nil
	}})
	e.services = newStore[*corev1.Service](svcInf)
	e.slicesSt = newStore[*discoveryv1.EndpointSlice](sliceInf)
	e.synced = []cache.InformerSynced{svcInf.HasSynced, sliceInf.HasSynced}
	watch(svcInf, e.services, func(o *corev1.Service) string { return o.Name }, e)
	watch(sliceInf, e.slicesSt, func(o *discoveryv1.EndpointSlice) string { return o.Labels[kube.LabelServiceName] }, e)
	if cfg.Endpoints {
		epInf := own.Core().V1().Endpoints().Informer()
		e.endpoints = newStore[*corev1.Endpoints](epInf)
		e.synced = append(e.synced, epInf.HasSynced)
		watch(epInf, e.endpoints, func(o *corev1.Endpoints) string { return o.Name }, e)
	}
	e.factories = []informers.SharedInformerFactory{all, own}
	return e
}

// watch keeps st from inf and marks the Service an object belongs to for
// a reconcile: a change made behind goreka's back is repaired, and its
// own writes are compared once more (and not written again).
func watch[T metav1.Object](inf cache.SharedIndexInformer, st *store[T], service func(T) string, e *Exporter) {
	on := func(o any) {
		if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
			o = d.Obj
		}
		t, ok := o.(T)
		if !ok {
			return
		}
		st.seen(t)
		if s := service(t); s != "" {
			e.mark(s, e.now())
		}
	}
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    on,
		UpdateFunc: func(_, o any) { on(o) },
		DeleteFunc: on,
	})
}

// Run follows the registry, keeps the informers and contests the Lease
// until ctx is done; while this node leads it writes. It returns when
// every goroutine it started has ended.
func (e *Exporter) Run(ctx context.Context) {
	started := e.now()
	var wg sync.WaitGroup
	wg.Go(func() { e.feed(ctx) })
	for _, f := range e.factories {
		f.Start(ctx.Done())
	}
	defer func() {
		for _, f := range e.factories {
			f.Shutdown()
		}
	}()
	defer wg.Wait()
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: e.cfg.Namespace, Name: e.cfg.LeaseName},
		Client:     e.cfg.Client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: e.cfg.Identity},
	}
	defer func() { e.leadMu.Lock(); e.leadMu.Unlock() }() // the last term's writes end first
	for ctx.Err() == nil {
		le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
			Lock:            lock,
			LeaseDuration:   e.cfg.LeaseDuration,
			RenewDeadline:   e.cfg.RenewDeadline,
			RetryPeriod:     e.cfg.RetryPeriod,
			ReleaseOnCancel: !e.keepLease,
			Name:            e.cfg.LeaseName,
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: func(lctx context.Context) {
					e.leadMu.Lock()
					defer e.leadMu.Unlock()
					e.lead(lctx, started)
				},
				OnStoppedLeading: func() {},
				OnNewLeader: func(id string) {
					e.log.Info("kubernetes export: leader", "identity", id, "self", id == e.cfg.Identity)
				},
			},
		})
		if err != nil {
			e.log.Error("kubernetes export: leader election", "err", err)
			return
		}
		le.Run(ctx)
		if ctx.Err() == nil {
			// Run returns before ctx is done only when a renewal failed (an
			// API server away or refusing): a failed call of the bridge.
			e.m.SyncErrors.Inc()
			e.log.Warn("kubernetes export: lost the Lease (renewal failed); contesting it again", "lease", e.cfg.LeaseName, "namespace", e.cfg.Namespace)
		}
		// The writes of a lost term end before the Lease is contested again.
		e.leadMu.Lock()
		e.leadMu.Unlock() //nolint:staticcheck // an empty critical section: waiting for the term
	}
}

// feed keeps the index from the change stream: a view at subscription,
// then the changes in revision order; on *registry.LaggedError a new
// subscription and view.
func (e *Exporter) feed(ctx context.Context) {
	sub := e.sub
	for {
		view := e.reg.Applications()
		e.reset(view)
		if !e.follow(ctx, sub, view.Revision) {
			sub.Close()
			return
		}
		e.log.Warn("kubernetes export fell behind the change stream; resynchronising", "err", sub.Err())
		sub = e.reg.Subscribe(e.cfg.Buffer)
	}
}

func (e *Exporter) follow(ctx context.Context, sub *registry.Subscription, after int64) bool {
	for {
		select {
		case <-ctx.Done():
			return false
		case ev, ok := <-sub.Events():
			if !ok {
				return sub.Err() != nil
			}
			if ev.Revision > after {
				e.apply(ev)
			}
		}
	}
}

// reset replaces the index with a view, marking every application that
// is new, changed or gone.
func (e *Exporter) reset(view *registry.Applications) {
	now := e.now()
	next := map[string]map[string]*registry.Instance{}
	for _, a := range view.Apps {
		m := map[string]*registry.Instance{}
		for _, lv := range a.Instances {
			if in := lv.Instance; in != nil && !kube.Imported(in.Metadata) {
				m[lv.Instance.ID()] = in
			}
		}
		if len(m) > 0 {
			next[a.Name] = m
		}
	}
	byName := map[string]map[string]bool{}
	for app := range next {
		n := ServiceName(app)
		if byName[n] == nil {
			byName[n] = map[string]bool{}
		}
		byName[n][app] = true
	}
	e.mu.Lock()
	old := e.apps
	e.apps, e.byName = next, byName
	e.mu.Unlock()
	for app := range next {
		if !maps.Equal(next[app], old[app]) {
			e.mark(ServiceName(app), now)
		}
	}
	for app := range old {
		if next[app] == nil {
			e.mark(ServiceName(app), now)
		}
	}
}

func (e *Exporter) apply(ev registry.Event) {
	in := ev.Instance()
	e.mu.Lock()
	m := e.apps[ev.App]
	switch {
	case ev.Kind.Removal() || in == nil || kube.Imported(in.Metadata):
		if _, ok := m[ev.ID]; !ok {
			e.mu.Unlock()
			return
		}
		delete(m, ev.ID)
		if len(m) == 0 {
			delete(e.apps, ev.App)
			n := ServiceName(ev.App)
			if delete(e.byName[n], ev.App); len(e.byName[n]) == 0 {
				delete(e.byName, n)
			}
		}
	default:
		if m == nil {
			m = map[string]*registry.Instance{}
			e.apps[ev.App] = m
			n := ServiceName(ev.App)
			if e.byName[n] == nil {
				e.byName[n] = map[string]bool{}
			}
			e.byName[n][ev.App] = true
		}
		m[ev.ID] = in
	}
	e.mu.Unlock()
	e.mark(ServiceName(ev.App), e.now())
}

// mark makes Service name due for a reconcile Coalesce after now, unless
// it is due already (a burst is written once, Coalesce after it began).
func (e *Exporter) mark(name string, now time.Time) {
	if name == "" {
		return
	}
	e.mu.Lock()
	if _, ok := e.pending[name]; !ok {
		e.pending[name] = now.Add(e.cfg.Coalesce)
	}
	e.mu.Unlock()
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// markAll makes every Service due now: every application's and every
// one goreka owns (to delete those of applications gone).
func (e *Exporter) markAll(now time.Time) {
	e.mu.Lock()
	for app := range e.apps {
		if n := ServiceName(app); n != "" {
			e.pending[n] = now
		}
	}
	e.mu.Unlock()
	for _, s := range e.services.all() {
		if kube.Owns(s.Labels, s.Annotations, e.cfg.ClusterID) {
			e.mu.Lock()
			e.pending[s.Name] = now
			e.mu.Unlock()
		}
	}
	for _, s := range e.slicesSt.all() {
		if n := s.Labels[kube.LabelServiceName]; n != "" && kube.Owns(s.Labels, s.Annotations, e.cfg.ClusterID) {
			e.mu.Lock()
			e.pending[n] = now
			e.mu.Unlock()
		}
	}
	if e.endpoints != nil {
		for _, o := range e.endpoints.all() {
			if kube.Owns(o.Labels, o.Annotations, e.cfg.ClusterID) {
				e.mu.Lock()
				e.pending[o.Name] = now
				e.mu.Unlock()
			}
		}
	}
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// due takes the Services due at now (sorted) and returns when the next
// one is; zero when none is pending.
func (e *Exporter) due(now time.Time) ([]string, time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	var next time.Time
	for n, t := range e.pending {
		if !t.After(now) {
			out = append(out, n)
			delete(e.pending, n)
		} else if next.IsZero() || t.Before(next) {
			next = t
		}
	}
	slices.Sort(out)
	e.busy += len(out)
	return out, next
}

// lead is one term as leader: after the informers synced and the grace
// since start, a full reconcile, then every Service as it falls due, and
// a full reconcile every Resync.
func (e *Exporter) lead(ctx context.Context, started time.Time) {
	e.m.Leader.Set(1)
	e.log.Info("kubernetes export: leading; writing to Kubernetes", "namespace", e.cfg.Namespace, "cluster_id", e.cfg.ClusterID)
	defer func() {
		e.m.Leader.Set(0)
		e.m.ExportedServices.Set(0)
		e.mu.Lock()
		clear(e.owned)
		clear(e.refused)
		e.mu.Unlock()
		e.log.Info("kubernetes export: no longer leading; not writing", "namespace", e.cfg.Namespace)
	}()
	if !cache.WaitForCacheSync(ctx.Done(), e.synced...) {
		return
	}
	if d := started.Add(e.cfg.Grace).Sub(e.now()); d > 0 {
		e.log.Info("kubernetes export: waiting for the registry to fill before writing", "grace", d)
		if !sleep(ctx, d) {
			return
		}
	}
	var nextResync time.Time
	for {
		now := e.now()
		if !now.Before(nextResync) {
			e.markAll(now)
			nextResync = now.Add(e.cfg.Resync)
		}
		if !e.Step(ctx, now) {
			return
		}
		_, next := e.peek()
		wait := nextResync.Sub(now)
		if !next.IsZero() && next.Sub(now) < wait {
			wait = next.Sub(now)
		}
		t := time.NewTimer(max(wait, 0))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-e.wake:
		case <-t.C:
		}
		t.Stop()
	}
}

func (e *Exporter) peek() (int, time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	var next time.Time
	for _, t := range e.pending {
		if next.IsZero() || t.Before(next) {
			next = t
		}
	}
	return len(e.pending) + e.busy, next
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// Step reconciles every Service due at now; false once ctx is done.
func (e *Exporter) Step(ctx context.Context, now time.Time) bool {
	names, _ := e.due(now)
	defer func() {
		e.mu.Lock()
		e.busy -= len(names)
		e.mu.Unlock()
	}()
	for _, n := range names {
		if ctx.Err() != nil {
			return false
		}
		if err := e.sync(ctx, n); err != nil {
			if ctx.Err() != nil {
				return false
			}
			e.m.SyncErrors.Inc()
			e.mu.Lock()
			b := min(max(2*e.retries[n], time.Second), time.Minute)
			e.retries[n] = b
			if _, ok := e.pending[n]; !ok {
				e.pending[n] = now.Add(b)
			}
			e.mu.Unlock()
			e.log.Warn("kubernetes export: write failed; retrying", "service", n, "namespace", e.cfg.Namespace, "retry_in", b, "err", err)
			continue
		}
		e.mu.Lock()
		delete(e.retries, n)
		e.mu.Unlock()
	}
	e.mu.Lock()
	e.m.ExportedServices.Set(float64(len(e.owned)))
	e.mu.Unlock()
	return ctx.Err() == nil
}

// candidates returns the applications that sanitize to Service name with
// at least one exportable endpoint, sorted, with their endpoints.
func (e *Exporter) candidates(name string) ([]string, map[string][]endpoint) {
	e.mu.Lock()
	var apps []string
	ins := map[string][]*registry.Instance{}
	for app := range e.byName[name] { // an index: a full reconcile is not O(apps^2)
		apps = append(apps, app)
		ins[app] = slices.Collect(maps.Values(e.apps[app]))
	}
	e.mu.Unlock()
	eps := map[string][]endpoint{}
	var out []string
	for _, app := range apps {
		if x := endpoints(ins[app]); len(x) > 0 {
			out = append(out, app)
			eps[app] = x
		}
	}
	slices.Sort(out)
	return out, eps
}

// refuse logs (once per reason) and counts a Service name goreka does not
// write.
func (e *Exporter) refuse(name, why string, args ...any) {
	e.mu.Lock()
	same := e.refused[name] == why
	e.refused[name] = why
	delete(e.owned, name)
	e.mu.Unlock()
	if same {
		return
	}
	e.m.SyncErrors.Inc()
	e.log.Warn("kubernetes export refused: "+why, append([]any{"service", name, "namespace", e.cfg.Namespace}, args...)...)
}

func (e *Exporter) accept(name string) {
	e.mu.Lock()
	delete(e.refused, name)
	e.mu.Unlock()
}

func (e *Exporter) ours(o metav1.Object) bool {
	return kube.Owns(o.GetLabels(), o.GetAnnotations(), e.cfg.ClusterID)
}

// sync makes Service name and its slices and Endpoints what the registry
// says, writing only what differs, and only objects goreka owns.
func (e *Exporter) sync(ctx context.Context, name string) error {
	apps, eps := e.candidates(name)
	ns := e.cfg.Namespace
	svc, exists := e.services.get(ns, name)
	if exists && !e.ours(svc) {
		if len(apps) > 0 {
			e.refuse(name, "a Service of that name exists and goreka did not create it", "apps", apps)
		}
		// Slices of goreka's own left on a name someone else took would
		// feed that Service: they go.
		return e.clear(ctx, name, nil)
	}
	winner := ""
	if len(apps) > 0 {
		winner = apps[0]
		if exists && slices.Contains(apps, svc.Annotations[AnnotationApp]) {
			winner = svc.Annotations[AnnotationApp]
		}
		for _, a := range apps {
			if a != winner {
				e.refuse(name, "another application's name sanitizes to the same Service name", "app", a, "exported", winner)
			}
		}
		if len(apps) == 1 {
			e.accept(name)
		}
	}
	if winner == "" {
		e.mu.Lock()
		delete(e.owned, name)
		delete(e.refused, name)
		e.mu.Unlock()
		return e.clear(ctx, name, svc)
	}
	svc, err := e.syncService(ctx, name, winner, eps[winner], svc, exists)
	if err != nil {
		return err
	}
	e.mu.Lock()
	e.owned[name] = true
	e.mu.Unlock()
	if err := e.syncSlices(ctx, svc, winner, eps[winner]); err != nil {
		return err
	}
	return e.syncEndpoints(ctx, name, winner, eps[winner])
}

func (e *Exporter) meta(name, app string, extra map[string]string) metav1.ObjectMeta {
	l := map[string]string{kube.LabelManagedBy: kube.ManagedBy, kube.LabelClusterID: e.cfg.ClusterID}
	maps.Copy(l, extra)
	return metav1.ObjectMeta{Name: name, Namespace: e.cfg.Namespace, Labels: l,
		Annotations: map[string]string{kube.AnnotationOwner: e.cfg.ClusterID, AnnotationApp: app}}
}

// metaDiffers reports whether cur lacks a label or annotation of want.
func metaDiffers(cur, want metav1.ObjectMeta) bool {
	for k, v := range want.Labels {
		if cur.Labels[k] != v {
			return true
		}
	}
	for k, v := range want.Annotations {
		if cur.Annotations[k] != v {
			return true
		}
	}
	return false
}

func mergeMeta(cur *metav1.ObjectMeta, want metav1.ObjectMeta) {
	if cur.Labels == nil {
		cur.Labels = map[string]string{}
	}
	if cur.Annotations == nil {
		cur.Annotations = map[string]string{}
	}
	maps.Copy(cur.Labels, want.Labels)
	maps.Copy(cur.Annotations, want.Annotations)
}

func (e *Exporter) count(verb, resource string) { e.m.APIWrites.WithLabelValues(verb, resource).Inc() }

func (e *Exporter) syncService(ctx context.Context, name, app string, eps []endpoint, cur *corev1.Service, exists bool) (*corev1.Service, error) {
	want := &corev1.Service{ObjectMeta: e.meta(name, app, nil), Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, Ports: servicePorts(eps)}}
	c := e.cfg.Client.CoreV1().Services(e.cfg.Namespace)
	if !exists {
		got, err := c.Create(ctx, want, metav1.CreateOptions{FieldManager: e.manager()})
		e.count("create", "services")
		if apierrors.IsAlreadyExists(err) {
			e.services.forget(name)
		}
		if err != nil {
			return nil, fmt.Errorf("create service: %w", err)
		}
		e.services.wrote(got)
		e.log.Info("kubernetes export: service created", "service", name, "app", app, "namespace", e.cfg.Namespace)
		return got, nil
	}
	if !metaDiffers(cur.ObjectMeta, want.ObjectMeta) && len(cur.Spec.Selector) == 0 && samePorts(cur.Spec.Ports, want.Spec.Ports) {
		return cur, nil
	}
	up := cur.DeepCopy()
	mergeMeta(&up.ObjectMeta, want.ObjectMeta)
	up.Spec.Selector = nil
	up.Spec.Ports = want.Spec.Ports
	got, err := c.Update(ctx, up, metav1.UpdateOptions{FieldManager: e.manager()})
	e.count("update", "services")
	if err != nil {
		e.services.forget(name)
		return nil, fmt.Errorf("update service: %w", err)
	}
	e.services.wrote(got)
	return got, nil
}

func samePorts(cur, want []corev1.ServicePort) bool {
	return slices.EqualFunc(cur, want, func(a, b corev1.ServicePort) bool {
		return a.Name == b.Name && a.Port == b.Port && a.Protocol == b.Protocol && a.TargetPort == b.TargetPort
	})
}

// ownedSlices returns goreka's slices of Service name, by name.
func (e *Exporter) ownedSlices(name string) []*discoveryv1.EndpointSlice {
	out := e.slicesSt.byIndex(kube.LabelServiceName, name, func(s *discoveryv1.EndpointSlice) bool {
		return s.Labels[kube.LabelServiceName] == name && e.ours(s)
	})
	slices.SortFunc(out, func(a, b *discoveryv1.EndpointSlice) int { return cmpString(a.Name, b.Name) })
	return out
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func (e *Exporter) syncSlices(ctx context.Context, svc *corev1.Service, app string, eps []endpoint) error {
	name := svc.Name
	cur := e.ownedSlices(name)
	byGroup := map[string][]*discoveryv1.EndpointSlice{}
	for _, s := range cur {
		k := groupKeyOf(s)
		byGroup[k] = append(byGroup[k], s)
	}
	var want []packed
	for _, g := range groups(eps) {
		want = append(want, pack(name, g, byGroup[g.key])...)
	}
	kept := map[string]bool{}
	c := e.cfg.Client.DiscoveryV1().EndpointSlices(e.cfg.Namespace)
	curByName := map[string]*discoveryv1.EndpointSlice{}
	for _, s := range cur {
		curByName[s.Name] = s
	}
	owner := []metav1.OwnerReference{{APIVersion: "v1", Kind: "Service", Name: name, UID: svc.UID, Controller: new(true)}}
	var errs []error
	for _, p := range want {
		if len(p.endpoints) == 0 {
			continue
		}
		kept[p.name] = true
		w := &discoveryv1.EndpointSlice{
			ObjectMeta:  e.meta(p.name, app, map[string]string{kube.LabelServiceName: name}),
			AddressType: p.group.addressType,
			Endpoints:   p.endpoints,
			Ports:       slicePorts(p.group.ports),
		}
		w.OwnerReferences = owner
		s, ok := curByName[p.name]
		if !ok {
			got, err := c.Create(ctx, w, metav1.CreateOptions{FieldManager: e.manager()})
			e.count("create", "endpointslices")
			if err != nil {
				e.slicesSt.forget(p.name)
				errs = append(errs, fmt.Errorf("create endpointslice %s: %w", p.name, err))
				continue
			}
			e.slicesSt.wrote(got)
			continue
		}
		if !metaDiffers(s.ObjectMeta, w.ObjectMeta) && sameOwner(s.OwnerReferences, svc.UID) &&
			sameSliceEndpoints(s.Endpoints, w.Endpoints) && sameSlicePorts(s.Ports, w.Ports) {
			continue
		}
		up := s.DeepCopy()
		mergeMeta(&up.ObjectMeta, w.ObjectMeta)
		up.OwnerReferences = owner
		up.Endpoints, up.Ports = w.Endpoints, w.Ports
		got, err := c.Update(ctx, up, metav1.UpdateOptions{FieldManager: e.manager()})
		e.count("update", "endpointslices")
		if err != nil {
			e.slicesSt.forget(p.name)
			errs = append(errs, fmt.Errorf("update endpointslice %s: %w", p.name, err))
			continue
		}
		e.slicesSt.wrote(got)
	}
	for _, s := range cur {
		if !kept[s.Name] {
			if err := e.deleteSlice(ctx, s); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

func sameOwner(refs []metav1.OwnerReference, uid types.UID) bool {
	return len(refs) == 1 && refs[0].UID == uid && refs[0].Kind == "Service"
}

func sameSliceEndpoints(a, b []discoveryv1.Endpoint) bool {
	return slices.EqualFunc(a, b, func(x, y discoveryv1.Endpoint) bool {
		return slices.Equal(x.Addresses, y.Addresses) && eqBool(x.Conditions.Ready, y.Conditions.Ready) &&
			eqBool(x.Conditions.Serving, y.Conditions.Serving) && eqBool(x.Conditions.Terminating, y.Conditions.Terminating) &&
			eqString(x.Zone, y.Zone)
	})
}

func sameSlicePorts(a, b []discoveryv1.EndpointPort) bool {
	return slices.EqualFunc(a, b, func(x, y discoveryv1.EndpointPort) bool {
		return eqString(x.Name, y.Name) && eqInt(x.Port, y.Port) && eqString((*string)(x.Protocol), (*string)(y.Protocol))
	})
}

func eqBool(a, b *bool) bool     { return (a == nil) == (b == nil) && (a == nil || *a == *b) }
func eqString(a, b *string) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }
func eqInt(a, b *int32) bool     { return (a == nil) == (b == nil) && (a == nil || *a == *b) }
func precondition(o metav1.Object) metav1.DeleteOptions {
	uid, rv := o.GetUID(), o.GetResourceVersion()
	return metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid, ResourceVersion: &rv}}
}

func (e *Exporter) deleteSlice(ctx context.Context, s *discoveryv1.EndpointSlice) error {
	err := e.cfg.Client.DiscoveryV1().EndpointSlices(e.cfg.Namespace).Delete(ctx, s.Name, precondition(s))
	e.count("delete", "endpointslices")
	if err != nil && !apierrors.IsNotFound(err) {
		e.slicesSt.forget(s.Name)
		return fmt.Errorf("delete endpointslice %s: %w", s.Name, err)
	}
	e.slicesSt.deleted(s)
	return nil
}

func (e *Exporter) syncEndpoints(ctx context.Context, name, app string, eps []endpoint) error {
	if e.endpoints == nil {
		return nil
	}
	subs, truncated := subsets(eps)
	want := &corev1.Endpoints{ObjectMeta: e.meta(name, app, map[string]string{kube.LabelSkipMirror: "true"}), Subsets: subs}
	if truncated {
		want.Annotations[overCapacity] = "truncated"
	}
	c := e.cfg.Client.CoreV1().Endpoints(e.cfg.Namespace) //nolint:staticcheck // the consumers that read Endpoints are the reason it is written
	cur, ok := e.endpoints.get(e.cfg.Namespace, name)
	if !ok {
		got, err := c.Create(ctx, want, metav1.CreateOptions{FieldManager: e.manager()})
		e.count("create", "endpoints")
		if apierrors.IsAlreadyExists(err) {
			e.refuse(name, "an Endpoints object of that name exists and goreka did not create it")
			return nil
		}
		if err != nil {
			return fmt.Errorf("create endpoints: %w", err)
		}
		e.endpoints.wrote(got)
		return nil
	}
	if !e.ours(cur) { // goreka's labels without its owner annotation: not goreka's to change
		e.refuse(name, "an Endpoints object of that name exists and goreka did not create it")
		return nil
	}
	_, curTrunc := cur.Annotations[overCapacity]
	if !metaDiffers(cur.ObjectMeta, want.ObjectMeta) && curTrunc == truncated && sameSubsets(cur.Subsets, subs) {
		return nil
	}
	up := cur.DeepCopy()
	mergeMeta(&up.ObjectMeta, want.ObjectMeta)
	if !truncated {
		delete(up.Annotations, overCapacity)
	}
	up.Subsets = subs
	got, err := c.Update(ctx, up, metav1.UpdateOptions{FieldManager: e.manager()})
	e.count("update", "endpoints")
	if err != nil {
		e.endpoints.forget(name)
		return fmt.Errorf("update endpoints: %w", err)
	}
	e.endpoints.wrote(got)
	return nil
}

func sameSubsets(a, b []corev1.EndpointSubset) bool {
	addr := func(x, y corev1.EndpointAddress) bool { return x.IP == y.IP }
	return slices.EqualFunc(a, b, func(x, y corev1.EndpointSubset) bool {
		return slices.EqualFunc(x.Addresses, y.Addresses, addr) && slices.EqualFunc(x.NotReadyAddresses, y.NotReadyAddresses, addr) &&
			slices.EqualFunc(x.Ports, y.Ports, func(p, q corev1.EndpointPort) bool {
				return p.Name == q.Name && p.Port == q.Port && p.Protocol == q.Protocol
			})
	})
}

// clear deletes goreka's objects of Service name: its slices, its
// Endpoints and, when svc is goreka's, the Service.
func (e *Exporter) clear(ctx context.Context, name string, svc *corev1.Service) error {
	var errs []error
	for _, s := range e.ownedSlices(name) {
		if err := e.deleteSlice(ctx, s); err != nil {
			errs = append(errs, err)
		}
	}
	if e.endpoints != nil {
		if o, ok := e.endpoints.get(e.cfg.Namespace, name); ok && e.ours(o) {
			err := e.cfg.Client.CoreV1().Endpoints(e.cfg.Namespace).Delete(ctx, name, precondition(o)) //nolint:staticcheck // see syncEndpoints
			e.count("delete", "endpoints")
			if err != nil && !apierrors.IsNotFound(err) {
				e.endpoints.forget(name)
				errs = append(errs, fmt.Errorf("delete endpoints: %w", err))
			} else {
				e.endpoints.deleted(o)
			}
		}
	}
	if svc != nil && e.ours(svc) && len(errs) == 0 {
		err := e.cfg.Client.CoreV1().Services(e.cfg.Namespace).Delete(ctx, name, precondition(svc))
		e.count("delete", "services")
		if err != nil && !apierrors.IsNotFound(err) {
			e.services.forget(name)
			errs = append(errs, fmt.Errorf("delete service: %w", err))
		} else {
			e.services.deleted(svc)
			e.log.Info("kubernetes export: service deleted", "service", name, "namespace", e.cfg.Namespace)
		}
	}
	return errors.Join(errs...)
}

// catchUp applies the changes queued on the subscription without waiting
// (tests, which drive Step themselves instead of Run).
func (e *Exporter) catchUp() {
	for {
		select {
		case ev, ok := <-e.sub.Events():
			if !ok {
				return
			}
			e.apply(ev)
		default:
			return
		}
	}
}

// manager is the field manager of goreka's writes: the objects'
// managedFields name the goreka group (cluster id) that wrote each field.
func (e *Exporter) manager() string { return "goreka-" + e.cfg.ClusterID }

// LeaseName is the leader election's Lease of a cluster id. A Lease name is
// a DNS-1123 subdomain, a cluster id a label value (which may hold upper
// case and '_'): such an id is lower-cased, '_' made '-', and a hash of the
// id added so that "East" and "east" do not share a Lease.
func LeaseName(clusterID string) string {
	n := strings.ToLower(strings.ReplaceAll(clusterID, "_", "-"))
	if n != clusterID {
		n += "-" + strconv.FormatUint(uint64(crc32.ChecksumIEEE([]byte(clusterID))), 36)
	}
	return "goreka-export-" + n
}
