package api

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/goreka/goreka/registry"
	"github.com/goreka/goreka/server/api/wire"
)

// Prefix is where the API is mounted.
const Prefix = wire.Prefix

// Paging limits of GET /instances.
const (
	DefaultLimit = wire.DefaultLimit
	MaxLimit     = wire.MaxLimit
)

// Config tunes the API. The zero value is usable.
type Config struct {
	// Now is the clock (lifecycles, long-poll waits); nil means time.Now.
	Now func() time.Time
	// History is how many recent changes are kept for watchers that resume
	// (default 10000); older revisions start with a snapshot.
	History int
	// Buffer is each watcher's subscription buffer (default 1024): a
	// watcher further behind than that is cut off with the revision to
	// resume from.
	Buffer int
	// MaxWait caps the long poll's wait (default 5 minutes).
	MaxWait time.Duration
	// KeepAlive is the interval of the watch's comment lines that keep
	// idle connections open through proxies (default 15 s).
	KeepAlive time.Duration
	// XDS, when set, is the xDS server's view of this namespace, which
	// GET /xds/clients and /xds/resolve show; nil: no xDS is served.
	XDS XDS
}

// API serves goreka's read API for tools over a registry. Its index and
// history are fed by OnEvent, which the owner calls with every registry
// event, in order (registry.Options.OnEvent).
type API struct {
	cfg  Config
	reg  *registry.Registry
	idx  *Index
	hist *history
}

// New builds the API over reg, seeding its index from a view of reg. Call
// it before reg's writers start (see NewIndex).
func New(reg *registry.Registry, cfg Config) *API {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.History <= 0 {
		cfg.History = 10000
	}
	if cfg.Buffer <= 0 {
		cfg.Buffer = 1024
	}
	if cfg.MaxWait <= 0 {
		cfg.MaxWait = 5 * time.Minute
	}
	if cfg.KeepAlive <= 0 {
		cfg.KeepAlive = 15 * time.Second
	}
	view := reg.Applications()
	return &API{cfg: cfg, reg: reg, idx: NewIndex(view), hist: newHistory(cfg.History, view.Revision)}
}

// Index returns the API's index.
func (a *API) Index() *Index { return a.idx }

// OnEvent feeds one registry event to the index and the watch history:
// O(1) in the registry's size, no I/O.
func (a *API) OnEvent(e registry.Event) {
	a.idx.Apply(e)
	a.hist.add(e)
}

// Mount adds the API's routes to r.
func (a *API) Mount(r gin.IRouter) {
	g := r.Group(Prefix)
	g.GET("/instances", a.instances)
	g.GET("/apps", a.apps)
	g.GET("/watch", a.watch)
	g.GET("/changes", a.changes)
	g.GET("/prometheus-sd", a.prometheusSD)
	a.mountXDS(g)
}

type paramError struct{ name, msg string }

func (e *paramError) Error() string { return e.name + ": " + e.msg }

func badParam(name, format string, args ...any) error {
	return &paramError{name, fmt.Sprintf(format, args...)}
}

func answerError(c *gin.Context, err error) {
	if pe, ok := err.(*paramError); ok {
		c.JSON(http.StatusBadRequest, wire.ErrorAnswer{Error: pe.Error(), Parameter: pe.name})
		return
	}
	c.JSON(http.StatusInternalServerError, wire.ErrorAnswer{Error: err.Error()})
}

// params parses the query string; a malformed one is refused rather than
// read in part (url.Values would drop the pairs it cannot decode).
func params(c *gin.Context, known ...string) (url.Values, error) {
	q, err := url.ParseQuery(c.Request.URL.RawQuery)
	if err != nil {
		return nil, badParam("query", "malformed query string: %v", err)
	}
	return q, checkParams(q, known...)
}

// checkParams refuses parameters the endpoint does not know (a misspelt
// filter must not silently match everything).
func checkParams(q url.Values, known ...string) error {
	for name := range q {
		if strings.HasPrefix(name, "metadata.") && contains(known, "metadata.") {
			continue
		}
		if !contains(known, name) {
			return badParam(name, "unknown parameter (known: %s)", strings.Join(known, ", "))
		}
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// one returns the single value of a parameter; repeating it is an error.
func one(q url.Values, name string) (string, error) {
	vs := q[name]
	switch len(vs) {
	case 0:
		return "", nil
	case 1:
		return vs[0], nil
	}
	return "", badParam(name, "given %d times, at most once", len(vs))
}

// The parameters of GET /instances; "metadata." stands for every
// metadata.KEY.
var instancesParams = []string{"app", "status", "vip", "svip", "lifecycle", "metadata.", "limit", "continue"}

// query is a parsed GET /instances.
type query struct {
	f     Filter
	lc    Lifecycle
	from  *key
	limit int
}

func parseFilter(q url.Values) (Filter, Lifecycle, error) {
	var f Filter
	var err error
	var s string
	if s, err = one(q, "app"); err != nil {
		return f, "", err
	}
	f.App = strings.ToUpper(s)
	if s, err = one(q, "status"); err != nil {
		return f, "", err
	}
	if s != "" {
		st, ok := registry.ParseStatus(strings.ToUpper(s))
		if !ok {
			return f, "", badParam("status", "%q is not a status (UP, DOWN, STARTING, OUT_OF_SERVICE, UNKNOWN)", s)
		}
		f.Status = st
	}
	if f.VIP, err = one(q, "vip"); err != nil {
		return f, "", err
	}
	if f.SVIP, err = one(q, "svip"); err != nil {
		return f, "", err
	}
	var lc Lifecycle
	if s, err = one(q, "lifecycle"); err != nil {
		return f, "", err
	}
	if s != "" {
		var ok bool
		if lc, ok = parseLifecycle(s); !ok {
			return f, "", badParam("lifecycle", "%q is not a lifecycle (up, suspect, held)", s)
		}
	}
	for name, vs := range q {
		k, ok := strings.CutPrefix(name, "metadata.")
		if !ok {
			continue
		}
		if k == "" {
			return f, "", badParam(name, "metadata filter needs a key: metadata.KEY=VALUE")
		}
		for _, v := range vs {
			f.Meta = append(f.Meta, KV{k, v})
		}
	}
	return f, lc, nil
}

func parseInstancesQuery(q url.Values) (query, error) {
	var out query
	var err error
	if out.f, out.lc, err = parseFilter(q); err != nil {
		return out, err
	}
	out.limit = DefaultLimit
	s, err := one(q, "limit")
	if err != nil {
		return out, err
	}
	if s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > MaxLimit {
			return out, badParam("limit", "%q is not a number from 1 to %d", s, MaxLimit)
		}
		out.limit = n
	}
	if s, err = one(q, "continue"); err != nil {
		return out, err
	}
	if s != "" {
		k, ok := decodeToken(s)
		if !ok {
			return out, badParam("continue", "not a continue token of this API")
		}
		out.from = &k
	}
	return out, nil
}

// A continue token is the last key of the previous page, so a page
// continues after it even when instances came or went in between.
func encodeToken(k key) string {
	return base64.RawURLEncoding.EncodeToString([]byte(k.app + "\n" + k.id))
}

func decodeToken(s string) (key, bool) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return key{}, false
	}
	app, id, ok := strings.Cut(string(b), "\n")
	if !ok || app == "" {
		return key{}, false
	}
	return key{app, id}, true
}

// live returns the registry's current lease for an entry when it is still
// the one the entry holds (same revision), else the entry's own view: an
// answer is at the index's revision, and only the heartbeat times, which
// are not changes, come from the live lease.
func (a *API) live(en *entry) registry.LeaseView {
	if v, ok := a.reg.Get(en.key.app, en.key.id); ok && v.Revision == en.view.Revision {
		return v
	}
	return en.view
}

func (a *API) instances(c *gin.Context) {
	raw, err := params(c, instancesParams...)
	if err != nil {
		answerError(c, err)
		return
	}
	q, err := parseInstancesQuery(raw)
	if err != nil {
		answerError(c, err)
		return
	}
	c.JSON(http.StatusOK, a.page(q))
}

func (a *API) page(q query) wire.InstancesPage {
	now := a.cfg.Now()
	limit := q.limit
	if q.lc != "" {
		limit = -1 // the lifecycle is not indexed: filter the other matches
	}
	rev, es := a.idx.Select(q.f, q.from, limit)
	out := wire.InstancesPage{Revision: rev, Instances: make([]wire.Instance, 0, min(len(es), q.limit))}
	for _, en := range es {
		v := a.live(en)
		lc := LifecycleOf(v, now)
		if q.lc != "" && lc != q.lc {
			continue
		}
		if len(out.Instances) == q.limit {
			last := out.Instances[len(out.Instances)-1]
			out.Continue = encodeToken(key{last.App, last.ID})
			break
		}
		out.Instances = append(out.Instances, a.shape(v, lc))
	}
	return out
}

func (a *API) shape(v registry.LeaseView, lc Lifecycle) wire.Instance {
	return InstanceOf(v, lc)
}

func (a *API) apps(c *gin.Context) {
	if _, err := params(c); err != nil {
		answerError(c, err)
		return
	}
	rev, apps := a.idx.Apps()
	out := wire.AppsAnswer{Revision: rev, Apps: make([]wire.App, 0, len(apps))}
	for _, ap := range apps {
		out.Apps = append(out.Apps, wire.App{Name: ap.Name, Instances: ap.Total, Statuses: ap.Status})
	}
	c.JSON(http.StatusOK, out)
}
