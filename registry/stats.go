package registry

import (
	"sync"
	"time"
)

// MinuteCount is the number of renewals in one minute (wall-clock minutes
// until the meter starts, then minutes from its start).
type MinuteCount struct {
	Minute time.Time
	Count  int64
}

const historyMinutes = 60

// rate is Eureka's MeasuredRate with one-minute buckets, computed from the
// injected clock instead of a timer: lastMinute is the count of the previous
// whole minute. It also keeps the last hour for the dashboard's chart.
type rate struct {
	mu sync.Mutex
	// phase is the second of the minute at which buckets start: 0 counts
	// wall-clock minutes until start moves it (Eureka's MeasuredRate, whose
	// timer starts in postInit, at openForTraffic).
	phase   int64
	started bool
	minute  int64 // current bucket: (unix seconds - phase) / 60
	cur     int64
	hist    [historyMinutes]int64 // hist[m % 60] = count of minute m
	histAt  [historyMinutes]int64 // which minute hist[i] holds
}

func (r *rate) roll(m int64) {
	if m == r.minute {
		return
	}
	if r.minute != 0 {
		i := r.minute % historyMinutes
		r.hist[i], r.histAt[i] = r.cur, r.minute
	}
	r.minute, r.cur = m, 0
}

// minuteOf is now's bucket; Caller holds r.mu.
func (r *rate) minuteOf(now time.Time) int64 { return (now.Unix() - r.phase) / 60 }

// start makes minutes count from now, once: the count so far stays in the
// current bucket, which becomes the first minute (Java's increments before
// start land in the bucket its first tick moves); the history is dropped.
func (r *rate) start(now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.started {
		return
	}
	r.started, r.phase = true, now.Unix()%60
	r.minute = r.minuteOf(now)
	r.hist, r.histAt = [historyMinutes]int64{}, [historyMinutes]int64{}
}

func (r *rate) inc(now time.Time) { r.add(now, 1) }

// add counts n events at now.
func (r *rate) add(now time.Time, n int64) {
	r.mu.Lock()
	m := r.minuteOf(now)
	r.roll(m)
	r.cur += n
	r.mu.Unlock()
}

func (r *rate) lastMinute(now time.Time) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := r.minuteOf(now)
	r.roll(m)
	i := (m - 1) % historyMinutes
	if r.histAt[i] != m-1 {
		return 0
	}
	return r.hist[i]
}

func (r *rate) history(now time.Time) []MinuteCount {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := r.minuteOf(now)
	r.roll(m)
	out := make([]MinuteCount, 0, historyMinutes)
	for k := m - historyMinutes; k < m; k++ {
		i := k % historyMinutes
		var n int64
		if r.histAt[i] == k {
			n = r.hist[i]
		}
		out = append(out, MinuteCount{Minute: time.Unix(r.phase+k*60, 0).UTC(), Count: n})
	}
	return out
}

// ring is a bounded newest-last list (Eureka's CircularQueue of last N).
type ring struct {
	max   int
	items []LastN
	next  int
}

func (q *ring) add(at time.Time, app, id string) {
	e := LastN{At: at, App: app, ID: id}
	if len(q.items) < q.max {
		q.items = append(q.items, e)
		return
	}
	q.items[q.next] = e
	q.next = (q.next + 1) % q.max
}

// list returns the entries newest first.
func (q *ring) list() []LastN {
	out := make([]LastN, 0, len(q.items))
	n := len(q.items)
	for k := 0; k < n; k++ {
		// newest is just before next (or the end when not yet wrapped)
		i := (q.next - 1 - k + 2*n) % n
		if len(q.items) < q.max {
			i = n - 1 - k
		}
		out = append(out, q.items[i])
	}
	return out
}
