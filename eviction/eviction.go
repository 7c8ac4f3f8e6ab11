package eviction

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/goreka/goreka/registry"
)

// Config holds the eviction and self-preservation settings, named after
// Eureka's eureka.server.* properties. Zero durations and a zero percent
// take Eureka's defaults; see Default.
type Config struct {
	// EnableSelfPreservation is eureka.server.enable-self-preservation
	// (true). Default cannot tell false from unset, so New keeps the value
	// as given: start from Default() and override.
	EnableSelfPreservation bool
	// RenewalPercentThreshold is eureka.server.renewal-percent-threshold
	// (0.85): the share of expected renewals below which self-preservation
	// stops eviction, and 1 minus the share of the registry one eviction
	// run may remove.
	RenewalPercentThreshold float64
	// ExpectedClientRenewalInterval is
	// eureka.server.expected-client-renewal-interval-seconds (30 s; not
	// positive means 30 s), in whole seconds like the Java property.
	ExpectedClientRenewalInterval time.Duration
	// EvictionInterval is eureka.server.eviction-interval-timer-in-ms (60 s).
	// The cron schedule works in whole seconds (minimum 1 s).
	EvictionInterval time.Duration
	// RenewalThresholdUpdateInterval is
	// eureka.server.renewal-threshold-update-interval-ms (15 min).
	RenewalThresholdUpdateInterval time.Duration
	// WaitTimeWhenSyncEmpty is eureka.server.wait-time-in-ms-when-sync-empty
	// (5 min): after OpenForTraffic with no expected clients, AllowAccess
	// refuses reads for this long; and BelowThreshold, so the dashboard
	// banner, waits this long after any OpenForTraffic. Kept as given like
	// EnableSelfPreservation (0 is no wait; negative is 0): start from
	// Default() and override.
	WaitTimeWhenSyncEmpty time.Duration
	// DefaultOpenForTrafficCount is
	// eureka.instance.registry.default-open-for-traffic-count (Spring's 1):
	// the expected clients OpenAfterSync takes when the start-up sync copied
	// nothing. 1 keeps reads open; 0 is Netflix's behaviour, reads refused
	// for WaitTimeWhenSyncEmpty. Kept as given (negative is 0).
	DefaultOpenForTrafficCount int
	// SyncReadWait is how long a registry read arriving before
	// OpenForTraffic, during the start-up sync, waits for it before
	// AllowAccess refuses it; 0 refuses at once. goreka uses half a peer's
	// read timeout: peers starting together each hold the others' sync
	// reads, and must refuse them before the reader gives up on its own.
	SyncReadWait time.Duration
	// DeltaRetentionInterval is delta-retention-timer-interval-in-ms (30 s)
	// and DeltaRetention is retention-time-in-m-s-in-delta-queue (180 s):
	// how often, and down to what age, the recently-changed queue behind
	// /apps/delta is pruned.
	DeltaRetentionInterval, DeltaRetention time.Duration
	// ReportHeldAsDown is goreka.eviction.report-held-as-down (false):
	// while self-preservation holds expired leases back, each run serves
	// them as DOWN (registry.MarkDown with DownByHeld) instead of UP, so
	// that callers' load balancers skip them, while keeping them
	// registered. Their next heartbeat makes them UP again; every server
	// decides this on its own (not replicated).
	ReportHeldAsDown bool

	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Rand picks the leases a capped run evicts; nil means a randomly
	// seeded source.
	Rand *rand.Rand
	// Logger receives the package's logs; nil discards them.
	Logger *slog.Logger
}

// Default returns Eureka's defaults.
func Default() Config {
	return Config{
		EnableSelfPreservation:         true,
		RenewalPercentThreshold:        0.85,
		ExpectedClientRenewalInterval:  DefaultExpectedClientRenewalInterval,
		EvictionInterval:               60 * time.Second,
		RenewalThresholdUpdateInterval: 15 * time.Minute,
		WaitTimeWhenSyncEmpty:          5 * time.Minute,
		DefaultOpenForTrafficCount:     1,
		DeltaRetentionInterval:         30 * time.Second,
		DeltaRetention:                 180 * time.Second,
	}
}

// withDefaults fills zero fields with Eureka's defaults, except those kept
// as given (see Config); negative values of those are 0.
func (c Config) withDefaults() Config {
	d := Default()
	if c.RenewalPercentThreshold <= 0 {
		c.RenewalPercentThreshold = d.RenewalPercentThreshold
	}
	if c.ExpectedClientRenewalInterval < time.Second {
		c.ExpectedClientRenewalInterval = d.ExpectedClientRenewalInterval
	}
	if c.EvictionInterval <= 0 {
		c.EvictionInterval = d.EvictionInterval
	}
	if c.RenewalThresholdUpdateInterval <= 0 {
		c.RenewalThresholdUpdateInterval = d.RenewalThresholdUpdateInterval
	}
	c.WaitTimeWhenSyncEmpty = max(c.WaitTimeWhenSyncEmpty, 0)
	c.DefaultOpenForTrafficCount = max(c.DefaultOpenForTrafficCount, 0)
	c.SyncReadWait = max(c.SyncReadWait, 0)
	if c.DeltaRetentionInterval <= 0 {
		c.DeltaRetentionInterval = d.DeltaRetentionInterval
	}
	if c.DeltaRetention <= 0 {
		c.DeltaRetention = d.DeltaRetention
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

// ErrRunning is returned by Run when the Evictor's loop is already running.
var ErrRunning = errors.New("eviction loop already running")

// Evictor runs Eureka's eviction task and renewal-threshold job over a
// registry and explains self-preservation through Status. All methods are
// safe for concurrent use.
type Evictor struct {
	reg *registry.Registry
	cfg Config
	log *slog.Logger

	opened   chan struct{} // closed by the first OpenForTraffic
	openOnce sync.Once
	// emptyOnStartup is Netflix's peerInstancesTransferEmptyOnStartup: the
	// last OpenForTraffic expected no clients. Set before opened is closed.
	emptyOnStartup atomic.Bool

	running sync.Mutex // held by Run for its lifetime

	runMu sync.Mutex // serialises RunOnce (and guards cfg.Rand)

	mu          sync.Mutex
	startup     time.Time // openForTraffic's startupTime; zero until then
	lastRun     time.Time // previous eviction run, for the compensation
	lastEvicted int
	total       int64
	heldBack    int
	heldReason  string    // why heldBack, for de-duplicating the warning
	activeSince time.Time // self-preservation holding since; zero if not
}

// New returns an Evictor for reg. Zero fields of cfg take Eureka's
// defaults (except EnableSelfPreservation, see Config).
func New(reg *registry.Registry, cfg Config) *Evictor {
	cfg = cfg.withDefaults()
	return &Evictor{
		reg:    reg,
		cfg:    cfg,
		log:    cfg.Logger.With("component", "eviction"),
		opened: make(chan struct{}),
	}
}

// OpenForTraffic is Eureka's openForTraffic: the expected number of clients
// becomes count (the instances copied by the start-up sync; Spring
// substitutes default-open-for-traffic-count, 1, for 0 — the caller passes
// the substituted value, or calls OpenAfterSync), the start-up time is now,
// and the eviction run and the renewal-threshold job begin (postInit). A
// count of 0 closes AllowAccess for WaitTimeWhenSyncEmpty. Later calls reset
// the expectation and the start-up time but schedule nothing more.
func (e *Evictor) OpenForTraffic(count int) {
	now := e.cfg.Now()
	e.reg.SetExpectedClients(count)
	e.mu.Lock()
	e.startup = now
	e.emptyOnStartup.Store(count == 0)
	e.mu.Unlock()
	e.openOnce.Do(func() {
		// postInit: the renews meter starts here, so its first full
		// minute ends 60 s after opening, as Eureka's does.
		e.reg.StartRenewsMeter(now)
		close(e.opened)
	})
	e.log.Info("open for traffic", "expected_clients", count,
		"threshold", Threshold(count, e.cfg.ExpectedClientRenewalInterval, e.cfg.RenewalPercentThreshold))
}

func (e *Evictor) isOpen() bool {
	select {
	case <-e.opened:
		return true
	default:
		return false
	}
}

// snapshot is the self-preservation state at one instant.
type snapshot struct {
	now       time.Time
	renews    int64
	expected  int
	threshold int
	enabled   bool // lease expiration enabled
}

func (e *Evictor) snap() snapshot {
	now := e.cfg.Now()
	s := snapshot{
		now:      now,
		renews:   e.reg.RenewsLastMinute(),
		expected: e.reg.ExpectedClients(),
	}
	s.threshold = Threshold(s.expected, e.cfg.ExpectedClientRenewalInterval, e.cfg.RenewalPercentThreshold)
	s.enabled = LeaseExpirationEnabled(e.cfg.EnableSelfPreservation, s.threshold, s.renews)
	return s
}

// observeLocked records a change in whether self-preservation is holding
// (on, expiration disabled, and open for traffic) and logs each transition
// once. Caller holds e.mu.
func (e *Evictor) observeLocked(s snapshot) {
	holding := e.cfg.EnableSelfPreservation && !s.enabled && !e.startup.IsZero()
	switch {
	case holding && e.activeSince.IsZero():
		e.activeSince = s.now
		e.log.Warn("self-preservation active: lease expiration disabled, expired leases are kept",
			"renews_last_min", s.renews, "threshold", s.threshold, "expected_clients", s.expected)
	case !holding && !e.activeSince.IsZero():
		e.log.Warn("self-preservation ended: lease expiration enabled",
			"renews_last_min", s.renews, "threshold", s.threshold, "expected_clients", s.expected,
			"active_for", s.now.Sub(e.activeSince))
		e.activeSince = time.Time{}
	}
}

// RunOnce is one run of Eureka's eviction task at Now(): it computes the
// lateness compensation from the previous run, and, if lease expiration is
// enabled, evicts up to EvictionLimit of the expired leases, picked at
// random so that a mass expiry thins every application a little instead of
// wiping out a few. It returns the evicted leases (nil if none). Before
// OpenForTraffic it does nothing, as Eureka's timer starts in postInit.
func (e *Evictor) RunOnce() []registry.InstanceKey {
	if !e.isOpen() {
		return nil
	}
	e.runMu.Lock()
	defer e.runMu.Unlock()

	s := e.snap()
	e.mu.Lock()
	extra := Compensation(e.lastRun, s.now, e.cfg.EvictionInterval)
	e.lastRun = s.now
	e.observeLocked(s)
	e.mu.Unlock()

	expired := e.reg.Expired(s.now, extra)
	var evicted []registry.InstanceKey
	held, reason := 0, ""
	switch {
	case len(expired) == 0:
	case !s.enabled:
		held, reason = len(expired), "self-preservation"
		if e.cfg.ReportHeldAsDown {
			for _, k := range expired {
				// Idempotent; a lease renewed or removed meanwhile is skipped.
				_ = e.reg.MarkHeldExpired(k.App, k.ID, s.now, extra)
			}
		}
	default:
		limit := EvictionLimit(e.reg.Renewing(), e.cfg.RenewalPercentThreshold)
		n := min(len(expired), max(limit, 0))
		if n < len(expired) {
			held, reason = len(expired)-n, "eviction limit"
		}
		if n > 0 {
			e.log.Info("evicting expired leases", "count", n, "expired", len(expired), "limit", limit,
				"compensation", extra)
		}
		// Partial Fisher–Yates: the first n entries become a uniform sample.
		for i := range n {
			j := i + e.cfg.Rand.IntN(len(expired)-i)
			expired[i], expired[j] = expired[j], expired[i]
			k := expired[i]
			if err := e.reg.EvictExpired(k.App, k.ID, s.now, extra); err != nil {
				// Cancelled or re-registered meanwhile: nothing to evict.
				e.log.Debug("lease gone before eviction", "app", k.App, "instance", k.ID, "err", err)
				continue
			}
			e.log.Info("evicted expired lease", "app", k.App, "instance", k.ID)
			evicted = append(evicted, k)
		}
	}

	e.mu.Lock()
	e.lastEvicted = len(evicted)
	e.total += int64(len(evicted))
	warn := held > 0 && (held != e.heldBack || reason != e.heldReason)
	e.heldBack, e.heldReason = held, reason
	e.mu.Unlock()
	if warn {
		e.log.Warn("expired leases held back", "count", held, "reason", reason,
			"renews_last_min", s.renews, "threshold", s.threshold)
	}
	return evicted
}

// UpdateRenewalThreshold is Eureka's renewal-threshold job
// (updateRenewalThreshold): with count the number of registered instances,
// the expected number of clients becomes count if count is above
// RenewalPercentThreshold times the current expectation, or always when
// self-preservation is disabled. So while self-preservation is on the
// expectation can rise freely but falls by less than 15 % per run. See the
// package documentation for why count is the local registry's size.
func (e *Evictor) UpdateRenewalThreshold() {
	count := e.reg.Renewing() // static registrations are not expected to renew
	expected := e.reg.ExpectedClients()
	if float64(count) > e.cfg.RenewalPercentThreshold*float64(expected) || !e.cfg.EnableSelfPreservation {
		expected = count
		e.reg.SetExpectedClients(count)
	}
	e.log.Info("renewal threshold updated", "count", count, "expected_clients", expected,
		"threshold", Threshold(expected, e.cfg.ExpectedClientRenewalInterval, e.cfg.RenewalPercentThreshold))
	s := e.snap()
	e.mu.Lock()
	e.observeLocked(s)
	e.mu.Unlock()
}

// pruneDeltas is the delta-retention task.
func (e *Evictor) pruneDeltas() { e.reg.PruneRecentlyChanged(e.cfg.DeltaRetention) }

// Run schedules the jobs with robfig/cron and blocks until ctx is done:
// delta pruning every DeltaRetentionInterval from the start (Eureka starts
// it with the registry), and, from OpenForTraffic on (postInit), RunOnce
// every EvictionInterval and UpdateRenewalThreshold every
// RenewalThresholdUpdateInterval, each first one interval after it is
// scheduled. A job never overlaps itself; a late one is skipped. On return
// the scheduler is stopped and running jobs have finished. Run returns nil,
// or ErrRunning if the loop is already running.
func (e *Evictor) Run(ctx context.Context) error {
	if !e.running.TryLock() {
		return ErrRunning
	}
	defer e.running.Unlock()

	cl := cronLogger{e.log}
	c := cron.New(
		cron.WithLogger(cl),
		cron.WithChain(cron.Recover(cl), cron.SkipIfStillRunning(cl)),
	)
	c.Schedule(cron.Every(e.cfg.DeltaRetentionInterval), cron.FuncJob(e.pruneDeltas))
	c.Start()
	defer func() { <-c.Stop().Done() }()

	select {
	case <-ctx.Done():
		return nil
	case <-e.opened:
	}
	c.Schedule(cron.Every(e.cfg.EvictionInterval), cron.FuncJob(func() { e.RunOnce() }))
	c.Schedule(cron.Every(e.cfg.RenewalThresholdUpdateInterval), cron.FuncJob(e.UpdateRenewalThreshold))
	<-ctx.Done()
	return nil
}

// cronLogger adapts slog to cron.Logger. Cron's Info messages (every wake
// and schedule) go to Debug; its errors (recovered panics) to Error.
type cronLogger struct{ l *slog.Logger }

func (c cronLogger) Info(msg string, kv ...any) { c.l.Debug("cron: "+msg, kv...) }
func (c cronLogger) Error(err error, msg string, kv ...any) {
	c.l.Error("cron: "+msg, append([]any{"err", err}, kv...)...)
}

// Status is the self-preservation and eviction state, for the dashboard and
// metrics.
type Status struct {
	// SelfPreservationEnabled is enable-self-preservation.
	SelfPreservationEnabled bool
	// LeaseExpirationEnabled is isLeaseExpirationEnabled (the dashboard's
	// "Lease expiration enabled").
	LeaseExpirationEnabled bool
	// RenewsLastMinute is the renewals of the last full minute ("Renews
	// (last min)"), Threshold numberOfRenewsPerMinThreshold ("Renews
	// threshold") and ExpectedClients expectedNumberOfClientsSendingRenews.
	RenewsLastMinute int64
	Threshold        int
	ExpectedClients  int
	// BelowThreshold is isBelowRenewThresold: renews at or below the
	// threshold more than WaitTimeWhenSyncEmpty after OpenForTraffic.
	BelowThreshold bool
	// StartupTime is when OpenForTraffic was called; zero before.
	StartupTime time.Time
	// ActiveSince is when self-preservation was first seen holding (on,
	// lease expiration disabled, open for traffic) in the current episode;
	// zero if it is not. It is observed by eviction runs, threshold updates
	// and Status calls, so it is at most one eviction interval late.
	ActiveSince time.Time
	// HeldBack is the number of expired leases the last run did not evict,
	// because of self-preservation or of the eviction limit.
	HeldBack int
	// LastRun is the time of the last eviction run, LastEvicted what it
	// evicted and TotalEvicted the sum over all runs.
	LastRun      time.Time
	LastEvicted  int
	TotalEvicted int64
	// Banner is Spring's red dashboard banner for this state, "" if none.
	Banner string
	// RenewsHistory is the renewals per minute over the last hour, oldest
	// first, to chart against Threshold.
	RenewsHistory []registry.MinuteCount
}

// Status returns the current state in one call.
func (e *Evictor) Status() Status {
	s := e.snap()
	hist := e.reg.RenewsHistory()
	e.mu.Lock()
	defer e.mu.Unlock()
	e.observeLocked(s)
	below := BelowThreshold(s.renews, s.threshold, e.startup, s.now, e.cfg.WaitTimeWhenSyncEmpty)
	return Status{
		SelfPreservationEnabled: e.cfg.EnableSelfPreservation,
		LeaseExpirationEnabled:  s.enabled,
		RenewsLastMinute:        s.renews,
		Threshold:               s.threshold,
		ExpectedClients:         s.expected,
		BelowThreshold:          below,
		StartupTime:             e.startup,
		ActiveSince:             e.activeSince,
		HeldBack:                e.heldBack,
		LastRun:                 e.lastRun,
		LastEvicted:             e.lastEvicted,
		TotalEvicted:            e.total,
		Banner:                  Banner(below, e.cfg.EnableSelfPreservation),
		RenewsHistory:           hist,
	}
}
