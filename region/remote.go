package region

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/goreka/goreka/eurekahttp"
	"github.com/goreka/goreka/registry"
)

// Config describes one remote region. Zero durations take Eureka's
// (Spring's) defaults.
type Config struct {
	// Name is the region's name as clients ask for it (?regions=), lower case.
	Name string
	// URL is the region's Eureka base URL (http://host:port/eureka/); a
	// user:password in it is sent as basic auth (a user alone with an
	// empty password).
	URL string
	// FetchInterval is eureka.server.remote-region-registry-fetch-interval
	// (30 s). A fetch that takes longer is abandoned (Eureka's
	// TimedSupervisorTask times a fetch out after one interval too).
	FetchInterval time.Duration
	// ConnectTimeout is eureka.server.remote-region-connect-timeout-ms
	// (Spring: 1 s).
	ConnectTimeout time.Duration
	// ReadTimeout is eureka.server.remote-region-read-timeout-ms (Spring:
	// 1 s): the longest wait for the response headers or for the next bytes
	// of the body, as Java's socket read timeout (eurekahttp).
	ReadTimeout time.Duration
	// FullFetchTimeout, when set, bounds a full fetch on its own instead of
	// the fetch interval (which then bounds the delta alone): a relay's
	// copy of a large core (118 MB of JSON at 110k instances) takes longer
	// than an interval on a loaded machine, and an abandoned full fetch is
	// no copy at all. Such a fetch is bounded by its progress instead:
	// FullReadTimeout between bytes. 0 (remote regions): the interval
	// bounds the whole fetch, as Eureka's TimedSupervisorTask.
	FullFetchTimeout time.Duration
	// FullReadTimeout is the read timeout of a full fetch (0: ReadTimeout):
	// the wait for the headers covers the server's build of a full
	// registry it had not cached.
	FullReadTimeout time.Duration
	// DisableDelta is eureka.server.disable-delta-for-remote-regions: every
	// fetch is a full one.
	DisableDelta bool
	// GZip is eureka.server.g-zip-content-from-remote-region (true): ask for
	// and inflate gzip bodies.
	GZip bool
	// UserAgent is sent with every fetch.
	UserAgent string
	// TLSConfigFor configures each https connection to the region
	// (eurekahttp.Config.TLSConfigFor; nil: Go's defaults).
	TLSConfigFor func(host string) *tls.Config
	// HTTPClient replaces the client built from the timeouts (tests).
	HTTPClient *http.Client
	// Now is the clock of the fetch times (nil: time.Now).
	Now func() time.Time
	// Logger gets fetch failures (nil: discarded).
	Logger *slog.Logger
	// OnChange is called after the copy or the last delta changed, outside
	// any lock of the Remote, never concurrently for one Remote.
	OnChange func(Change)
}

// Change says what a fetch changed: every instance added, removed or
// modified in the copy (both versions of a modified one), and whether the
// last delta (served in region deltas) is another one.
type Change struct {
	Region    string
	Instances []*registry.Instance
	Delta     bool
}

// Remote is one remote region: its copy of the region's registry and the
// fetch that keeps it.
type Remote struct {
	cfg        Config
	client     *eurekahttp.Client
	fullClient *eurekahttp.Client  // client with FullReadTimeout
	ep         eurekahttp.Endpoint // URL without user info, trailing slash; credentials
	log        *slog.Logger
	// created is when the Remote was built: staleness counts from it until a
	// fetch succeeds (Eureka starts timeOfLastSuccessfulRemoteFetch so).
	created time.Time

	fetchMu sync.Mutex // one fetch at a time
	// pubMu orders the publishes of fetches and of Apply, and their
	// OnChange calls.
	pubMu sync.Mutex

	mu sync.RWMutex
	// apps is the copy served: fetched, with ahead on top; never mutated
	// once published.
	apps *registry.Applications
	// fetched is the copy as the fetched documents made it (Revision: the
	// last document's, 0 unknown), the one deltas apply to and the
	// reconcile hash checks.
	fetched *registry.Applications
	// ahead are the updates Apply took that no fetched document holds yet
	// (of a revision above fetched's), by application and id (watch.go).
	ahead       map[[2]string]aheadEntry
	delta       *registry.Applications // the last delta (after a full fetch: the full registry, as Eureka)
	ready       bool
	gen         int64
	lastSuccess time.Time
	lastAttempt time.Time
	lastErr     string

	failures       atomic.Int64
	deltaSuccesses atomic.Int64
	deltaMismatch  atomic.Int64
}

// New builds a Remote; it fetches nothing until FetchOnce or Run. An
// unusable URL is an error.
func New(cfg Config) (*Remote, error) {
	if cfg.Name == "" {
		return nil, errors.New("remote region without a name")
	}
	ep, err := eurekahttp.ParseURL(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("remote region %s: eureka.server.remote-region-urls-with-name.%s=%q is not an absolute http(s) URL with a host: %v",
			cfg.Name, cfg.Name, cfg.URL, err)
	}
	if u, _ := url.Parse(strings.TrimSpace(cfg.URL)); u != nil && u.User != nil && ep.Authorization == "" {
		// A user without a password is sent with an empty one, as this
		// client did before eurekahttp (and Java's does); peers send none.
		ep.Authorization = eurekahttp.BasicAuth(url.UserPassword(u.User.Username(), ""))
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&cfg.FetchInterval, 30*time.Second)
	def(&cfg.ConnectTimeout, time.Second)
	def(&cfg.ReadTimeout, time.Second)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = "goreka-remote-region"
	}
	r := &Remote{cfg: cfg, log: cfg.Logger, created: cfg.Now()}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	r.log = r.log.With("component", "region", "region", cfg.Name)
	r.ep = ep
	ec := eurekahttp.Config{
		ConnectTimeout: cfg.ConnectTimeout,
		ReadTimeout:    cfg.ReadTimeout,
		UserAgent:      cfg.UserAgent,
		AcceptGzip:     cfg.GZip,
		// Any 2xx with a registry is used, as before eurekahttp: a 2xx
		// without one (204) is an undecodable body, which fails a delta over
		// to a full fetch and a full fetch keeps the copy, as any error.
		AcceptAny2xx: true,
		HTTPClient:   cfg.HTTPClient,
		TLSConfigFor: cfg.TLSConfigFor,
	}
	r.client = eurekahttp.New(ec)
	r.fullClient = r.client
	if cfg.FullReadTimeout > 0 && cfg.FullReadTimeout != cfg.ReadTimeout {
		if ec.HTTPClient == nil {
			// One connection pool for both clients.
			ec.HTTPClient = eurekahttp.NewHTTPClient(eurekahttp.Config{ConnectTimeout: cfg.ConnectTimeout,
				IdleConnTimeout: 30 * time.Second, TLSConfigFor: cfg.TLSConfigFor})
			r.client = eurekahttp.New(ec)
		}
		ec.ReadTimeout = cfg.FullReadTimeout
		r.fullClient = eurekahttp.New(ec)
	}
	return r, nil
}

// Name is the region's name.
func (r *Remote) Name() string { return r.cfg.Name }

// URL is the region's base URL without credentials.
func (r *Remote) URL() string { return r.ep.URL }

// Copy returns the region's registry copy and its last delta (both empty
// before the first successful fetch). The values must not be modified.
func (r *Remote) Copy() (apps, delta *registry.Applications) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.apps, r.delta
}

// Ready reports whether a fetch has succeeded once (Eureka's
// isReadyForServingData).
func (r *Remote) Ready() bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.ready
}

// Status is what the dashboard and the metrics show of a region.
type Status struct {
	Name, URL       string
	Ready           bool
	LastSuccess     time.Time // zero: never
	LastAttempt     time.Time
	LastError       string // of the last attempt; "" when it succeeded
	Apps, Instances int
	Failures        int64 // failed fetches since start
	DeltaSuccesses  int64
	DeltaMismatches int64
}

// Status returns the region's state now.
func (r *Remote) Status() Status {
	r.mu.RLock()
	st := Status{Name: r.cfg.Name, URL: r.ep.URL, Ready: r.ready, LastSuccess: r.lastSuccess, LastAttempt: r.lastAttempt, LastError: r.lastErr}
	if r.apps != nil {
		st.Apps = len(r.apps.Apps)
		for i := range r.apps.Apps {
			st.Instances += len(r.apps.Apps[i].Instances)
		}
	}
	r.mu.RUnlock()
	st.Failures = r.failures.Load()
	st.DeltaSuccesses = r.deltaSuccesses.Load()
	st.DeltaMismatches = r.deltaMismatch.Load()
	return st
}

// Run fetches at once, then every FetchInterval until ctx is done. It
// returns nil when ctx is done.
func (r *Remote) Run(ctx context.Context) error {
	t := time.NewTimer(0)
	defer t.Stop()
	delay := r.cfg.FetchInterval
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		err := r.FetchOnce(ctx)
		if err != nil && ctx.Err() == nil {
			r.log.Warn("fetching remote region registry", "url", r.ep.URL, "err", err)
		}
		delay = nextDelay(delay, r.cfg.FetchInterval, err)
		t.Reset(delay)
	}
}

// maxBackoff bounds the fetch delay at this many fetch intervals: Eureka
// runs the fetch in a TimedSupervisorTask with expBackOffBound 5.
const maxBackoff = 5

// nextDelay is TimedSupervisorTask's rule: a fetch that timed out (it is
// abandoned after one interval) doubles the delay before the next one, up
// to maxBackoff intervals, so that a region that hangs is not asked ever
// more often than it answers; a fetch that completed resets it to the
// interval. Other failures (refused, 5xx, a bad body) keep the delay.
func nextDelay(cur, interval time.Duration, err error) time.Duration {
	switch {
	case err == nil:
		return interval
	case errors.Is(err, context.DeadlineExceeded):
		return min(2*cur, maxBackoff*interval)
	}
	return cur
}

// FetchOnce does one fetch as Eureka's RemoteRegionRegistry.fetchRegistry:
// the full registry when deltas are disabled or the copy is empty, else the
// delta, applied to the copy and checked by its hash; a failed delta or a
// hash mismatch fetches the full registry (except, with FullFetchTimeout, a
// delta the server did not answer at all: eurekahttp.NoAnswerError). On
// error the copy is kept.
func (r *Remote) FetchOnce(ctx context.Context) error {
	r.fetchMu.Lock()
	defer r.fetchMu.Unlock()
	outer := ctx
	ctx, cancel := context.WithTimeout(ctx, r.cfg.FetchInterval)
	defer cancel()
	full := func(cur, curDelta *registry.Applications) error {
		fctx := ctx
		if r.cfg.FullFetchTimeout > 0 {
			c, cancel := context.WithTimeout(outer, r.cfg.FullFetchTimeout)
			defer cancel()
			fctx = c
		}
		return r.storeFull(fctx, cur, curDelta)
	}
	r.mu.RLock()
	cur, curDelta := r.fetched, r.delta
	r.mu.RUnlock()
	var err error
	if r.cfg.DisableDelta || cur == nil || len(cur.Apps) == 0 {
		err = full(cur, curDelta)
	} else {
		err = r.fetchDelta(ctx, cur, curDelta, full)
	}
	now := r.cfg.Now()
	r.mu.Lock()
	r.lastAttempt = now
	if err == nil {
		r.lastSuccess = now
		r.ready = true
		r.lastErr = ""
	} else {
		r.lastErr = err.Error()
	}
	r.mu.Unlock()
	if err != nil {
		r.failures.Add(1)
	}
	return err
}

func (r *Remote) fetchDelta(ctx context.Context, cur, curDelta *registry.Applications, full func(cur, curDelta *registry.Applications) error) error {
	delta, err := r.get(ctx, eurekahttp.Delta)
	if err != nil {
		var na *eurekahttp.NoAnswerError
		if r.cfg.FullFetchTimeout > 0 && errors.As(err, &na) {
			// The server sent no answer (refused, reset, timed out before its
			// headers): with its full fetch bounded by progress only, a relay
			// would wait up to a read timeout more on a server that is not
			// there before its caller tries the next endpoint. A delta that
			// broke off in its body still falls back to the full registry.
			return err
		}
		// Eureka: "The server does not allow the delta revision to be
		// applied because it is not safe. Hence got the full registry."
		r.log.Info("delta fetch failed, fetching the full registry", "err", err)
		return full(cur, curDelta)
	}
	next, changed := applyDelta(cur, delta)
	next.Revision, next.Epoch = delta.Revision, delta.Epoch
	r.publish(next, delta, changed, curDelta)
	if got := next.ReconcileHashCode(); got != delta.HashCode {
		r.deltaMismatch.Add(1)
		r.log.Info("reconcile hash codes differ, fetching the full registry", "local", got, "remote", delta.HashCode)
		return full(next, delta)
	}
	r.deltaSuccesses.Add(1)
	return nil
}

func (r *Remote) storeFull(ctx context.Context, cur, curDelta *registry.Applications) error {
	apps, err := r.getWith(ctx, r.fullClient, eurekahttp.Full)
	if err != nil {
		return err
	}
	r.publish(apps, apps, diff(cur, apps), curDelta)
	return nil
}

// publish stores a new fetched copy and delta, the copy served being it
// with the updates of later revisions on top (watch.go), and tells
// OnChange. changed is what changed in the fetched copy.
func (r *Remote) publish(apps, delta *registry.Applications, changed []*registry.Instance, prevDelta *registry.Applications) {
	r.pubMu.Lock()
	defer r.pubMu.Unlock()
	r.mu.Lock()
	prev := r.apps
	pruned := r.prune(r.fetched, apps)
	served := apps
	if len(r.ahead) > 0 {
		served = overlay(apps, r.ahead)
	}
	r.fetched, r.apps, r.delta = apps, served, delta
	r.gen++
	ahead := len(r.ahead) > 0
	r.mu.Unlock()
	if ahead || len(pruned) > 0 {
		// What changed in the copy served: neither what the updates on
		// top still hide, nor an update the fetched copy now holds as it
		// was applied.
		changed = servedChanges(prev, served, changed, pruned)
	}
	// The same delta again (the region's recently-changed queue holds a
	// change for minutes) changes no document.
	deltaChanged := len(diff(prevDelta, delta)) > 0
	if r.cfg.OnChange != nil && (len(changed) > 0 || deltaChanged) {
		r.cfg.OnChange(Change{Region: r.cfg.Name, Instances: changed, Delta: deltaChanged})
	}
}

// get fetches one registry document (JSON, as Eureka's remote region
// client asks for it). An instance without an app name takes its
// application's.
func (r *Remote) get(ctx context.Context, f eurekahttp.Fetch) (*registry.Applications, error) {
	return r.getWith(ctx, r.client, f)
}

func (r *Remote) getWith(ctx context.Context, client *eurekahttp.Client, f eurekahttp.Fetch) (*registry.Applications, error) {
	apps, err := client.GetApplications(ctx, r.ep, f)
	if err != nil {
		return nil, err
	}
	for i := range apps.Apps {
		for j := range apps.Apps[i].Instances {
			if in := apps.Apps[i].Instances[j].Instance; in != nil && in.App == "" {
				in.App = apps.Apps[i].Name
			}
		}
	}
	return apps, nil
}

// applyDelta returns a new copy: cur with the delta's ADDED and MODIFIED
// instances stored (replacing one of the same id) and its DELETED ones
// removed (RemoteRegionRegistry.updateDelta), and the instances that
// changed.
func applyDelta(cur, delta *registry.Applications) (*registry.Applications, []*registry.Instance) {
	byApp := make(map[string]map[string]registry.LeaseView, len(cur.Apps))
	for i := range cur.Apps {
		m := make(map[string]registry.LeaseView, len(cur.Apps[i].Instances))
		for _, v := range cur.Apps[i].Instances {
			m[v.Instance.ID()] = v
		}
		byApp[cur.Apps[i].Name] = m
	}
	var changed []*registry.Instance
	for i := range delta.Apps {
		for _, v := range delta.Apps[i].Instances {
			in := v.Instance
			if in == nil {
				continue
			}
			name := in.App
			if name == "" {
				name = delta.Apps[i].Name
			}
			m := byApp[name]
			if m == nil {
				m = map[string]registry.LeaseView{}
				byApp[name] = m
			}
			old, had := m[in.ID()]
			switch in.ActionType {
			case registry.ActionDeleted:
				if had {
					delete(m, in.ID())
					changed = append(changed, old.Instance, in)
				}
			default: // ADDED, MODIFIED (and none: as MODIFIED)
				m[in.ID()] = v
				switch {
				case !had:
					changed = append(changed, in)
				case !reflect.DeepEqual(old.Instance, in):
					changed = append(changed, old.Instance, in)
				}
			}
		}
	}
	return fromMap(byApp, cur.HashCode), changed
}

// diff lists the instances that differ between two copies (by content,
// apart from lease timestamps, which change with every remote heartbeat).
func diff(prev, next *registry.Applications) []*registry.Instance {
	return Diff(prev, next, func(a, b *registry.Instance) bool { return reflect.DeepEqual(a, b) })
}

// Diff lists the instances that differ between two copies, same deciding
// whether two versions of one instance are equal: both versions of a
// modified one, the new one of an added one, the old one of a removed one.
func Diff(prev, next *registry.Applications, same func(a, b *registry.Instance) bool) []*registry.Instance {
	old := map[[2]string]*registry.Instance{}
	if prev != nil {
		for i := range prev.Apps {
			for _, v := range prev.Apps[i].Instances {
				old[[2]string{prev.Apps[i].Name, v.Instance.ID()}] = v.Instance
			}
		}
	}
	var out []*registry.Instance
	if next == nil {
		next = &registry.Applications{}
	}
	for i := range next.Apps {
		for _, v := range next.Apps[i].Instances {
			k := [2]string{next.Apps[i].Name, v.Instance.ID()}
			o, had := old[k]
			delete(old, k)
			if !had || !same(o, v.Instance) {
				if had {
					out = append(out, o)
				}
				out = append(out, v.Instance)
			}
		}
	}
	for _, o := range old {
		out = append(out, o)
	}
	return out
}

// fromMap builds a sorted copy; applications left without instances are
// dropped.
func fromMap(byApp map[string]map[string]registry.LeaseView, hash string) *registry.Applications {
	out := &registry.Applications{VersionDelta: 1, HashCode: hash}
	for name, m := range byApp {
		if len(m) == 0 {
			continue
		}
		app := registry.Application{Name: name, Instances: make([]registry.LeaseView, 0, len(m))}
		for _, v := range m {
			app.Instances = append(app.Instances, v)
		}
		sortViews(app.Instances)
		out.Apps = append(out.Apps, app)
	}
	slices.SortFunc(out.Apps, func(a, b registry.Application) int { return cmp.Compare(a.Name, b.Name) })
	out.HashCode = out.ReconcileHashCode()
	return out
}

func sortViews(vs []registry.LeaseView) {
	slices.SortFunc(vs, func(a, b registry.LeaseView) int { return cmp.Compare(a.Instance.ID(), b.Instance.ID()) })
}
