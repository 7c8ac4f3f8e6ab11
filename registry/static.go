package registry

import (
	"cmp"
	"reflect"
	"slices"
	"strings"
	"time"
)

// Static registrations (goreka.static-instances) are instances nobody
// heartbeats for: databases, external APIs. The configuration owns them:
//
//   - they never expire and are never evicted (their lease is not
//     expired, their lifecycle is always up), and they are not expected to
//     renew: Renewing leaves them out, so they do not count toward
//     self-preservation's expected renewals;
//   - a registration, cancel or metadata update over one is refused with a
//     *ValidationError (change the configuration and reload instead); a
//     heartbeat for one is answered as found and otherwise ignored (not
//     counted, not reported to OnRenew); status overrides apply as to any
//     instance;
//   - their events and views carry Static, and nothing about them is
//     replicated: every node serves the static instances of its own
//     configuration (replication skips events whose Lease.Static is set);
//   - Export leaves them out: the configuration brings them back.

// errOwned is the refusal of a write over a lease-less registration: the
// configuration owns a static one (source ""), its importer an imported
// one.
func errOwned(app, id, source string) error {
	if source != "" {
		return invalid("%s/%s is imported (source %s): it changes when its source does", app, id, source)
	}
	return invalid("%s/%s is a static registration (goreka.static-instances): change the configuration and reload it (SIGHUP)", app, id)
}

// staticLocked reports whether app/id is a lease-less registration
// (static or imported). Caller holds r.mu.
func (r *Registry) staticLocked(app, id string) bool {
	l := r.apps[app][id]
	return l != nil && l.static
}

// ownedLocked is the refusal of a client's or a peer's write over a
// lease-less registration of app/id, nil if it is none. Caller holds r.mu.
func (r *Registry) ownedLocked(app, id string) error {
	if l := r.apps[app][id]; l != nil && l.static {
		return errOwned(app, id, l.source)
	}
	return nil
}

// StaticResult says what SetStatic changed.
type StaticResult struct {
	Added, Changed, Removed, Unchanged []InstanceKey
}

// SetStatic makes the static registrations exactly ins: new ones are
// registered, changed ones registered again, ones no longer listed
// cancelled, identical ones left alone (no event). Each becomes a lease
// that never expires (see above). An entry takes over an ordinary lease of
// the same application and id (a copy from a peer or a snapshot). The
// registry takes ownership of ins.
//
// Every entry is validated first, as a registration is: on any error
// (naming the entry by its position, application and id) nothing changes.
// Two entries with the same application and id are an error.
func (r *Registry) SetStatic(ins []*Instance) (StaticResult, error) {
	now := r.now()
	want := make(map[InstanceKey]*Instance, len(ins))
	for i, in := range ins {
		if err := r.prepare("", in, now); err != nil {
			return StaticResult{}, invalid("static instance %d (%s/%s): %v", i, in.App, in.ID(), err)
		}
		k := InstanceKey{in.App, in.ID()}
		if _, dup := want[k]; dup {
			return StaticResult{}, invalid("static instance %d (%s/%s): listed twice", i, k.App, k.ID)
		}
		want[k] = in
	}
	var res StaticResult
	r.mu.Lock()
	for k := range r.static {
		if _, ok := want[k]; !ok {
			delete(r.static, k)
			if l := r.apps[k.App][k.ID]; l != nil && l.static && l.source == "" {
				r.removeLocked(k.App, k.ID, l, EventCancel, false, now)
			}
			res.Removed = append(res.Removed, k)
		}
	}
	for k, in := range want {
		l := r.apps[k.App][k.ID]
		if old, ok := r.static[k]; ok && l != nil && l.static && l.source == "" && sameStatic(old, in) {
			res.Unchanged = append(res.Unchanged, k)
			continue
		}
		if _, ok := r.static[k]; ok {
			res.Changed = append(res.Changed, k)
		} else {
			res.Added = append(res.Added, k)
		}
		r.static[k] = in
		delete(r.imported, k) // the configuration wins over an importer
		r.registerStaticLocked(in.Clone(), "", now)
	}
	r.mu.Unlock()
	r.deliver()
	for _, s := range [][]InstanceKey{res.Added, res.Changed, res.Removed, res.Unchanged} {
		slices.SortFunc(s, func(a, b InstanceKey) int { return cmp.Or(cmp.Compare(a.App, b.App), cmp.Compare(a.ID, b.ID)) })
	}
	return res, nil
}

// sameStatic compares two prepared static entries by what the
// configuration says (LastDirtyTimestamp is stamped when prepared).
func sameStatic(a, b *Instance) bool {
	x, y := *a, *b
	x.LastDirtyTimestamp, y.LastDirtyTimestamp = time.Time{}, time.Time{}
	return reflect.DeepEqual(x, y)
}

// registerStaticLocked stores a lease-less registration, static (source
// "") or imported: its status is the given one unless an operator's
// override stands. It replaces any lease of the same key. Caller holds the
// write lock.
func (r *Registry) registerStaticLocked(in *Instance, source string, now time.Time) {
	id := in.ID()
	existing := r.apps[in.App][id]
	var prev Status
	if existing != nil {
		prev = existing.inst.Status
	}
	if s, ok := r.overrides[id]; ok {
		in.OverriddenStatus = s
		if s != StatusUnknown {
			in.Status = s
		}
	}
	in.ActionType = ActionAdded
	in.LastUpdatedTimestamp = now
	in.IsCoordinatingDiscoveryServer = false
	l := newLease(in, now)
	l.static, l.source = true, source
	if existing != nil {
		l.serviceUp = existing.serviceUp
	}
	if in.Status == StatusUp && l.serviceUp.IsZero() {
		l.serviceUp = now
	}
	r.storeLocked(in.App, id, existing, l)
	r.noteRecentLocked(l, now)
	r.registered.add(now, in.App, id)
	r.commitLocked(EventRegister, l, prev, "", true, false)
}

// IsStatic reports whether app/id is a lease-less registration (static or
// imported).
func (r *Registry) IsStatic(app, id string) bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.staticLocked(strings.ToUpper(app), id)
}

// Renewing returns the number of registered instances expected to renew:
// all but the static and imported registrations. Self-preservation's expected clients
// and the eviction limit are computed from it.
func (r *Registry) Renewing() int {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.size - r.staticN
}
