package xds

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	clusterservice "github.com/envoyproxy/go-control-plane/envoy/service/cluster/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	endpointservice "github.com/envoyproxy/go-control-plane/envoy/service/endpoint/v3"
	listenerservice "github.com/envoyproxy/go-control-plane/envoy/service/listener/v3"
	routeservice "github.com/envoyproxy/go-control-plane/envoy/service/route/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	serverv3 "github.com/envoyproxy/go-control-plane/pkg/server/v3"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/status"

	"github.com/goreka/goreka/region"
	"github.com/goreka/goreka/registry"
)

// Config is the xDS server's configuration (goreka.xds.*).
type Config struct {
	// ZonePriority gives a node that declares a locality zone its own
	// zone's endpoints at priority 0 and the other zones' at 1.
	ZonePriority bool
	// HeldAsUnhealthy serves a lease whose heartbeats stopped (expired,
	// not evicted: held by self-preservation) or that goreka's health
	// evidence calls dead as UNHEALTHY; false serves every instance by the
	// status goreka serves to Eureka clients.
	HeldAsUnhealthy bool
	// ExpiryCheck is how often each namespace's leases are checked for
	// expiry (renewals are no change events), with HeldAsUnhealthy. 0 = 5 s.
	ExpiryCheck time.Duration
	// Buffer is each namespace's change-stream buffer (events); a feeder
	// that falls further behind resynchronises from a view. 0 = 4096.
	Buffer int
	// Logger receives NACKs, client connections and resynchronisations.
	Logger *slog.Logger
	// Now is the clock (ClientInfo.Since, NACK.At); nil means time.Now.
	Now func() time.Time
	// TLS, when set, makes the gRPC port serve TLS with it: the main
	// port's configuration (tlsconf.Server.TLSConfig: its certificate
	// source, re-read when the files change, client-auth and trust,
	// protocols and ciphers), so that the xDS port is exactly as strict.
	TLS *tls.Config
	// Identify, when set, authenticates every call as the main port's edge
	// does (server.Ops.Identify): the call's authorization metadata (Basic)
	// and the connection's verified client certificate. A call it refuses
	// ends with UNAUTHENTICATED and a log line (at most one per 10 s); a
	// user restricted to some namespaces (namespaces not nil) may not name
	// another one in its node (PERMISSION_DENIED; 403 on the REST form).
	Identify func(authorization string, st *tls.ConnectionState) (user string, namespaces []string, ok bool)
}

// Server is goreka's xDS server: ADS (state of the world and delta) and the
// per-type discovery services over gRPC, for every namespace attached.
type Server struct {
	cfg       Config
	log       *slog.Logger
	ctx       context.Context
	cancel    context.CancelFunc
	wg        sync.WaitGroup
	xds       serverv3.Server
	grpc      *grpc.Server
	addr      net.Addr
	closeOnce sync.Once

	mu      sync.Mutex
	closing bool // Close has begun: Attach starts no feeder
	spaces  map[string]*space
	streams map[streamKey]*streamInfo // streams whose node has been seen
	users   map[streamKey]identity    // the authenticated user of each stream (with Identify)
	counts  map[[2]string]int         // goreka_xds_clients by kind and namespace

	// bound is the stream of each request the callbacks let through,
	// until the router's watch takes it (streamOf): the caches keep a
	// stream's state across its watches by it. boundBy is the request of
	// each stream, so that one no watch follows (a stale nonce) is
	// replaced by the next rather than kept.
	bindMu  sync.Mutex
	bound   map[any]streamKey
	boundBy map[streamKey]any

	// synced, when set (tests), is called after each update of a
	// namespace's resources with the revision they are at.
	synced func(ns string, rev int64)
	// resyncs counts resynchronisations after a *registry.LaggedError.
	resyncs atomic.Int64
	// vers turns the caches' versions into revisions.
	vers versions
	// names holds each name the namespaces have once; requests' names are
	// replaced by its copies (ids.go).
	names nameTable
	// refusals rate-limits the log lines of refused calls.
	refusals rateLog

	clients *prometheus.GaugeVec
	pushes  *prometheus.CounterVec
	nacks   *prometheus.CounterVec
	latency *prometheus.HistogramVec
}

// New returns a server with no namespace attached; it serves once Start
// (or Register on a gRPC server of the caller's) is called.
func New(cfg Config) *Server {
	if cfg.Buffer <= 0 {
		cfg.Buffer = 4096
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.ExpiryCheck <= 0 {
		cfg.ExpiryCheck = 5 * time.Second
	}
	s := &Server{
		cfg: cfg, log: cfg.Logger,
		spaces:  map[string]*space{},
		streams: map[streamKey]*streamInfo{},
		users:   map[streamKey]identity{},
		counts:  map[[2]string]int{},
		bound:   map[any]streamKey{},
		boundBy: map[streamKey]any{},
		clients: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "goreka_xds_clients", Help: "xDS streams by client kind and namespace."}, []string{"kind", "namespace"}),
		pushes:  prometheus.NewCounterVec(prometheus.CounterOpts{Name: "goreka_xds_pushes_total", Help: "xDS responses sent, by resource type."}, []string{"type"}),
		nacks:   prometheus.NewCounterVec(prometheus.CounterOpts{Name: "goreka_xds_nacks_total", Help: "xDS responses a client rejected, by resource type."}, []string{"type"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "goreka_xds_push_latency_seconds",
			Help:    "Time from a registry change to the xDS response carrying it being written to a subscribed stream, by resource type.",
			Buckets: []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10},
		}, []string{"type"}),
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.xds = serverv3.NewServer(s.ctx, router{s}, s.callbacks())
	return s
}

// Attach serves namespace name from reg: the server subscribes to reg's
// change stream and keeps the namespace's resources until Close. A name
// already attached is left as it is (logged), and so is any name once
// Close has begun. On a nil Server it does nothing (xDS disabled).
func (s *Server) Attach(name string, reg *registry.Registry) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		s.log.Warn("xds: namespace attached after Close; not served", "namespace", name)
		return
	}
	if sp := s.spaces[name]; sp != nil {
		s.log.Error("xds: namespace attached twice; the second registry is not served", "namespace", name)
		return
	}
	sp := &space{name: name, vers: &s.vers, idx: s.newIndex(), groups: map[groupKey]*group{}, kinds: map[Kind]*kindSet{}, vanished: map[string]struct{}{}, due: map[string]struct{}{}}
	s.spaces[name] = sp
	// Subscribe before returning, so that no change made after Attach is
	// missed; the first view is read by the feeder after subscribing. The
	// feeder joins the wait group under s.mu, so never after Close's Wait
	// began.
	sub := reg.Subscribe(s.cfg.Buffer)
	s.wg.Go(func() { s.feed(sp, reg, sub) })
}

// AttachRegions serves the instances of set's remote regions (their
// whitelists applied, as Eureka's merged reads do) beside namespace ns's
// own, in localities of their region, at priority 2 (after the node's
// zone, 0, and the other local zones, 1; renumbered without gaps). It
// returns the function to call after a region's copy changed (from
// region.Config.OnChange): it reads the regions' copies again and
// resends the names whose remote instances changed. On a nil Server, an
// empty set or an unattached namespace it attaches nothing.
func (s *Server) AttachRegions(ns string, set *region.Set) (changed func()) {
	if s == nil || set.Len() == 0 {
		return func() {}
	}
	sp := s.spaceOf(ns)
	if sp == nil {
		return func() {}
	}
	refresh := func() {
		by := map[string][]registry.LeaseView{}
		for _, name := range set.Names() {
			for _, vs := range set.Overlay([]string{name}).ByApp {
				by[name] = append(by[name], vs...)
			}
		}
		touched := map[string]struct{}{}
		sp.mu.Lock()
		sp.idx.setRemote(by, touched)
		if len(touched) > 0 {
			sp.swept() // a change that is not the registry's: REV.N
		}
		s.pushLocked(sp, touched, s.now())
		rev := sp.idx.rev
		sp.mu.Unlock()
		if len(touched) > 0 {
			s.notify(sp, rev)
		}
	}
	refresh()
	return refresh
}

// group returns the group of node n. A node of a namespace that is not
// attached is refused (the stream ends; clients retry with backoff), so
// that node metadata cannot make the server hold state for names that do
// not exist.
func (s *Server) group(n *core.Node) (*group, error) {
	k := keyOf(n, s.cfg.ZonePriority)
	s.mu.Lock()
	sp := s.spaces[k.ns]
	s.mu.Unlock()
	if sp == nil {
		return nil, status.Errorf(codes.NotFound, "namespace %q is not served by this goreka", k.ns)
	}
	return sp.groupFor(k, s.cfg.HeldAsUnhealthy), nil
}

// feed keeps sp from reg's change stream: a view at subscription, then
// the changes in revision order, a batch of queued changes at a time (a
// registration storm rebuilds each touched name once per batch, not once
// per change); on *registry.LaggedError a fresh subscription and view.
func (s *Server) feed(sp *space, reg *registry.Registry, sub *registry.Subscription) {
	for {
		touched := map[string]struct{}{}
		view := reg.Applications()
		sp.mu.Lock()
		sp.idx.reset(view, touched)
		s.pushLocked(sp, touched, s.now())
		rev := sp.idx.rev
		sp.mu.Unlock()
		s.notify(sp, rev)
		if !s.follow(sp, reg, sub) {
			sub.Close()
			return
		}
		s.resyncs.Add(1)
		s.log.Warn("xds fell behind the change stream; resynchronising", "namespace", sp.name, "err", sub.Err())
		sub = reg.Subscribe(s.cfg.Buffer)
	}
}

// follow applies sub's events until the server closes (false) or the
// subscription ends (true: resynchronise).
func (s *Server) follow(sp *space, reg *registry.Registry, sub *registry.Subscription) bool {
	const batch = 1024
	tick := time.NewTicker(s.cfg.ExpiryCheck)
	defer tick.Stop()
	for {
		var e registry.Event
		var ok bool
		select {
		case <-s.ctx.Done():
			return false
		case <-tick.C:
			s.tick(sp, reg)
			continue
		case e, ok = <-sub.Events():
		}
		if !ok {
			return sub.Err() != nil
		}
		at := s.now() // the change is delivered as it is made: its time, near enough
		touched := map[string]struct{}{}
		sp.mu.Lock()
		sp.idx.apply(e, touched)
	drain:
		for range batch {
			select {
			case e, ok = <-sub.Events():
				if !ok {
					break drain
				}
				sp.idx.apply(e, touched)
			default:
				break drain
			}
		}
		s.pushLocked(sp, touched, at)
		rev := sp.idx.rev
		sp.mu.Unlock()
		s.notify(sp, rev)
		if !ok {
			return sub.Err() != nil
		}
	}
}

// tick is the feeder's periodic work: the expiry sweep (with
// HeldAsUnhealthy) and the deletion of vanished names' assignments.
func (s *Server) tick(sp *space, reg *registry.Registry) {
	if s.cfg.HeldAsUnhealthy {
		s.sweep(sp, reg)
	}
	sp.mu.Lock()
	if err := sp.tickLocked(s.now()); err != nil {
		s.log.Error("xds update", "namespace", sp.name, "revision", sp.idx.rev, "err", err)
	}
	sp.mu.Unlock()
}

// sweep finds the leases of reg past their expiry at s.now() (expired,
// not evicted: held by self-preservation, or awaiting the eviction task)
// and resends the names whose instances entered or left that set.
func (s *Server) sweep(sp *space, reg *registry.Registry) {
	now := s.now()
	keys := reg.Expired(now, 0)
	touched := map[string]struct{}{}
	sp.mu.Lock()
	sp.idx.setExpired(keys, touched)
	if len(touched) > 0 {
		sp.swept()
	}
	s.pushLocked(sp, touched, now)
	rev := sp.idx.rev
	sp.mu.Unlock()
	if len(touched) > 0 {
		s.notify(sp, rev)
	}
}

func (s *Server) notify(sp *space, rev int64) {
	if s.synced != nil {
		s.synced(sp.name, rev)
	}
}

func (s *Server) pushLocked(sp *space, touched map[string]struct{}, at time.Time) {
	if len(touched) == 0 {
		return
	}
	if err := sp.pushLocked(touched, at); err != nil {
		s.log.Error("xds update", "namespace", sp.name, "revision", sp.idx.rev, "err", err)
	}
}

// Register adds the xDS services (ADS and the per-type ones) to gs.
func (s *Server) Register(gs *grpc.Server) {
	discovery.RegisterAggregatedDiscoveryServiceServer(gs, s.xds)
	endpointservice.RegisterEndpointDiscoveryServiceServer(gs, s.xds)
	clusterservice.RegisterClusterDiscoveryServiceServer(gs, s.xds)
	routeservice.RegisterRouteDiscoveryServiceServer(gs, s.xds)
	listenerservice.RegisterListenerDiscoveryServiceServer(gs, s.xds)
}

// grpcOptions are the options of the server Start serves on: the TLS and
// authentication ones, keepalives, and the codec.
func (s *Server) grpcOptions() []grpc.ServerOption {
	return append(s.serverOptions(),
		// xDS streams live long and are quiet between changes: let clients
		// keep them alive (Envoy and grpc-go ping no more than every 10 s
		// unless configured otherwise).
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 10 * time.Second, PermitWithoutStream: true}),
		// And find the dead ones: a client gone without a FIN (a killed
		// node, a dropped NAT entry) is pinged after 30 s of silence and
		// its streams closed 10 s later, so its watches and its count in
		// goreka_xds_clients do not outlive it.
		grpc.KeepaliveParams(keepalive.ServerParameters{Time: 30 * time.Second, Timeout: 10 * time.Second}),
		grpc.MaxConcurrentStreams(1000),
		// Responses are encoded around their resources' bytes, not into a
		// copy of them per stream, and requests' names decoded as the
		// server's copies (codec.go).
		grpc.ForceServerCodecV2(newCodec(&s.names)),
	)
}

// Start listens on addr (host:port) and serves gRPC until ctx is done or
// Close is called. It returns the listener's error, so that a taken port
// fails start-up. On a nil Server it does nothing.
func (s *Server) Start(ctx context.Context, addr string) error {
	if s == nil {
		return nil
	}
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("xds: %w", err)
	}
	s.grpc = grpc.NewServer(s.grpcOptions()...)
	s.Register(s.grpc)
	s.addr = lis.Addr()
	s.wg.Go(func() {
		if err := s.grpc.Serve(lis); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
			s.log.Error("xds server", "err", err)
		}
	})
	go func() {
		select {
		case <-ctx.Done():
			s.Close()
		case <-s.ctx.Done():
		}
	}()
	s.log.Warn("xds: every instance metadata key and value is sent to xDS clients, in filter_metadata[\"envoy.lb\"] of each endpoint (for Envoy's subset load balancer): keep secrets out of eureka.instance.metadata-map")
	s.log.Info("xds server listening", "address", s.addr.String(), "tls", s.cfg.TLS != nil, "auth", s.cfg.Identify != nil)
	return nil
}

// Addr is the address Start listens on (nil before Start).
func (s *Server) Addr() net.Addr { return s.addr }

// Close stops serving (open streams end) and the namespaces' feeders, and
// returns once they have ended, whether Start was called, failed or
// succeeded. It may be called more than once; on a nil Server it does
// nothing.
func (s *Server) Close() {
	if s == nil {
		return
	}
	s.mu.Lock()
	s.closing = true
	s.mu.Unlock()
	s.closeOnce.Do(func() {
		s.cancel()
		if s.grpc != nil {
			s.grpc.Stop()
		}
	})
	s.wg.Wait()
}

// Collector returns the server's metrics: goreka_xds_clients{kind,namespace},
// goreka_xds_pushes_total{type}, goreka_xds_nacks_total{type},
// goreka_xds_push_latency_seconds{type}. A nil
// Server's collects nothing.
func (s *Server) Collector() prometheus.Collector {
	if s == nil {
		return collectors{}
	}
	return collectors{s.clients, s.pushes, s.nacks, s.latency}
}

type collectors []prometheus.Collector

func (c collectors) Describe(ch chan<- *prometheus.Desc) {
	for _, x := range c {
		x.Describe(ch)
	}
}

func (c collectors) Collect(ch chan<- prometheus.Metric) {
	for _, x := range c {
		x.Collect(ch)
	}
}

// typeName is the short label of a type URL.
func typeName(u string) string {
	switch u {
	case resource.ClusterType:
		return "cds"
	case resource.EndpointType:
		return "eds"
	case resource.ListenerType:
		return "lds"
	case resource.RouteType:
		return "rds"
	}
	return "other"
}

// streamKey names a stream: the state-of-the-world and the delta server
// each number their streams from 1.
type streamKey struct {
	delta bool
	id    int64
}

// streamInfo is what is known of a stream: its node (clients send it on
// the first request only) and whether it is counted as a client.
type streamInfo struct {
	node    *core.Node
	key     groupKey
	counted bool
	since   time.Time
	acked   map[string]string // last ACKed version by type URL
	nack    *NACK             // the last NACK
	sent    map[string][]sent // the last responses by type URL
	// lastSent is when the last response of each type was sent: a
	// response whose change came later is a push, and its latency counts.
	lastSent map[string]time.Time
	// caches is the cache of each type the stream has watched, which
	// keeps its state until the stream closes.
	caches map[string]*typed
}

// bind records that req (a *DiscoveryRequest or *DeltaDiscoveryRequest)
// is stream sk's, for the watch that follows it.
func (s *Server) bind(sk streamKey, req any) {
	s.bindMu.Lock()
	defer s.bindMu.Unlock()
	if old, ok := s.boundBy[sk]; ok {
		delete(s.bound, old)
	}
	s.bound[req] = sk
	s.boundBy[sk] = req
}

// streamOf is the stream of req, whose watch is being made on c, and
// records c as that stream's cache of its type; false when the stream is
// not known (a watch made outside the server's streams, or before the
// stream's node was seen), whose state the cache then keeps for that
// one watch only.
func (s *Server) streamOf(req any, c *typed) (streamKey, bool) {
	s.bindMu.Lock()
	sk, ok := s.bound[req]
	if ok {
		delete(s.bound, req)
		delete(s.boundBy, sk)
	}
	s.bindMu.Unlock()
	if !ok {
		return streamKey{}, false
	}
	s.mu.Lock()
	si := s.streams[sk]
	if si == nil {
		s.mu.Unlock()
		return streamKey{}, false
	}
	if si.caches == nil {
		si.caches = map[string]*typed{}
	}
	old := si.caches[c.typeURL]
	si.caches[c.typeURL] = c
	s.mu.Unlock()
	if old != nil && old != c {
		old.forget(sk) // the node moved the stream to another group
	}
	return sk, true
}

func (s *Server) now() time.Time { return s.cfg.Now() }

// seen records a stream's node the first time it is known and returns the
// node (the one recorded when a later request omits it). A stream counts
// as a client of its node's group only when the namespace is attached:
// the port is unauthenticated, and a node claiming ever new namespaces
// must not create ever new metric series.
func (s *Server) seen(sk streamKey, n *core.Node) *core.Node {
	s.mu.Lock()
	si := s.streams[sk]
	if si == nil {
		if n == nil {
			s.mu.Unlock()
			return nil
		}
		si = &streamInfo{node: n, key: keyOf(n, s.cfg.ZonePriority), since: s.now()}
		s.streams[sk] = si
		if s.spaces[si.key.ns] != nil {
			si.counted = true
			lv := [2]string{si.key.kind.String(), si.key.ns}
			s.counts[lv]++
			s.clients.WithLabelValues(lv[0], lv[1]).Set(float64(s.counts[lv]))
		}
		s.mu.Unlock()
		s.log.Info("xds client connected", "node", n.GetId(), "kind", si.key.kind.String(), "namespace", si.key.ns, "zone", n.GetLocality().GetZone(), "stream", sk.id, "delta", sk.delta)
		return n
	}
	s.mu.Unlock()
	return si.node
}

func (s *Server) closed(sk streamKey) {
	s.mu.Lock()
	si := s.streams[sk]
	delete(s.streams, sk)
	delete(s.users, sk)
	if si != nil && si.counted {
		lv := [2]string{si.key.kind.String(), si.key.ns}
		if s.counts[lv]--; s.counts[lv] <= 0 {
			delete(s.counts, lv)
			s.clients.DeleteLabelValues(lv[0], lv[1])
		} else {
			s.clients.WithLabelValues(lv[0], lv[1]).Set(float64(s.counts[lv]))
		}
	}
	s.mu.Unlock()
	s.bindMu.Lock()
	if req, ok := s.boundBy[sk]; ok {
		delete(s.bound, req)
		delete(s.boundBy, sk)
	}
	s.bindMu.Unlock()
	if si != nil {
		for _, c := range si.caches {
			c.forget(sk)
		}
		s.log.Info("xds client disconnected", "node", si.node.GetId(), "kind", si.key.kind.String(), "namespace", si.key.ns, "stream", sk.id, "delta", sk.delta)
	}
}

func (s *Server) nack(n *core.Node, typeURL, version, nonce string, detail *status.Status) {
	s.nacks.WithLabelValues(typeName(typeURL)).Inc()
	s.log.Warn("xds NACK", "node", n.GetId(), "type", typeName(typeURL), "version", version, "nonce", nonce, "err", detail.Message())
}

func (s *Server) callbacks() serverv3.Callbacks {
	return serverv3.CallbackFuncs{
		StreamClosedFunc:      func(id int64, _ *core.Node) { s.closed(streamKey{id: id}) },
		DeltaStreamClosedFunc: func(id int64, _ *core.Node) { s.closed(streamKey{delta: true, id: id}) },
		StreamOpenFunc:        func(ctx context.Context, id int64, _ string) error { return s.opened(ctx, streamKey{id: id}) },
		DeltaStreamOpenFunc: func(ctx context.Context, id int64, _ string) error {
			return s.opened(ctx, streamKey{delta: true, id: id})
		},
		StreamRequestFunc: func(id int64, req *discovery.DiscoveryRequest) error {
			sk := streamKey{id: id}
			n := s.seen(sk, req.GetNode())
			if err := s.mayRead(sk, n, req.GetNode()); err != nil {
				return err
			}
			var st *status.Status
			if d := req.GetErrorDetail(); d != nil {
				st = status.FromProto(d)
				s.nack(n, req.GetTypeUrl(), req.GetVersionInfo(), req.GetResponseNonce(), st)
			}
			s.requested(sk, req.GetTypeUrl(), req.GetVersionInfo(), req.GetResponseNonce(), st)
			s.names.canon(req.ResourceNames) // before the server keys its subscription with them
			s.bind(sk, req)
			return nil
		},
		StreamDeltaRequestFunc: func(id int64, req *discovery.DeltaDiscoveryRequest) error {
			sk := streamKey{delta: true, id: id}
			n := s.seen(sk, req.GetNode())
			if err := s.mayRead(sk, n, req.GetNode()); err != nil {
				return err
			}
			var st *status.Status
			if d := req.GetErrorDetail(); d != nil {
				st = status.FromProto(d)
				s.nack(n, req.GetTypeUrl(), "", req.GetResponseNonce(), st)
			}
			s.requested(sk, req.GetTypeUrl(), "", req.GetResponseNonce(), st)
			s.names.canon(req.ResourceNamesSubscribe)
			s.names.canon(req.ResourceNamesUnsubscribe)
			s.bind(sk, req)
			return nil
		},
		StreamResponseFunc: func(_ context.Context, id int64, _ *discovery.DiscoveryRequest, resp *discovery.DiscoveryResponse) {
			s.pushes.WithLabelValues(typeName(resp.GetTypeUrl())).Inc()
			var at time.Time
			resp.VersionInfo, at = s.vers.revision(resp.GetVersionInfo()) // this stream's own response
			s.responded(streamKey{id: id}, resp.GetTypeUrl(), resp.GetNonce(), resp.GetVersionInfo(), at)
		},
		StreamDeltaResponseFunc: func(id int64, _ *discovery.DeltaDiscoveryRequest, resp *discovery.DeltaDiscoveryResponse) {
			s.pushes.WithLabelValues(typeName(resp.GetTypeUrl())).Inc()
			var at time.Time
			resp.SystemVersionInfo, at = s.vers.revision(resp.GetSystemVersionInfo())
			s.responded(streamKey{delta: true, id: id}, resp.GetTypeUrl(), resp.GetNonce(), resp.GetSystemVersionInfo(), at)
		},
	}
}

// processID tells this process's versions from a previous one's (random,
// not a time: nothing here reads the clock).
func processID() string { return strconv.FormatUint(uint64(rand.Uint32()), 36) }
