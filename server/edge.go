package server

import (
	"maps"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/goreka/goreka/compat"
	"github.com/goreka/goreka/server/metrics"
)

// routeKey is a request's method and gin's matched route pattern
// (c.FullPath()), the key of the route table.
type routeKey struct{ method, path string }

// route is what the edge knows of one route: every middleware decision
// that depends on which route a request is for is read from here, so that
// the metrics, the access log, the limiters and the authorization agree
// on it. Routes without an entry (goreka's tool API, the dashboard, health,
// metrics) are plain reads or admin writes: counted under their pattern,
// never limited, no fetch.
type route struct {
	// fetchKind is the registry fetch kind counted for a 200 or 304
	// (metrics.FetchFull, ...); "" counts none.
	fetchKind string
	// rate is the target of Netflix's RateLimitingFilter (RateLimitConfig),
	// targetOther for a route it does not filter. The filter is mapped to
	// Eureka's /apps paths and matches ^.*/apps(/[^/]*)?$ on them, so it
	// sees GET apps, apps/delta and apps/{app}. That regexp is greedy: GET
	// apps/apps (an application literally named "apps") is a full fetch
	// to it, which guard applies (fetchTargets) to both limiters.
	rate fetchTarget
	// perClient is the target of goreka.fetch-limit (FetchLimitConfig):
	// targetFull or targetDelta, targetOther for a route it does not limit.
	perClient fetchTarget
	// write is what a per-application user's write does (authz.go).
	write writeAction
	// reads marks a POST that only reads (xDS's REST discovery, whose
	// request is its body): every user may, as with a GET.
	reads bool
	// admin marks a route only an admin user may use, reads included
	// (the profiles of /debug/pprof).
	admin bool
	// ownNamespace marks a route whose request names the namespace it
	// reads (xDS's node): a user restricted to other namespaces passes
	// the edge, and the handler checks the one the request names.
	ownNamespace bool
}

// writeAction is a write route's action, for the per-application
// authorization of goreka.security.users.
type writeAction uint8

const (
	writeOther    writeAction = iota // any other write: admins only
	writeRegister                    // the rest are writes of the route's :app
	writeRenew
	writeCancel
	writeStatus
	writeMetadata
	writeBatch    // a replication batch: the peer role, then per item
	writeRenewals // a relay's aggregated heartbeats: per item, as renews
	writeNoRoute  // no route matched: gin answers 404 or 405, nothing is written
)

// verb names an app write in a refusal ("write" for an action without a
// verb of its own, so that a new action cannot panic here).
func (a writeAction) verb() string {
	switch a {
	case writeRegister:
		return "register"
	case writeRenew, writeRenewals:
		return "renew"
	case writeCancel:
		return "cancel"
	case writeStatus:
		return "override the status of"
	case writeMetadata:
		return "update the metadata of"
	}
	return "write"
}

// Eureka's routes the table names.
const (
	routeApps     = "/eureka/apps"
	routeDelta    = "/eureka/apps/delta"
	routeApp      = "/eureka/apps/:app"
	routeInstance = "/eureka/apps/:app/:id"
	routeStatus   = "/eureka/apps/:app/:id/status"
	routeMetadata = "/eureka/apps/:app/:id/metadata"
	routeVIP      = "/eureka/vips/:vip"
	routeSVIP     = "/eureka/svips/:vip"
	routeBatch    = "/eureka/peerreplication/batch"
	routeRenewals = "/eureka/" + compat.RenewalsPath
)

// The REST-JSON xDS routes (Envoy's api_type REST), mounted by MountXDS.
var routesXDS = []string{"/v3/discovery:clusters", "/v3/discovery:endpoints", "/v3/discovery:listeners", "/v3/discovery:routes"}

// routeTable is the one route table of the edge.
var routeTable = map[routeKey]route{
	{http.MethodGet, routeApps}:  {fetchKind: metrics.FetchFull, rate: targetFull, perClient: targetFull},
	{http.MethodGet, routeDelta}: {fetchKind: metrics.FetchDelta, rate: targetDelta, perClient: targetDelta},
	{http.MethodGet, routeApp}:   {fetchKind: metrics.FetchApp, rate: targetApp},
	{http.MethodGet, routeVIP}:   {fetchKind: metrics.FetchVIP},
	{http.MethodGet, routeSVIP}:  {fetchKind: metrics.FetchSVIP},

	{http.MethodPost, routeApp}:        {write: writeRegister},
	{http.MethodPut, routeInstance}:    {write: writeRenew},
	{http.MethodDelete, routeInstance}: {write: writeCancel},
	{http.MethodPut, routeStatus}:      {write: writeStatus},
	{http.MethodDelete, routeStatus}:   {write: writeStatus},
	{http.MethodPut, routeMetadata}:    {write: writeMetadata},
	{http.MethodPost, routeBatch}:      {write: writeBatch},
	{http.MethodPost, routeRenewals}:   {write: writeRenewals},

	{http.MethodPost, routesXDS[0]}: {reads: true, ownNamespace: true},
	{http.MethodPost, routesXDS[1]}: {reads: true, ownNamespace: true},
	{http.MethodPost, routesXDS[2]}: {reads: true, ownNamespace: true},
	{http.MethodPost, routesXDS[3]}: {reads: true, ownNamespace: true},

	{http.MethodGet, routePprof}:      {admin: true},
	{http.MethodGet, routePprofName}:  {admin: true},
	{http.MethodPost, routePprofName}: {admin: true},
}

// MountXDS serves h (package xds's REST-JSON handler) at the xDS routes,
// behind the edge like every route; a nil h (xDS disabled) mounts nothing.
func (s *Server) MountXDS(h http.Handler) {
	if h == nil {
		return
	}
	for _, p := range routesXDS {
		s.engine.POST(strings.Replace(p, ":", "\\:", 1), gin.WrapH(h)) // gin reads an unescaped ':' as a parameter
	}
}

// Requests that match no route (404, and 405 for a known path) are
// labelled with these, which keeps the label set bounded whatever paths and
// methods scanners try.
const (
	unmatchedMethod = "other"
	unmatchedRoute  = "unmatched"
)

// boundRoute is a route table entry bound to one (method, pattern): its
// label and, with metrics, its metric children.
type boundRoute struct {
	route
	label   string              // the route label of the metrics and the access log
	observe prometheus.Observer // nil without metrics
	count   func(code int)
	fetch   prometheus.Counter // nil without metrics or fetchKind
}

// resetRoutes empties the per-route map and binds the unmatched route,
// with the current metrics.
func (o *Ops) resetRoutes() {
	o.routes.Store(&map[routeKey]*boundRoute{})
	o.unmatched = o.bind(unmatchedMethod, unmatchedRoute)
	o.unmatched.write = writeNoRoute
}

// route returns the bound route of a request's method and matched pattern
// ("" for none: the unmatched route), binding it at its first request.
// Methods and patterns come from the routes registered with gin, so the
// map is bounded. One atomic load and one map lookup whose key is two
// strings gin already holds: no allocation.
func (o *Ops) route(method, pattern string) *boundRoute {
	if pattern == "" {
		return o.unmatched
	}
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

func (o *Ops) bind(method, pattern string) *boundRoute {
	rt := &boundRoute{route: routeTable[routeKey{method, pattern}], label: pattern}
	if o.metrics != nil {
		rt.observe, rt.count = o.metrics.HTTPRoute(method, pattern)
		if rt.fetchKind != "" {
			rt.fetch = o.metrics.FetchCounter(rt.fetchKind)
		}
	}
	return rt
}

// edge is the one middleware in front of every route, gin's 404 and 405
// answers included. It looks the request's route up once and runs the
// edge's steps, outermost first: instrumentation (record), recovery,
// authentication, the per-client fetch limit and the rate limiter. The
// per-client fetch limit comes before the global rate limiter so that a
// client refused for its own loop draws no global token.
func (s *Server) edge(c *gin.Context) {
	o := &s.ops
	rt := o.route(c.Request.Method, c.FullPath())
	if o.metrics == nil && !o.access {
		s.guard(c, rt)
		return
	}
	start := time.Now()
	s.guard(c, rt)
	o.record(c.Request, rt, c.Writer.Status(), max(c.Writer.Size(), 0), time.Since(start))
}

// guard runs the steps inside the instrumentation, then the rest of the
// chain: a panic becomes a logged 500 with no body, which record counts.
func (s *Server) guard(c *gin.Context, rt *boundRoute) {
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			s.log.Error("panic serving request", "method", c.Request.Method, "path", c.Request.URL.Path, "err", v)
			c.AbortWithStatus(http.StatusInternalServerError)
		}
	}()
	perClient, rate := fetchTargets(c, rt)
	if !s.ops.authorize(c, rt) || !s.fetchLimit.admit(c, perClient) || !s.limiter.admit(c, rate) {
		c.Abort()
		return
	}
	c.Next()
}

// fetchTargets are the per-client fetch limit's and the rate limiter's
// targets of a request: its route's, but for GET apps/apps, which
// RateLimitingFilter's greedy ^.*/apps(/[^/]*)?$ reads as ".../apps" and
// so as a full fetch (and which the per-client limit, goreka's, has always
// counted as one too). It allocates nothing: c.Param scans gin's params.
func fetchTargets(c *gin.Context, rt *boundRoute) (perClient, rate fetchTarget) {
	if rt.rate == targetApp && c.Param("app") == "apps" {
		return targetFull, targetFull
	}
	return rt.perClient, rt.rate
}

// record is the request recording of every answer, gin's and the
// namespace router's alike: the duration and the count by code under the
// route's labels, the fetch counter for a served registry read, and the
// access-log line.
func (o *Ops) record(r *http.Request, rt *boundRoute, code, size int, took time.Duration) {
	if rt.observe != nil {
		rt.observe.Observe(took.Seconds())
		rt.count(code)
		if rt.fetch != nil && (code == http.StatusOK || code == http.StatusNotModified) {
			rt.fetch.Inc()
		}
	}
	if o.access {
		o.log.Info("request", "method", r.Method, "path", requestPath(r), "route", rt.label, "status", code,
			"bytes", size, "duration", took, "remote", r.RemoteAddr, "user_agent", r.UserAgent())
	}
}
