package server

import (
	"crypto/sha256"
	"encoding/base64"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/goreka/goreka/server/metrics"
)

// Health and metrics paths. Health is never behind authentication, so that
// orchestrators probe without credentials; the metrics are (scrape configs
// carry basic_auth), like Spring Boot actuator endpoints under Spring
// Security.
const (
	HealthPath     = "/actuator/health"
	LivenessPath   = "/actuator/health/liveness"
	ReadinessPath  = "/actuator/health/readiness"
	MetricsPath    = "/metrics"
	PrometheusPath = "/actuator/prometheus"
)

// AuthConfig holds HTTP basic-auth credentials. An empty Password turns
// authentication off (and then the read-only user is ignored too).
type AuthConfig struct {
	User     string // spring.security.user.name; "user" when empty
	Password string // spring.security.user.password
	// ReadOnlyUser and ReadOnlyPassword, when both set, may use GET, HEAD
	// and OPTIONS only (fetches, dashboard pages, metrics); writes answer 403.
	ReadOnlyUser     string // goreka.security.read-only-user
	ReadOnlyPassword string // goreka.security.read-only-password
	// Users are further users with per-application write rights
	// (goreka.security.users); any of them turns authentication on, even
	// without Password.
	Users []UserConfig
	// Namespace is the namespace the Server serves, for the users scoped
	// to namespaces (UserConfig.Namespaces); "" is "default".
	Namespace string
}

// OpsConfig configures the operational layer around a Server.
type OpsConfig struct {
	Auth AuthConfig
	// AccessLog logs one line per request at Info (goreka.access-log).
	AccessLog bool
	// Logger receives the access log; nil uses the Server's logger.
	Logger *slog.Logger
	// Metrics, if set, is served at /metrics and /actuator/prometheus and
	// counts HTTP requests and registry fetches.
	Metrics *metrics.Metrics
}

// Ops is the operational layer of a Server: health and readiness, metrics,
// basic auth and the access log. It is not a handler: the Server is the one
// handler, and its gin engine runs Ops' middleware (see Server.New) in front
// of every route, the 404 and 405 answers included.
type Ops struct {
	log     *slog.Logger
	metrics *metrics.Metrics
	access  bool // access log on

	ready atomic.Bool
	down  atomic.Bool

	authOn    bool
	users     users
	namespace string // AuthConfig.Namespace

	// routes holds the metric children bound to each (method, route
	// pattern) seen so far. It is copied on write under routesMu, so that a
	// request reads it with one atomic load and one map lookup, and the
	// lookup key is two strings gin already holds: no allocation.
	routesMu  sync.Mutex
	routes    atomic.Pointer[map[routeKey]*routeMetrics]
	unmatched *routeMetrics
}

// credential is one user's expected Authorization header (the fast path,
// which costs no allocation on a heartbeat) and hashes of the user and
// password for any other encoding of them.
type credential struct {
	header     string
	user, pass [32]byte
}

func newCredential(user, pass string) credential {
	return credential{
		header: "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass)),
		user:   sha256.Sum256([]byte(user)),
		pass:   sha256.Sum256([]byte(pass)),
	}
}

// EnableOps turns on the operational layer: it configures the
// authentication and instrumentation middleware that New put in front of
// every route, and adds the health, readiness and metrics routes. It
// returns the handle for readiness and shutdown; the Server stays the
// handler to serve. Call it once, before serving.
func (s *Server) EnableOps(cfg OpsConfig) *Ops {
	o := &s.ops
	o.log, o.metrics, o.access = cfg.Logger, cfg.Metrics, cfg.AccessLog
	if o.log == nil {
		o.log = s.log
	}
	if err := o.configureAuth(cfg.Auth); err != nil {
		// Config validation (cmd/goreka/config) refuses these before the
		// server is built; a programmatic caller gets a closed server
		// rather than an open one.
		o.log.Error("bad authentication config: every request is refused", "err", err)
		o.authOn, o.users = true, users{}
	}
	e := s.engine
	for _, p := range []string{HealthPath, LivenessPath, ReadinessPath} {
		h := o.healthHandler(p)
		e.GET(p, h)
		e.HEAD(p, h)
	}
	if m := cfg.Metrics; m != nil {
		mh := gin.WrapH(m.Handler())
		e.GET(MetricsPath, mh)
		e.GET(PrometheusPath, mh)
		// Bind the routes known now, so that their series are exposed from
		// the first scrape; routes added later are bound at their first
		// request.
		o.routes.Store(&map[routeKey]*routeMetrics{})
		o.unmatched = o.bind(unmatchedMethod, unmatchedRoute)
		for _, ri := range e.Routes() {
			o.route(ri.Method, ri.Path)
		}
	}
	return o
}

// SetReady marks the start-up sync with peers as finished (true) or not.
// Readiness answers 503 OUT_OF_SERVICE until then.
func (o *Ops) SetReady(ready bool) { o.ready.Store(ready) }

// SetShuttingDown marks the server as going away: health answers DOWN and
// readiness OUT_OF_SERVICE, so load balancers stop sending traffic while
// in-flight requests finish.
func (o *Ops) SetShuttingDown() { o.down.Store(true) }

func (o *Ops) healthHandler(path string) gin.HandlerFunc {
	return func(c *gin.Context) {
		up, bad := true, "DOWN"
		switch path {
		case HealthPath:
			up = !o.down.Load()
		case ReadinessPath:
			up, bad = o.ready.Load() && !o.down.Load(), "OUT_OF_SERVICE"
		}
		code, body := http.StatusOK, `{"status":"UP"}`
		if !up {
			code, body = http.StatusServiceUnavailable, `{"status":"`+bad+`"}`
		}
		c.Header("Cache-Control", "no-store")
		c.Data(code, "application/json", []byte(body))
	}
}

// isHealth reports whether a (normalised) path is a health endpoint.
func isHealth(p string) bool {
	return p == HealthPath || p == LivenessPath || p == ReadinessPath
}

// configureAuth builds the accepted credentials: the full user
// (spring.security.user), the read-only user and goreka.security.users.
func (o *Ops) configureAuth(a AuthConfig) error {
	if a.Password == "" && len(a.Users) == 0 {
		return nil
	}
	o.authOn = true
	o.namespace = a.Namespace
	if o.namespace == "" {
		o.namespace = "default"
	}
	if a.Password != "" {
		user := a.User
		if user == "" {
			user = "user"
		}
		if err := o.users.add(&principal{name: user, admin: true, peer: true, allApps: true, cred: newCredential(user, a.Password)}); err != nil {
			return err
		}
		if a.ReadOnlyUser != "" && a.ReadOnlyPassword != "" {
			if err := o.users.add(&principal{name: a.ReadOnlyUser, readOnly: true, cred: newCredential(a.ReadOnlyUser, a.ReadOnlyPassword)}); err != nil {
				return err
			}
		}
	}
	for _, u := range a.Users {
		p, err := newPrincipal(u)
		if err != nil {
			return err
		}
		if err := o.users.add(p); err != nil {
			return err
		}
	}
	return nil
}

// decodeBasic splits a Basic Authorization header into user and password,
// accepting any case of the scheme and padded or unpadded base64.
func decodeBasic(h string) (user, pass string, ok bool) {
	scheme, enc, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Basic") {
		return "", "", false
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(enc))
	if err != nil {
		if raw, err = base64.RawStdEncoding.DecodeString(strings.TrimSpace(enc)); err != nil {
			return "", "", false
		}
	}
	return strings.Cut(string(raw), ":")
}

func isRead(method string) bool {
	return method == http.MethodGet || method == http.MethodHead || method == http.MethodOptions
}

// authenticate is the auth middleware. It answers 401 (with a Basic
// challenge and no body) or 403 itself and stops the chain when the request
// may not proceed. Health endpoints are open; reads are open to every user.
// It runs after routing (gin copies global middleware into each route's
// chain), so a per-application user's write is decided from the matched
// route and its :app parameter; its 403 names what is refused. There is no
// CSRF token: Eureka clients send credentials preemptively on every request.
func (o *Ops) authenticate(c *gin.Context) {
	if !o.authOn || isHealth(c.Request.URL.Path) {
		return
	}
	p := o.users.find(c.Request.Header.Get("Authorization"))
	switch {
	case p == nil:
		c.Header("WWW-Authenticate", `Basic realm="goreka", charset="UTF-8"`)
		c.AbortWithStatus(http.StatusUnauthorized)
	case p.namespaces != nil && !slices.Contains(p.namespaces, o.namespace):
		c.Data(http.StatusForbidden, "text/plain; charset=UTF-8", []byte("user "+p.name+" may not use namespace "+o.namespace))
		c.Abort()
	case isRead(c.Request.Method) || p.admin:
	case p.readOnly:
		c.AbortWithStatus(http.StatusForbidden)
	default:
		if msg := p.authorize(c); msg != "" {
			c.Data(http.StatusForbidden, "text/plain; charset=UTF-8", []byte(msg))
			c.Abort()
		}
	}
}

// instrument is the instrumentation middleware: it times the rest of the
// chain and records the request under gin's matched route pattern in the
// metrics (duration, count by code, and a fetch for the registry reads) and
// in the access log. It runs outermost, so it sees the 401, 403 and 500
// answers of the middleware inside it.
func (o *Ops) instrument(c *gin.Context) {
	if o.metrics == nil && !o.access {
		return
	}
	start := time.Now()
	c.Next()
	took := time.Since(start)
	code := c.Writer.Status()
	pattern := c.FullPath()
	if o.metrics != nil {
		rt := o.unmatched
		if pattern != "" {
			rt = o.route(c.Request.Method, pattern)
		}
		rt.observe.Observe(took.Seconds())
		rt.count(code)
		if rt.fetch != nil && (code == http.StatusOK || code == http.StatusNotModified) {
			rt.fetch.Inc()
		}
	}
	if o.access {
		if pattern == "" {
			pattern = unmatchedRoute
		}
		r := c.Request
		o.log.Info("request", "method", r.Method, "path", requestPath(r), "route", pattern, "status", code,
			"bytes", max(c.Writer.Size(), 0), "duration", took, "remote", r.RemoteAddr, "user_agent", r.UserAgent())
	}
}

// requestPath is the path as the client sent it, before ServeHTTP
// normalised r.URL.Path: net/http parsed r.URL from RequestURI, so parsing
// it again gives the original. Only the access log pays for it.
func requestPath(r *http.Request) string {
	if r.RequestURI != "" {
		if u, err := url.ParseRequestURI(r.RequestURI); err == nil {
			return u.Path
		}
	}
	return r.URL.Path
}

// Requests that match no route (404, and 405 for a known path) are
// labelled with these, which keeps the label set bounded whatever paths and
// methods scanners try.
const (
	unmatchedMethod = "other"
	unmatchedRoute  = "unmatched"
)

// routeKey is a request's method and gin's matched route pattern.
type routeKey struct{ method, path string }

// routeMetrics are the metric children of one route, bound once.
type routeMetrics struct {
	observe prometheus.Observer
	count   func(code int)
	fetch   prometheus.Counter // registry reads only
}

// fetchKinds maps the registry read routes to their fetch kind.
var fetchKinds = map[string]string{
	"/eureka/apps":       metrics.FetchFull,
	"/eureka/apps/delta": metrics.FetchDelta,
	"/eureka/apps/:app":  metrics.FetchApp,
	"/eureka/vips/:vip":  metrics.FetchVIP,
	"/eureka/svips/:vip": metrics.FetchSVIP,
}

// route returns the metrics of a matched route, binding them at its first
// request. Methods and patterns come from the routes registered with gin,
// so the map is bounded.
func (o *Ops) route(method, pattern string) *routeMetrics {
	if rt := (*o.routes.Load())[routeKey{method, pattern}]; rt != nil {
		return rt
	}
	o.routesMu.Lock()
	defer o.routesMu.Unlock()
	old := *o.routes.Load()
	if rt := old[routeKey{method, pattern}]; rt != nil {
		return rt
	}
	// The request's method string may share memory with the request line;
	// a copy keeps the map from holding on to it.
	method = strings.Clone(method)
	rt := o.bind(method, pattern)
	next := maps.Clone(old)
	next[routeKey{method, pattern}] = rt
	o.routes.Store(&next)
	return rt
}

func (o *Ops) bind(method, pattern string) *routeMetrics {
	rt := new(routeMetrics)
	rt.observe, rt.count = o.metrics.HTTPRoute(method, pattern)
	if k, ok := fetchKinds[pattern]; ok && method == http.MethodGet {
		rt.fetch = o.metrics.FetchCounter(k)
	}
	return rt
}
