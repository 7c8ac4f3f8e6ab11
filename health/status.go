package health

import (
	"cmp"
	"slices"
	"time"

	"github.com/goreka/goreka/registry"
)

// State is an instance's place in the lifecycle (registry.Lifecycle).
type State = registry.Lifecycle

// The lifecycle states.
const (
	Up      = registry.LifecycleUp
	Suspect = registry.LifecycleSuspect
	Held    = registry.LifecycleHeld
	Gone    = registry.LifecycleGone
)

// States lists the states in display order.
var States = registry.Lifecycles

// GoneFor is how long a removed instance is shown as gone.
const GoneFor = 15 * time.Minute

// StateOf is the lifecycle state of a registered lease at now.
func StateOf(v *registry.LeaseView, now time.Time) State { return v.Lifecycle(now) }

// Probe is what the monitor knows of one instance's probes and reports.
type Probe struct {
	URL        string
	LastAt     time.Time // zero if never probed
	Last       Result
	Failures   int // consecutive
	Successes  int // consecutive
	Down       bool
	DownReason string // "DOWN by probe: 3 failures, connection refused"
	Reports    int
	LastReport time.Time
	Reporter   string
	Reason     string
}

// Entry is one instance in the lifecycle view.
type Entry struct {
	App, ID       string
	State         State
	Status        registry.Status // as served ("" for gone)
	LastHeartbeat time.Time       // for gone: when it went
	Probe         *Probe          // nil if neither probed nor reported
}

// Lifecycle is the state of every instance at one moment.
type Lifecycle struct {
	At     time.Time
	Counts map[State]int
	// Entries are the instances, not up first (held, suspect, gone), then
	// up ones that were probed or reported, then the rest, each group by
	// application and id; at most the limit given to Lifecycle.
	Entries []Entry
	// Truncated is the number of instances (of any state) left out.
	Truncated int
}

// Lifecycle scans the registry and returns the counts of every state and
// up to limit entries (0: counts only).
func (m *Monitor) Lifecycle(limit int) Lifecycle {
	now := m.cfg.Now()
	lc := Lifecycle{At: now, Counts: make(map[State]int, len(States))}
	var picked []registry.LeaseView
	m.mu.Lock()
	probes := make(map[registry.InstanceKey]*Probe, len(m.recs)+len(m.reports))
	for k, rec := range m.recs {
		probes[k] = &Probe{URL: rec.url, LastAt: rec.lastAt, Last: rec.last, Failures: rec.fails,
			Successes: rec.oks, Down: rec.down, DownReason: rec.downReason}
	}
	for k, r := range m.reports {
		p := probes[k]
		if p == nil {
			p = &Probe{}
			probes[k] = p
		}
		p.Reports, p.LastReport, p.Reporter, p.Reason = r.count, r.at, r.reporter, r.reason
	}
	m.mu.Unlock()

	ups := 0
	m.reg.Leases(func(v *registry.LeaseView) bool {
		st := StateOf(v, now)
		lc.Counts[st]++
		if limit <= 0 {
			return false
		}
		if st == Up {
			if probes[registry.InstanceKey{App: v.Instance.App, ID: v.Instance.ID()}] == nil {
				if ups >= limit {
					return false
				}
				ups++
			}
		}
		picked = append(picked, *v)
		return false
	})
	registered := make(map[registry.InstanceKey]bool, len(picked))
	for i := range picked {
		v := &picked[i]
		k := registry.InstanceKey{App: v.Instance.App, ID: v.Instance.ID()}
		registered[k] = true
		lc.Entries = append(lc.Entries, Entry{App: k.App, ID: k.ID, State: StateOf(v, now), Status: v.Instance.Status,
			LastHeartbeat: v.LastHeartbeat, Probe: probes[k]})
	}
	seen := map[registry.InstanceKey]bool{}
	for _, g := range m.reg.RecentlyCancelled() {
		k := registry.InstanceKey{App: g.App, ID: g.ID}
		if now.Sub(g.At) > GoneFor || seen[k] {
			continue
		}
		seen[k] = true
		if _, ok := m.reg.Get(g.App, g.ID); ok {
			continue // registered again
		}
		lc.Counts[Gone]++
		if limit > 0 {
			lc.Entries = append(lc.Entries, Entry{App: k.App, ID: k.ID, State: Gone, LastHeartbeat: g.At, Probe: probes[k]})
		}
	}
	rank := func(e *Entry) int {
		switch {
		case e.State == Held:
			return 0
		case e.State == Suspect:
			return 1
		case e.State == Gone:
			return 2
		case e.Probe != nil:
			return 3
		}
		return 4
	}
	slices.SortFunc(lc.Entries, func(a, b Entry) int {
		return cmp.Or(cmp.Compare(rank(&a), rank(&b)), cmp.Compare(a.App, b.App), cmp.Compare(a.ID, b.ID))
	})
	if limit > 0 && len(lc.Entries) > limit {
		lc.Entries = lc.Entries[:limit]
	}
	for _, n := range lc.Counts {
		lc.Truncated += n
	}
	lc.Truncated -= len(lc.Entries)
	return lc
}

// Status is the monitor's state for the dashboard and metrics.
type Status struct {
	Enabled bool
	Mode    Mode
	// GuardActive is true while the guard holds: too many probes fail,
	// nothing is acted on. Since is when it tripped.
	GuardActive bool
	GuardSince  time.Time
	// FailingRatio is the failing share of the window's probes at the last
	// judgement; WindowProbes their number.
	FailingRatio float64
	WindowProbes int
	// Alert is the dashboard banner while the guard holds, "" otherwise.
	Alert string
	// Probing is the number of instances with a probe record.
	Probing  int
	DownNow  int // instances served as DOWN by probe now
	Counters Counters
}

// Status returns the current state.
func (m *Monitor) Status() Status {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := Status{Enabled: m.cfg.Enabled, Mode: m.cfg.Mode, GuardActive: m.tripped, GuardSince: m.since,
		FailingRatio: m.ratio, WindowProbes: len(m.window), Probing: len(m.recs), Counters: m.counts}
	for _, rec := range m.recs {
		if rec.down {
			s.DownNow++
		}
	}
	if m.tripped {
		s.Alert = "HEALTH PROBES SUSPENDED: MOST PROBES FAIL, THE FAULT IS LIKELY ON THIS SERVER'S NETWORK. " +
			"GOREKA IS NOT ACTING ON PROBE RESULTS AND BEHAVES LIKE EUREKA (HEARTBEATS ONLY)."
	}
	return s
}
