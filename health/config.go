package health

import (
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/netip"
	"time"
)

// Mode chooses which instances are probed.
type Mode string

// The probe modes (goreka.health.probe.mode).
const (
	// OnSuspicion probes only instances that missed heartbeats (more than
	// two renewal intervals since the last one), leases held back by
	// self-preservation, and reported instances.
	OnSuspicion Mode = "on-suspicion"
	// Periodic also probes every instance that heartbeats to this server,
	// every Interval, and serves those that fail as DOWN.
	Periodic Mode = "periodic"
)

// Config holds the goreka.health.probe.* settings. Zero values take the
// defaults of Default, except Enabled.
type Config struct {
	// Enabled is goreka.health.probe.enabled (false). Without it nothing is
	// probed and goreka behaves exactly like Eureka; reports are counted and
	// shown only.
	Enabled bool
	// Mode is goreka.health.probe.mode (on-suspicion).
	Mode Mode
	// Interval is goreka.health.probe.interval (30 s): how often one
	// instance is probed while it is a candidate.
	Interval time.Duration
	// Timeout is goreka.health.probe.timeout (2 s) for one probe.
	Timeout time.Duration
	// Concurrency is goreka.health.probe.concurrency (16): probes in flight.
	Concurrency int
	// Jitter is goreka.health.probe.jitter (5 s): each probe is delayed by
	// a random fraction of it, so that instances that became suspect
	// together are not probed in lockstep.
	Jitter time.Duration
	// Budget is goreka.health.probe.budget (50): probes per second at most,
	// whatever the fleet's size (see the package doc for the arithmetic).
	Budget float64
	// FailuresToEvict is goreka.health.probe.failures-to-evict (3).
	FailuresToEvict int
	// FailuresToDown is goreka.health.probe.failures-to-down (3), and
	// SuccessesToUp goreka.health.probe.successes-to-up (2): the
	// hysteresis of DOWN by probe.
	FailuresToDown, SuccessesToUp int
	// MaxFailingPercent is goreka.health.probe.max-failing-percent (50):
	// the guard.
	MaxFailingPercent float64
	// Window is goreka.health.probe.window (1 min): the probes the guard
	// judges.
	Window time.Duration
	// ReportInterval is goreka.health.report.instance-interval (10 s): at
	// most one report-triggered probe per instance this often.
	ReportInterval time.Duration
	// ReportsPerMinute is goreka.health.report.per-reporter-per-minute
	// (60): reports accepted from one reporter (its address).
	ReportsPerMinute int
	// AllowedNetworks is goreka.health.probe.allowed-networks (empty: any):
	// the networks probes may connect to. Health URLs are the registrants'
	// word; see "Where probes go" in the package doc.
	AllowedNetworks []netip.Prefix

	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Rand draws the jitter and the control sample; nil is random.
	Rand *rand.Rand
	// Logger receives the package's logs; nil discards them.
	Logger *slog.Logger
}

// Default returns the defaults (probes off).
func Default() Config {
	return Config{
		Mode:              OnSuspicion,
		Interval:          30 * time.Second,
		Timeout:           2 * time.Second,
		Concurrency:       16,
		Jitter:            5 * time.Second,
		Budget:            50,
		FailuresToEvict:   3,
		FailuresToDown:    3,
		SuccessesToUp:     2,
		MaxFailingPercent: 50,
		Window:            time.Minute,
		ReportInterval:    10 * time.Second,
		ReportsPerMinute:  60,
	}
}

func (c Config) withDefaults() Config {
	d := Default()
	if c.Mode == "" {
		c.Mode = d.Mode
	}
	pos := func(v *time.Duration, def time.Duration) {
		if *v <= 0 {
			*v = def
		}
	}
	pos(&c.Interval, d.Interval)
	pos(&c.Timeout, d.Timeout)
	pos(&c.Window, d.Window)
	pos(&c.ReportInterval, d.ReportInterval)
	c.Jitter = max(c.Jitter, 0)
	posInt := func(v *int, def int) {
		if *v <= 0 {
			*v = def
		}
	}
	posInt(&c.Concurrency, d.Concurrency)
	posInt(&c.FailuresToEvict, d.FailuresToEvict)
	posInt(&c.FailuresToDown, d.FailuresToDown)
	posInt(&c.SuccessesToUp, d.SuccessesToUp)
	posInt(&c.ReportsPerMinute, d.ReportsPerMinute)
	if c.Budget <= 0 {
		c.Budget = d.Budget
	}
	if c.MaxFailingPercent <= 0 || c.MaxFailingPercent > 100 {
		c.MaxFailingPercent = d.MaxFailingPercent
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Rand == nil {
		c.Rand = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Validate names what is wrong with c, nil if nothing.
func (c Config) Validate() error {
	if c.Mode != "" && c.Mode != OnSuspicion && c.Mode != Periodic {
		return fmt.Errorf("goreka.health.probe.mode %q: one of on-suspicion, periodic", c.Mode)
	}
	return nil
}
