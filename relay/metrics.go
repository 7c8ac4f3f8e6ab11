package relay

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Actions of goreka_relay_forwarded_total.
const (
	actionRegister  = "register"
	actionCancel    = "cancel"
	actionStatus    = "status"
	actionHeartbeat = "heartbeat"
)

var actions = []string{actionRegister, actionCancel, actionStatus, actionHeartbeat}

// counters are the relay's counts, read at scrape time.
type counters struct {
	requests, requestFailures atomic.Int64
	aggregated                atomic.Int64
	reregistered              atomic.Int64
	loops, refused            atomic.Int64
	overflows, resyncs        atomic.Int64
	byAction                  sync.Map // action -> *atomic.Int64
}

func (c *counters) forwarded(action string) *atomic.Int64 {
	if v, ok := c.byAction.Load(action); ok {
		return v.(*atomic.Int64)
	}
	v, _ := c.byAction.LoadOrStore(action, new(atomic.Int64))
	return v.(*atomic.Int64)
}

var (
	descForwarded  = prometheus.NewDesc("goreka_relay_forwarded_total", "Changes and heartbeats of local clients the upstream took, by action (register, cancel, status, heartbeat).", []string{"action"}, nil)
	descRequests   = prometheus.NewDesc("goreka_relay_upstream_requests_total", "Requests the relay sent upstream (writes, heartbeat requests, probes, fetches).", nil, nil)
	descFailures   = prometheus.NewDesc("goreka_relay_upstream_failures_total", "Upstream requests that got no usable answer (refused, timed out, 5xx).", nil, nil)
	descAggregated = prometheus.NewDesc("goreka_relay_heartbeats_aggregated_total", "Client heartbeats the upstream took inside aggregated heartbeat requests.", nil, nil)
	descStaleness  = prometheus.NewDesc("goreka_relay_upstream_staleness_seconds", "Seconds since the upstream copy was last fetched (since start while none succeeded).", nil, nil)
	descLag        = prometheus.NewDesc("goreka_relay_upstream_lag_seconds", "Age of the oldest local change not yet forwarded upstream (0: none waiting).", nil, nil)
	descQueue      = prometheus.NewDesc("goreka_relay_queue_length", "Instances waiting to be forwarded upstream.", nil, nil)
	descRereg      = prometheus.NewDesc("goreka_relay_reregistrations_total", "Instances registered again because the upstream answered their heartbeat 404.", nil, nil)
	descLoops      = prometheus.NewDesc("goreka_relay_loops_total", "Requests refused, or forwarded changes refused upstream, because the relay chain held a relay twice.", nil, nil)
	descResyncs    = prometheus.NewDesc("goreka_relay_resyncs_total", "Resynchronisations of the upstream after the forwarding queue overflowed.", nil, nil)
	descGoreka     = prometheus.NewDesc("goreka_relay_upstream_goreka", "1 when the upstream in use takes aggregated heartbeats (goreka), 0 when it is a stock server or not probed yet.", nil, nil)
)

// Collector returns the collector of the relay's series; a nil relay's
// has none.
func (r *Relay) Collector() prometheus.Collector { return collector{r} }

type collector struct{ r *Relay }

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	if c.r == nil {
		return
	}
	for _, d := range []*prometheus.Desc{descForwarded, descRequests, descFailures, descAggregated, descStaleness, descLag, descQueue, descRereg, descLoops, descResyncs, descGoreka} {
		ch <- d
	}
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	r := c.r
	if r == nil {
		return
	}
	st := r.Status()
	counter := func(d *prometheus.Desc, v int64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	gauge := func(d *prometheus.Desc, v float64) { ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v) }
	for _, a := range actions {
		counter(descForwarded, r.m.forwarded(a).Load(), a)
	}
	counter(descRequests, r.m.requests.Load())
	counter(descFailures, r.m.requestFailures.Load())
	counter(descAggregated, r.m.aggregated.Load())
	counter(descRereg, r.m.reregistered.Load())
	counter(descLoops, r.m.loops.Load())
	counter(descResyncs, r.m.resyncs.Load())
	gauge(descStaleness, st.Staleness.Seconds())
	gauge(descLag, st.Lag.Seconds())
	gauge(descQueue, float64(st.Queued))
	g := 0.0
	if st.Goreka {
		g = 1
	}
	gauge(descGoreka, g)
}

// Status is what the dashboard and the metrics show of a relay.
type Status struct {
	ID       string
	Upstream string // in use, without credentials
	Goreka   bool   // the upstream takes aggregated heartbeats
	ReadOnly bool
	// LastFetch is when the upstream copy was last fetched (zero: never);
	// Staleness the time since (since start while none succeeded).
	LastFetch time.Time
	Staleness time.Duration
	// Stale is true when the last fetch is older than two fetch intervals:
	// the copy is served, but the upstream is gone.
	Stale     bool
	LastError string // of the last fetch, "" when it succeeded
	Queued    int
	Lag       time.Duration
	Instances int // in the upstream copy
}

// Status returns the relay's state now.
func (r *Relay) Status() Status {
	now := r.cfg.Now()
	r.cp.mu.Lock()
	last, lastErr := r.cp.lastSuccess, r.cp.lastErr
	r.cp.mu.Unlock()
	since := last
	if since.IsZero() {
		since = r.created
	}
	st := Status{ID: r.cfg.ID, Upstream: r.Upstream(), Goreka: r.kind.Load() == kindGoreka, ReadOnly: r.cfg.ReadOnly,
		LastFetch: last, Staleness: now.Sub(since), LastError: lastErr}
	st.Stale = st.Staleness > 2*r.cfg.FetchInterval
	st.Queued, st.Lag = r.queueState()
	if apps, _ := r.copy(); apps != nil {
		for i := range apps.Apps {
			st.Instances += len(apps.Apps[i].Instances)
		}
	}
	return st
}

// DashboardRows are the General Info rows of the dashboard: the relay's id
// and upstream, the age of its upstream copy (STALE once older than two
// fetch intervals: the upstream is gone and the last copy is served), and
// its queue. The dashboard's applications are the local ones; the copy's
// are served beside them. A nil relay has none.
func (r *Relay) DashboardRows() [][2]string {
	if r == nil {
		return nil
	}
	st := r.Status()
	kind := "stock Eureka: per-instance heartbeats, paced"
	if st.Goreka {
		kind = "goreka: aggregated heartbeats"
	}
	if st.ReadOnly {
		kind = "read replica: writes proxied"
	}
	copyRow := fmt.Sprintf("fresh: fetched %s ago, %d instances served beside the local ones", st.Staleness.Round(time.Second), st.Instances)
	switch {
	case st.LastFetch.IsZero():
		copyRow = fmt.Sprintf("STALE: never fetched (%s)", st.LastError)
	case st.Stale:
		copyRow = fmt.Sprintf("STALE: last fetched %s ago, serving that copy (%d instances): %s", st.Staleness.Round(time.Second), st.Instances, st.LastError)
	}
	queue := "empty"
	if st.Queued > 0 {
		queue = fmt.Sprintf("%d instances waiting, oldest %s", st.Queued, st.Lag.Round(time.Second))
	}
	return [][2]string{{"relay id", st.ID}, {"relay upstream", st.Upstream + " (" + kind + ")"}, {"relay upstream copy", copyRow}, {"relay queue", queue}}
}
