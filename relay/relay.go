package relay

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"github.com/goreka/goreka/discovery"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/goreka/goreka/eurekahttp"
	"github.com/goreka/goreka/region"
	"github.com/goreka/goreka/registry"
)

// Config configures a relay. Zero durations take the defaults listed.
type Config struct {
	// Upstream are the Eureka service URLs of the group above
	// (goreka.relay.upstream), tried in order as a client tries its
	// defaultZone: the first that answers is used until it fails.
	Upstream []string
	// ID names this relay in ChainHeader (goreka.relay.id; default: the
	// instance id). Required.
	ID string
	// Self is this server as it listens (discovery.LocalSelf, with its
	// host name in Names): an upstream URL that names it is refused.
	Self discovery.Self
	// HeartbeatInterval is how often the collected heartbeats are sent
	// (default 30 s, a client's lease-renewal-interval).
	HeartbeatInterval time.Duration
	// FetchInterval is how often the upstream copy is refreshed (default
	// 30 s).
	FetchInterval time.Duration
	// FetchApps keeps only these upstream applications at the edge (any
	// case); empty: all of them.
	FetchApps []string
	// ReadOnly makes a read replica: no leases, every write proxied.
	ReadOnly bool
	// MaxQueue bounds the forwarding queue (default 100000 instances); past
	// it the relay resyncs instead of dropping.
	MaxQueue int
	// ConnectTimeout and ReadTimeout are the upstream calls' (default 1 s
	// and 5 s).
	ConnectTimeout, ReadTimeout time.Duration
	// HTTPClient replaces the client built from the timeouts (tests).
	HTTPClient *http.Client
	// Authenticate tells whether a request's credentials name a user of
	// this server (server.Ops.Identify): a read-only relay proxies only
	// such writes, and notes only their relay chains. Nil: every request
	// (no authentication).
	Authenticate func(*http.Request) bool
	// TLSConfigFor configures each https connection upstream
	// (eurekahttp.Config.TLSConfigFor: eureka.client.tls.*; nil: Go's defaults).
	TLSConfigFor func(host string) *tls.Config
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// Logger gets the relay's logs (nil: discarded).
	Logger *slog.Logger
	// OnCopyChange is called after the upstream copy served changed (the
	// caller drops the cached reads it changes), never concurrently.
	OnCopyChange func(region.Change)
	// Pace waits d between two heartbeats to a stock upstream; it returns
	// false when ctx ended (nil: a timer).
	Pace func(ctx context.Context, d time.Duration) bool
}

// Relay is one relay: its forwarding queue, heartbeat collector and
// upstream copy. Its methods are safe for concurrent use.
type Relay struct {
	cfg    Config
	reg    *registry.Registry
	log    *slog.Logger
	client *eurekahttp.Client
	eps    []eurekahttp.Endpoint
	cur    atomic.Int32 // index of the endpoint in use
	// kind is what the endpoint in use is: kindUnknown until probed.
	kind    atomic.Int32
	remotes []*region.Remote // one copy per endpoint, fetched from the one in use
	created time.Time
	apps    map[string]bool // FetchApps, upper case; nil: all

	fwd    forwarder
	hb     heartbeats
	cp     upstreamCopy
	recent recentChanges // the copy's changes its deltas carry
	m      counters

	logMu   sync.Mutex
	lastLog map[string]time.Time // rate-limited warnings, by kind
}

// A full fetch of the upstream copy is bounded by its progress, not by the
// fetch interval: at 110k instances a core's registry is 118 MB of JSON,
// which ten relays fetching at once on a loaded machine did not get
// within the interval nor within the 5 s read timeout (the core builds an
// uncached full registry before it answers), and an abandoned full fetch
// leaves the relay with no copy at all. fullFetchTimeout bounds the whole
// fetch, fullReadTimeout every wait for bytes of it.
const (
	fullFetchTimeout = 10 * time.Minute
	fullReadTimeout  = 30 * time.Second
)

// Kinds of upstream.
const (
	kindUnknown int32 = iota
	kindGoreka
	kindStock
)

// New builds a relay over reg, the local registry. It fails when no
// upstream is given, one is not a usable URL, or one names this server.
func New(cfg Config, reg *registry.Registry) (*Relay, error) {
	if len(cfg.Upstream) == 0 {
		return nil, errors.New("goreka.relay.upstream: no upstream URL")
	}
	if cfg.ID == "" {
		return nil, errors.New("goreka.relay.id: empty relay id")
	}
	if strings.Contains(cfg.ID, ",") {
		return nil, fmt.Errorf("goreka.relay.id=%q: a relay id cannot hold a comma", cfg.ID)
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&cfg.HeartbeatInterval, 30*time.Second)
	def(&cfg.FetchInterval, 30*time.Second)
	def(&cfg.ConnectTimeout, time.Second)
	def(&cfg.ReadTimeout, 5*time.Second)
	if cfg.MaxQueue <= 0 {
		cfg.MaxQueue = 100000
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Pace == nil {
		cfg.Pace = sleep
	}
	r := &Relay{cfg: cfg, reg: reg, log: cfg.Logger, created: cfg.Now(), lastLog: map[string]time.Time{}}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	r.log = r.log.With("component", "relay")
	hc := cfg.HTTPClient
	if hc == nil {
		hc = eurekahttp.NewHTTPClient(eurekahttp.Config{ConnectTimeout: cfg.ConnectTimeout, MaxIdleConnsPerHost: 8,
			IdleConnTimeout: 30 * time.Second, TLSConfigFor: cfg.TLSConfigFor})
	}
	// Every call carries the chain: the transport adds it from the call's
	// context (withChain), this relay's id alone by default.
	base := hc.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	chc := *hc
	chc.Transport = chainTransport{base: base, id: cfg.ID}
	r.cp.hc = &chc
	r.client = eurekahttp.New(eurekahttp.Config{ConnectTimeout: cfg.ConnectTimeout, ReadTimeout: cfg.ReadTimeout,
		UserAgent: "goreka-relay", AcceptGzip: true, HTTPClient: &chc})
	for i, raw := range cfg.Upstream {
		ep, err := eurekahttp.ParseURL(raw)
		if err != nil {
			return nil, fmt.Errorf("goreka.relay.upstream=%q: %v", redacted(raw), err)
		}
		if host, port, ok := hostPort(ep.URL); ok && cfg.Self.Is(host, port) {
			return nil, fmt.Errorf("goreka.relay.upstream=%q is this server itself: a relay's upstream must be another server (it would forward its own registrations to itself)", ep.URL)
		}
		rm, err := region.New(region.Config{Name: fmt.Sprintf("upstream-%d", i), URL: raw, FetchInterval: cfg.FetchInterval,
			ConnectTimeout: cfg.ConnectTimeout, ReadTimeout: cfg.ReadTimeout, GZip: true, UserAgent: "goreka-relay",
			FullFetchTimeout: fullFetchTimeout, FullReadTimeout: max(cfg.ReadTimeout, fullReadTimeout),
			HTTPClient: &chc, Now: cfg.Now, Logger: cfg.Logger, OnChange: r.onRemoteChange})
		if err != nil {
			return nil, fmt.Errorf("goreka.relay.upstream: %v", err)
		}
		r.eps = append(r.eps, ep)
		r.remotes = append(r.remotes, rm)
	}
	if len(cfg.FetchApps) > 0 {
		r.apps = map[string]bool{}
		for _, a := range cfg.FetchApps {
			r.apps[strings.ToUpper(strings.TrimSpace(a))] = true
		}
	}
	r.fwd.init()
	r.hb.init()
	r.cp.init()
	return r, nil
}

// hostPort is a URL's host and port (80 or 443 when it names none).
func hostPort(raw string) (string, int, bool) {
	u, err := url.Parse(raw)
	if err != nil || u.Hostname() == "" {
		return "", 0, false
	}
	port := 80
	if u.Scheme == "https" {
		port = 443
	}
	if p := u.Port(); p != "" {
		if port, err = strconv.Atoi(p); err != nil {
			return "", 0, false
		}
	}
	return u.Hostname(), port, true
}

// ReadOnly reports whether the relay is a read replica.
func (r *Relay) ReadOnly() bool { return r.cfg.ReadOnly }

// Upstream returns the upstream URL in use (without credentials).
func (r *Relay) Upstream() string { return r.eps[r.cur.Load()].URL }

// Run runs the relay's loops (forwarding, heartbeats, the upstream copy)
// until ctx is done; it returns nil then, and at once for a nil relay.
func (r *Relay) Run(ctx context.Context) error {
	if r == nil {
		return nil
	}
	var wg sync.WaitGroup
	if !r.cfg.ReadOnly {
		wg.Go(func() { r.runForward(ctx) })
		wg.Go(func() { r.runHeartbeats(ctx) })
	}
	wg.Go(func() { r.runFetch(ctx) })
	wg.Wait()
	return nil
}

// call runs f against the endpoint in use; when it fails without an answer
// (refused, timed out) or with a 5xx, the next endpoint is tried, each at
// most once per call. It returns f's last error.
func (r *Relay) call(ctx context.Context, f func(eurekahttp.Endpoint) error) error {
	var err error
	for range len(r.eps) {
		i := r.cur.Load()
		r.m.requests.Add(1)
		err = f(r.eps[i])
		if !unreachable(err) || ctx.Err() != nil {
			return err
		}
		r.m.requestFailures.Add(1)
		next := (i + 1) % int32(len(r.eps))
		if r.cur.CompareAndSwap(i, next) && next != i {
			r.kind.Store(kindUnknown)
		}
	}
	return err
}

// unreachable reports whether err means no usable answer: no response at
// all, or a 5xx.
func unreachable(err error) bool {
	if err == nil {
		return false
	}
	var se *eurekahttp.StatusError
	if errors.As(err, &se) {
		return se.Code >= 500 && se.Code != http.StatusLoopDetected
	}
	return !errors.Is(err, eurekahttp.ErrBadResponse)
}

// statusOf is the HTTP status in err, 0 for none.
func statusOf(err error) int {
	var se *eurekahttp.StatusError
	if errors.As(err, &se) {
		return se.Code
	}
	return 0
}

// warn logs at most one line per kind and minute: an unreachable upstream
// or a loop must not flood the log.
func (r *Relay) warn(kind, msg string, args ...any) {
	now := r.cfg.Now()
	r.logMu.Lock()
	last, ok := r.lastLog[kind]
	if ok && now.Sub(last) < time.Minute {
		r.logMu.Unlock()
		return
	}
	r.lastLog[kind] = now
	r.logMu.Unlock()
	r.log.Warn(msg, args...)
}

func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// every runs f every d until ctx is done.
func every(ctx context.Context, d time.Duration, f func()) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			f()
		}
	}
}

// redacted is a URL for a log line or an error: its password replaced.
func redacted(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		return u.Redacted()
	}
	return "(a URL that does not parse)"
}
