package main

import (
	"log/slog"
	"time"
)

// changeLinesPerSecond bounds the per-change log lines ("registered",
// "cancelled", status changes): one line per change is the audit trail
// Eureka's logs give, and at a steady cluster's rate (a few changes a
// second) every change is logged. In a restart storm (10,000 registrations a
// second) the lines cost more than the registrations' own work (8 % of the
// server's CPU at 10k, perf), so beyond this many in one second they are
// counted, and the count is written as one line with the first change after
// that second (metrics count every change regardless).
const changeLinesPerSecond = 100

// changeLog rate-limits the change lines. It is used from the registry's
// listener only, which is never called concurrently, so it has no lock.
type changeLog struct {
	log        *slog.Logger
	now        func() time.Time
	window     time.Time // start of the current one-second window
	lines      int       // lines logged in the window
	suppressed int       // lines not logged since the last summary
	since      time.Time // first suppressed line's window
}

// allow reports whether a change line may be written now; when a window
// with suppressed lines has ended, it first writes their summary.
func (l *changeLog) allow() bool {
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
