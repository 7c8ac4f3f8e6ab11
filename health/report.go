package health

import (
	"context"
	"strings"

	"github.com/goreka/goreka/registry"
	"github.com/goreka/goreka/tokenbucket"
)

// ReportOutcome is what became of a caller's report.
type ReportOutcome string

// The outcomes of Report.
const (
	// ReportProbing: the instance is being probed now; the result is acted
	// on as for any probe, and a failure counts as the evidence
	// failures-to-evict or failures-to-down would otherwise need.
	ReportProbing ReportOutcome = "probing"
	// ReportCoalesced: counted; the instance was probed for a report less
	// than ReportInterval ago, or a probe is in flight.
	ReportCoalesced ReportOutcome = "coalesced"
	// ReportQueued: counted; the probe budget is spent, the probe runs at
	// the next round (within a second).
	ReportQueued ReportOutcome = "queued"
	// ReportCounted: probes are disabled; the report is counted and shown.
	ReportCounted ReportOutcome = "counted"
	// ReportNotProbeable: counted; the instance has no health URL.
	ReportNotProbeable ReportOutcome = "not-probeable"
	// ReportLimited: refused, the reporter sent too many reports.
	ReportLimited ReportOutcome = "rate-limited"
)

// maxReporters bounds the per-reporter buckets kept; beyond it the idle
// ones are forgotten.
const maxReporters = 10000

// Report is a caller's word that it failed to reach app/id, from reporter
// (its address) for reason. It never changes the registry by itself: with
// probes enabled it has the instance probed at once (rate-limited per
// instance and per reporter) and the probe's result is acted on as in
// Check, the report standing for the failures the probe would otherwise
// have to repeat. It returns registry.ErrNotFound for an unknown instance.
func (m *Monitor) Report(app, id, reporter, reason string) (ReportOutcome, error) {
	app = strings.ToUpper(app)
	v, ok := m.reg.Get(app, id)
	if !ok {
		return "", registry.ErrNotFound
	}
	now := m.cfg.Now()
	k := registry.InstanceKey{App: app, ID: id}
	m.mu.Lock()
	b := m.reporters[reporter]
	if b == nil {
		if len(m.reporters) >= maxReporters {
			clear(m.reporters)
		}
		b = new(tokenbucket.Bucket)
		m.reporters[reporter] = b
	}
	rpm := m.cfg.ReportsPerMinute
	if !b.Take(now, tokenbucket.PerMinute(rpm, min(rpm, 10))) {
		m.counts.ReportsLimited++
		m.mu.Unlock()
		return ReportLimited, nil
	}
	m.counts.Reports++
	r := m.reports[k]
	if r == nil {
		r = new(report)
		m.reports[k] = r
	}
	r.count++
	r.at, r.reporter, r.reason = now, reporter, reason
	if !m.cfg.Enabled {
		m.mu.Unlock()
		return ReportCounted, nil
	}
	url := URL(v.Instance)
	if url == "" {
		m.mu.Unlock()
		return ReportNotProbeable, nil
	}
	rec := m.recs[k]
	if rec == nil {
		rec = &record{key: k, seen: now}
		m.recs[k] = rec
	}
	rec.url = url
	if rec.inflight || (!rec.reportProbed.IsZero() && now.Sub(rec.reportProbed) < m.cfg.ReportInterval) {
		m.counts.ReportsCoalesced++
		m.mu.Unlock()
		return ReportCoalesced, nil
	}
	rec.reported, rec.reportProbed, rec.why = true, now, whyReported
	if !m.budget.Take(now, m.budgetLimit()) {
		rec.next = now
		m.mu.Unlock()
		select {
		case m.wake <- struct{}{}:
		default:
		}
		return ReportQueued, nil
	}
	rec.inflight = true
	m.mu.Unlock()

	t := task{rec: rec, key: k, url: url}
	m.async.Go(func() {
		res := m.probe(context.Background(), t.url)
		m.settle([]outcome{{t, res}})
	})
	return ReportProbing, nil
}

// Wait blocks until the probes started by reports are done.
func (m *Monitor) Wait() { m.async.Wait() }
