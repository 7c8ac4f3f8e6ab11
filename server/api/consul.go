package api

import (
	"context"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/goreka/goreka/registry"
)

// The read-only Consul catalog (goreka.consul-api.enabled): enough of
// Consul's HTTP API for clients and tools that discover services through
// it (Prometheus' consul_sd, the official Go client). Service names are the
// lower-cased application names; each instance is a node and a service
// (both named by the instance id) with its address, port, metadata as Meta
// and as "key=value" tags, and one check from its Eureka status (UP is
// passing, anything else critical). X-Consul-Index is the registry
// revision; ?index=N&wait=D blocks until the revision passes N.

// ConsulDatacenter is the datacenter the catalog reports.
const ConsulDatacenter = "dc1"

// consulMaxWait caps a blocking query's wait, as Consul does (10 minutes).
const consulMaxWait = 10 * time.Minute

// MountConsul adds the Consul catalog routes (/v1/...) to r.
func (a *API) MountConsul(r gin.IRouter) {
	g := r.Group("/v1")
	g.GET("/catalog/services", a.consulServices)
	g.GET("/catalog/service/:name", a.consulService)
	g.GET("/health/service/:name", a.consulHealth)
	g.GET("/agent/self", a.consulSelf)
}

// consulBlock parses index and wait and, for a blocking query whose index
// the registry has not passed yet, waits until it does or the wait is
// over. It answers a 400 itself and returns false on bad parameters.
func (a *API) consulBlock(c *gin.Context, known ...string) bool {
	q, err := params(c, append(known, "index", "wait", "dc", "stale", "consistent", "cached", "near", "filter", "ns", "partition", "peer")...)
	if err != nil {
		answerError(c, err)
		return false
	}
	if dc := q.Get("dc"); dc != "" && dc != ConsulDatacenter {
		answerError(c, badParam("dc", "unknown datacenter %q (this catalog is %q)", dc, ConsulDatacenter))
		return false
	}
	idx := q.Get("index")
	if idx == "" {
		return true
	}
	n, err := strconv.ParseUint(idx, 10, 63)
	if err != nil {
		answerError(c, badParam("index", "%q is not an index", idx))
		return false
	}
	wait := 5 * time.Minute // Consul's default
	if s := q.Get("wait"); s != "" {
		if !strings.ContainsAny(s, "smh") {
			s += "s" // Consul reads a bare number as seconds
		}
		d, err := time.ParseDuration(s)
		if err != nil || d < 0 {
			answerError(c, badParam("wait", "%q is not a duration", q.Get("wait")))
			return false
		}
		wait = min(d, consulMaxWait)
	}
	// The wait may outlast the server's write timeout (goreka.server.write-timeout).
	_ = http.NewResponseController(c.Writer).SetWriteDeadline(time.Time{})
	a.hist.waitPast(c.Request.Context(), int64(n), wait)
	return true
}

// waitPast returns once a change after rev has been seen, the wait is over
// or ctx is done.
func (h *history) waitPast(ctx context.Context, rev int64, wait time.Duration) {
	timer := time.NewTimer(wait)
	defer timer.Stop()
	h.mu.Lock()
	for h.seen <= rev {
		if h.notify == nil {
			h.notify = make(chan struct{})
		}
		ch := h.notify
		h.mu.Unlock()
		select {
		case <-ch:
		case <-timer.C:
			return
		case <-ctx.Done():
			return
		}
		h.mu.Lock()
	}
	h.mu.Unlock()
}

// consulIndex is the revision as X-Consul-Index (never 0: Consul clients
// treat 0 as "no index").
func (a *API) consulHeaders(c *gin.Context, rev int64) {
	c.Header("X-Consul-Index", strconv.FormatInt(max(rev, 1), 10))
	c.Header("X-Consul-Knownleader", "true")
	c.Header("X-Consul-Lastcontact", "0")
}

func (a *API) consulServices(c *gin.Context) {
	if !a.consulBlock(c) {
		return
	}
	rev, es := a.idx.Select(Filter{}, nil, -1)
	out := map[string][]string{}
	tags := map[string]map[string]struct{}{}
	for _, en := range es {
		name := strings.ToLower(en.key.app)
		if tags[name] == nil {
			tags[name] = map[string]struct{}{}
		}
		for _, t := range consulTags(en.view.Instance) {
			tags[name][t] = struct{}{}
		}
	}
	for name, ts := range tags {
		out[name] = append([]string{}, slices.Sorted(maps.Keys(ts))...) // [] rather than null, as Consul
	}
	a.consulHeaders(c, rev)
	c.JSON(http.StatusOK, out)
}

func consulTags(in *registry.Instance) []string {
	out := make([]string, 0, len(in.Metadata))
	for k, v := range in.Metadata {
		out = append(out, k+"="+v)
	}
	slices.Sort(out)
	return out
}

// consulSelect returns the instances of a service (?tag= filters by tag,
// repeatable, all required).
func (a *API) consulSelect(c *gin.Context) (int64, []*entry) {
	f := Filter{App: strings.ToUpper(c.Param("name"))}
	for _, t := range c.QueryArray("tag") {
		k, v, _ := strings.Cut(t, "=")
		f.Meta = append(f.Meta, KV{k, v})
	}
	return a.idx.Select(f, nil, -1)
}

// CatalogService is one entry of /v1/catalog/service/{name}.
type CatalogService struct {
	ID                       string
	Node                     string
	Address                  string
	Datacenter               string
	TaggedAddresses          map[string]string
	NodeMeta                 map[string]string
	ServiceID                string
	ServiceName              string
	ServiceAddress           string
	ServiceTags              []string
	ServiceMeta              map[string]string
	ServicePort              int
	ServiceEnableTagOverride bool
	CreateIndex, ModifyIndex int64
}

func consulAddress(in *registry.Instance) string {
	if in.IPAddr != "" {
		return in.IPAddr
	}
	return in.HostName
}

func consulPort(in *registry.Instance) int {
	if !in.Port.Enabled && in.SecurePort.Enabled {
		return in.SecurePort.Number
	}
	return in.Port.Number
}

func (a *API) consulService(c *gin.Context) {
	if !a.consulBlock(c, "tag") {
		return
	}
	rev, es := a.consulSelect(c)
	out := make([]CatalogService, 0, len(es))
	for _, en := range es {
		in := en.view.Instance
		md := in.Metadata
		if md == nil {
			md = map[string]string{}
		}
		out = append(out, CatalogService{
			ID: en.key.id, Node: en.key.id, Address: consulAddress(in), Datacenter: ConsulDatacenter,
			TaggedAddresses: map[string]string{"lan": consulAddress(in)},
			NodeMeta:        map[string]string{"eureka-app": in.App, "hostname": in.HostName},
			ServiceID:       en.key.id, ServiceName: strings.ToLower(in.App), ServiceAddress: consulAddress(in),
			ServiceTags: consulTags(in), ServiceMeta: md, ServicePort: consulPort(in),
			CreateIndex: en.view.Revision, ModifyIndex: en.view.Revision,
		})
	}
	a.consulHeaders(c, rev)
	c.JSON(http.StatusOK, out)
}

// ServiceEntry is one entry of /v1/health/service/{name}.
type ServiceEntry struct {
	Node    ConsulNode
	Service ConsulService
	Checks  []ConsulCheck
}

// ConsulNode is a catalog node.
type ConsulNode struct {
	ID              string
	Node            string
	Address         string
	Datacenter      string
	TaggedAddresses map[string]string
	Meta            map[string]string
}

// ConsulService is a service on a node.
type ConsulService struct {
	ID      string
	Service string
	Tags    []string
	Address string
	Meta    map[string]string
	Port    int
}

// ConsulCheck is a health check.
type ConsulCheck struct {
	Node        string
	CheckID     string
	Name        string
	Status      string
	Notes       string
	Output      string
	ServiceID   string
	ServiceName string
	ServiceTags []string
}

func (a *API) consulHealth(c *gin.Context) {
	if !a.consulBlock(c, "tag", "passing") {
		return
	}
	_, passingOnly := c.GetQuery("passing")
	if v := c.Query("passing"); v == "false" || v == "0" {
		passingOnly = false
	}
	rev, es := a.consulSelect(c)
	out := make([]ServiceEntry, 0, len(es))
	for _, en := range es {
		in := en.view.Instance
		status := "critical"
		if in.Status == registry.StatusUp {
			status = "passing"
		}
		if passingOnly && status != "passing" {
			continue
		}
		md := in.Metadata
		if md == nil {
			md = map[string]string{}
		}
		name := strings.ToLower(in.App)
		tags := consulTags(in)
		out = append(out, ServiceEntry{
			Node: ConsulNode{ID: "", Node: en.key.id, Address: consulAddress(in), Datacenter: ConsulDatacenter,
				TaggedAddresses: map[string]string{"lan": consulAddress(in)},
				Meta:            map[string]string{"eureka-app": in.App, "hostname": in.HostName}},
			Service: ConsulService{ID: en.key.id, Service: name, Tags: tags, Address: consulAddress(in), Meta: md, Port: consulPort(in)},
			Checks: []ConsulCheck{{Node: en.key.id, CheckID: "service:" + en.key.id, Name: "Eureka status",
				Status: status, Output: "Eureka status " + string(in.Status), ServiceID: en.key.id,
				ServiceName: name, ServiceTags: tags}},
		})
	}
	a.consulHeaders(c, rev)
	c.JSON(http.StatusOK, out)
}

func (a *API) consulSelf(c *gin.Context) {
	if _, err := params(c); err != nil {
		answerError(c, err)
		return
	}
	a.consulHeaders(c, a.idx.Revision())
	c.JSON(http.StatusOK, gin.H{
		"Config": gin.H{"Datacenter": ConsulDatacenter, "NodeName": "goreka", "NodeID": "", "Server": true,
			"Revision": "goreka", "Version": "1.0.0"},
		"Member": gin.H{"Name": "goreka", "Addr": "127.0.0.1", "Port": 8301, "Tags": gin.H{"role": "consul", "dc": ConsulDatacenter}, "Status": 1},
		"Meta":   gin.H{},
	})
}
