package eviction

import (
	"testing"
	"time"
)

// Expected values are Java's: (int)(expected * (60.0 / secs) * percent) in
// IEEE double arithmetic, worked out independently of this code.
func TestThreshold(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		expected int
		interval time.Duration
		percent  float64
		want     int
	}{
		{"no clients", 0, 30 * time.Second, 0.85, 0},
		{"spring start, expected 1", 1, 30 * time.Second, 0.85, 1},
		{"standalone with one client, expected 2", 2, 30 * time.Second, 0.85, 3},
		{"expected 3", 3, 30 * time.Second, 0.85, 5},
		{"expected 7 truncates 11.9", 7, 30 * time.Second, 0.85, 11},
		{"100 clients", 100, 30 * time.Second, 0.85, 170},
		{"1 + 100 registered", 101, 30 * time.Second, 0.85, 171},
		{"10 s renewals", 10, 10 * time.Second, 0.85, 51},
		{"45 s renewals", 3, 45 * time.Second, 0.85, 3},
		{"60 s renewals", 2, time.Minute, 0.85, 1},
		{"zero interval means 30 s", 2, 0, 0.85, 3},
		{"negative interval means 30 s", 2, -time.Second, 0.85, 3},
		{"sub-second interval means 30 s", 2, 500 * time.Millisecond, 0.85, 3},
		{"fractional seconds truncate like the int property", 10, 10*time.Second + 900*time.Millisecond, 0.85, 51},
		{"percent 1", 4, 30 * time.Second, 1, 8},
		{"percent 0.5", 3, 30 * time.Second, 0.5, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Threshold(tc.expected, tc.interval, tc.percent); got != tc.want {
				t.Fatalf("Threshold(%d, %v, %v) = %d, want %d", tc.expected, tc.interval, tc.percent, got, tc.want)
			}
		})
	}
}

func TestEvictionLimit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		size    int
		percent float64
		want    int
	}{
		{0, 0.85, 0},
		{1, 0.85, 1},
		{3, 0.85, 1},
		{6, 0.85, 1},
		{10, 0.85, 2}, // NF §6.2 example
		{20, 0.85, 3},
		{72, 0.85, 11},
		{85, 0.85, 13},
		{100, 0.85, 15},
		{1000, 0.85, 150},
		{100, 1, 0},
		{100, 0.5, 50},
	}
	for _, tc := range tests {
		if got := EvictionLimit(tc.size, tc.percent); got != tc.want {
			t.Errorf("EvictionLimit(%d, %v) = %d, want %d", tc.size, tc.percent, got, tc.want)
		}
	}
}

func TestLeaseExpirationEnabled(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		sp        bool
		threshold int
		renews    int64
		want      bool
	}{
		{"self-preservation off, nothing renews", false, 0, 0, true},
		{"self-preservation off, below threshold", false, 171, 100, true},
		{"threshold 0 blocks expiry", true, 0, 10, false},
		{"standalone one client: 2 renews vs 3", true, 3, 2, false},
		{"equal is not above", true, 3, 3, false},
		{"strictly above", true, 3, 4, true},
		{"100 healthy of 101 expected", true, 171, 200, true},
		{"50 of them stopped", true, 171, 100, false},
	}
	for _, tc := range tests {
		if got := LeaseExpirationEnabled(tc.sp, tc.threshold, tc.renews); got != tc.want {
			t.Errorf("%s: LeaseExpirationEnabled(%v, %d, %d) = %v, want %v", tc.name, tc.sp, tc.threshold, tc.renews, got, tc.want)
		}
	}
}

func TestBelowThreshold(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	wait := 5 * time.Minute
	tests := []struct {
		name      string
		renews    int64
		threshold int
		startup   time.Time
		now       time.Time
		want      bool
	}{
		{"not open yet", 0, 1, time.Time{}, start.Add(time.Hour), false},
		{"within the wait", 0, 1, start, start.Add(wait), false},
		{"after the wait", 0, 1, start, start.Add(wait + time.Millisecond), true},
		{"equal counts as below", 3, 3, start, start.Add(time.Hour), true},
		{"above", 4, 3, start, start.Add(time.Hour), false},
	}
	for _, tc := range tests {
		if got := BelowThreshold(tc.renews, tc.threshold, tc.startup, tc.now, wait); got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestCompensation(t *testing.T) {
	t.Parallel()
	last := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	iv := time.Minute
	tests := []struct {
		name string
		last time.Time
		now  time.Time
		want time.Duration
	}{
		{"first run", time.Time{}, last, 0},
		{"on time", last, last.Add(iv), 0},
		{"early", last, last.Add(30 * time.Second), 0},
		{"late by 90 s", last, last.Add(iv + 90*time.Second), 90 * time.Second},
		{"sub-millisecond lateness is dropped like Java's ms", last, last.Add(iv + 1500*time.Microsecond), time.Millisecond},
		{"clock went back", last, last.Add(-time.Hour), 0},
	}
	for _, tc := range tests {
		if got := Compensation(tc.last, tc.now, iv); got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestCompensationUsesMonotonicClock(t *testing.T) {
	t.Parallel()
	last := time.Now()
	// Same monotonic reading, wall clock stepped back an hour: Sub uses the
	// monotonic readings, so the run is on time, not an hour early.
	now := last.Add(time.Minute + 10*time.Second)
	stepped := now.Add(-time.Hour).Round(0) // wall-only copy, for contrast
	if got := Compensation(last, now, time.Minute); got != 10*time.Second {
		t.Fatalf("monotonic: got %v", got)
	}
	if got := Compensation(last.Round(0), stepped, time.Minute); got != 0 {
		t.Fatalf("wall clock stepped back: got %v", got)
	}
}

func TestBanner(t *testing.T) {
	t.Parallel()
	tests := []struct {
		below, sp bool
		want      string
	}{
		{true, true, "EMERGENCY! EUREKA MAY BE INCORRECTLY CLAIMING INSTANCES ARE UP WHEN THEY'RE NOT. RENEWALS ARE LESSER THAN THRESHOLD AND HENCE THE INSTANCES ARE NOT BEING EXPIRED JUST TO BE SAFE."},
		{true, false, "RENEWALS ARE LESSER THAN THE THRESHOLD. THE SELF PRESERVATION MODE IS TURNED OFF. THIS MAY NOT PROTECT INSTANCE EXPIRY IN CASE OF NETWORK/OTHER PROBLEMS."},
		{false, false, "THE SELF PRESERVATION MODE IS TURNED OFF. THIS MAY NOT PROTECT INSTANCE EXPIRY IN CASE OF NETWORK/OTHER PROBLEMS."},
		{false, true, ""},
	}
	for _, tc := range tests {
		if got := Banner(tc.below, tc.sp); got != tc.want {
			t.Errorf("Banner(below=%v, sp=%v) = %q, want %q", tc.below, tc.sp, got, tc.want)
		}
	}
}
