package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/goreka/goreka/cache"
	"github.com/goreka/goreka/cmd/goreka/config"
	"github.com/goreka/goreka/discovery"
	"github.com/goreka/goreka/eviction"
	"github.com/goreka/goreka/health"
	"github.com/goreka/goreka/registry"
	"github.com/goreka/goreka/replication"
	"github.com/goreka/goreka/server"
	"github.com/goreka/goreka/server/api"
	"github.com/goreka/goreka/server/metrics"
	"github.com/goreka/goreka/snapshot"
)

// app is one goreka server: registry, cache, eviction, replication and HTTP,
// wired together.
type app struct {
	cfg     *config.Config
	log     *slog.Logger
	now     func() time.Time
	changes changeLog // rate limit of onEvent's log lines
	started time.Time

	reg     *registry.Registry
	cache   *cache.Cache
	evictor *eviction.Evictor
	health  *health.Monitor
	repl    *replication.Replicator
	self    *replication.SelfRegistrar
	selfIn  *registry.Instance
	srv     *server.Server // the HTTP handler
	api     *api.API       // the read API for tools, fed from onEvent
	ops     *server.Ops    // readiness and shutdown state of srv
	metrics *metrics.Metrics
	http    *http.Server
	snap    *snapshot.Store // nil unless goreka.snapshot.path is set
	me      replication.SelfInfo

	// reload re-reads the configuration's service URLs and hup asks for it
	// (SIGHUP); main sets both, tests may leave them nil.
	reload func() ([]string, error)
	hup    <-chan struct{}
}

// The evictor is the read gate and the lease-expiration switch of the
// HTTP layer (it owns the start-up and self-preservation state they read).
var (
	_ server.Gate   = (*eviction.Evictor)(nil)
	_ server.Expiry = (*eviction.Evictor)(nil)
)

// newApp builds a server from its configuration; it fails only on a peer
// URL it cannot use. It only wires: each package's settings come from one
// mapping function (wire.go), each package's decisions stay in the package.
func newApp(cfg *config.Config, log *slog.Logger, now func() time.Time) (*app, error) {
	a := &app{cfg: cfg, log: log, now: now, started: now()}
	a.changes = changeLog{log: log, now: now}

	a.reg = registry.New(registryOptions(cfg, now, a.onEvent, a.onRenew))
	a.api = api.New(a.reg, apiConfig(now)) // before any write: its index starts from the empty registry
	if cfg.Goreka.Snapshot.Path != "" {
		a.snap = snapshot.New(a.reg, snapshotConfig(cfg, now, log))
	}
	// Static registrations first: a snapshot or a peer's copy of the same
	// instance does not replace them.
	if err := a.applyStatic(cfg); err != nil {
		return nil, err
	}
	a.evictor = eviction.New(a.reg, evictionConfig(cfg, now, log))
	a.health = health.New(a.reg, a.evictor, nil, healthConfig(cfg, now, log))

	self := selfInfo(cfg)
	a.me = self
	peers, err := replication.Peers(peerURLs(cfg), self)
	if err != nil {
		return nil, err
	}
	rc := replicationConfig(cfg, now, log)
	a.repl = replication.New(rc, a.reg, peers)
	if a.selfIn, err = self.Instance(selfLease(cfg), cfg.Instance.Metadata, a.started); err != nil {
		return nil, err
	}
	if cfg.Client.RegisterWithEureka {
		// Also without peers yet: DNS or a reload may add them.
		a.self = replication.NewSelfRegistrar(rc, a.selfIn, peers)
	}

	a.cache = cache.NewStreaming(cacheConfig(cfg, now), server.NewCodecLoader(a.reg, codecs(cfg)))
	a.srv = server.New(serverConfig(cfg), server.Deps{
		Registry: a.reg,
		Cache:    a.cache,
		Gate:     a.evictor,
		Expiry:   a.evictor,
		Status:   a,
		Logger:   log.With("component", "http"),
		Now:      now,
	})
	a.srv.MountAPI(a.api)
	if cfg.Goreka.ConsulAPI {
		a.srv.MountConsulAPI(a.api)
	}
	a.srv.MountReports(server.ReporterFunc(func(app, id, reporter, reason string) (string, bool, error) {
		out, err := a.health.Report(app, id, reporter, reason)
		return string(out), out == health.ReportLimited, err
	}))
	if cfg.Dashboard.Enabled {
		a.srv.MountDashboard(cfg.Dashboard.Path, a)
	}

	a.metrics = metrics.New(metrics.Sources{Cache: a.cache.Stats})
	a.metrics.MustRegister(a.evictor.Collector(), a.repl.Collector(), a.health.Collector(), a.srv.RateLimitCollector(), a.srv.FetchLimitCollector())
	a.ops = a.srv.EnableOps(opsConfig(cfg, log, a.metrics))
	a.http = httpServer(cfg, a.srv, log)
	return a, nil
}

// peerURLs returns the service URLs to replicate to. Without any
// eureka.client.service-url setting goreka runs standalone: Spring's built-in
// default (http://localhost:8761/eureka/) means "this server" to the people who
// leave it alone, but a goreka on another port would take whatever listens on
// 8761 for a peer and copy its registry.
func peerURLs(cfg *config.Config) []string {
	if !cfg.IsSet("eureka.client.service-url") {
		return nil
	}
	return cfg.PeerURLs()
}

// onEvent fans a registry change out, in revision order: cache
// invalidation, replication to peers (which skips changes from peers and
// evictions), the read API's index and watch history, metrics, logs.
func (a *app) onEvent(e registry.Event) {
	in := e.Instance()
	if e.Changed && a.cache != nil {
		a.cache.Invalidate(e.App, in.VIPAddress, in.SecureVIPAddress)
	}
	if a.repl != nil {
		a.repl.OnEvent(e)
	}
	if a.api != nil {
		a.api.OnEvent(e)
	}
	if a.metrics != nil {
		a.metrics.OnEvent(e)
	}
	// Each line is rate-limited (changeLog); the check comes first so that a
	// suppressed line costs no formatting.
	switch e.Kind {
	case registry.EventStatusCorrected:
		if a.changes.allow() {
			a.log.Info("status corrected on renew", "app", e.App, "instance", e.ID, "from", e.Prev, "to", in.Status, "revision", e.Revision)
		}
	case registry.EventRegister:
		if a.changes.allow() {
			a.log.Info("registered", "app", e.App, "instance", e.ID, "status", in.Status, "replication", e.FromPeer, "revision", e.Revision)
		}
	case registry.EventCancel:
		if a.changes.allow() {
			a.log.Info("cancelled", "app", e.App, "instance", e.ID, "replication", e.FromPeer, "revision", e.Revision)
		}
	case registry.EventEvict:
		// logged by the eviction job ("evicted expired lease"): one line per eviction
	case registry.EventStatusUpdate, registry.EventDeleteStatusOverride:
		if a.changes.allow() {
			a.log.Info("status override "+e.Kind.String(), "app", e.App, "instance", e.ID, "status", in.Status, "replication", e.FromPeer, "revision", e.Revision)
		}
	case registry.EventProbeStatus, registry.EventHeldStatus:
		if e.Changed && a.changes.allow() {
			a.log.Info("status by "+e.Kind.String(), "app", e.App, "instance", e.ID, "from", e.Prev, "to", in.Status, "revision", e.Revision)
		}
	case registry.EventOverrideStored:
		if a.changes.allow() {
			a.log.Info("peer's status override stored", "app", e.App, "instance", e.ID, "override", e.Status, "revision", e.Revision)
		}
	}
}

// onRenew passes a heartbeat on to replication and metrics. It runs on the
// renew path, concurrently: nothing here blocks or allocates.
func (a *app) onRenew(rn registry.Renewal) {
	if a.repl != nil {
		a.repl.OnRenew(rn)
	}
	if a.metrics != nil {
		a.metrics.OnRenew(rn)
	}
	if a.log.Enabled(context.Background(), slog.LevelDebug) {
		a.log.Debug("renewed", "app", rn.App, "instance", rn.ID, "replication", rn.FromPeer)
	}
}

// StatusInfo feeds GET /eureka/status (Eureka's StatusResource).
func (a *app) StatusInfo() server.StatusInfo {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	uptime := a.now().Sub(a.started)
	st := server.StatusInfo{
		General: [][2]string{
			{"environment", a.cfg.Environment},
			{"num-of-cpus", strconv.Itoa(runtime.NumCPU())},
			{"total-avail-memory", fmt.Sprintf("%dmb", ms.Sys>>20)},
			{"current-memory-usage", fmt.Sprintf("%dmb (%d%%)", ms.HeapAlloc>>20, percent(ms.HeapAlloc, ms.Sys))},
			{"server-uptime", formatUptime(uptime)},
		},
	}
	reg, avail, unavail := a.repl.Replicas()
	st.Application = server.ReplicaStats(reg, avail, unavail)
	// This server's own instance is the coordinating discovery server here
	// (what it registers with its peers says false: each server decides).
	own := a.selfIn.Clone()
	own.IsCoordinatingDiscoveryServer = true
	lease := selfLease(a.cfg)
	v := registry.LeaseView{Instance: own, RegistrationTimestamp: a.started, LastRenewalTimestamp: a.now(), ServiceUpTimestamp: a.started,
		RenewalInterval: lease.RenewalInterval, Duration: lease.Duration}
	st.Instance = &v
	return st
}

func percent(a, b uint64) uint64 {
	if b == 0 {
		return 0
	}
	return a * 100 / b
}

// formatUptime is StatusInfo.getUpTime: "HH:MM", with "N day(s) " before.
func formatUptime(d time.Duration) string {
	days := int(d.Hours()) / 24
	h := int(d.Hours()) % 24
	m := int(d.Minutes()) % 60
	s := fmt.Sprintf("%02d:%02d", h, m)
	switch {
	case days == 1:
		return "1 day " + s
	case days > 1:
		return fmt.Sprintf("%d days %s", days, s)
	}
	return s
}

// run serves until ctx is done, then shuts down gracefully. It returns an
// error only for start-up failures (e.g. the port is in use).
func (a *app) run(ctx context.Context, ln net.Listener) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	restored := 0
	if a.snap != nil {
		// Before serving and before the peer sync, whose newer copies win.
		restored = a.snap.Restore()
		wg.Go(func() { a.runLoop(ctx, "snapshot", a.snap.Run) })
	}
	wg.Go(func() { a.runLoop(ctx, "cache", a.cache.Run) })
	wg.Go(func() { a.runLoop(ctx, "eviction", a.evictor.Run) })
	wg.Go(func() { a.runLoop(ctx, "health", a.health.Run) })
	// Replication gets its own context: at shutdown its senders stop first,
	// then Flush sends what is still queued.
	replCtx, replStop := context.WithCancel(ctx)
	defer replStop()
	replDone := make(chan struct{})
	go func() {
		defer close(replDone)
		a.runLoop(replCtx, "replication", a.repl.Run)
	}()

	errc := make(chan error, 1)
	go func() {
		var err error
		if a.cfg.TLSEnabled() {
			err = a.http.ServeTLS(ln, a.cfg.Server.SSL.Certificate, a.cfg.Server.SSL.CertificatePrivateKey)
		} else {
			err = a.http.Serve(ln)
		}
		if !errors.Is(err, http.ErrServerClosed) {
			errc <- err
		}
		close(errc)
	}()
	if srcs := peerSources(a.cfg, a.reload, a.hup); srcs != nil {
		// Resolved once before the start-up sync, so that it asks the
		// peers DNS knows.
		w := &discovery.Watcher{Sources: srcs, Apply: a.applyPeers, Logger: a.log.With("component", "discovery")}
		w.Init(ctx)
		wg.Go(func() { a.runLoop(ctx, "peer discovery", w.Run) })
	}
	count := a.syncUp(ctx)
	if restored > 0 && count == 0 {
		// Standalone, or no peer answered: the snapshot is the best estimate
		// of the clients that will renew. When peers answered, their count
		// wins, as in Eureka: restored instances that died while this node
		// was down are not counted, so they cannot hold self-preservation
		// on and keep themselves from being evicted.
		count = a.reg.Renewing()
	}
	// The listener served health probes during the sync; reads waited for
	// this (eviction's AllowAccess).
	a.evictor.OpenAfterSync(count)
	a.ops.SetReady(true)
	if a.self != nil {
		wg.Go(func() { a.runLoop(ctx, "self-registration", a.self.Run) })
	}
	a.log.Info("goreka started", "addr", ln.Addr().String(), "app", a.cfg.AppName, "instance", a.cfg.Instance.InstanceID,
		"self_preservation", a.cfg.EurekaServer.EnableSelfPreservation)

	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-errc:
	}
	a.log.Info("shutting down")
	a.ops.SetShuttingDown()
	sctx, scancel := context.WithTimeout(context.Background(), a.cfg.Goreka.HTTP.ShutdownTimeout)
	defer scancel()
	if err := a.http.Shutdown(sctx); err != nil {
		a.log.Warn("HTTP shutdown did not finish in time", "err", err)
	}
	replStop()
	<-replDone
	// Its own deadline: a drain that used up the HTTP shutdown time must not
	// leave the queued cancels of a rolling deploy unsent.
	es := a.cfg.EurekaServer
	fctx, fcancel := context.WithTimeout(context.Background(), es.PeerNodeConnectTimeout+2*es.PeerNodeReadTimeout)
	defer fcancel()
	if err := a.repl.Flush(fctx); err != nil {
		a.log.Warn("replication queues not flushed before the deadline", "err", err)
	}
	cancel()
	wg.Wait()
	if a.snap != nil {
		_ = a.snap.Flush() // after the last request; the store logs a failure
	}
	return serveErr
}

// applyPeers makes a new peer list (from DNS or the configuration file)
// the one replication and self-registration use.
func (a *app) applyPeers(urls []string) {
	peers, err := replication.Peers(urls, a.me)
	if err != nil {
		a.log.Warn("peer URLs skipped", "err", err)
	}
	a.repl.SetPeers(peers)
	if a.self != nil {
		a.self.SetPeers(peers)
	}
}

// syncUp is Eureka's start-up sync: copy the peers' registries before
// serving. goreka makes at least one attempt when it has peers (Spring's
// registry-sync-retries=0 makes none), so a restarted node serves the whole
// registry from its first request.
func (a *app) syncUp(ctx context.Context) int {
	if len(a.repl.Peers()) == 0 {
		return 0
	}
	attempts := max(1, a.cfg.EurekaServer.RegistrySyncRetries)
	n, err := a.repl.SyncUp(ctx, attempts, a.cfg.EurekaServer.RegistrySyncRetryWait)
	if err != nil {
		a.log.Warn("start-up sync with peers incomplete", "copied", n, "err", err)
	} else {
		a.log.Info("start-up sync with peers done", "copied", n)
	}
	return n
}

func (a *app) runLoop(ctx context.Context, name string, f func(context.Context) error) {
	if err := f(ctx); err != nil && !errors.Is(err, context.Canceled) {
		a.log.Error("background loop stopped", "loop", name, "err", err)
	}
}
