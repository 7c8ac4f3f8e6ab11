package registry

import (
	"crypto/rand"
	"encoding/hex"
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"
)

// Options configure a Registry. The zero value is usable.
type Options struct {
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// SelfID is the instance id of this server's own registration, marked
	// isCoordinatingDiscoveryServer in output.
	SelfID string
	// ExpectedClients is the initial expected number of clients sending
	// renews (Spring: eureka.instance.registry.expected-number-of-clients-sending-renews, 1).
	ExpectedClients int
	// IgnoreDirtyTimestamps turns off eureka.server.sync-when-timestamp-differs:
	// heartbeats then never compare lastDirtyTimestamp (no 404 for a newer
	// copy, no 409 for an older one), and Adopt refuses peers' copies.
	IgnoreDirtyTimestamps bool
	// LastN is the length of the recently registered and cancelled lists
	// (default 1000).
	LastN int
	// OnEvent, if set, is called with every change, in revision order and
	// never concurrently (see the package doc for the contract).
	OnEvent func(Event)
	// OnRenew, if set, is called after every heartbeat that found its
	// lease, synchronously and possibly concurrently.
	OnRenew func(Renewal)
	// MaxInstances, when positive, bounds the number of leases: a
	// registration of a new instance beyond it is refused with a
	// *LimitError (goreka.namespaces.max-instances bounds a namespace's
	// registry). Re-registrations of stored instances are always accepted.
	MaxInstances int
	// KeepImported makes Restore bring imported instances back (an
	// importer runs and will reconcile them); without it Restore leaves
	// them out, since nobody would ever withdraw them.
	KeepImported bool
}

type change struct {
	l  *lease
	at time.Time
}

// Registry is Eureka's instance registry: application -> instance id -> lease.
// All methods are safe for concurrent use.
type Registry struct {
	// epoch names this registry's sequence of revisions (Epoch).
	epoch   string
	now     func() time.Time
	selfID  string
	syncTS  bool
	onEvent func(Event)
	onRenew func(Renewal)
	maxN    int // Options.MaxInstances
	keepImp bool

	mu        sync.RWMutex
	apps      map[string]map[string]*lease // app name (upper case) -> id -> lease
	seed      maphash.Seed                 // of keyHash (keyhash.go)
	overrides map[string]Status            // id -> status (overriddenInstanceStatusMap)
	counts    map[Status]int               // instances per status, for apps__hashcode
	// appCounts are the instances of each application per status
	// (AppStatusCounts), kept with counts by countLocked.
	appCounts map[string]map[Status]int
	size      int
	recent    []change // recently changed queue, oldest first; l nil: superseded
	// recentSeq is the sequence number of each instance's newest entry in
	// recent, by keyHash, whose head entry has number recentBase
	// (outline.go).
	recentSeq  map[uint64]int64
	recentBase int64
	expected   int
	rev        int64 // revision of the last change
	// static holds the configured static registrations as prepared
	// (static.go); staticN counts their leases.
	static  map[InstanceKey]*Instance
	staticN int
	// imported holds the imported instances as the importer gave them
	// (imported.go); their leases count in staticN too.
	imported map[InstanceKey]*Instance
	// appRev is the revision of the last change to each application, and
	// recentCount the number of its entries in recent (outline.go). An
	// application leaves both when it has neither instances nor entries.
	appRev      map[string]int64
	recentCount map[string]int

	// The change stream (events.go). Lock order: mu, then pendMu;
	// deliverMu is never taken while holding mu.
	pendMu    sync.Mutex
	pending   []Event // recorded, not yet delivered, in revision order
	deliverMu sync.Mutex
	spare     []Event // guarded by deliverMu
	subs      []*Subscription
	committed atomic.Int64 // revision of the last change queued for delivery
	delivered atomic.Int64 // revision of the last change delivered

	versionDelta atomic.Int64
	renews       rate
	registered   ring
	cancelled    ring
}

// New returns an empty registry.
func New(o Options) *Registry {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.LastN <= 0 {
		o.LastN = 1000
	}
	return &Registry{
		epoch:       newEpoch(),
		now:         o.Now,
		selfID:      o.SelfID,
		syncTS:      !o.IgnoreDirtyTimestamps,
		onEvent:     o.OnEvent,
		onRenew:     o.OnRenew,
		maxN:        o.MaxInstances,
		keepImp:     o.KeepImported,
		apps:        make(map[string]map[string]*lease),
		seed:        maphash.MakeSeed(),
		overrides:   make(map[string]Status),
		counts:      make(map[Status]int),
		appCounts:   make(map[string]map[Status]int),
		appRev:      make(map[string]int64),
		recentCount: make(map[string]int),
		recentSeq:   make(map[uint64]int64),
		static:      make(map[InstanceKey]*Instance),
		imported:    make(map[InstanceKey]*Instance),
		expected:    o.ExpectedClients,
		registered:  ring{max: o.LastN},
		cancelled:   ring{max: o.LastN},
	}
}

// InstanceKey addresses one lease.
type InstanceKey struct{ App, ID string }

// ExpectedClients returns the expected number of clients sending renews.
func (r *Registry) ExpectedClients() int {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.expected
}

// SetExpectedClients sets the expected number of clients sending renews
// (openForTraffic and the renewal-threshold update job).
func (r *Registry) SetExpectedClients(n int) {
	r.mu.Lock()
	r.expected = n
	r.mu.Unlock()
}

// StartRenewsMeter makes the renews-per-minute meter count whole minutes
// from now on, once (Eureka starts its MeasuredRate in postInit, at
// openForTraffic): during the first minute RenewsLastMinute is 0, and from
// now+60 s on it is a full minute of renewals, never a part of one.
func (r *Registry) StartRenewsMeter(now time.Time) { r.renews.start(now) }

// RenewsLastMinute returns the renewals counted in the last full minute
// (MeasuredRate): every successful renew, client or replicated.
func (r *Registry) RenewsLastMinute() int64 { return r.renews.lastMinute(r.now()) }

// RenewsHistory returns per-minute renewal counts for up to the last hour,
// oldest first, the current partial minute excluded.
func (r *Registry) RenewsHistory() []MinuteCount { return r.renews.history(r.now()) }

// LastN is one entry of the recently registered or cancelled lists.
type LastN struct {
	At      time.Time
	App, ID string
}

// RecentlyRegistered returns the last registrations, newest first.
func (r *Registry) RecentlyRegistered() []LastN {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.registered.list()
}

// RecentlyCancelled returns the last cancels and evictions, newest first.
func (r *Registry) RecentlyCancelled() []LastN {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.cancelled.list()
}

// Epoch names the registry's sequence of revisions: a random id made by
// New. Revisions are counted per registry, so two registries' (two servers
// behind one address, or one server restarted) do not compare; a reader
// that orders what it was told by revision (a relay's copy of its upstream)
// may compare revisions only under one epoch. Served as X-Goreka-Epoch.
func (r *Registry) Epoch() string { return r.epoch }

func newEpoch() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read does not fail (Go 1.24)
	return hex.EncodeToString(b[:])
}
