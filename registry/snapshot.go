package registry

import (
	"cmp"
	"maps"
	"slices"
)

// Snapshot is the registry state worth keeping across a restart: every
// lease's instance and lease timings, and the status override map. The
// recently-changed queue, the counters and the renewal times are not part of
// it: a restored registry starts with fresh leases and an empty delta.
type Snapshot struct {
	// Instances are sorted by application, then instance id. Only Instance,
	// RegistrationTimestamp, ServiceUpTimestamp, RenewalInterval and
	// Duration are state; LastRenewalTimestamp is informative (Export fills
	// it, Restore ignores it).
	Instances []LeaseView
	// Overrides is the override map, id -> status.
	Overrides map[string]Status
}

// Export returns the registry's state. The instances are the stored,
// immutable values, not copies: callers must not modify them.
func (r *Registry) Export() Snapshot {
	r.mu.RLock()
	s := Snapshot{Instances: make([]LeaseView, 0, r.size), Overrides: maps.Clone(r.overrides)}
	for _, group := range r.apps {
		for _, l := range group {
			if l.static && l.source == "" {
				continue // the configuration brings it back
			}
			v := l.view()
			if l.own != nil {
				// goreka's own DOWN (MarkDown) is not the instance's state: a
				// restarted server judges again.
				v.Instance, v.DownBy = l.own, 0
			}
			s.Instances = append(s.Instances, v)
		}
	}
	r.mu.RUnlock()
	// Sorting after the unlock keeps writers waiting only for the copy.
	slices.SortFunc(s.Instances, func(a, b LeaseView) int {
		return cmp.Or(cmp.Compare(a.Instance.App, b.Instance.App), cmp.Compare(a.Instance.ID(), b.Instance.ID()))
	})
	return s
}

// SameState reports whether s holds the same registry state as prev, both
// taken by Export from one registry. The registry never mutates a stored
// instance, and every change (a registration, a status change, a cancel)
// stores a new one, so instances compare by identity and the check costs
// O(n) pointer comparisons. Renewals are not state and are ignored. A
// snapshot read from a file never matches an exported one.
func (s Snapshot) SameState(prev Snapshot) bool {
	if len(s.Instances) != len(prev.Instances) || !maps.Equal(s.Overrides, prev.Overrides) {
		return false
	}
	for i := range s.Instances {
		a, b := &s.Instances[i], &prev.Instances[i]
		if a.Instance != b.Instance || a.Duration != b.Duration || a.RenewalInterval != b.RenewalInterval ||
			!a.RegistrationTimestamp.Equal(b.RegistrationTimestamp) || !a.ServiceUpTimestamp.Equal(b.ServiceUpTimestamp) {
			return false
		}
	}
	return true
}

// Restore loads a snapshot into the registry before it serves, and returns
// the number of instances loaded. Each instance gets a fresh lease at Now
// with its own duration, as if it had just registered (so an instance that
// never renews again expires one lease duration after the restore), but
// keeps its registration and service-up times. Overrides are kept. The
// recently-changed queue is left alone, the expected-clients count too (the
// caller's openForTraffic sets it), and nothing is replicated.
//
// Restore reports each loaded instance as an EventRegister with FromPeer
// true, exactly like a start-up sync from a peer, so listeners that keep
// derived state (cache, per-status counts) see it and replication ignores
// it. Instances that fail Validate, and ids already registered (a live
// registration wins over the snapshot), are skipped; overrides already set
// are kept. Restore copies the instances it stores: s is not modified.
func (r *Registry) Restore(s Snapshot) int {
	now := r.now()
	n := 0
	r.mu.Lock()
	for i := range s.Instances {
		v := &s.Instances[i]
		if v.Instance == nil {
			continue
		}
		in := v.Instance.Clone()
		in.Normalize()
		if in.Validate("") != nil || in.Metadata[MetaSource] != "" && !r.keepImp {
			continue
		}
		id := in.ID()
		group := r.apps[in.App]
		if group[id] != nil {
			continue
		}
		if r.maxN > 0 && r.size >= r.maxN {
			// Options.MaxInstances holds for a restored registry too (a
			// snapshot written under a higher limit); the rest re-register.
			break
		}
		in.IsCoordinatingDiscoveryServer = r.selfID != "" && id == r.selfID
		in.LeaseInfo = LeaseInfo{RenewalInterval: v.RenewalInterval, Duration: v.Duration}.WithDefaults()
		l := &lease{inst: in, registered: v.RegistrationTimestamp, serviceUp: v.ServiceUpTimestamp}
		if l.registered.IsZero() {
			l.registered = now
		}
		if in.Status == StatusUp && l.serviceUp.IsZero() {
			l.serviceUp = now
		}
		l.lastUpdate.Store(now.UnixNano())
		l.beat.Store(now.UnixNano())
		if src := in.Metadata[MetaSource]; src != "" {
			// Imported: lease-less again until its importer reconciles
			// (none: the instance is not restored, see the loop's top).
			l.static, l.source = true, src
			r.imported[InstanceKey{in.App, id}] = in
		}
		r.placeLocked(in.App, id, nil, l)
		r.commitLocked(EventRegister, l, "", "", true, true)
		n++
	}
	for id, st := range s.Overrides {
		if _, ok := ParseStatus(string(st)); !ok {
			continue
		}
		if _, ok := r.overrides[id]; !ok {
			r.overrides[id] = st
		}
	}
	r.mu.Unlock()
	r.deliver()
	return n
}
