package clocktest_test

import (
	"sync"
	"testing"
	"time"

	"github.com/goreka/goreka/registry/clocktest"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func TestClockMovesOnlyWhenMoved(t *testing.T) {
	c := clocktest.New(t0)
	if got := c.Now(); !got.Equal(t0) {
		t.Fatalf("New(t0).Now() = %v, want %v", got, t0)
	}
	if got := c.Now(); !got.Equal(t0) {
		t.Fatalf("second Now() = %v, want %v: the clock moved by itself", got, t0)
	}
	c.Advance(90 * time.Second)
	if got, want := c.Now(), t0.Add(90*time.Second); !got.Equal(want) {
		t.Fatalf("after Advance(90s): %v, want %v", got, want)
	}
	c.Advance(-30 * time.Second)
	if got, want := c.Now(), t0.Add(time.Minute); !got.Equal(want) {
		t.Fatalf("after Advance(-30s): %v, want %v", got, want)
	}
	later := t0.Add(time.Hour)
	c.Set(later)
	if got := c.Now(); !got.Equal(later) {
		t.Fatalf("after Set: %v, want %v", got, later)
	}
}

// Run with -race: readers and writers on several goroutines, and every
// Advance counted.
func TestClockConcurrentUse(t *testing.T) {
	c := clocktest.New(t0)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 100 {
				c.Advance(time.Second)
				_ = c.Now()
			}
		})
	}
	wg.Wait()
	if got, want := c.Now(), t0.Add(400*time.Second); !got.Equal(want) {
		t.Fatalf("after 400 concurrent Advance(1s): %v, want %v", got, want)
	}
}
