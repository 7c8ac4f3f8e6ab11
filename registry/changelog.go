package registry

import (
	"log/slog"
	"time"
)

// changeLinesPerSecond bounds the per-change log lines of a ChangeLog
// ("registered", "cancelled", status changes): one line per change is the
// audit trail Eureka's logs give (AbstractInstanceRegistry logs each
// registration and cancel), and at a steady cluster's rate (a few changes
// a second) every change is logged. In a restart storm (10,000
// registrations a second) the lines cost more than the registrations' own
// work (8 % of the server's CPU at 10k, perf), so beyond this many in one
// second they are counted, and the count is written as one line with the
// first change after that second (metrics count every change regardless).
const changeLinesPerSecond = 100

// ChangeLog writes one log line per registry change (Event), at most
// changeLinesPerSecond a second. It has no lock: call Log from one
// registry's listener (Options.OnEvent), which is never called
// concurrently; give each registry its own ChangeLog.
type ChangeLog struct {
	log        *slog.Logger
	now        func() time.Time
	window     time.Time // start of the current one-second window
	lines      int       // lines logged in the window
	suppressed int       // lines not logged since the last summary
	since      time.Time // first suppressed line's window
}

// NewChangeLog returns a ChangeLog writing to log, its rate measured on
// now (nil: time.Now).
func NewChangeLog(log *slog.Logger, now func() time.Time) *ChangeLog {
	if now == nil {
		now = time.Now
	}
	return &ChangeLog{log: log, now: now}
}

// Log writes e's line, if it has one and the rate allows it. The check
// comes first, so that a suppressed line costs no formatting.
func (l *ChangeLog) Log(e Event) {
	in := e.Instance()
	switch e.Kind {
	case EventStatusCorrected:
		if l.allow() {
			l.log.Info("status corrected on renew", "app", e.App, "instance", e.ID, "from", e.Prev, "to", in.Status, "revision", e.Revision)
		}
	case EventRegister:
		if l.allow() {
			l.log.Info("registered", "app", e.App, "instance", e.ID, "status", in.Status, "replication", e.FromPeer, "revision", e.Revision)
		}
	case EventCancel:
		if l.allow() {
			l.log.Info("cancelled", "app", e.App, "instance", e.ID, "replication", e.FromPeer, "revision", e.Revision)
		}
	case EventEvict:
		// logged by the eviction job ("evicted expired lease"): one line per eviction
	case EventStatusUpdate, EventDeleteStatusOverride:
		if l.allow() {
			l.log.Info("status override "+e.Kind.String(), "app", e.App, "instance", e.ID, "status", in.Status, "replication", e.FromPeer, "revision", e.Revision)
		}
	case EventProbeStatus, EventHeldStatus:
		if e.Changed && l.allow() {
			l.log.Info("status by "+e.Kind.String(), "app", e.App, "instance", e.ID, "from", e.Prev, "to", in.Status, "revision", e.Revision)
		}
	case EventOverrideStored:
		if l.allow() {
			l.log.Info("peer's status override stored", "app", e.App, "instance", e.ID, "override", e.Status, "revision", e.Revision)
		}
	}
}

// allow reports whether a change line may be written now; when a window
// with suppressed lines has ended, it first writes their summary.
func (l *ChangeLog) allow() bool {
	now := l.now()
	if now.Sub(l.window) >= time.Second || now.Before(l.window) {
		if l.suppressed > 0 {
			l.log.Info("change log lines suppressed", "count", l.suppressed,
				"since", l.since.UTC().Format(time.RFC3339), "limit_per_second", changeLinesPerSecond)
			l.suppressed = 0
		}
		l.window, l.lines = now, 0
	}
	if l.lines < changeLinesPerSecond {
		l.lines++
		return true
	}
	if l.suppressed == 0 {
		l.since = l.window
	}
	l.suppressed++
	return false
}
