package tokenbucket

import (
	"math"
	"time"
)

// Limit is a bucket's shape: how often it gains a token and how many it
// holds. The zero Limit admits everything.
type Limit struct {
	interval time.Duration // one token per interval; 0: no limit
	// depth is how far ahead of now the bucket may be drawn: (burst-1)
	// intervals, negative when the burst is below one token.
	depth time.Duration
}

// PerMinute is n tokens a minute, at most burst of them; n <= 0 is no
// limit.
func PerMinute(n, burst int) Limit {
	if n <= 0 {
		return Limit{}
	}
	per := time.Minute / time.Duration(n)
	return Limit{interval: per, depth: time.Duration(burst-1) * per}
}

// PerSecond is rate tokens a second (fractions allowed), at most burst of
// them (a burst below 1 admits nothing); rate <= 0 is no limit. The
// interval is rounded to the nanosecond.
func PerSecond(rate, burst float64) Limit {
	if rate <= 0 {
		return Limit{}
	}
	per := time.Duration(math.Round(float64(time.Second) / rate))
	return Limit{interval: per, depth: time.Duration(math.Round((burst - 1) * float64(per)))}
}

// Bucket is a token bucket; the zero Bucket is full. It is not safe for
// concurrent use: its owner holds a lock around Take.
type Bucket struct {
	full time.Time // the bucket holds its burst from this time on
}

// Take draws one token at now from a bucket of shape l; false means the
// bucket is empty, and nothing is drawn.
func (b *Bucket) Take(now time.Time, l Limit) bool {
	if l.interval <= 0 {
		return true
	}
	tat := b.full
	if tat.Before(now) {
		tat = now
	}
	if tat.Sub(now) > l.depth {
		return false
	}
	b.full = tat.Add(l.interval)
	return true
}
