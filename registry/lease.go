package registry

import (
	"sync/atomic"
	"time"
)

// Default lease timings (Eureka's LeaseInfo defaults).
const (
	DefaultLeaseDuration   = 90 * time.Second
	DefaultRenewalInterval = 30 * time.Second
)

// lease is Eureka's Lease: one registration of one instance.
//
// Expiry copies Eureka exactly, including its known quirk: Renew sets
// lastUpdate to now+duration and Expired compares now with
// lastUpdate+duration, so a renewed lease expires two durations after its
// last heartbeat (180 s by default) while a never-renewed lease expires one
// duration after registration. goreka keeps this on purpose: clients and
// operators have tuned lease-expiration-duration-in-seconds against this
// behaviour for a decade, and in a mixed peer group with Java servers every
// node must drop a silent instance on the same schedule (evictions are not
// replicated). See docs/OPERATIONS.md, "Leases and eviction".
//
// The lease timings are the stored instance's LeaseInfo, defaulted when it
// is stored: they are held once.
//
// inst is replaced, never mutated, and only under the registry's write lock;
// lastUpdate is atomic because Renew runs under the read lock.
type lease struct {
	inst       *Instance
	registered time.Time
	lastUpdate atomic.Int64 // unix nanoseconds (Eureka's lastUpdateTimestamp)
	eviction   time.Time    // set once, on cancel or eviction
	serviceUp  time.Time
	rev        int64 // revision of the last change; under the write lock

	// beat is the last heartbeat or registration, from anyone (unix
	// nanoseconds), without the quirk of lastUpdate.
	beat atomic.Int64
	// direct is the last heartbeat or registration that came from the
	// instance itself, not from a peer (unix nanoseconds; 0 if none).
	direct atomic.Int64
	// down is why goreka itself serves the instance as DOWN (health.go);
	// own is the stored instance as it would be without that, set while
	// down replaced its UP. Both under the write lock.
	down DownCause
	own  *Instance
	// static marks a lease-less registration (static.go): it never
	// expires. source is empty for a static one, the importer's name for
	// an imported one (imported.go). Set before the lease is stored.
	static bool
	source string
}

// newLease starts a lease for in, whose LeaseInfo is defaulted.
func newLease(in *Instance, now time.Time) *lease {
	l := &lease{inst: in, registered: now}
	l.lastUpdate.Store(now.UnixNano())
	l.beat.Store(now.UnixNano())
	return l
}

func (l *lease) duration() time.Duration { return l.inst.LeaseInfo.Duration }

// renew is Lease.renew: lastUpdate = now + duration (the quirk above).
func (l *lease) renew(now time.Time) {
	l.lastUpdate.Store(now.Add(l.duration()).UnixNano())
	l.beat.Store(now.UnixNano())
}

// expired is Lease.isExpired(additionalLeaseMs).
func (l *lease) expired(now time.Time, extra time.Duration) bool {
	if !l.eviction.IsZero() {
		return true
	}
	if l.static {
		return false
	}
	deadline := l.lastUpdate.Load() + int64(l.duration()) + int64(extra)
	return now.UnixNano() > deadline
}

func (l *lease) view() LeaseView {
	return LeaseView{
		Instance:              l.inst,
		RegistrationTimestamp: l.registered,
		LastRenewalTimestamp:  time.Unix(0, l.lastUpdate.Load()),
		EvictionTimestamp:     l.eviction,
		ServiceUpTimestamp:    l.serviceUp,
		RenewalInterval:       l.inst.LeaseInfo.RenewalInterval,
		Duration:              l.inst.LeaseInfo.Duration,
		Revision:              l.rev,
		LastHeartbeat:         time.Unix(0, l.beat.Load()),
		LastClientRenewal:     unixTime(l.direct.Load()),
		DownBy:                l.down,
		Static:                l.static,
		Source:                l.source,
	}
}

func unixTime(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}
