package server

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"log/slog"
	"net/http"
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
// basic auth and the access log. Its ServeHTTP wraps the Server.
type Ops struct {
	s   *Server
	cfg OpsConfig
	log *slog.Logger

	ready atomic.Bool
	down  atomic.Bool

	full, readOnly credential

	routesOnce sync.Once
	routes     []*route
	unmatched  *route
}

// credential is one user's expected Authorization header (the fast path,
// which costs no allocation on a heartbeat) and hashes of the user and
// password for any other encoding of them.
type credential struct {
	set        bool
	header     string
	user, pass [32]byte
}

func newCredential(user, pass string) credential {
	return credential{
		set:    true,
		header: "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass)),
		user:   sha256.Sum256([]byte(user)),
		pass:   sha256.Sum256([]byte(pass)),
	}
}

// EnableOps adds the health, readiness and metrics routes to the server's
// engine and returns the handler to serve instead of the Server. Call it
// once, before serving.
func (s *Server) EnableOps(cfg OpsConfig) *Ops {
	o := &Ops{s: s, cfg: cfg, log: cfg.Logger}
	if o.log == nil {
		o.log = s.log
	}
	if a := cfg.Auth; a.Password != "" {
		user := a.User
		if user == "" {
			user = "user"
		}
		o.full = newCredential(user, a.Password)
		if a.ReadOnlyUser != "" && a.ReadOnlyPassword != "" {
			o.readOnly = newCredential(a.ReadOnlyUser, a.ReadOnlyPassword)
		}
	}
	e := s.engine
	for _, p := range []string{HealthPath, LivenessPath, ReadinessPath} {
		h := o.healthHandler(p)
		e.GET(p, h)
		e.HEAD(p, h)
	}
	if cfg.Metrics != nil {
		mh := gin.WrapH(cfg.Metrics.Handler())
		e.GET(MetricsPath, mh)
		e.GET(PrometheusPath, mh)
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

// access is the outcome of checking a request's credentials.
type access uint8

const (
	accessDenied access = iota
	accessReadOnly
	accessFull
)

// check decides what the Authorization header allows. Comparisons are
// constant-time over hashes, so neither timing nor length tells a caller
// how close a guess was.
func (o *Ops) check(h string) access {
	if h == "" {
		return accessDenied
	}
	if subtle.ConstantTimeCompare([]byte(h), []byte(o.full.header)) == 1 {
		return accessFull
	}
	if o.readOnly.set && subtle.ConstantTimeCompare([]byte(h), []byte(o.readOnly.header)) == 1 {
		return accessReadOnly
	}
	scheme, enc, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Basic") {
		return accessDenied
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(enc))
	if err != nil {
		if raw, err = base64.RawStdEncoding.DecodeString(strings.TrimSpace(enc)); err != nil {
			return accessDenied
		}
	}
	user, pass, ok := strings.Cut(string(raw), ":")
	if !ok {
		return accessDenied
	}
	u, p := sha256.Sum256([]byte(user)), sha256.Sum256([]byte(pass))
	if subtle.ConstantTimeCompare(u[:], o.full.user[:])&subtle.ConstantTimeCompare(p[:], o.full.pass[:]) == 1 {
		return accessFull
	}
	if o.readOnly.set && subtle.ConstantTimeCompare(u[:], o.readOnly.user[:])&subtle.ConstantTimeCompare(p[:], o.readOnly.pass[:]) == 1 {
		return accessReadOnly
	}
	return accessDenied
}

func isRead(method string) bool {
	return method == http.MethodGet || method == http.MethodHead || method == http.MethodOptions
}

// authorize answers 401 (with a Basic challenge and no body) or 403 itself
// and returns false when the request may not proceed. There is no CSRF
// token: Eureka clients send credentials preemptively on every request.
func (o *Ops) authorize(w http.ResponseWriter, r *http.Request, path string) bool {
	if !o.full.set || isHealth(path) {
		return true
	}
	switch o.check(r.Header.Get("Authorization")) {
	case accessFull:
		return true
	case accessReadOnly:
		if isRead(r.Method) {
			return true
		}
		w.WriteHeader(http.StatusForbidden)
		return false
	}
	w.Header().Set("WWW-Authenticate", `Basic realm="goreka", charset="UTF-8"`)
	w.WriteHeader(http.StatusUnauthorized)
	return false
}

// ServeHTTP authenticates, serves through the Server, and records the
// request in the metrics and the access log.
func (o *Ops) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rawPath := r.URL.Path
	rw := writerPool.Get().(*statusWriter)
	rw.ResponseWriter, rw.code, rw.bytes = w, 0, 0
	if o.authorize(rw, r, normalizePath(rawPath)) {
		o.s.ServeHTTP(rw, r) // normalises r.URL.Path in place
	}
	code := rw.code
	if code == 0 {
		code = http.StatusOK
	}
	written := rw.bytes
	rw.ResponseWriter = nil
	writerPool.Put(rw)

	if o.cfg.Metrics == nil && !o.cfg.AccessLog {
		return
	}
	rt := o.match(r.Method, r.URL.Path)
	took := time.Since(start)
	if o.cfg.Metrics != nil {
		rt.observe.Observe(took.Seconds())
		rt.count(code)
		if rt.fetch != nil && (code == http.StatusOK || code == http.StatusNotModified) {
			rt.fetch.Inc()
		}
	}
	if o.cfg.AccessLog {
		o.log.Info("request", "method", r.Method, "path", rawPath, "route", rt.pattern, "status", code,
			"bytes", written, "duration", took, "remote", r.RemoteAddr, "user_agent", r.UserAgent())
	}
}

// statusWriter records the status and size of a response.
type statusWriter struct {
	http.ResponseWriter
	code  int
	bytes int64
}

var writerPool = sync.Pool{New: func() any { return new(statusWriter) }}

func (w *statusWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(b)
	w.bytes += int64(n)
	return n, err
}

// Flush lets streaming handlers flush through the wrapper.
func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap gives http.ResponseController the underlying writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// route is one of the engine's route patterns with its pre-bound metrics.
type route struct {
	method, pattern string
	segs            []string
	static          int
	observe         prometheus.Observer
	count           func(code int)
	fetch           prometheus.Counter
}

// fetchKinds maps the registry read routes to their fetch kind.
var fetchKinds = map[string]string{
	"/eureka/apps":       metrics.FetchFull,
	"/eureka/apps/delta": metrics.FetchDelta,
	"/eureka/apps/:app":  metrics.FetchApp,
	"/eureka/vips/:vip":  metrics.FetchVIP,
	"/eureka/svips/:vip": metrics.FetchSVIP,
}

// buildRoutes binds metrics to every route of the engine once, at the first
// request, when all routes (dashboard included) are in place. Requests
// matching none are labelled "unmatched", which keeps the label set bounded
// whatever paths scanners try.
func (o *Ops) buildRoutes() {
	bind := func(rt *route) *route {
		if m := o.cfg.Metrics; m != nil {
			rt.observe, rt.count = m.HTTPRoute(rt.method, rt.pattern)
			if k, ok := fetchKinds[rt.pattern]; ok && rt.method == http.MethodGet {
				rt.fetch = m.FetchCounter(k)
			}
		}
		return rt
	}
	for _, ri := range o.s.engine.Routes() {
		rt := &route{method: ri.Method, pattern: ri.Path, segs: strings.Split(ri.Path, "/")[1:]}
		for _, s := range rt.segs {
			if s == "" || (s[0] != ':' && s[0] != '*') {
				rt.static++
			}
		}
		o.routes = append(o.routes, bind(rt))
	}
	// gin prefers static segments over parameters: so do we.
	slices.SortStableFunc(o.routes, func(a, b *route) int { return b.static - a.static })
	o.unmatched = bind(&route{method: "other", pattern: "unmatched"})
}

// match finds the route pattern of a request without allocating.
func (o *Ops) match(method, path string) *route {
	o.routesOnce.Do(o.buildRoutes)
	for _, rt := range o.routes {
		if rt.method == method && matchSegs(rt.segs, path) {
			return rt
		}
	}
	return o.unmatched
}

func matchSegs(segs []string, p string) bool {
	for _, seg := range segs {
		if p == "" || p[0] != '/' {
			return false
		}
		p = p[1:]
		if seg != "" && seg[0] == '*' {
			return true
		}
		j := strings.IndexByte(p, '/')
		if j < 0 {
			j = len(p)
		}
		part := p[:j]
		p = p[j:]
		if seg != "" && seg[0] == ':' {
			if part == "" {
				return false
			}
			continue
		}
		if part != seg {
			return false
		}
	}
	return p == ""
}
