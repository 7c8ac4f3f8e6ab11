package registry

import (
	"strings"
	"time"
)

// DownCause says why goreka itself serves an instance as DOWN, apart from
// the instance's own status and any operator override. Causes combine.
type DownCause uint8

// The causes MarkDown records.
const (
	// DownByProbe is the health prober's verdict: the instance answers its
	// health check as unhealthy, or not at all, while it heartbeats.
	DownByProbe DownCause = 1 << iota
	// DownByHeld marks a lease held back by self-preservation
	// (goreka.eviction.report-held-as-down): kept registered, served DOWN.
	DownByHeld
)

// MarkDown sets (down true) or lifts one cause for serving app/id as
// DOWN. While any cause stands, an instance whose stored status is UP is
// stored and served as DOWN (responses, deltas and apps__hashcode agree, as
// for any status change); any other status (STARTING, DOWN, OUT_OF_SERVICE)
// is left alone, and an operator's override (StatusUpdate, or a peer's
// override) always wins: no cause replaces the status while one is set.
// When the last cause is lifted the instance's own UP is served again.
// Heartbeats renew the lease as usual; a heartbeat lifts DownByHeld (the
// lease is no longer held) and a registration too, while DownByProbe
// survives re-registration (the instance's restart is judged by the next
// probes, not by its claim).
//
// A change of DownByProbe is an EventProbeStatus (replicated, see the
// kind); a change of DownByHeld that changes the stored status is an
// EventHeldStatus. Setting a cause already set, or lifting one not set,
// does nothing. It returns ErrNotFound if there is no such lease. MarkDown
// does not renew the lease and is never called for peers' changes: it is
// this server's own judgement.
func (r *Registry) MarkDown(app, id string, cause DownCause, down bool) error {
	return r.markDown(app, id, cause, down, nil)
}

// MarkHeldExpired is MarkDown(app, id, DownByHeld, true) after checking
// again, under the write lock, that the lease is still expired at now (plus
// the eviction job's lateness compensation extra), as EvictExpired does: a
// lease renewed since the job listed it is no longer held and is left UP
// (ErrNotExpired), instead of being served DOWN until its next heartbeat.
func (r *Registry) MarkHeldExpired(app, id string, now time.Time, extra time.Duration) error {
	return r.markDown(app, id, DownByHeld, true, func(l *lease) bool { return l.expired(now, extra) })
}

func (r *Registry) markDown(app, id string, cause DownCause, down bool, cond func(*lease) bool) error {
	if err := checkKey(app, id); err != nil {
		return err
	}
	now := r.now()
	r.mu.Lock()
	l := r.apps[strings.ToUpper(app)][id]
	if l == nil {
		r.mu.Unlock()
		return ErrNotFound
	}
	if cond != nil && !cond(l) {
		r.mu.Unlock()
		return ErrNotExpired
	}
	if (l.down&cause != 0) == down {
		r.mu.Unlock()
		return nil
	}
	if down {
		l.down |= cause
	} else {
		l.down &^= cause
	}
	prev := l.inst.Status
	changed := r.applyDownLocked(l, now)
	switch cause {
	case DownByProbe:
		opinion := l.ownInst().Status
		if down && opinion == StatusUp && !r.operatorOverride(id) {
			opinion = StatusDown
		}
		r.commitLocked(EventProbeStatus, l, prev, opinion, changed, false)
	default:
		if changed {
			r.commitLocked(EventHeldStatus, l, prev, l.inst.Status, true, false)
		}
	}
	r.mu.Unlock()
	r.deliver()
	return nil
}

// ownInst is the stored instance without goreka's own DOWN.
func (l *lease) ownInst() *Instance {
	if l.own != nil {
		return l.own
	}
	return l.inst
}

// operatorOverride reports whether id has a status override (set by an
// operator here or on a peer). Caller holds r.mu.
func (r *Registry) operatorOverride(id string) bool {
	s, ok := r.overrides[id]
	return ok && s != StatusUnknown
}

// applyDownLocked makes the stored status agree with l.down: an UP
// replaced by DOWN while a cause stands and no override does, the own copy
// back otherwise. It reports whether the stored status changed. Caller
// holds the write lock.
func (r *Registry) applyDownLocked(l *lease, now time.Time) bool {
	want := l.down != 0 && !r.operatorOverride(l.inst.ID())
	switch {
	case want && l.own == nil && l.inst.Status == StatusUp:
		own := l.inst
		in := own.Clone()
		in.Status = StatusDown
		in.ActionType = ActionModified
		in.LastUpdatedTimestamp = now
		r.replaceLocked(l, in, now)
		l.own = own
		return true
	case !want && l.own != nil:
		in := l.own.Clone()
		in.ActionType = ActionModified
		in.LastUpdatedTimestamp = now
		l.own = nil
		r.replaceLocked(l, in, now)
		return true
	}
	return false
}

// Leases returns the views of the leases for which keep returns true, in no
// particular order. keep runs under the registry's read lock for every
// lease: it must be quick, must not block and must not call the registry.
// A scan of 100k leases takes about a millisecond and allocates only the
// kept views.
func (r *Registry) Leases(keep func(*LeaseView) bool) []LeaseView {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var out []LeaseView
	var v LeaseView // one variable: keep's pointer makes it escape once, not per lease
	for _, group := range r.apps {
		for _, l := range group {
			v = l.view()
			if keep(&v) {
				out = append(out, v)
			}
		}
	}
	return out
}
