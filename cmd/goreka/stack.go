package main

import (
	"context"
	"log/slog"
	"sync"

	"github.com/goreka/goreka/cache"
	"github.com/goreka/goreka/document"
	"github.com/goreka/goreka/eviction"
	"github.com/goreka/goreka/health"
	"github.com/goreka/goreka/region"
	"github.com/goreka/goreka/registry"
	"github.com/goreka/goreka/replication"
	"github.com/goreka/goreka/server"
	"github.com/goreka/goreka/server/api"
	"github.com/goreka/goreka/server/metrics"
	"github.com/goreka/goreka/snapshot"
)

// defaultNamespace is the name of the registry served at /eureka/...: the
// value of the namespace label of its metrics and of --namespace in goreka
// ctl. /ns/default/eureka/... is the same registry.
const defaultNamespace = "default"

// stack is one namespace's registry with everything a registry has: its
// response cache, eviction and self-preservation, health lifecycle,
// replication, warm-restart snapshot, tool API and HTTP handler. The
// default namespace and every /ns/{name}/ namespace are built by newStack,
// so a namespace is never a lesser registry than the default one.
type stack struct {
	name    string // defaultNamespace for /eureka/
	log     *slog.Logger
	changes changeLog // rate limit of onEvent's log lines (one per stack: listeners of two stacks run concurrently)
	reg     *registry.Registry
	cache   *cache.Cache
	regions document.Regions // eureka.server.remote-region-*: the default namespace's only
	evictor *eviction.Evictor
	health  *health.Monitor
	repl    *replication.Replicator
	srv     *server.Server // the namespace's HTTP handler
	api     *api.API       // the read API for tools, fed from onEvent
	ops     *server.Ops    // readiness and shutdown state of srv
	metrics *metrics.Metrics
	snap    *snapshot.Store // nil unless goreka.snapshot.path is set
	// restored is how many instances its snapshot restored at start-up.
	restored int
}

// newStack builds the registry stack of namespace name. Its replication
// goes to peers (already pointing at the namespace's URLs), its metrics
// carry namespace=name and its users are those scoped to it.
func (a *app) newStack(name string, peers []replication.Peer) (*stack, error) {
	cfg, now := a.cfg, a.now
	s := &stack{name: name, log: a.log}
	if name != defaultNamespace {
		s.log = a.log.With("namespace", name)
	}
	s.changes = changeLog{log: s.log, now: now}
	ro := registryOptions(cfg, now, s.onEvent, s.onRenew)
	if name != defaultNamespace {
		ro.MaxInstances = cfg.Goreka.Namespaces.MaxInstances
	}
	s.reg = registry.New(ro)
	s.api = api.New(s.reg, apiConfig(now)) // before any write: its index starts from the empty registry
	if p := snapshotPath(cfg, name); p != "" {
		sc := snapshotConfig(cfg, now, s.log)
		sc.Path = p
		s.snap = snapshot.New(s.reg, sc)
	}
	s.evictor = eviction.New(s.reg, evictionConfig(cfg, now, s.log))
	s.health = health.New(s.reg, s.evictor, nil, healthConfig(cfg, now, s.log))
	s.repl = replication.New(replicationConfig(cfg, now, s.log), s.reg, peers)

	// Remote regions are server-wide in Eureka and exchanged by stock
	// servers, which know only the default namespace: they are merged into
	// its reads only.
	if name == defaultNamespace {
		var err error
		if s.regions, err = remoteRegions(cfg, now, s.log, s.onRegionChange); err != nil {
			return nil, err
		}
	}
	docs := document.New(document.Config{Registry: s.reg, Codecs: codecs(cfg), Regions: s.regions})
	s.cache = cache.NewStreaming(cacheConfig(cfg, now), docs.Load)
	// One rate limiter and one set of per-client fetch limits for the
	// process, as in Eureka (its rate limiter is global): the default
	// stack's, which every namespace's server shares.
	var limiters *server.Limiters
	if name != defaultNamespace {
		limiters = a.stack.srv.Limiters()
	}
	s.srv = server.New(serverConfig(cfg), server.Deps{
		Limiters: limiters,
		Registry: s.reg,
		Docs:     docs,
		Cache:    s.cache,
		Gate:     s.evictor,
		Expiry:   s.evictor,
		Status:   stackStatus{a, s},
		Logger:   s.log.With("component", "http"),
		Now:      now,
	})
	s.srv.MountAPI(s.api)
	if cfg.Goreka.ConsulAPI {
		s.srv.MountConsulAPI(s.api)
	}
	s.srv.MountReports(server.ReporterFunc(func(app, id, reporter, reason string) (string, bool, error) {
		out, err := s.health.Report(app, id, reporter, reason)
		return string(out), out == health.ReportLimited, err
	}))
	if cfg.Dashboard.Enabled {
		path := cfg.Dashboard.Path
		if name != defaultNamespace {
			path = "/" // the namespace's dashboard is /ns/{name}/
		}
		s.srv.MountDashboard(path, server.DashboardSourceFunc(func() server.DashboardData { return a.dashboardData(s) }))
	}

	s.metrics = a.metricsFor(name, metrics.Sources{Cache: s.cache.Stats})
	s.metrics.MustRegister(s.evictor.Collector(), s.repl.Collector(), s.health.Collector())
	if name == defaultNamespace {
		// Process-wide, shared by every namespace: served at /metrics.
		s.metrics.MustRegister(s.srv.RateLimitCollector(), s.srv.FetchLimitCollector())
	}
	if s.regions.Set.Len() > 0 {
		s.metrics.MustRegister(s.regions.Set.Collector())
	}
	s.ops = s.srv.EnableOps(opsConfig(cfg, s.log, s.metrics, name))
	return s, nil
}

// metricsFor returns the metric set of a namespace: the process's own for
// the default one (which also serves /metrics), a labelled view of it for
// the others.
func (a *app) metricsFor(name string, src metrics.Sources) *metrics.Metrics {
	if name == defaultNamespace {
		a.metrics = metrics.New(src)
		return a.metrics
	}
	return a.metrics.Namespace(name, src)
}

// onEvent fans a registry change out, in revision order: cache
// invalidation, replication to peers (which skips changes from peers and
// evictions), the read API's index and watch history, metrics, logs.
func (s *stack) onEvent(e registry.Event) {
	in := e.Instance()
	if e.Changed && s.cache != nil {
		s.cache.Invalidate(e.App, in.VIPAddress, in.SecureVIPAddress)
	}
	if s.repl != nil {
		s.repl.OnEvent(e)
	}
	if s.api != nil {
		s.api.OnEvent(e)
	}
	if s.metrics != nil {
		s.metrics.OnEvent(e)
	}
	// Each line is rate-limited (changeLog); the check comes first so that a
	// suppressed line costs no formatting.
	switch e.Kind {
	case registry.EventStatusCorrected:
		if s.changes.allow() {
			s.log.Info("status corrected on renew", "app", e.App, "instance", e.ID, "from", e.Prev, "to", in.Status, "revision", e.Revision)
		}
	case registry.EventRegister:
		if s.changes.allow() {
			s.log.Info("registered", "app", e.App, "instance", e.ID, "status", in.Status, "replication", e.FromPeer, "revision", e.Revision)
		}
	case registry.EventCancel:
		if s.changes.allow() {
			s.log.Info("cancelled", "app", e.App, "instance", e.ID, "replication", e.FromPeer, "revision", e.Revision)
		}
	case registry.EventEvict:
		// logged by the eviction job ("evicted expired lease"): one line per eviction
	case registry.EventStatusUpdate, registry.EventDeleteStatusOverride:
		if s.changes.allow() {
			s.log.Info("status override "+e.Kind.String(), "app", e.App, "instance", e.ID, "status", in.Status, "replication", e.FromPeer, "revision", e.Revision)
		}
	case registry.EventProbeStatus, registry.EventHeldStatus:
		if e.Changed && s.changes.allow() {
			s.log.Info("status by "+e.Kind.String(), "app", e.App, "instance", e.ID, "from", e.Prev, "to", in.Status, "revision", e.Revision)
		}
	case registry.EventOverrideStored:
		if s.changes.allow() {
			s.log.Info("peer's status override stored", "app", e.App, "instance", e.ID, "override", e.Status, "revision", e.Revision)
		}
	}
}

// onRenew passes a heartbeat on to replication and metrics. It runs on the
// renew path, concurrently: nothing here blocks or allocates.
func (s *stack) onRenew(rn registry.Renewal) {
	if s.repl != nil {
		s.repl.OnRenew(rn)
	}
	if s.metrics != nil {
		s.metrics.OnRenew(rn)
	}
	if s.log.Enabled(context.Background(), slog.LevelDebug) {
		s.log.Debug("renewed", "app", rn.App, "instance", rn.ID, "replication", rn.FromPeer)
	}
}

// startLoops runs the stack's background loops (snapshot, cache, eviction,
// health, replication) on wg until ctx is done; replication runs on replCtx,
// which run cancels first at shutdown so that Flush sends what is queued.
// It restores the snapshot first and returns the number of instances
// restored.
func (s *stack) startLoops(a *app, ctx, replCtx context.Context, wg, replWG *sync.WaitGroup) int {
	restored := s.restore()
	s.runLoops(a, ctx, replCtx, wg, replWG)
	return restored
}

// restore loads the stack's snapshot, if it has one, and returns the number
// of instances restored. It runs before serving and before the peer sync,
// whose newer copies win.
func (s *stack) restore() int {
	if s.snap == nil {
		return 0
	}
	return s.snap.Restore()
}

// runLoops is startLoops after restore.
func (s *stack) runLoops(a *app, ctx, replCtx context.Context, wg, replWG *sync.WaitGroup) {
	if s.snap != nil {
		wg.Go(func() { a.runLoop(ctx, s.loopName("snapshot"), s.snap.Run) })
	}
	wg.Go(func() { a.runLoop(ctx, s.loopName("cache"), s.cache.Run) })
	if s.regions.Set.Len() > 0 {
		wg.Go(func() { a.runLoop(ctx, "remote regions", s.regions.Set.Run) })
	}
	wg.Go(func() { a.runLoop(ctx, s.loopName("eviction"), s.evictor.Run) })
	wg.Go(func() { a.runLoop(ctx, s.loopName("health"), s.health.Run) })
	replWG.Go(func() { a.runLoop(replCtx, s.loopName("replication"), s.repl.Run) })
}

func (s *stack) loopName(loop string) string {
	if s.name == defaultNamespace {
		return loop
	}
	return loop + " (namespace " + s.name + ")"
}

// open ends the stack's start-up: the sync copied count instances (or the
// snapshot restored them when no peer answered), eviction opens reads.
func (s *stack) open(count, restored int) {
	if restored > 0 && count == 0 {
		// Standalone, or no peer answered: the snapshot is the best estimate
		// of the clients that will renew. When peers answered, their count
		// wins, as in Eureka: restored instances that died while this node
		// was down are not counted, so they cannot hold self-preservation
		// on and keep themselves from being evicted.
		count = s.reg.Renewing()
	}
	// The listener served health probes during the sync; reads waited for
	// this (eviction's AllowAccess).
	s.evictor.OpenAfterSync(count)
	s.ops.SetReady(true)
}

// onRegionChange drops the cached reads a remote region's new copy changes:
// those of every changed instance's application and VIPs, and the registry
// documents with their region variants.
func (s *stack) onRegionChange(ch region.Change) {
	for _, in := range ch.Instances {
		s.cache.Invalidate(in.App, in.VIPAddress, in.SecureVIPAddress)
	}
	if ch.Delta || len(ch.Instances) == 0 {
		s.cache.Invalidate("", "", "")
	}
}

// stackStatus is GET {namespace}/eureka/status: the process's figures with
// the replicas of the namespace's own replication (a namespace does not
// replicate to stock peers).
type stackStatus struct {
	a *app
	s *stack
}

func (st stackStatus) StatusInfo() server.StatusInfo { return st.a.statusInfo(st.s.repl) }
