// Package clocktest is the one fake clock the module's tests share.
//
// Every package's tests used to carry their own fake clock, and the copies
// drifted apart: one had no lock and raced with the code it drove, one
// stepped with Add and another with Advance, tests read or assigned the time
// field directly. A test moved between packages could change meaning. One
// clock, safe for concurrent use, with one set of names, ends that.
//
// A Clock moves only when a test moves it. Pass Clock.Now wherever the code
// under test takes a Now func() time.Time. Background loops driven by
// timers and tickers are tested with testing/synctest instead.
//
// The package imports nothing from the module, so any package's tests may
// use it.
package clocktest

import (
	"sync"
	"time"
)

// Clock is a settable clock. Its methods may be called from any goroutine.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// New returns a clock that reads t until it is moved.
func New(t time.Time) *Clock { return &Clock{t: t} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock by d (backwards if d is negative).
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// Set moves the clock to t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}
