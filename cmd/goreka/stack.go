package main

import (
	"context"
	"log/slog"
	"net/http"
	"sync"

	"github.com/goreka/goreka/cache"
	"github.com/goreka/goreka/document"
	"github.com/goreka/goreka/eviction"
	"github.com/goreka/goreka/health"
	"github.com/goreka/goreka/namespace"
	"github.com/goreka/goreka/region"
	"github.com/goreka/goreka/registry"
	"github.com/goreka/goreka/relay"
	"github.com/goreka/goreka/replication"
	"github.com/goreka/goreka/server"
	"github.com/goreka/goreka/server/api"
	"github.com/goreka/goreka/server/api/xdsview"
	"github.com/goreka/goreka/server/metrics"
	"github.com/goreka/goreka/snapshot"
)

// stack is one namespace's registry with everything a registry has: its
// response cache, eviction and self-preservation, health lifecycle,
// replication, warm-restart snapshot, tool API and HTTP handler. The
// default namespace and every /ns/{name}/ namespace are built by newStack,
// so a namespace is never a lesser registry than the default one.
type stack struct {
	name    string // namespace.Default for /eureka/
	log     *slog.Logger
	changes *registry.ChangeLog // onEvent's log lines (one per stack: listeners of two stacks run concurrently)
	reg     *registry.Registry
	cache   *cache.Cache
	regions document.Regions // eureka.server.remote-region-*: the default namespace's only
	// xdsRegions resends the remote regions' instances over xDS (set with regions).
	xdsRegions func()
	evictor    *eviction.Evictor
	health     *health.Monitor
	repl       *replication.Replicator
	relay      *relay.Relay   // goreka.relay.*, the default namespace's only; nil: not a relay
	srv        *server.Server // the namespace's HTTP handler
	api        *api.API       // the read API for tools, fed from onEvent
	ops        *server.Ops    // readiness and shutdown state of srv
	metrics    *metrics.Metrics
	snap       *snapshot.Store // nil unless goreka.snapshot.path is set
	// restored is how many instances its snapshot restored at start-up.
	restored int
	// basePeers are the default namespace's peers its own were taken from.
	basePeers []replication.Peer
}

// newStack builds the registry stack of namespace name. Its replication
// goes to its peers among the default namespace's (base), its metrics carry
// namespace=name and its users are those scoped to it.
func (a *app) newStack(name string, base []replication.Peer) (*stack, error) {
	cfg, now := a.cfg, a.now
	s := &stack{name: name, log: a.log, basePeers: base}
	peers := base
	if name != namespace.Default {
		s.log = a.log.With("namespace", name)
		peers = a.namespacePeers(name, base)
	}
	s.changes = registry.NewChangeLog(s.log, now)
	ro := cfg.RegistryOptions()
	ro.Now, ro.OnEvent, ro.OnRenew = now, s.onEvent, s.onRenew
	if name != namespace.Default {
		ro.MaxInstances = cfg.Goreka.Namespaces.MaxInstances
	}
	s.reg = registry.New(ro)
	a.xds.Attach(name, s.reg)                             // follows the change stream from here, restore included
	xv := xdsview.New(a.xds, name)                        // nil when xDS is off
	s.api = api.New(s.reg, api.Config{Now: now, XDS: xv}) // before any write: its index starts from the empty registry
	if p := namespace.SnapshotPath(cfg.Goreka.Snapshot.Path, name); p != "" {
		sc := cfg.SnapshotConfig()
		sc.Path, sc.Now, sc.Logger = p, now, s.log.With("component", "snapshot")
		s.snap = snapshot.New(s.reg, sc)
	}
	s.evictor = eviction.New(s.reg, evictionConfig(cfg, now, s.log))
	s.health = health.New(s.reg, s.evictor, nil, healthConfig(cfg, now, s.log))
	s.repl = replication.New(replicationConfig(cfg, now, s.log, a.tlsOut.ConfigFunc()), s.reg, peers)

	// Remote regions are server-wide in Eureka and exchanged by stock
	// servers, which know only the default namespace: they are merged into
	// its reads only.
	var up document.Upstream
	if name == namespace.Default {
		var err error
		if s.regions, err = remoteRegions(cfg, now, s.log, s.onRegionChange, a.tlsOut.ConfigFunc()); err != nil {
			return nil, err
		}
		if s.relay, err = newRelay(cfg, now, s.log, s.reg, s.onRegionChange, a.tlsOut.ConfigFunc(), func(r *http.Request) bool {
			_, _, ok := s.ops.Identify(r.Header.Get("Authorization"), r.TLS) // the server's own users; s.ops is set before serving
			return ok
		}); err != nil {
			return nil, err
		}
		s.xdsRegions = a.xds.AttachRegions(name, s.regions.Set) // before the regions' first fetch (run)
	}
	if s.relay != nil {
		up = s.relay
	}
	docs := document.New(document.Config{Registry: s.reg, Codecs: cfg.Codecs(), Regions: s.regions, Upstream: up})
	cc := cfg.CacheConfig()
	cc.Now = now
	// One rate limiter and one set of per-client fetch limits for the
	// process, as in Eureka (its rate limiter is global): the default
	// stack's, which every namespace's server shares.
	var limiters *server.Limiters
	if name != namespace.Default {
		limiters = a.stack.srv.Limiters()
	}
	status := &server.ProcessStatus{Environment: cfg.Environment, Started: a.started, Self: a.selfIn, Replicas: s.repl, Now: now}
	s.srv = server.New(serverConfig(cfg), server.Deps{
		Limiters: limiters,
		Registry: s.reg,
		Docs:     docs,
		Cache:    &cc,
		Gate:     s.evictor,
		Expiry:   s.evictor,
		Status:   status,
		Logger:   s.log.With("component", "http"),
		Now:      now,
	})
	s.cache = s.srv.Cache()
	s.srv.MountAPI(s.api)
	if cfg.Goreka.ConsulAPI {
		s.srv.MountConsulAPI(s.api)
	}
	s.srv.MountReports(s.health)
	if cfg.Dashboard.Enabled {
		path := cfg.Dashboard.Path
		if name != namespace.Default {
			path = "/" // the namespace's dashboard is /ns/{name}/
		}
		s.srv.MountDashboard(path, &server.DashboardState{
			Environment: cfg.Environment, Datacenter: cfg.Datacenter, Status: status,
			Eviction: s.evictor, Replication: s.repl, Health: s.health,
			Namespace: name, Namespaces: func() []string { return a.ns.Names() }, DefaultPath: cfg.Dashboard.Path, XDS: xv,
			Extra: []func() [][2]string{s.relay.DashboardRows, a.kubeMetrics.Rows(name == namespace.Default)},
		})
	}

	s.metrics = a.metricsFor(name, metrics.Sources{Cache: s.cache.Stats, Instances: s.reg.AppStatusCounts})
	s.metrics.MustRegister(s.evictor.Collector(), s.repl.Collector(), s.health.Collector(), s.relay.Collector())
	if name == namespace.Default {
		// Process-wide, shared by every namespace: served at /metrics.
		s.metrics.MustRegister(s.srv.RateLimitCollector(), s.srv.FetchLimitCollector())
		s.metrics.Registry().MustRegister(a.xds.Collector()) // unwrapped: its series carry their own namespace
		s.srv.MountXDS(a.xds.Handler())                      // nil when disabled; the node picks the namespace
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
	if name == namespace.Default {
		a.metrics = metrics.New(src)
		return a.metrics
	}
	return a.metrics.Namespace(name, src)
}

// onEvent fans a registry change out, in revision order: cache
// invalidation, replication to peers (which skips changes from peers and
// evictions), the read API's index and watch history, metrics, logs
// (rate-limited).
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
	s.relay.OnEvent(e)
	if s.metrics != nil {
		s.metrics.OnEvent(e)
	}
	s.changes.Log(e)
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
	s.relay.OnRenew(rn)
	if s.log.Enabled(context.Background(), slog.LevelDebug) {
		s.log.Debug("renewed", "app", rn.App, "instance", rn.ID, "replication", rn.FromPeer)
	}
}

// startLoops runs the stack's background loops (snapshot, cache, eviction,
// health, replication) on wg until ctx is done; replication runs on replCtx,
// which run cancels first at shutdown so that Flush sends what is queued.
// It restores the snapshot first (s.restored).
func (s *stack) startLoops(a *app, ctx, replCtx context.Context, wg, replWG *sync.WaitGroup) {
	s.restored = s.restore()
	s.runLoops(a, ctx, replCtx, wg, replWG)
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
	wg.Go(func() { a.runLoop(ctx, "relay", s.relay.Run) }) // returns at once when not a relay
	wg.Go(func() { a.runLoop(ctx, s.loopName("eviction"), s.evictor.Run) })
	wg.Go(func() { a.runLoop(ctx, s.loopName("health"), s.health.Run) })
	replWG.Go(func() { a.runLoop(replCtx, s.loopName("replication"), s.repl.Run) })
}

func (s *stack) loopName(loop string) string {
	if s.name == namespace.Default {
		return loop
	}
	return loop + " (namespace " + s.name + ")"
}

// open ends a stack's start-up: the start-up sync copies the peers'
// registries, then eviction opens reads (OpenAfterStartup weighs the
// snapshot's instances against the sync's). The listener served health
// probes during the sync; reads waited for this (eviction's AllowAccess).
func (a *app) open(ctx context.Context, s *stack) {
	es := a.cfg.EurekaServer
	s.evictor.OpenAfterStartup(s.repl.StartupSync(ctx, es.RegistrySyncRetries, es.RegistrySyncRetryWait), s.restored)
	s.ops.SetReady(true)
}

// onRegionChange drops the cached reads a remote region's new copy changes:
// those of every changed instance's application and VIPs, and the registry
// documents with their region variants.
func (s *stack) onRegionChange(ch region.Change) {
	s.xdsRegions()
	for _, in := range ch.Instances {
		s.cache.Invalidate(in.App, in.VIPAddress, in.SecureVIPAddress)
	}
	if ch.Delta || len(ch.Instances) == 0 {
		s.cache.Invalidate("", "", "")
	}
}
