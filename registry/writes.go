package registry

import (
	"maps"
	"strings"
	"time"
)

// commitLocked gives a change its revision, stamps it on the lease when the
// stored state changed, and queues the event. The caller holds the write
// lock and calls deliver after releasing it.
func (r *Registry) commitLocked(kind EventKind, l *lease, prev, asked Status, changed, fromPeer bool) {
	r.rev++
	in := l.inst
	if changed {
		l.rev = r.rev
		r.appRev[in.App] = r.rev
	}
	e := Event{Revision: r.rev, Kind: kind, App: in.App, ID: in.ID(), Lease: l.view(), Prev: prev,
		Status: asked, Changed: changed, FromPeer: fromPeer}
	r.pendMu.Lock()
	r.pending = append(r.pending, e)
	r.pendMu.Unlock()
	r.committed.Store(r.rev)
}

// prepare normalises and validates a registration outside the lock and
// fills what the registry derives from it.
func (r *Registry) prepare(pathApp string, in *Instance, now time.Time) error {
	in.Normalize()
	if err := in.Validate(pathApp); err != nil {
		return err
	}
	if in.LastDirtyTimestamp.IsZero() {
		// Milliseconds, as on the wire: a copy that comes back from a peer
		// with the same timestamp must compare equal, not older.
		in.LastDirtyTimestamp = now.Truncate(time.Millisecond)
	}
	if in.DataCenterInfo.Name == DataCenterAmazon && in.DataCenterInfo.Metadata["instance-id"] == "" {
		if in.DataCenterInfo.Metadata == nil {
			in.DataCenterInfo.Metadata = map[string]string{}
		}
		in.DataCenterInfo.Metadata["instance-id"] = in.ID()
	}
	in.LeaseInfo = in.LeaseInfo.WithDefaults()
	return nil
}

// Register stores a registration (AbstractInstanceRegistry.register) and
// returns the stored instance. The registry takes ownership of in. A newer
// stored copy (by LastDirtyTimestamp) wins over the incoming one. It returns
// a *ValidationError for a registration Eureka would refuse.
func (r *Registry) Register(in *Instance, fromPeer bool) (*Instance, error) {
	return r.RegisterFor("", in, fromPeer)
}

// RegisterFor is Register for a request that addressed the application
// pathApp (the URL of POST /apps/{app}, a replication item's appName): an
// instance of another application is refused with Eureka's message.
func (r *Registry) RegisterFor(pathApp string, in *Instance, fromPeer bool) (*Instance, error) {
	now := r.now()
	if err := r.prepare(pathApp, in, now); err != nil {
		return nil, err
	}
	if err := reservedMeta(in.Metadata); err != nil {
		return nil, err
	}
	r.mu.Lock()
	if err := r.ownedLocked(in.App, in.ID()); err != nil {
		r.mu.Unlock()
		return nil, err
	}
	if r.maxN > 0 && r.size >= r.maxN && r.apps[in.App][in.ID()] == nil {
		r.mu.Unlock()
		return nil, &LimitError{Max: r.maxN}
	}
	reg := r.registerLocked(in, fromPeer, now)
	r.mu.Unlock()
	r.deliver()
	return reg, nil
}

// registerLocked is the body of register for a prepared instance.
func (r *Registry) registerLocked(in *Instance, fromPeer bool, now time.Time) *Instance {
	id := in.ID()
	existing := r.apps[in.App][id]
	var prev Status
	reg := in
	if existing != nil {
		prev = existing.inst.Status
		// Compare with, and keep, the instance's own copy: goreka's DOWN
		// (MarkDown) is not the instance's state.
		if own := existing.ownInst(); own.LastDirtyTimestamp.After(in.LastDirtyTimestamp) {
			reg = own.Clone()
			reg.LeaseInfo = in.LeaseInfo
		}
	}
	if reg.OverriddenStatus != "" && reg.OverriddenStatus != StatusUnknown {
		if _, ok := r.overrides[id]; !ok {
			r.overrides[id] = reg.OverriddenStatus
		}
	}
	if s, ok := r.overrides[id]; ok {
		reg.OverriddenStatus = s
	}
	reg.Status = r.evalStatus(reg, existing, fromPeer)
	reg.ActionType = ActionAdded
	reg.LastUpdatedTimestamp = now
	reg.IsCoordinatingDiscoveryServer = r.selfID != "" && id == r.selfID

	// The prober's verdict outlives a re-registration (MarkDown); a
	// registration ends a hold: the instance is alive.
	var down DownCause
	var own *Instance
	if existing != nil {
		down = existing.down &^ DownByHeld
	}
	if down != 0 && reg.Status == StatusUp && !r.operatorOverride(id) {
		own = reg
		reg = reg.Clone()
		reg.Status = StatusDown
	}
	l := newLease(reg, now)
	l.down, l.own = down, own
	if existing != nil {
		l.serviceUp = existing.serviceUp
	}
	if reg.Status == StatusUp && l.serviceUp.IsZero() {
		l.serviceUp = now
	}
	if !fromPeer {
		l.direct.Store(now.UnixNano())
	}
	r.storeLocked(in.App, id, existing, l)
	r.noteRecentLocked(l, now)
	r.registered.add(now, reg.App, id)
	r.commitLocked(EventRegister, l, prev, "", true, fromPeer)
	return reg
}

// Adopt stores a peer's copy of an instance after the peer answered a
// heartbeat with 409 (Eureka's syncInstancesIfTimestampDiffers): the peer's
// override replaces ours first, so that the rule chain applies it, then the
// copy is registered as a peer's. Nothing is replicated. With
// IgnoreDirtyTimestamps it does nothing: this server does not compare
// copies.
//
// ifRevision, when not 0, is the revision of the local lease the refused
// heartbeat was sent for (Renewal.Revision): if the lease is gone or has
// changed since (a cancel, an override removal still on its way to the
// peer), the peer's answer is about a copy that no longer exists here, and
// adopting it would undo the newer change; Adopt then does nothing.
// Eureka registers the peer's copy unconditionally.
func (r *Registry) Adopt(v LeaseView, ifRevision int64) error {
	if !r.syncTS || v.Instance == nil {
		return nil
	}
	in := v.Instance.Clone()
	in.LeaseInfo = LeaseInfo{RenewalInterval: v.RenewalInterval, Duration: v.Duration}
	now := r.now()
	if err := r.prepare("", in, now); err != nil {
		return err
	}
	if err := reservedMeta(in.Metadata); err != nil {
		return err
	}
	r.mu.Lock()
	if err := r.ownedLocked(in.App, in.ID()); err != nil {
		r.mu.Unlock()
		return err
	}
	if ifRevision != 0 {
		if l := r.apps[in.App][in.ID()]; l == nil || l.rev != ifRevision {
			r.mu.Unlock()
			return nil
		}
	}
	if s := in.OverriddenStatus; s != "" && s != StatusUnknown {
		r.overrides[in.ID()] = s
	}
	r.registerLocked(in, true, now)
	r.mu.Unlock()
	r.deliver()
	return nil
}

// checkKey refuses an operation that does not name its instance (a
// replication item without appName or id).
func checkKey(app, id string) error {
	if app == "" || id == "" {
		return invalid("missing application name or instance id (app %q, id %q)", app, id)
	}
	return nil
}

// RenewRequest is one heartbeat.
type RenewRequest struct {
	App, ID  string
	FromPeer bool
	// LastDirtyTimestamp is the sender's copy's timestamp; zero if absent.
	LastDirtyTimestamp time.Time
	// OverriddenStatus is sent by peers with a heartbeat; "" if absent.
	OverriddenStatus Status
}

// Renew is a heartbeat (InstanceResource.renewLease with
// AbstractInstanceRegistry.renew). It returns nil, ErrNotFound (no lease, or
// the rule chain says UNKNOWN: the client registers again), ErrNewerCopy, or
// a *ConflictError with the stored copy for a peer whose copy is older.
func (r *Registry) Renew(req RenewRequest) error {
	if err := checkKey(req.App, req.ID); err != nil {
		return err
	}
	app := strings.ToUpper(req.App)
	now := r.now()
	r.mu.RLock()
	rn, step := r.renewLocked(app, &req, now)
	r.mu.RUnlock()
	if step == renewDone {
		r.renews.inc(now)
	}
	return r.renewFinish(app, &req, &rn, step, now)
}

// renewStep is what the read-locked part of a heartbeat decided.
type renewStep uint8

const (
	renewDone    renewStep = iota // renewed: count it, tell the listeners, check the dirty timestamp
	renewStatic                   // a static lease: found, nothing to renew, nothing to count or send on
	renewMissing                  // no lease, or the rule chain says UNKNOWN: ErrNotFound
	renewCorrect                  // the status is corrected or a hold ends: renewCorrecting, under the write lock
)

// renewLocked is the part of a heartbeat done under the read lock, which
// the caller holds (Renew, RenewAll): the lease looked up, the rule chain,
// the lease renewed when that changes nothing else. rn is the renewal the
// listeners get when step is renewDone.
func (r *Registry) renewLocked(app string, req *RenewRequest, now time.Time) (rn Renewal, step renewStep) {
	l := r.apps[app][req.ID]
	if l == nil {
		return rn, renewMissing
	}
	if l.static {
		return rn, renewStatic
	}
	in := l.inst
	// The lease is stored under its instance's id, so req.ID is in.ID():
	// one lookup for the rule chain and the renewal's override.
	override, hasOverride := r.overrides[req.ID]
	s := r.evalStatusWith(in, l, req.FromPeer, override, hasOverride)
	if s == StatusUnknown {
		return rn, renewMissing
	}
	if s != in.Status || l.down&DownByHeld != 0 {
		// A status correction, or the end of a hold, needs the write lock;
		// rare.
		return rn, renewCorrect
	}
	l.renew(now)
	if !req.FromPeer {
		l.direct.Store(now.UnixNano())
	}
	return Renewal{App: app, ID: req.ID, Instance: in, OverriddenStatus: override, FromPeer: req.FromPeer, Revision: l.rev}, renewDone
}

// renewFinish is the rest of a heartbeat after renewLocked, outside the
// registry's locks; a renewDone heartbeat has been counted by the caller.
func (r *Registry) renewFinish(app string, req *RenewRequest, rn *Renewal, step renewStep, now time.Time) error {
	switch step {
	case renewStatic:
		return nil
	case renewMissing:
		return ErrNotFound
	case renewCorrect:
		return r.renewCorrecting(app, *req, now)
	}
	r.renewed(*rn)
	return r.checkDirty(app, *req, rn.Instance)
}

// renewCorrecting is Renew when the rule chain changes the stored status.
// Eureka changes it silently; goreka records a MODIFIED change (and an
// EventStatusCorrected) so that clients applying deltas stay in step with
// apps__hashcode. A heartbeat also ends a hold (DownByHeld): the lease is
// alive again.
func (r *Registry) renewCorrecting(app string, req RenewRequest, now time.Time) error {
	r.mu.Lock()
	l := r.apps[app][req.ID]
	if l == nil {
		r.mu.Unlock()
		return ErrNotFound
	}
	if l.down&DownByHeld != 0 {
		l.down &^= DownByHeld
		prev := l.inst.Status
		if r.applyDownLocked(l, now) {
			r.commitLocked(EventHeldStatus, l, prev, l.inst.Status, true, req.FromPeer)
		}
	}
	old := l.inst
	s := r.evalStatus(old, l, req.FromPeer)
	if s == StatusUnknown {
		r.mu.Unlock()
		return ErrNotFound
	}
	in := old
	if s != old.Status {
		in = old.Clone()
		in.Status = s
		in.ActionType = ActionModified
		in.LastUpdatedTimestamp = now
		r.replaceLocked(l, in, now)
		r.commitLocked(EventStatusCorrected, l, old.Status, "", true, req.FromPeer)
	}
	override := r.overrides[req.ID]
	rev := l.rev
	l.renew(now)
	if !req.FromPeer {
		l.direct.Store(now.UnixNano())
	}
	r.mu.Unlock()
	r.deliver()

	r.renews.inc(now)
	r.renewed(Renewal{App: app, ID: req.ID, Instance: in, OverriddenStatus: override, FromPeer: req.FromPeer, Revision: rev})
	return r.checkDirty(app, req, in)
}

// replaceLocked stores a changed copy of a lease's instance, keeps the status
// counts and records the change for deltas.
func (r *Registry) replaceLocked(l *lease, in *Instance, now time.Time) {
	if l.inst.Status != in.Status {
		r.countLocked(l.inst.App, l.inst.Status, -1)
		r.countLocked(l.inst.App, in.Status, 1)
	}
	if in.Status == StatusUp && l.serviceUp.IsZero() {
		l.serviceUp = now
	}
	l.inst = in
	r.noteRecentLocked(l, now)
}

// checkDirty answers a renewed heartbeat by the dirty-timestamp policy.
func (r *Registry) checkDirty(app string, req RenewRequest, in *Instance) error {
	switch r.compareDirty(req.LastDirtyTimestamp, req.FromPeer, in) {
	case dirtyNewer:
		if req.FromPeer && req.OverriddenStatus != "" && req.OverriddenStatus != StatusUnknown {
			r.storeOverride(app, req.ID, req.OverriddenStatus)
		}
		return ErrNewerCopy
	case dirtyOlder:
		if v, ok := r.Get(app, req.ID); ok {
			return &ConflictError{Stored: v}
		}
	}
	return nil
}

// storeOverride is storeOverriddenStatusIfRequired: a peer's override wins.
// The stored copy's overriddenStatus changes, its status does not.
func (r *Registry) storeOverride(app, id string, s Status) {
	r.mu.Lock()
	if cur, ok := r.overrides[id]; ok && cur == s {
		r.mu.Unlock()
		return
	}
	r.overrides[id] = s
	if l := r.apps[app][id]; l != nil {
		in := l.inst.Clone()
		in.OverriddenStatus = s
		l.inst = in
		if l.own != nil {
			own := l.own.Clone()
			own.OverriddenStatus = s
			l.own = own
		}
		r.commitLocked(EventOverrideStored, l, in.Status, s, true, true)
	}
	r.mu.Unlock()
	r.deliver()
}

// Cancel removes a lease (internalCancel). It returns ErrNotFound if there
// is none; the cancel is recorded in the recently-cancelled list either way,
// as Eureka does.
func (r *Registry) Cancel(app, id string, fromPeer bool) error {
	return r.cancel(strings.ToUpper(app), id, EventCancel, fromPeer, nil)
}

// Evict removes a lease on behalf of the eviction job. Evictions are recorded
// like cancels and reported as EventEvict, which is not replicated.
func (r *Registry) Evict(app, id string) error {
	return r.cancel(strings.ToUpper(app), id, EventEvict, false, nil)
}

// EvictExpired is Evict after checking again, under the write lock, that the
// lease is still expired at now (plus the job's lateness compensation extra):
// an instance that re-registered or renewed since the job listed it is kept
// (ErrNotExpired).
func (r *Registry) EvictExpired(app, id string, now time.Time, extra time.Duration) error {
	return r.cancel(strings.ToUpper(app), id, EventEvict, false, func(l *lease) bool { return l.expired(now, extra) })
}

func (r *Registry) cancel(app, id string, kind EventKind, fromPeer bool, cond func(*lease) bool) error {
	if err := checkKey(app, id); err != nil {
		return err
	}
	now := r.now()
	r.mu.Lock()
	group := r.apps[app]
	l := group[id]
	if l != nil && cond != nil && !cond(l) {
		r.mu.Unlock()
		return ErrNotExpired
	}
	if l != nil && l.static {
		r.mu.Unlock()
		return errOwned(app, id, l.source)
	}
	if l == nil {
		r.cancelled.add(now, app, id)
		delete(r.overrides, id)
		r.mu.Unlock()
		return ErrNotFound
	}
	r.removeLocked(app, id, l, kind, fromPeer, now)
	r.mu.Unlock()
	r.deliver()
	return nil
}

// storeLocked stores l under app/id in place of old (old nil: a new key;
// l nil: the key is removed) and keeps the registry's tallies in step
// (placeLocked), plus the expected clients behind self-preservation's
// threshold, which grows by one for a new instance expected to renew and
// shrinks by one for one no longer expected (removed, or taken over by a
// static registration), and only while it is positive, as
// AbstractInstanceRegistry.register and cancel do. Every registration, static
// one and removal goes through it. The caller holds the write lock.
func (r *Registry) storeLocked(app, id string, old, l *lease) {
	r.placeLocked(app, id, old, l)
	wasRenewing, renewing := old != nil && !old.static, l != nil && !l.static
	if r.expected > 0 && wasRenewing != renewing {
		if renewing {
			r.expected++
		} else {
			r.expected--
		}
	}
}

// placeLocked is storeLocked without the expected clients: the map, the
// per-status counts behind apps__hashcode, the size and the static count.
// Restore uses it alone, since a restored registry's expected clients are
// set when it opens for traffic (eviction.OpenAfterStartup), from the count.
// The caller holds the write lock.
func (r *Registry) placeLocked(app, id string, old, l *lease) {
	group := r.apps[app]
	if l == nil {
		delete(group, id)
		if len(group) == 0 {
			delete(r.apps, app)
		}
	} else {
		if group == nil {
			group = make(map[string]*lease)
			r.apps[app] = group
		}
		group[id] = l
	}
	switch {
	case old != nil && l != nil:
		// A re-registration: counted again only when its status moved, so
		// the common one (same status) touches no count map.
		if old.inst.Status != l.inst.Status {
			r.countLocked(app, old.inst.Status, -1)
			r.countLocked(app, l.inst.Status, 1)
		}
	case old != nil:
		r.countLocked(app, old.inst.Status, -1)
		r.size--
	default:
		r.countLocked(app, l.inst.Status, 1)
		r.size++
	}
	if old != nil && old.static {
		r.staticN--
	}
	if l != nil && l.static {
		r.staticN++
	}
}

// countLocked adds d instances of app in status st to the per-status
// counts behind apps__hashcode and to the application's (AppStatusCounts).
// The caller holds the write lock.
func (r *Registry) countLocked(app string, st Status, d int) {
	r.counts[st] += d
	c := r.appCounts[app]
	if c == nil {
		c = make(map[Status]int, 1)
		r.appCounts[app] = c
	}
	if c[st] += d; c[st] == 0 {
		delete(c, st)
		if len(c) == 0 {
			delete(r.appCounts, app)
		}
	}
}

// removeLocked removes a stored lease and records the removal. Caller holds
// the write lock and delivers after unlocking.
func (r *Registry) removeLocked(app, id string, l *lease, kind EventKind, fromPeer bool, now time.Time) {
	r.cancelled.add(now, app, id)
	delete(r.overrides, id)
	r.storeLocked(app, id, l, nil)
	// A shallow copy: the removed copy shares the stored one's metadata
	// maps, which neither changes (stored instances are immutable); the
	// recently-changed queue keeps it for the retention, and at the end of
	// a burst of registrations and cancels that is one per instance.
	c := *l.inst
	in := &c
	in.ActionType = ActionDeleted
	in.LastUpdatedTimestamp = now
	l.inst = in
	l.eviction = now
	r.noteRecentLocked(l, now)
	r.commitLocked(kind, l, in.Status, "", true, fromPeer)
}

// StatusUpdate sets a status override (AbstractInstanceRegistry.statusUpdate).
// lastDirty, if not zero, is adopted when newer than the stored one. As in
// Eureka, an update to the status the instance already has changes nothing
// (not even the override map) but succeeds, and is still an event.
func (r *Registry) StatusUpdate(app, id string, s Status, lastDirty time.Time, fromPeer bool) error {
	l, now, err := r.lockStatusChange(app, id, s)
	if err != nil {
		return err
	}
	old := l.inst
	// Compared with the instance's own status: an operator's DOWN over
	// goreka's own DOWN (MarkDown) is still an override to store.
	changed := l.ownInst().Status != s
	if changed {
		r.overrides[id] = s
		r.modifyLocked(l, s, s, lastDirty, now)
	}
	r.commitLocked(EventStatusUpdate, l, old.Status, s, changed, fromPeer)
	r.mu.Unlock()
	r.deliver()
	return nil
}

// lockStatusChange validates a status update or override removal, takes
// the write lock and renews the lease of app/id, as Eureka's statusUpdate
// and deleteStatusOverride do. On success the caller holds the write lock
// and unlocks; on an error the lock is not held.
func (r *Registry) lockStatusChange(app, id string, s Status) (*lease, time.Time, error) {
	if _, ok := ParseStatus(string(s)); !ok {
		return nil, time.Time{}, invalid("invalid status %q: one of UP, DOWN, STARTING, OUT_OF_SERVICE, UNKNOWN", s)
	}
	if err := checkKey(app, id); err != nil {
		return nil, time.Time{}, err
	}
	now := r.now()
	r.mu.Lock()
	l := r.apps[strings.ToUpper(app)][id]
	if l == nil {
		r.mu.Unlock()
		return nil, now, ErrNotFound
	}
	l.renew(now)
	return l, now, nil
}

// modifyLocked stores a MODIFIED copy of l's instance with a new status and
// override, adopting lastDirty when it is newer (statusUpdate and
// deleteStatusOverride).
func (r *Registry) modifyLocked(l *lease, status, override Status, lastDirty, now time.Time) {
	in := l.inst.Clone()
	in.Status = status
	in.OverriddenStatus = override
	if lastDirty.After(in.LastDirtyTimestamp) {
		in.LastDirtyTimestamp = lastDirty
	}
	in.ActionType = ActionModified
	in.LastUpdatedTimestamp = now
	r.replaceLocked(l, in, now)
	// The status is now the operator's (or the one asked for): goreka's own
	// copy is void, MarkDown's causes decide again (applyDownLocked).
	l.own = nil
}

// DeleteStatusOverride removes an override (deleteStatusOverride) and sets
// the status to s (UNKNOWN when the caller gave none, which makes the next
// heartbeat answer 404 so that the client re-registers its real status).
// Without an override it changes nothing but succeeds, as in Eureka.
func (r *Registry) DeleteStatusOverride(app, id string, s Status, lastDirty time.Time, fromPeer bool) error {
	if s == "" {
		s = StatusUnknown
	}
	l, now, err := r.lockStatusChange(app, id, s)
	if err != nil {
		return err
	}
	old := l.inst
	_, had := r.overrides[id]
	if had {
		delete(r.overrides, id)
		r.modifyLocked(l, s, StatusUnknown, lastDirty, now)
		// Without the override, goreka's own DOWN applies again.
		r.applyDownLocked(l, now)
	}
	r.commitLocked(EventDeleteStatusOverride, l, old.Status, s, had, fromPeer)
	r.mu.Unlock()
	r.deliver()
	return nil
}

// UpdateMetadata merges kv into an instance's metadata and re-registers it
// (InstanceResource.updateMetadata): a new lease, a delta ADDED entry, and a
// Register event that is replicated to peers. Read, merge and store happen
// under one lock, so concurrent updates never lose each other's keys and a
// cancel in between is never undone.
func (r *Registry) UpdateMetadata(app, id string, kv map[string]string) (*Instance, error) {
	for k := range kv {
		if k == "" {
			return nil, invalid("empty metadata key")
		}
	}
	if err := reservedMeta(kv); err != nil {
		return nil, err
	}
	app = strings.ToUpper(app)
	now := r.now()
	r.mu.Lock()
	l := r.apps[app][id]
	if l == nil {
		r.mu.Unlock()
		return nil, ErrNotFound
	}
	if l.static {
		r.mu.Unlock()
		return nil, errOwned(app, id, l.source)
	}
	in := l.inst.Clone()
	if in.Metadata == nil {
		in.Metadata = make(map[string]string, len(kv))
	}
	maps.Copy(in.Metadata, kv)
	reg := r.registerLocked(in, false, now)
	r.mu.Unlock()
	r.deliver()
	return reg, nil
}
