package main

import (
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/goreka/goreka/cmd/goreka/config"
	"github.com/goreka/goreka/discovery"
	"github.com/goreka/goreka/eviction"
	"github.com/goreka/goreka/kube"
	"github.com/goreka/goreka/kube/export"
	"github.com/goreka/goreka/kube/importer"
	"github.com/goreka/goreka/namespace"
	"github.com/goreka/goreka/registry"
	"github.com/goreka/goreka/replication"
	"github.com/goreka/goreka/server"
	"github.com/goreka/goreka/server/metrics"
	"github.com/goreka/goreka/tlsconf"
	"github.com/goreka/goreka/xds"
)

// app is one goreka server: registry, cache, eviction, replication and HTTP,
// wired together.
type app struct {
	cfg     *config.Config
	log     *slog.Logger
	now     func() time.Time
	started time.Time

	// The default namespace's stack (/eureka/...): its fields (reg,
	// cache, evictor, repl, srv, ...) are the app's.
	*stack
	ns          *namespace.Manager[*stack] // the /ns/{name}/ stacks
	self        *replication.SelfRegistrar
	selfIn      *registry.Instance
	metrics     *metrics.Metrics // the process's metric set, served at /metrics
	http        *http.Server
	me          replication.SelfInfo
	xds         *xds.Server     // nil (serving nothing) unless goreka.xds.enabled
	tlsIn       *tlsconf.Server // nil unless TLSEnabled; tlsOut nil unless eureka.client.tls.enabled
	tlsOut      *tlsconf.Client
	kubeMetrics *kube.Metrics      // the Kubernetes bridge's, both directions
	importer    *importer.Importer // nil unless goreka.kubernetes.import.enabled
	// kubeExport writes the default namespace to Kubernetes; nil unless
	// goreka.kubernetes.export.enabled.
	kubeExport *export.Exporter

	// defaultPeers is the default namespace's peer list (applyPeers), from
	// which every namespace's comes.
	peersMu      sync.Mutex
	defaultPeers []replication.Peer

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
	a := &app{cfg: cfg, log: log, now: now, started: now(), kubeMetrics: kube.NewMetrics()}
	var err error
	if a.tlsIn, a.tlsOut, err = newTLS(cfg, now, log); err != nil {
		return nil, err // names the property (tlsconf.Error)
	}
	a.xds = xdsServer(cfg, log, a.tlsIn, func(h string, st *tls.ConnectionState) (string, []string, bool) { return a.ops.Identify(h, st) })

	self := selfInfo(cfg)
	a.me = self
	peers, err := replication.Peers(cfg.ReplicationURLs(), self)
	if err != nil {
		return nil, err
	}
	a.defaultPeers = peers
	// Before the stacks: their status pages show it.
	if a.selfIn, err = self.Instance(cfg.SelfLease(), cfg.Instance.Metadata, a.started); err != nil {
		return nil, err
	}
	if a.stack, err = a.newStack(namespace.Default, peers); err != nil {
		return nil, err
	}
	// Static registrations before the snapshot and the start-up sync
	// (run): a snapshot's or a peer's copy of the same instance does not
	// replace them.
	if err := a.applyStatic(cfg); err != nil {
		return nil, err
	}
	if cfg.Client.RegisterWithEureka {
		// Also without peers yet: DNS or a reload may add them.
		a.self = replication.NewSelfRegistrar(replicationConfig(cfg, now, log, a.tlsOut.ConfigFunc()), a.selfIn, peers)
	}
	if a.ns, err = a.newNamespaces(); err != nil {
		return nil, err
	}
	a.srv.SetNamespaces(namespaceServers{a.ns})
	if a.importer, err = a.kubeImporter(); err != nil {
		return nil, err
	}
	if a.kubeExport, err = a.kubeExporter(); err != nil {
		return nil, err
	}
	if cfg.Goreka.Kubernetes.Enabled {
		a.metrics.Registry().MustRegister(a.kubeMetrics.Collector()) // both directions'
	}
	a.http = httpServer(cfg, a.relay.Handler(a.srv), log) // a.srv itself when not a relay
	a.http.TLSConfig = a.tlsIn.TLSConfig()
	a.metrics.Registry().MustRegister(tlsconf.Collector(a.tlsIn, a.tlsOut)) // process-wide: no namespace label
	return a, nil
}

// run serves until ctx is done, then shuts down gracefully. It returns an
// error only for start-up failures (e.g. the port is in use).
func (a *app) run(ctx context.Context, ln net.Listener) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg, replWG sync.WaitGroup
	// Replication gets its own context: at shutdown its senders stop first,
	// then Flush sends what is still queued.
	replCtx, replStop := context.WithCancel(ctx)
	defer replStop()
	a.startLoops(a, ctx, replCtx, &wg, &replWG)
	wg.Go(func() { tlsconf.Poll(ctx, a.cfg.Server.SSL.ReloadInterval, a.tlsIn, a.tlsOut) })
	// The namespaces of start-up start here, later ones when created.
	a.startNamespaces(ctx, replCtx, &wg, &replWG)
	defer a.xds.Close() // awaited, also after a failed Start: its feeders and streams end before run returns
	if err := a.xds.Start(ctx, a.cfg.Goreka.XDS.Listen()); err != nil {
		return err
	}

	errc := make(chan error, 1)
	go func() {
		var err error
		if a.tlsIn != nil {
			err = a.http.ServeTLS(ln, "", "") // the certificate comes from a.tlsIn, re-read when it changes
		} else {
			err = a.http.Serve(ln)
		}
		if !errors.Is(err, http.ErrServerClosed) {
			errc <- err
		}
		close(errc)
	}()
	if srcs := a.cfg.PeerPlan(a.reload, a.hup).Sources(); srcs != nil {
		// Resolved once before the start-up sync, so that it asks the
		// peers DNS knows.
		w := &discovery.Watcher{Sources: srcs, Apply: a.applyPeers, Logger: a.log.With("component", "discovery")}
		w.Init(ctx)
		wg.Go(func() { a.runLoop(ctx, "peer discovery", w.Run) })
	}
	a.open(ctx, a.stack)
	a.openNamespaces(ctx)
	if a.self != nil {
		wg.Go(func() { a.runLoop(ctx, "self-registration", a.self.Run) })
	}
	if a.importer != nil { // after the start-up sync, so that imports are not counted as synced
		wg.Go(func() { a.runLoop(ctx, "kubernetes import", a.importer.Run) })
	}
	if a.kubeExport != nil { // contests the Lease; writes after goreka.kubernetes.resync-grace
		wg.Go(func() { a.kubeExport.Run(ctx) })
	}
	a.log.Info("goreka started", "addr", ln.Addr().String(), "app", a.cfg.AppName, "instance", a.cfg.Instance.InstanceID,
		"self_preservation", a.cfg.EurekaServer.EnableSelfPreservation)

	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-errc:
	}
	a.log.Info("shutting down")
	// Before anything stops: a late request creates no namespace whose
	// loops would join the wait groups below while they are waited.
	a.ns.Close()
	for _, s := range a.stacks() {
		s.ops.SetShuttingDown()
	}
	sctx, scancel := context.WithTimeout(context.Background(), a.cfg.Goreka.HTTP.ShutdownTimeout)
	defer scancel()
	if err := a.http.Shutdown(sctx); err != nil {
		a.log.Warn("HTTP shutdown did not finish in time", "err", err)
	}
	replStop()
	replWG.Wait()
	// Its own deadline: a drain that used up the HTTP shutdown time must not
	// leave the queued cancels of a rolling deploy unsent.
	es := a.cfg.EurekaServer
	fctx, fcancel := context.WithTimeout(context.Background(), es.PeerNodeConnectTimeout+2*es.PeerNodeReadTimeout)
	defer fcancel()
	for _, s := range a.stacks() {
		if err := s.repl.Flush(fctx); err != nil {
			s.log.Warn("replication queues not flushed before the deadline", "err", err)
		}
	}
	cancel()
	wg.Wait()
	for _, s := range a.stacks() {
		if s.snap != nil {
			_ = s.snap.Flush() // after the last request; the store logs a failure
		}
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
	a.peersMu.Lock()
	a.defaultPeers = peers
	a.peersMu.Unlock()
	for _, s := range a.ns.List() {
		s.repl.SetPeers(a.namespacePeers(s.name, peers))
	}
}

// stacks are the default namespace's stack and every other namespace's.
func (a *app) stacks() []*stack { return append([]*stack{a.stack}, a.ns.List()...) }

func (a *app) runLoop(ctx context.Context, name string, f func(context.Context) error) {
	if err := f(ctx); err != nil && !errors.Is(err, context.Canceled) {
		a.log.Error("background loop stopped", "loop", name, "err", err)
	}
}
