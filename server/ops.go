package server

import (
	"crypto/sha256"
	"crypto/tls"
	"encoding/base64"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/gin-gonic/gin"

	"github.com/goreka/goreka/namespace"
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
// handler, and its gin engine runs the edge middleware (edge.go), which
// uses Ops' steps, in front of every route, the 404 and 405 answers
// included.
type Ops struct {
	log     *slog.Logger
	metrics *metrics.Metrics
	access  bool // access log on

	ready atomic.Bool
	down  atomic.Bool

	authOn    bool
	users     users
	namespace string // AuthConfig.Namespace

	// routes holds each (method, route pattern) seen so far bound to its
	// route table entry and metric children (edge.go). It is copied on
	// write under routesMu, so that a request reads it with one atomic load
	// and one map lookup, and the lookup key is two strings gin already
	// holds: no allocation.
	routesMu  sync.Mutex
	routes    atomic.Pointer[map[routeKey]*boundRoute]
	unmatched *boundRoute
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
		// Bind the routes known now with their metrics, so that their
		// series are exposed from the first scrape; routes added later are
		// bound at their first request.
		o.resetRoutes()
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
		o.namespace = namespace.Default
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

// authenticated is the authentication of every request, gin's routes and
// the namespace router's alike: it returns the principal that r's
// credentials (basic auth, else a verified client certificate) name, nil when authentication is off or r is a health probe
// (open to all). When they name no user it answers 401 on w, with a Basic
// challenge and no body, and returns false.
func (o *Ops) authenticated(w http.ResponseWriter, r *http.Request) (*principal, bool) {
	if !o.authOn || isHealth(r.URL.Path) {
		return nil, true
	}
	if p := o.users.find(r.Header.Get("Authorization")); p != nil {
		return p, true
	}
	if p := o.users.byCertificate(r.TLS); p != nil {
		return p, true
	}
	w.Header().Set("WWW-Authenticate", `Basic realm="goreka", charset="UTF-8"`)
	w.WriteHeader(http.StatusUnauthorized)
	return nil, false
}

// Identify authenticates credentials presented on another port that
// serves these users (the xDS port): an Authorization header value and the
// connection's TLS state, as the edge does (a password, else a verified
// client certificate). With authentication off every caller passes, as no
// user. namespaces are the user's (nil: every namespace).
func (o *Ops) Identify(authorization string, st *tls.ConnectionState) (user string, namespaces []string, ok bool) {
	if !o.authOn {
		return "", nil, true
	}
	p := o.users.find(authorization)
	if p == nil {
		p = o.users.byCertificate(st)
	}
	if p == nil {
		return "", nil, false
	}
	return p.name, p.namespaces, true
}

// authorize is the edge's auth step. It answers 401 (authenticated) or 403
// itself and returns false when the request may not proceed. Reads are
// open to every user. It runs after routing, so a per-application user's
// write is decided from the route table's write action and the :app
// parameter; its 403 names what is refused. There is no CSRF token: Eureka
// clients send credentials preemptively on every request.
func (o *Ops) authorize(c *gin.Context, rt *boundRoute) bool {
	p, ok := o.authenticated(c.Writer, c.Request)
	if !ok {
		c.Writer.WriteHeaderNow()
		return false
	}
	switch {
	case p == nil:
	case p.namespaces != nil && !rt.ownNamespace && !slices.Contains(p.namespaces, o.namespace):
		c.Data(http.StatusForbidden, "text/plain; charset=UTF-8", []byte("user "+p.name+" may not use namespace "+o.namespace))
		return false
	case rt.admin && !p.admin:
		c.Data(http.StatusForbidden, "text/plain; charset=UTF-8", []byte("user "+p.name+" is not an admin"))
		return false
	case isRead(c.Request.Method) || rt.reads || p.admin:
	case p.readOnly:
		c.AbortWithStatus(http.StatusForbidden)
		return false
	default:
		if msg := p.mayDo(c, rt); msg != "" {
			c.Data(http.StatusForbidden, "text/plain; charset=UTF-8", []byte(msg))
			return false
		}
	}
	return true
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
