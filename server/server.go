// Package server serves Eureka's REST API (and goreka's operator pages) over
// HTTP with gin. Handlers are thin: they read the request, call the registry
// or the response cache, and write exactly what a Java Eureka server writes.
// The registry documents the cache holds are built by package document
// (Deps.Docs); the handlers add what is HTTP: content negotiation, the
// ETag and gzip headers, status codes.
//
// A Server is one registry's API. Namespaces (docs/DESIGN.md "Namespaces")
// are further Servers: the default one routes /ns/{name}/... to them
// (SetNamespaces, namespaces.go), taking the prefix off, so that each
// serves exactly what the default one serves.
package server

import (
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/goreka/goreka/cache"
	"github.com/goreka/goreka/compat"
	"github.com/goreka/goreka/document"
	"github.com/goreka/goreka/registry"
	"github.com/goreka/goreka/server/api"
	"github.com/goreka/goreka/server/api/wire"
)

func init() { gin.SetMode(gin.ReleaseMode) }

// Config holds the HTTP-facing settings.
type Config struct {
	// DisableDelta answers 403 to delta fetches (eureka.server.disable-delta).
	DisableDelta bool
	// MaxBodyBytes caps a registration body (default 1 MiB).
	MaxBodyBytes int64
	// MaxBatchBodyBytes caps a replication batch body (default 32 MiB).
	MaxBatchBodyBytes int64
	// RateLimit is eureka.server.rate-limiter-*; the zero value admits
	// every fetch (see RateLimitConfig).
	RateLimit RateLimitConfig
	// FetchLimit is goreka.fetch-limit.*: per-client fetch limits; the zero
	// value is off (see FetchLimitConfig).
	FetchLimit FetchLimitConfig
	// PProf serves net/http/pprof's profiles at /debug/pprof/
	// (goreka.debug.pprof-enabled; pprof.go), admins only.
	PProf bool
}

// Gate decides whether registry reads are served yet (Eureka's
// shouldAllowAccess, answering 403 while false).
type Gate interface{ AllowAccess() bool }

// Expiry tells whether lease expiration is enabled, so that single-instance
// reads hide expired leases as Eureka does.
type Expiry interface{ LeaseExpirationEnabled() bool }

// Deps are the collaborators of a Server. Registry is required.
type Deps struct {
	Registry *registry.Registry
	// Docs builds the registry documents and holds the remote regions
	// merged into reads; nil: document.New of Registry alone (default
	// codecs, no region).
	Docs *document.Builder
	// Cache configures the response cache New builds, which loads every
	// registry read through Docs (Server.Cache returns it); nil: Eureka's
	// defaults (cache.DefaultConfig).
	Cache  *cache.Config
	Gate   Gate
	Expiry Expiry
	// Status supplies GET /eureka/status.
	Status StatusSource
	Logger *slog.Logger
	Now    func() time.Time
	// Limiters are the rate limiter and per-client fetch limits of another
	// Server (its Limiters), so that the Servers of one process draw from
	// one allowance; Config.RateLimit and Config.FetchLimit are then
	// unused. nil builds them from Config.
	Limiters *Limiters
}

// Limiters are a Server's rate limiter (eureka.server.rate-limiter-*) and
// per-client fetch limits (goreka.fetch-limit.*), shareable through
// Deps.Limiters.
type Limiters struct {
	rate  *rateLimiter
	fetch *fetchLimiter // nil when off
}

// Limiters returns the server's limiters, to share with other Servers.
func (s *Server) Limiters() *Limiters { return &Limiters{s.limiter, s.fetchLimit} }

// Server is the Eureka REST API.
type Server struct {
	cfg Config
	reg *registry.Registry
	// epochHeader is EpochHeader's value, the registry's epoch.
	epochHeader []string
	cache       *cache.Cache
	gate        Gate
	expiry      Expiry
	status      StatusSource
	log         *slog.Logger
	now         func() time.Time
	engine      *gin.Engine
	ops         Ops // off until EnableOps
	// limiter is eureka.server.rate-limiter-* (RateLimitConfig).
	limiter *rateLimiter
	// fetchLimit is goreka.fetch-limit.* (FetchLimitConfig); nil when off.
	fetchLimit *fetchLimiter
	// docs builds the registry documents the cache holds; regions are its
	// remote regions (regions.go).
	docs    *document.Builder
	regions document.Regions
	// namespaces serves /ns/{name}/... (SetNamespaces); nil: none.
	namespaces Namespaces
}

// New builds a Server and its routes.
func New(cfg Config, d Deps) *Server {
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = 1 << 20
	}
	if cfg.MaxBatchBodyBytes <= 0 {
		cfg.MaxBatchBodyBytes = 32 << 20
	}
	s := &Server{cfg: cfg, reg: d.Registry, gate: d.Gate, expiry: d.Expiry, status: d.Status, log: d.Logger, now: d.Now, docs: d.Docs}
	if d.Registry != nil {
		s.epochHeader = []string{d.Registry.Epoch()}
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.docs == nil {
		s.docs = document.New(document.Config{Registry: s.reg})
	}
	s.regions = s.docs.Regions()
	cc := cache.DefaultConfig()
	if d.Cache != nil {
		cc = *d.Cache
	}
	s.cache = cache.NewStreaming(cc, s.docs.Load)
	s.engine = gin.New()
	s.engine.HandleMethodNotAllowed = true
	s.engine.RedirectTrailingSlash = false
	s.engine.RedirectFixedPath = false
	// The edge (edge.go) is one middleware, registered here, before any
	// route, because gin copies the global middleware into each route when
	// it is added. It reads each request's entry of the route table once
	// and runs, outermost first, instrumentation (it sees every answer),
	// recovery (a panic below it becomes a 500 it can count),
	// authentication (it refuses before any handler runs), the per-client
	// fetch limit and the rate limiter; instrumentation and authentication
	// do nothing until EnableOps configures them. gin runs the same chain
	// for its 404 and 405 answers, whose bodies are written by the handlers
	// below (gin's own texts) so that the access log counts their bytes.
	if d.Limiters != nil {
		s.limiter, s.fetchLimit = d.Limiters.rate, d.Limiters.fetch
	} else {
		s.limiter = newRateLimiter(cfg.RateLimit, s.now)
		s.fetchLimit = newFetchLimiter(cfg.FetchLimit, s.now)
	}
	s.ops.resetRoutes()
	s.engine.Use(s.edge)
	s.engine.NoRoute(func(c *gin.Context) { c.Data(http.StatusNotFound, gin.MIMEPlain, body404) })
	s.engine.NoMethod(func(c *gin.Context) { c.Data(http.StatusMethodNotAllowed, gin.MIMEPlain, body405) })
	s.routes()
	if cfg.PProf {
		s.mountPprof()
	}
	return s
}

// gin's default bodies of its 404 and 405 answers.
var (
	body404 = []byte("404 page not found")
	body405 = []byte("405 method not allowed")
)

// Engine exposes the gin engine so that other parts of the server package
// (dashboard, health, metrics) can add routes.
func (s *Server) Engine() *gin.Engine { return s.engine }

// Cache returns the response cache the server reads through.
func (s *Server) Cache() *cache.Cache { return s.cache }

// ServeHTTP normalises the path the way Eureka's deployments accept it, then
// routes: /eureka/v2/X and /v2/X are /eureka/X, and a trailing slash is
// optional (clients fetch "apps/" and peers post "peerreplication/batch/").
// This is the only place the path is normalised: the middleware and the
// handlers behind gin see the normalised path. The Server is the one
// handler to serve, with or without EnableOps.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if p := normalizePath(r.URL.Path); p != r.URL.Path {
		r.URL.Path = p
		r.URL.RawPath = ""
	}
	if s.namespaces != nil && strings.HasPrefix(r.URL.Path, NamespacePrefix) {
		s.serveNamespace(w, r)
		return
	}
	s.engine.ServeHTTP(w, r)
}

func normalizePath(p string) string {
	if len(p) > 1 && strings.HasSuffix(p, "/") {
		p = strings.TrimRight(p, "/")
		if p == "" {
			p = "/"
		}
	}
	switch {
	case strings.HasPrefix(p, "/eureka/v2/") || p == "/eureka/v2":
		p = "/eureka" + p[len("/eureka/v2"):]
	case strings.HasPrefix(p, "/v2/"):
		p = "/eureka" + p[len("/v2"):]
	}
	return p
}

func (s *Server) routes() {
	e := s.engine
	g := e.Group("/eureka")
	g.GET("/apps", s.getApps)
	g.GET("/apps/delta", s.getDelta)
	g.GET("/apps/:app", s.getApp)
	g.POST("/apps/:app", s.register)
	g.GET("/apps/:app/:id", s.getInstance)
	g.PUT("/apps/:app/:id", s.renew)
	g.DELETE("/apps/:app/:id", s.cancel)
	g.PUT("/apps/:app/:id/status", s.statusUpdate)
	g.DELETE("/apps/:app/:id/status", s.deleteStatusOverride)
	g.PUT("/apps/:app/:id/metadata", s.updateMetadata)
	g.GET("/instances/:id", s.getInstanceByID)
	g.GET("/vips/:vip", s.getVIP)
	g.GET("/svips/:vip", s.getSVIP)
	g.PUT("/asg/:asg/status", s.asgStatus)
	g.POST("/peerreplication/batch", s.batch)
	g.POST("/"+compat.RenewalsPath, s.renewals)
	g.GET("/status", s.getStatus)
	g.GET("/serverinfo/statusoverrides", s.statusOverrides)
	e.GET("/serverinfo/statusoverrides", s.statusOverrides)
}

// replicationHeader is x-netflix-discovery-replication in canonical form, so
// the lookup on the heartbeat path does not canonicalise (and allocate).
const replicationHeader = "X-Netflix-Discovery-Replication"

func isReplication(c *gin.Context) bool {
	v := c.Request.Header[replicationHeader]
	return len(v) > 0 && v[0] == "true"
}

// queryValue returns the first value of key in a raw query string without
// building url.Values: heartbeats arrive by the thousand per second and read
// two parameters. Values are unescaped only when they need it.
func queryValue(raw, key string) (string, bool) {
	for raw != "" {
		var part string
		part, raw, _ = strings.Cut(raw, "&")
		k, v, _ := strings.Cut(part, "=")
		if strings.ContainsAny(k, "%+") {
			if uk, err := url.QueryUnescape(k); err == nil {
				k = uk
			}
		}
		if k != key {
			continue
		}
		if strings.ContainsAny(v, "%+") {
			if uv, err := url.QueryUnescape(v); err == nil {
				return uv, true
			}
		}
		return v, true
	}
	return "", false
}

// MountAPI serves goreka's read API for tools (package api) on the
// server's engine, behind the same middleware as every route: the read-only
// user may use it, as it only has GET routes. Its reads are behind the
// start-up gate too (apiGate).
func (s *Server) MountAPI(a *api.API) { a.Mount(s.engine.Group("", s.apiGate)) }

// MountConsulAPI serves the read-only Consul catalog of package api at /v1
// (goreka.consul-api.enabled), behind the same middleware and the start-up
// gate.
func (s *Server) MountConsulAPI(a *api.API) { a.MountConsul(s.engine.Group("", s.apiGate)) }

// apiGate refuses the tools' reads with 403 while Eureka's reads are
// refused (Gate: the start-up sync has not finished, or a start-up that
// expected no clients is still waiting): a tool must not take a half-synced
// registry for the truth any more than a Eureka client may. The body says
// why, in the API's error shape; the tool retries, as a Consul or
// Prometheus discovery does after any failed refresh.
func (s *Server) apiGate(c *gin.Context) {
	if s.gate != nil && !s.gate.AllowAccess() {
		c.AbortWithStatusJSON(http.StatusForbidden, wire.ErrorAnswer{Error: errNotOpen})
	}
}

const errNotOpen = "registry not open for reads yet: the start-up sync with peers has not finished (Eureka answers 403 too)"
