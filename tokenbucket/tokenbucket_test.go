package tokenbucket

import (
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func TestPerMinute(t *testing.T) {
	var b Bucket
	steps := []struct {
		at   time.Duration
		want bool
	}{
		{0, true}, {0, true}, {0, false}, // the burst of 2, then empty
		{9 * time.Second, false},  // 6/min: 0.9 token after 9 s
		{10 * time.Second, true},  // one token at 10 s
		{10 * time.Second, false}, //
		{5 * time.Minute, true},   // refilled, capped at the burst
		{5 * time.Minute, true},   //
		{5 * time.Minute, false},  //
		{5*time.Minute + 10*time.Second, true},
	}
	for i, s := range steps {
		if got := b.Take(t0.Add(s.at), PerMinute(6, 2)); got != s.want {
			t.Fatalf("step %d at +%s: %v, want %v", i, s.at, got, s.want)
		}
	}
	if !b.Take(t0, PerMinute(0, 2)) || !b.Take(t0, Limit{}) {
		t.Fatal("a rate of 0 must admit everything")
	}
}

func TestPerSecond(t *testing.T) {
	// 2.5 tokens of burst at 0.5 a second: two at once, the half token
	// refills to one in a second, then one every two seconds.
	l := PerSecond(0.5, 2.5)
	var b Bucket
	steps := []struct {
		at   time.Duration
		want bool
	}{
		{0, true}, {0, true}, {0, false},
		{999 * time.Millisecond, false},
		{time.Second, true}, {time.Second, false},
		{3 * time.Second, true}, {3 * time.Second, false},
		{time.Minute, true}, {time.Minute, true}, {time.Minute, false}, // capped at 2.5
		{time.Minute + time.Second, true},
	}
	for i, s := range steps {
		if got := b.Take(t0.Add(s.at), l); got != s.want {
			t.Fatalf("step %d at +%s: %v, want %v", i, s.at, got, s.want)
		}
	}
	var small Bucket
	if small.Take(t0, PerSecond(1, 0.5)) {
		t.Fatal("a burst below one token must admit nothing")
	}
	if !small.Take(t0, PerSecond(0, 0)) {
		t.Fatal("a rate of 0 must admit everything")
	}
}

// TestFractionalRate: a rate that is no whole number of nanoseconds per
// token (20 a minute as a per-second rate) still refills on the tick.
func TestFractionalRate(t *testing.T) {
	l := PerSecond(20.0/60, 1)
	var b Bucket
	if !b.Take(t0, l) || b.Take(t0.Add(3*time.Second-time.Millisecond), l) || !b.Take(t0.Add(3*time.Second), l) {
		t.Fatal("20 a minute: one token every 3 s")
	}
}
