package health

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/goreka/goreka/registry"
	"github.com/goreka/goreka/tokenbucket"
)

// Preservation is what the monitor asks eviction: whether expired leases
// are evicted now. While they are not, self-preservation holds them, and
// probe evidence may evict them anyway. *eviction.Evictor satisfies it.
type Preservation interface{ LeaseExpirationEnabled() bool }

const (
	// scanEvery is how often the registry is scanned for candidates. A scan
	// of 100k leases costs about a millisecond of one core.
	scanEvery = 10 * time.Second
	// controlSample is how many heartbeating instances each scan adds as
	// controls in on-suspicion mode (see the guard in the package doc).
	controlSample = 8
	// guardMinProbes is the fewest probes in a window on which the guard
	// judges.
	guardMinProbes = 5
)

// why says why an instance is probed, in priority order.
type why uint8

const (
	whyReported why = iota
	whyHeld
	whySuspect
	whyPeriodic
	whyControl
)

// record is the probe state of one instance.
type record struct {
	key      registry.InstanceKey
	url      string
	why      why
	seen     time.Time // last scan that found it a candidate
	next     time.Time // next probe due
	inflight bool

	fails, oks  int // consecutive
	lastAt      time.Time
	last        Result
	down        bool // this monitor set DownByProbe
	downReason  string
	aliveLogged bool // held, answering: logged once

	reported     bool // a report waits for its probe's verdict
	reportProbed time.Time
}

// report is what the reports said about one instance.
type report struct {
	count            int
	at               time.Time
	reporter, reason string
}

type task struct {
	rec *record // nil for a control probe
	key registry.InstanceKey
	url string
}

type outcome struct {
	task
	res Result
}

type sample struct {
	at     time.Time
	failed bool
}

// budgetLimit is the probe budget's shape: goreka.health.probe.budget
// probes a second, a burst of the larger of the budget and the concurrency.
func (m *Monitor) budgetLimit() tokenbucket.Limit {
	return tokenbucket.PerSecond(m.cfg.Budget, max(m.cfg.Budget, float64(m.cfg.Concurrency)))
}

// Monitor probes instances and acts on the evidence (see the package doc).
// All methods are safe for concurrent use; Check runs one at a time.
type Monitor struct {
	reg    *registry.Registry
	sp     Preservation
	prober Prober
	cfg    Config
	log    *slog.Logger
	sem    chan struct{}
	wake   chan struct{}
	async  sync.WaitGroup // report probes in flight

	checkMu sync.Mutex // serialises Check

	mu        sync.Mutex
	recs      map[registry.InstanceKey]*record
	reports   map[registry.InstanceKey]*report
	lastScan  time.Time
	budget    tokenbucket.Bucket
	reporters map[string]*tokenbucket.Bucket
	window    []sample
	tripped   bool
	since     time.Time // guard tripped since
	ratio     float64   // failing share of the window at the last judgement
	counts    Counters
}

// Counters are the monitor's totals since start.
type Counters struct {
	Probes           [5]int64 // by Outcome
	EvictedByProbe   int64
	DownByProbe      int64
	UpByProbe        int64
	Reports          int64 // every accepted report
	ReportsLimited   int64 // refused: the reporter's rate
	ReportsCoalesced int64 // accepted, no new probe: the instance's rate
	GuardTrips       int64
}

// New returns a Monitor over reg. sp may be nil (lease expiration always
// enabled: nothing is ever held); prober nil is
// NewHTTPProber(cfg.AllowedNetworks).
func New(reg *registry.Registry, sp Preservation, prober Prober, cfg Config) *Monitor {
	cfg = cfg.withDefaults()
	if prober == nil {
		prober = NewHTTPProber(cfg.AllowedNetworks)
	}
	return &Monitor{
		reg: reg, sp: sp, prober: prober, cfg: cfg,
		log:       cfg.Logger.With("component", "health"),
		sem:       make(chan struct{}, cfg.Concurrency),
		wake:      make(chan struct{}, 1),
		recs:      make(map[registry.InstanceKey]*record),
		reports:   make(map[registry.InstanceKey]*report),
		reporters: make(map[string]*tokenbucket.Bucket),
	}
}

// Config returns the effective configuration.
func (m *Monitor) Config() Config { return m.cfg }

func (m *Monitor) expirationEnabled() bool { return m.sp == nil || m.sp.LeaseExpirationEnabled() }

// Run checks every second (and at once after a report that could not be
// probed within the budget) until ctx is done. It does nothing when probes
// are disabled. It returns nil.
func (m *Monitor) Run(ctx context.Context) error {
	if !m.cfg.Enabled {
		<-ctx.Done()
		return nil
	}
	m.log.Info("health probes enabled", "mode", m.cfg.Mode, "interval", m.cfg.Interval, "timeout", m.cfg.Timeout,
		"concurrency", m.cfg.Concurrency, "budget_per_second", m.cfg.Budget)
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			m.async.Wait()
			return nil
		case <-t.C:
		case <-m.wake:
		}
		m.Check(ctx)
	}
}

// Check is one round at Now(): it scans the registry for candidates when
// the last scan is older than ten seconds, probes the instances that are
// due (within the budget, Concurrency at a time), waits for them, and acts
// on the results. It does nothing when probes are disabled.
func (m *Monitor) Check(ctx context.Context) {
	if !m.cfg.Enabled {
		return
	}
	m.checkMu.Lock()
	defer m.checkMu.Unlock()
	now := m.cfg.Now()
	var controls []registry.LeaseView
	m.mu.Lock()
	scan := m.lastScan.IsZero() || now.Sub(m.lastScan) >= scanEvery
	m.mu.Unlock()
	if scan {
		controls = m.discover(now)
	}
	tasks := m.due(now, controls)
	if len(tasks) == 0 {
		return
	}
	m.settle(m.probeAll(ctx, tasks))
}

// candidate says whether v is probed, and why.
func (m *Monitor) candidate(v *registry.LeaseView, now time.Time) (why, bool) {
	// The same states the dashboard, the API and the lifecycle metric show,
	// so that "suspect" means one thing everywhere.
	switch v.Lifecycle(now) {
	case registry.LifecycleHeld:
		return whyHeld, true
	case registry.LifecycleSuspect:
		return whySuspect, true
	}
	switch {
	case m.cfg.Mode == Periodic && home(v, now):
		return whyPeriodic, true
	case v.DownBy&registry.DownByProbe != 0:
		return whyPeriodic, true
	}
	return 0, false
}

// home reports whether the instance heartbeats to this server: its last
// heartbeat came from itself, not from a peer. Only the home server
// probes a heartbeating instance in periodic mode and decides DOWN.
func home(v *registry.LeaseView, now time.Time) bool {
	c := v.LastClientRenewal
	return !c.IsZero() && !c.Before(v.LastHeartbeat) && now.Sub(c) <= 2*v.RenewalInterval
}

// discover scans the registry: it creates records for new candidates,
// drops those that are no longer candidates, and returns a random sample of
// heartbeating instances as controls (on-suspicion mode).
func (m *Monitor) discover(now time.Time) []registry.LeaseView {
	var controls []registry.LeaseView
	others := 0
	// A source of its own: the registry scan below runs without m.mu.
	m.mu.Lock()
	seed := m.cfg.Rand.Uint64()
	m.mu.Unlock()
	rnd := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	views := m.reg.Leases(func(v *registry.LeaseView) bool {
		// Static registrations never heartbeat by design: their silence is
		// no evidence, and nothing evicts them.
		if v.Static || URL(v.Instance) == "" {
			return false
		}
		if _, ok := m.candidate(v, now); ok {
			return true
		}
		if m.cfg.Mode == OnSuspicion {
			others++
			if len(controls) < controlSample {
				controls = append(controls, *v)
			} else if j := rnd.IntN(others); j < controlSample {
				controls[j] = *v
			}
		}
		return false
	})

	m.mu.Lock()
	defer m.mu.Unlock()
	m.lastScan = now
	suspects := 0
	for i := range views {
		v := &views[i]
		w, _ := m.candidate(v, now)
		k := registry.InstanceKey{App: v.Instance.App, ID: v.Instance.ID()}
		rec := m.recs[k]
		if rec == nil {
			rec = &record{key: k, next: now.Add(m.jitter(rnd))}
			if w == whyPeriodic {
				// Spread a fleet's first probes over one interval.
				rec.next = now.Add(time.Duration(rnd.Int64N(int64(m.cfg.Interval))))
			}
			m.recs[k] = rec
		}
		rec.url, rec.seen = URL(v.Instance), now
		if !rec.reported {
			rec.why = w
		}
		if w == whyHeld || w == whySuspect {
			suspects++
		}
	}
	for k, rec := range m.recs {
		if rec.seen.Equal(now) || rec.inflight || rec.reported || rec.down {
			continue
		}
		delete(m.recs, k)
	}
	if suspects == 0 {
		return nil
	}
	return controls[:min(len(controls), suspects)]
}

func (m *Monitor) jitter(rnd interface{ Int64N(int64) int64 }) time.Duration {
	if m.cfg.Jitter <= 0 {
		return 0
	}
	return time.Duration(rnd.Int64N(int64(m.cfg.Jitter)))
}

// due picks the records due at now, most urgent first, and the controls,
// as far as the budget allows, and marks them in flight.
func (m *Monitor) due(now time.Time, controls []registry.LeaseView) []task {
	m.mu.Lock()
	defer m.mu.Unlock()
	var ready []*record
	for _, rec := range m.recs {
		if !rec.inflight && !rec.next.After(now) && rec.url != "" {
			ready = append(ready, rec)
		}
	}
	slices.SortFunc(ready, func(a, b *record) int {
		return cmp.Or(cmp.Compare(a.why, b.why), a.next.Compare(b.next))
	})
	var tasks []task
	budget := m.budgetLimit()
	for _, rec := range ready {
		if !m.budget.Take(now, budget) {
			break
		}
		rec.inflight = true
		tasks = append(tasks, task{rec: rec, key: rec.key, url: rec.url})
	}
	for i := range controls {
		if !m.budget.Take(now, budget) {
			break
		}
		v := &controls[i]
		tasks = append(tasks, task{key: registry.InstanceKey{App: v.Instance.App, ID: v.Instance.ID()}, url: URL(v.Instance)})
	}
	return tasks
}

// probeAll runs the probes, Concurrency at a time, and returns when all are
// done.
func (m *Monitor) probeAll(ctx context.Context, tasks []task) []outcome {
	out := make([]outcome, len(tasks))
	var wg sync.WaitGroup
	for i, t := range tasks {
		out[i].task = t
		wg.Go(func() { out[i].res = m.probe(ctx, t.url) })
	}
	wg.Wait()
	return out
}

// probe runs one probe within the timeout, holding a concurrency slot.
func (m *Monitor) probe(ctx context.Context, url string) Result {
	select {
	case m.sem <- struct{}{}:
	case <-ctx.Done():
		return Result{Unreachable, "shutting down"}
	}
	defer func() { <-m.sem }()
	pctx, cancel := context.WithTimeout(ctx, m.cfg.Timeout)
	defer cancel()
	r := m.prober.Probe(pctx, url)
	if r.Outcome == Unreachable && r.Detail == "timeout" {
		r.Detail = timeoutDetail(m.cfg.Timeout)
	}
	return r
}

// settle records the results, lets the guard judge the window, then acts
// on each result (unless the guard holds).
func (m *Monitor) settle(results []outcome) {
	now := m.cfg.Now()
	expEnabled := m.expirationEnabled()
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, o := range results {
		m.counts.Probes[o.res.Outcome]++
		if o.res.Counts() {
			m.window = append(m.window, sample{now, o.res.Failed()})
		}
	}
	m.judgeLocked(now)
	for _, o := range results {
		if o.rec == nil {
			continue
		}
		m.actLocked(o.rec, o.res, now, expEnabled)
	}
}

// judgeLocked is the guard: when more than MaxFailingPercent of the
// window's probes failed, the fault is likely goreka's own network, so the
// monitor stops acting, lifts its DOWN verdicts and alerts; it acts again
// once no more than half that share fails.
func (m *Monitor) judgeLocked(now time.Time) {
	cut := now.Add(-m.cfg.Window)
	n := 0
	for n < len(m.window) && m.window[n].at.Before(cut) {
		n++
	}
	m.window = slices.Delete(m.window, 0, n)
	failed := 0
	for _, s := range m.window {
		if s.failed {
			failed++
		}
	}
	total := len(m.window)
	m.ratio = 0
	if total > 0 {
		m.ratio = float64(failed) / float64(total)
	}
	pct := 100 * m.ratio
	switch {
	case !m.tripped && total >= guardMinProbes && pct > m.cfg.MaxFailingPercent:
		m.tripped, m.since = true, now
		m.counts.GuardTrips++
		m.log.Error("probe guard: most probes fail, the fault is likely on goreka's side; not acting on probes (Eureka's behaviour)",
			"failing_percent", int(pct), "probes", total, "window", m.cfg.Window, "max_failing_percent", m.cfg.MaxFailingPercent)
		for _, rec := range m.recs {
			rec.fails, rec.reported = 0, false
			if rec.down {
				m.liftLocked(rec, "probe guard")
			}
		}
	case m.tripped && (total < guardMinProbes || pct <= m.cfg.MaxFailingPercent/2):
		m.log.Warn("probe guard cleared: acting on probes again", "failing_percent", int(pct), "probes", total,
			"tripped_for", now.Sub(m.since))
		m.tripped, m.since = false, time.Time{}
	}
}

// actLocked updates rec with res and acts on it: evicts a held lease that
// keeps failing, serves a failing home instance (periodic) or a reported
// one as DOWN, lifts DOWN after enough successes.
func (m *Monitor) actLocked(rec *record, res Result, now time.Time, expEnabled bool) {
	rec.inflight = false
	rec.lastAt, rec.last = now, res
	rec.next = now.Add(m.cfg.Interval + m.jitterLocked())
	if !res.Counts() {
		// No evidence (an address outside the allowed networks): judged as
		// if never probed, a report's probe included, and no verdict stands
		// on earlier evidence.
		rec.reported, rec.fails, rec.oks = false, 0, 0
		if rec.down {
			m.liftLocked(rec, "health URL outside the allowed networks")
		}
		return
	}
	if res.Failed() {
		rec.fails++
		rec.oks = 0
	} else {
		rec.oks++
		rec.fails = 0
	}
	reported := rec.reported
	rec.reported = false
	v, ok := m.reg.Get(rec.key.App, rec.key.ID)
	if !ok {
		delete(m.recs, rec.key)
		return
	}
	if m.tripped {
		rec.fails = 0
		return
	}
	expired := v.IsExpired(now, 0)
	held := expired && !expEnabled
	k := rec.key
	if !res.Failed() {
		if held && !rec.aliveLogged {
			rec.aliveLogged = true
			m.log.Info("held lease kept: heartbeats lost, instance alive (answers its health check)",
				"app", k.App, "instance", k.ID, "last_heartbeat", v.LastHeartbeat, "probe", res.Detail)
		}
		if rec.down && rec.oks >= m.cfg.SuccessesToUp {
			m.liftLocked(rec, fmt.Sprintf("%d successes", rec.oks))
		}
		return
	}
	rec.aliveLogged = false
	switch {
	case held && (rec.fails >= m.cfg.FailuresToEvict || reported):
		err := m.reg.EvictExpired(k.App, k.ID, now, 0)
		if err != nil {
			if !errors.Is(err, registry.ErrNotExpired) && !errors.Is(err, registry.ErrNotFound) {
				m.log.Warn("eviction on probe evidence failed", "app", k.App, "instance", k.ID, "err", err)
			}
			return
		}
		m.counts.EvictedByProbe++
		delete(m.recs, k)
		m.log.Info("evicted held lease on probe evidence: dead, not partitioned", "app", k.App, "instance", k.ID,
			"failures", rec.fails, "probe", res.Detail, "reported", reported, "last_heartbeat", v.LastHeartbeat)
	case !expired && !rec.down && (reported || (m.cfg.Mode == Periodic && home(&v, now))) &&
		(reported || rec.fails >= m.cfg.FailuresToDown):
		reason := fmt.Sprintf("DOWN by probe: %d failures, %s", rec.fails, res.Detail)
		if rec.fails == 1 {
			reason = fmt.Sprintf("DOWN by probe: 1 failure, %s", res.Detail)
		}
		if reported {
			reason += " (reported)"
		}
		if err := m.reg.MarkDown(k.App, k.ID, registry.DownByProbe, true); err != nil {
			return
		}
		rec.down, rec.downReason = true, reason
		m.counts.DownByProbe++
		m.log.Warn("instance served as DOWN by probe", "app", k.App, "instance", k.ID, "reason", reason)
	}
}

// liftLocked lifts rec's DOWN verdict.
func (m *Monitor) liftLocked(rec *record, why string) {
	if err := m.reg.MarkDown(rec.key.App, rec.key.ID, registry.DownByProbe, false); err != nil && !errors.Is(err, registry.ErrNotFound) {
		m.log.Warn("lifting DOWN by probe failed", "app", rec.key.App, "instance", rec.key.ID, "err", err)
		return
	}
	rec.down, rec.downReason = false, ""
	m.counts.UpByProbe++
	m.log.Info("DOWN by probe lifted", "app", rec.key.App, "instance", rec.key.ID, "after", why)
}

// jitterLocked draws a jitter; the source is shared with reports, so it is
// drawn under m.mu.
func (m *Monitor) jitterLocked() time.Duration {
	if m.cfg.Jitter <= 0 {
		return 0
	}
	return time.Duration(m.cfg.Rand.Int64N(int64(m.cfg.Jitter)))
}
