// Package metrics holds goreka's Prometheus metric set: registry changes
// counted from registry events, cache state read at scrape time, HTTP
// requests, and the Go runtime. Collectors of state owned elsewhere
// (eviction's self-preservation, replication's peers) are defined in those
// packages and added with MustRegister: server imports this package, and
// server must not depend on eviction or replication.
//
// The instance gauge eureka_server_instances{application,status} is Spring
// Cloud Netflix's (SC §B7). It is read at scrape time from the counts the
// registry keeps with every change (Sources.Instances,
// registry.AppStatusCounts), never by scanning the instances, and a
// heartbeat only increments a pre-bound counter: renewals are the hot path.
package metrics

import (
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"

	"github.com/goreka/goreka/cache"
	"github.com/goreka/goreka/namespace"
	"github.com/goreka/goreka/registry"
)

// Sources are read at scrape time. A nil func leaves its metrics out.
type Sources struct {
	Cache func() cache.Stats
	// Instances are the registry's instances per application and status
	// (registry.Registry.AppStatusCounts): eureka_server_instances.
	Instances func() []registry.AppStatusCount
}

// Fetch kinds, the kind label of goreka_registry_fetches_total.
const (
	FetchFull  = "full"
	FetchDelta = "delta"
	FetchApp   = "app"
	FetchVIP   = "vip"
	FetchSVIP  = "svip"
)

// Metrics is goreka's metric set on its own prometheus.Registry.
type Metrics struct {
	reg *prometheus.Registry // the process's registry, served by Handler
	// namespace is the namespace label of this set's series.
	namespace string
	// r registers this set's collectors into reg with its namespace label.
	r prometheus.Registerer

	registrations [2]prometheus.Counter // by replication false, true
	renews        [2]prometheus.Counter
	cancels       [2]prometheus.Counter
	statusChanges [2]prometheus.Counter
	evictions     prometheus.Counter
	fetches       *prometheus.CounterVec

	httpRequests *prometheus.CounterVec
	httpDuration *prometheus.HistogramVec
}

// DefaultNamespace is the namespace label of the default namespace's
// series (/eureka/).
const DefaultNamespace = namespace.Default

// New builds the metric set of the process and of its default namespace;
// src may be the zero value. Every series of the set and of the collectors
// added with MustRegister carries namespace="default"; the Go runtime's
// and the process's series carry none.
func New(src Sources) *Metrics {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return newSet(reg, DefaultNamespace, src)
}

// Namespace builds the metric set of another namespace in the same
// registry: the same metric names, namespace=name on every series of it
// and of the collectors added to it with MustRegister.
func (m *Metrics) Namespace(name string, src Sources) *Metrics { return newSet(m.reg, name, src) }

func newSet(reg *prometheus.Registry, namespace string, src Sources) *Metrics {
	m := &Metrics{reg: reg, namespace: namespace, r: prometheus.WrapRegistererWith(prometheus.Labels{"namespace": namespace}, reg)}
	repl := []string{"replication"}
	registrations := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "goreka_registrations_total", Help: "Registrations accepted, by whether they came from a peer.",
	}, repl)
	renews := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "goreka_renews_total", Help: "Heartbeats accepted, by whether they came from a peer.",
	}, repl)
	cancels := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "goreka_cancels_total", Help: "Cancellations accepted, by whether they came from a peer.",
	}, repl)
	statusChanges := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "goreka_status_updates_total", Help: "Status override updates and deletions accepted, by whether they came from a peer.",
	}, repl)
	m.evictions = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "goreka_evictions_total", Help: "Leases removed by the eviction job.",
	})
	m.fetches = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "goreka_registry_fetches_total", Help: "Registry reads answered 200 or 304, by kind: full, delta, app, vip, svip.",
	}, []string{"kind"})
	for i, v := range []string{"false", "true"} {
		m.registrations[i] = registrations.WithLabelValues(v)
		m.renews[i] = renews.WithLabelValues(v)
		m.cancels[i] = cancels.WithLabelValues(v)
		m.statusChanges[i] = statusChanges.WithLabelValues(v)
	}
	for _, k := range []string{FetchFull, FetchDelta, FetchApp, FetchVIP, FetchSVIP} {
		m.fetches.WithLabelValues(k)
	}
	m.httpRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "goreka_http_requests_total", Help: "HTTP requests by method, route pattern and status code.",
	}, []string{"method", "route", "code"})
	m.httpDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "goreka_http_request_duration_seconds",
		Help:    "HTTP request latency by method and route pattern.",
		Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
	}, []string{"method", "route"})
	m.r.MustRegister(registrations, renews, cancels, statusChanges, m.evictions, m.fetches,
		m.httpRequests, m.httpDuration, &scrapeCollector{src: src})
	return m
}

// Registry is the registry the metrics live in, for tests and extra collectors.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// MustRegister adds collectors of state kept by other packages (such as
// eviction.Evictor.Collector and replication.Replicator.Collector) to the
// set served by Handler. It panics on a duplicate or invalid collector, like
// prometheus.Registry.MustRegister: that is a wiring bug.
func (m *Metrics) MustRegister(cs ...prometheus.Collector) { m.r.MustRegister(cs...) }

// Handler serves the Prometheus text (or OpenMetrics) exposition: the
// whole registry for the default namespace's set (every namespace, the
// runtime's and the process's series: /metrics), only the series of its
// namespace for another one's (/ns/{name}/metrics), so that a user scoped
// to a namespace sees nothing of the others.
func (m *Metrics) Handler() http.Handler {
	var g prometheus.Gatherer = m.reg
	if m.namespace != DefaultNamespace {
		g = namespaceGatherer{m.reg, m.namespace}
	}
	return promhttp.HandlerFor(g, promhttp.HandlerOpts{Registry: m.reg})
}

// namespaceGatherer gathers only the series labelled namespace=ns.
type namespaceGatherer struct {
	g  prometheus.Gatherer
	ns string
}

func (f namespaceGatherer) Gather() ([]*dto.MetricFamily, error) {
	mfs, err := f.g.Gather()
	out := mfs[:0]
	for _, mf := range mfs {
		kept := mf.Metric[:0]
		for _, s := range mf.Metric {
			if hasLabel(s, "namespace", f.ns) {
				kept = append(kept, s)
			}
		}
		if len(kept) > 0 {
			mf.Metric = kept
			out = append(out, mf)
		}
	}
	return out, err
}

func hasLabel(s *dto.Metric, name, value string) bool {
	for _, l := range s.GetLabel() {
		if l.GetName() == name {
			return l.GetValue() == value
		}
	}
	return false
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// OnEvent counts one registry change (a registry listener). It is O(1);
// the instance counts are the registry's (Sources.Instances).
func (m *Metrics) OnEvent(e registry.Event) {
	r := b2i(e.FromPeer)
	switch e.Kind {
	case registry.EventRegister:
		m.registrations[r].Inc()
	case registry.EventCancel:
		m.cancels[r].Inc()
	case registry.EventEvict:
		m.evictions.Inc()
	case registry.EventStatusUpdate, registry.EventDeleteStatusOverride:
		m.statusChanges[r].Inc()
	}
}

// OnRenew counts one heartbeat: a pre-bound counter, no allocation (a
// registry OnRenew hook; renewals are the hot path).
func (m *Metrics) OnRenew(rn registry.Renewal) { m.renews[b2i(rn.FromPeer)].Inc() }

// Fetch counts one registry read of the given kind (FetchFull, ...).
func (m *Metrics) Fetch(kind string) { m.fetches.WithLabelValues(kind).Inc() }

// FetchCounter returns the pre-bound counter of a fetch kind.
func (m *Metrics) FetchCounter(kind string) prometheus.Counter {
	return m.fetches.WithLabelValues(kind)
}

// HTTPRoute returns the pre-bound duration observer of a route pattern and
// a func counting its responses by code; the HTTP middleware binds them once
// per route so that a request costs no label lookup beyond the code.
func (m *Metrics) HTTPRoute(method, route string) (prometheus.Observer, func(code int)) {
	obs := m.httpDuration.WithLabelValues(method, route)
	var (
		mu    sync.RWMutex
		codes = map[int]prometheus.Counter{}
	)
	count := func(code int) {
		mu.RLock()
		c := codes[code]
		mu.RUnlock()
		if c == nil {
			mu.Lock()
			if c = codes[code]; c == nil {
				c = m.httpRequests.WithLabelValues(method, route, codeText(code))
				codes[code] = c
			}
			mu.Unlock()
		}
		c.Inc()
	}
	return obs, count
}

func codeText(code int) string {
	const digits = "0123456789"
	if code < 100 || code > 999 {
		return "other"
	}
	return string([]byte{digits[code/100], digits[code/10%10], digits[code%10]})
}

// seconds converts for gauges.
func seconds(d time.Duration) float64 { return d.Seconds() }
