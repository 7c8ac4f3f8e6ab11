package registry

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// ErrNotFound is returned when the addressed lease does not exist.
var ErrNotFound = errors.New("instance not registered")

// ValidationError is a registration Eureka refuses with 400 and a plain-text
// message (ApplicationResource.addInstance).
type ValidationError struct{ Msg string }

func (e *ValidationError) Error() string { return e.Msg }

// EventKind names what happened to an instance.
type EventKind uint8

// The events a Registry reports. Evict is a cancel made by the eviction job:
// it is recorded like a cancel but never replicated.
const (
	EventRegister EventKind = iota + 1
	EventHeartbeat
	EventCancel
	EventStatusUpdate
	EventDeleteStatusOverride
	EventEvict
)

var eventNames = [...]string{"", "Register", "Heartbeat", "Cancel", "StatusUpdate", "DeleteStatusOverride", "Evict"}

func (k EventKind) String() string {
	if int(k) < len(eventNames) {
		return eventNames[k]
	}
	return fmt.Sprintf("EventKind(%d)", k)
}

// Event reports one successful change, after the registry lock is released.
type Event struct {
	Kind EventKind
	App  string
	ID   string
	// Instance is the stored instance after the change; for Cancel and Evict
	// the last stored copy (ActionType DELETED).
	Instance *Instance
	// Prev is the instance's status before the change, "" if it was not
	// registered. Together with Instance.Status (and Kind for removals) it lets
	// listeners keep per-status counts without scanning the registry.
	Prev Status
	// Status is the status the operation asked for: the new status of a
	// StatusUpdate, the status after a DeleteStatusOverride.
	Status Status
	// OverriddenStatus is the override-map entry replicated with a Heartbeat.
	OverriddenStatus Status
	// Replicated is true when the operation came from a peer.
	Replicated bool
}

// Changed reports whether the event changed what a registry read returns
// (everything except a heartbeat that left the status alone).
func (e Event) Changed() bool {
	return e.Kind != EventHeartbeat || e.Prev != e.Instance.Status
}

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
	// IgnoreDirtyTimestamps turns off eureka.server.sync-when-timestamp-differs.
	IgnoreDirtyTimestamps bool
	// LastN is the length of the recently registered and cancelled lists
	// (default 1000).
	LastN int
	// OnEvent, if set, is called synchronously after every successful change.
	OnEvent func(Event)
}

type change struct {
	l  *lease
	at time.Time
}

// Registry is Eureka's instance registry: application -> instance id -> lease.
// All methods are safe for concurrent use.
type Registry struct {
	now     func() time.Time
	selfID  string
	syncTS  bool
	onEvent func(Event)

	mu        sync.RWMutex
	apps      map[string]map[string]*lease // app name (upper case) -> id -> lease
	overrides map[string]Status            // id -> status (overriddenInstanceStatusMap)
	counts    map[Status]int               // instances per status, for apps__hashcode
	size      int
	recent    []change // recently changed queue, oldest first
	expected  int

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
		now:        o.Now,
		selfID:     o.SelfID,
		syncTS:     !o.IgnoreDirtyTimestamps,
		onEvent:    o.OnEvent,
		apps:       make(map[string]map[string]*lease),
		overrides:  make(map[string]Status),
		counts:     make(map[Status]int),
		expected:   o.ExpectedClients,
		registered: ring{max: o.LastN},
		cancelled:  ring{max: o.LastN},
	}
}

func (r *Registry) emit(e Event) {
	if r.onEvent != nil {
		r.onEvent(e)
	}
}

// Validate checks a registration the way ApplicationResource.addInstance
// does, in the same order and with the same messages. pathApp is the
// application name from the URL ("" to skip that check).
func (in *Instance) Validate(pathApp string) error {
	switch {
	case strings.TrimSpace(in.ID()) == "":
		return &ValidationError{"Missing instanceId"}
	case strings.TrimSpace(in.HostName) == "":
		return &ValidationError{"Missing hostname"}
	case strings.TrimSpace(in.IPAddr) == "":
		return &ValidationError{"Missing ip address"}
	case strings.TrimSpace(in.App) == "":
		return &ValidationError{"Missing appName"}
	case pathApp != "" && !strings.EqualFold(pathApp, in.App):
		return &ValidationError{fmt.Sprintf("Mismatched appName, expecting %s but was %s", strings.ToUpper(pathApp), in.App)}
	case strings.TrimSpace(in.DataCenterInfo.Name) == "":
		return &ValidationError{"Missing dataCenterInfo Name"}
	}
	if in.Status != "" {
		if _, ok := ParseStatus(string(in.Status)); !ok {
			return &ValidationError{fmt.Sprintf("Invalid status %q", in.Status)}
		}
	}
	return nil
}

// evalStatus is Eureka's instance status rule chain (DownOrStarting,
// OverrideExists, LeaseExists, AlwaysMatch). Caller holds r.mu.
func (r *Registry) evalStatus(in *Instance, existing *lease, replication bool) Status {
	if in.Status != StatusUp && in.Status != StatusOutOfService {
		return in.Status
	}
	if s, ok := r.overrides[in.ID()]; ok {
		return s
	}
	if !replication && existing != nil {
		if s := existing.inst.Status; s == StatusUp || s == StatusOutOfService {
			return s
		}
	}
	return in.Status
}

// Register stores a registration (AbstractInstanceRegistry.register) and
// returns the stored instance. The registry takes ownership of in. A newer
// stored copy (by LastDirtyTimestamp) wins over the incoming one. It returns
// a *ValidationError for a registration Eureka would refuse.
func (r *Registry) Register(in *Instance, replication bool) (*Instance, error) {
	in.Normalize()
	if err := in.Validate(""); err != nil {
		return nil, err
	}
	now := r.now()
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
	id := in.ID()

	r.mu.Lock()
	group := r.apps[in.App]
	if group == nil {
		group = make(map[string]*lease)
		r.apps[in.App] = group
	}
	existing := group[id]
	var prev Status
	reg := in
	if existing != nil {
		prev = existing.inst.Status
		if existing.inst.LastDirtyTimestamp.After(in.LastDirtyTimestamp) {
			reg = existing.inst.Clone()
			reg.LeaseInfo = in.LeaseInfo
		}
	} else if r.expected > 0 {
		r.expected++
	}
	if reg.OverriddenStatus != "" && reg.OverriddenStatus != StatusUnknown {
		if _, ok := r.overrides[id]; !ok {
			r.overrides[id] = reg.OverriddenStatus
		}
	}
	if s, ok := r.overrides[id]; ok {
		reg.OverriddenStatus = s
	}
	reg.Status = r.evalStatus(reg, existing, replication)
	reg.ActionType = ActionAdded
	reg.LastUpdatedTimestamp = now
	reg.IsCoordinatingDiscoveryServer = r.selfID != "" && id == r.selfID

	l := newLease(reg, now)
	if existing != nil {
		l.serviceUp = existing.serviceUp
		r.counts[existing.inst.Status]--
	} else {
		r.size++
	}
	if reg.Status == StatusUp && l.serviceUp.IsZero() {
		l.serviceUp = now
	}
	group[id] = l
	r.counts[reg.Status]++
	r.recent = append(r.recent, change{l, now})
	r.registered.add(now, reg.App, id)
	r.mu.Unlock()

	r.emit(Event{Kind: EventRegister, App: reg.App, ID: id, Instance: reg, Prev: prev, Replicated: replication})
	return reg, nil
}

// RenewResult is the outcome of Renew, as the HTTP status Eureka answers.
type RenewResult int

// Renew outcomes.
const (
	RenewOK       RenewResult = 200
	RenewNotFound RenewResult = 404 // re-register
	RenewConflict RenewResult = 409 // replication only: the stored copy is newer
)

// RenewRequest is one heartbeat.
type RenewRequest struct {
	App, ID     string
	Replication bool
	// LastDirtyTimestamp is the sender's copy's timestamp; zero if absent.
	LastDirtyTimestamp time.Time
	// OverriddenStatus is sent by peers with a heartbeat; "" if absent.
	OverriddenStatus Status
}

// Renew is a heartbeat (InstanceResource.renewLease with
// AbstractInstanceRegistry.renew). On RenewConflict the stored instance is
// returned for the 409 body.
func (r *Registry) Renew(req RenewRequest) (RenewResult, LeaseView) {
	app := strings.ToUpper(req.App)
	now := r.now()

	r.mu.RLock()
	l := r.apps[app][req.ID]
	if l == nil {
		r.mu.RUnlock()
		return RenewNotFound, LeaseView{}
	}
	in := l.inst
	s := r.evalStatus(in, l, req.Replication)
	override := r.overrides[req.ID]
	if s == StatusUnknown {
		r.mu.RUnlock()
		return RenewNotFound, LeaseView{}
	}
	if s != in.Status {
		// A status correction needs the write lock; rare.
		r.mu.RUnlock()
		return r.renewCorrecting(req, now)
	}
	l.renew(now)
	r.mu.RUnlock()

	r.renews.inc(now)
	r.emit(Event{Kind: EventHeartbeat, App: app, ID: req.ID, Instance: in, Prev: in.Status, OverriddenStatus: override, Replicated: req.Replication})
	return r.checkDirty(app, req, in)
}

// renewCorrecting is Renew when the rule chain changes the stored status.
// Eureka changes it silently; goreka also records a MODIFIED change so that
// clients applying deltas stay in step with apps__hashcode.
func (r *Registry) renewCorrecting(req RenewRequest, now time.Time) (RenewResult, LeaseView) {
	app := strings.ToUpper(req.App)
	r.mu.Lock()
	l := r.apps[app][req.ID]
	if l == nil {
		r.mu.Unlock()
		return RenewNotFound, LeaseView{}
	}
	old := l.inst
	s := r.evalStatus(old, l, req.Replication)
	if s == StatusUnknown {
		r.mu.Unlock()
		return RenewNotFound, LeaseView{}
	}
	in := old
	if s != old.Status {
		in = old.Clone()
		in.Status = s
		in.ActionType = ActionModified
		in.LastUpdatedTimestamp = now
		r.replaceLocked(l, in, now)
	}
	override := r.overrides[req.ID]
	l.renew(now)
	r.mu.Unlock()

	r.renews.inc(now)
	r.emit(Event{Kind: EventHeartbeat, App: app, ID: req.ID, Instance: in, Prev: old.Status, OverriddenStatus: override, Replicated: req.Replication})
	return r.checkDirty(app, req, in)
}

// replaceLocked stores a changed copy of a lease's instance, keeps the status
// counts and records the change for deltas.
func (r *Registry) replaceLocked(l *lease, in *Instance, now time.Time) {
	r.counts[l.inst.Status]--
	r.counts[in.Status]++
	if in.Status == StatusUp && l.serviceUp.IsZero() {
		l.serviceUp = now
	}
	l.inst = in
	r.recent = append(r.recent, change{l, now})
}

// checkDirty is InstanceResource.validateDirtyTimestamp.
func (r *Registry) checkDirty(app string, req RenewRequest, in *Instance) (RenewResult, LeaseView) {
	if req.LastDirtyTimestamp.IsZero() || !r.syncTS {
		return RenewOK, LeaseView{}
	}
	sent, stored := req.LastDirtyTimestamp.UnixMilli(), in.LastDirtyTimestamp.UnixMilli()
	switch {
	case sent == stored:
		return RenewOK, LeaseView{}
	case sent > stored:
		if req.Replication && req.OverriddenStatus != "" && req.OverriddenStatus != StatusUnknown {
			r.storeOverride(app, req.ID, req.OverriddenStatus)
		}
		return RenewNotFound, LeaseView{}
	case req.Replication:
		v, ok := r.Get(app, req.ID)
		if !ok {
			return RenewOK, LeaseView{}
		}
		return RenewConflict, v
	}
	return RenewOK, LeaseView{}
}

// StoreOverride records a peer's status override for an instance, replacing
// this server's (Eureka's storeOverriddenStatusIfRequired, used before
// adopting a peer's newer copy on a 409). It changes the stored copy's
// overriddenStatus, not its status, and emits no event. "" and UNKNOWN are
// ignored.
func (r *Registry) StoreOverride(app, id string, s Status) {
	if s == "" || s == StatusUnknown {
		return
	}
	r.storeOverride(strings.ToUpper(app), id, s)
}

// storeOverride is storeOverriddenStatusIfRequired: a peer's override wins.
func (r *Registry) storeOverride(app, id string, s Status) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if cur, ok := r.overrides[id]; ok && cur == s {
		return
	}
	r.overrides[id] = s
	if l := r.apps[app][id]; l != nil {
		in := l.inst.Clone()
		in.OverriddenStatus = s
		l.inst = in
	}
}

// Cancel removes a lease (internalCancel). It returns ErrNotFound if there
// is none; the cancel is recorded in the recently-cancelled list either way,
// as Eureka does.
func (r *Registry) Cancel(app, id string, replication bool) error {
	return r.cancel(strings.ToUpper(app), id, EventCancel, replication)
}

// ErrNotExpired is returned by EvictExpired when the lease was renewed or replaced
// since the eviction job found it expired.
var ErrNotExpired = errors.New("lease no longer expired")

// Evict removes a lease on behalf of the eviction job. Evictions are recorded
// like cancels and reported as EventEvict, which is not replicated.
func (r *Registry) Evict(app, id string) error {
	return r.cancel(strings.ToUpper(app), id, EventEvict, false)
}

// EvictExpired is Evict after checking again, under the write lock, that the
// lease is still expired at now (plus the job's lateness compensation extra):
// an instance that re-registered or renewed since the job listed it is kept
// (ErrNotExpired).
func (r *Registry) EvictExpired(app, id string, now time.Time, extra time.Duration) error {
	return r.cancel(strings.ToUpper(app), id, EventEvict, false, func(l *lease) bool { return l.expired(now, extra) })
}

func (r *Registry) cancel(app, id string, kind EventKind, replication bool, cond ...func(*lease) bool) error {
	now := r.now()
	r.mu.Lock()
	group := r.apps[app]
	l := group[id]
	if l != nil && len(cond) > 0 && !cond[0](l) {
		r.mu.Unlock()
		return ErrNotExpired
	}
	r.cancelled.add(now, app, id)
	delete(r.overrides, id)
	if l == nil {
		r.mu.Unlock()
		return ErrNotFound
	}
	delete(group, id)
	if len(group) == 0 {
		delete(r.apps, app)
	}
	r.size--
	r.counts[l.inst.Status]--
	if r.expected > 0 {
		r.expected--
	}
	in := l.inst.Clone()
	in.ActionType = ActionDeleted
	in.LastUpdatedTimestamp = now
	l.inst = in
	l.eviction = now
	r.recent = append(r.recent, change{l, now})
	r.mu.Unlock()

	r.emit(Event{Kind: kind, App: app, ID: id, Instance: in, Prev: in.Status, Replicated: replication})
	return nil
}

// StatusUpdate sets a status override (AbstractInstanceRegistry.statusUpdate).
// lastDirty, if not zero, is adopted when newer than the stored one.
func (r *Registry) StatusUpdate(app, id string, s Status, lastDirty time.Time, replication bool) error {
	app = strings.ToUpper(app)
	now := r.now()
	l := r.lockLease(app, id, now)
	if l == nil {
		return ErrNotFound
	}
	old := l.inst
	in := old
	if old.Status != s {
		r.overrides[id] = s
		in = r.modifyLocked(l, s, s, lastDirty, now)
	}
	r.mu.Unlock()

	r.emit(Event{Kind: EventStatusUpdate, App: app, ID: id, Instance: in, Prev: old.Status, Status: s, Replicated: replication})
	return nil
}

// lockLease takes the write lock and renews the lease of app/id, as
// Eureka's statusUpdate and deleteStatusOverride do. It returns nil, with
// the lock released, when there is no such lease; otherwise the caller
// unlocks.
func (r *Registry) lockLease(app, id string, now time.Time) *lease {
	r.mu.Lock()
	l := r.apps[app][id]
	if l == nil {
		r.mu.Unlock()
		return nil
	}
	l.renew(now)
	return l
}

// modifyLocked stores a MODIFIED copy of l's instance with a new status and
// override, adopting lastDirty when it is newer (statusUpdate and
// deleteStatusOverride).
func (r *Registry) modifyLocked(l *lease, status, override Status, lastDirty, now time.Time) *Instance {
	in := l.inst.Clone()
	in.Status = status
	in.OverriddenStatus = override
	if lastDirty.After(in.LastDirtyTimestamp) {
		in.LastDirtyTimestamp = lastDirty
	}
	in.ActionType = ActionModified
	in.LastUpdatedTimestamp = now
	r.replaceLocked(l, in, now)
	return in
}

// DeleteStatusOverride removes an override (deleteStatusOverride) and sets
// the status to s (UNKNOWN when the caller gave none, which makes the next
// heartbeat answer 404 so that the client re-registers its real status).
func (r *Registry) DeleteStatusOverride(app, id string, s Status, lastDirty time.Time, replication bool) error {
	app = strings.ToUpper(app)
	if s == "" {
		s = StatusUnknown
	}
	now := r.now()
	l := r.lockLease(app, id, now)
	if l == nil {
		return ErrNotFound
	}
	old := l.inst
	in := old
	if _, had := r.overrides[id]; had {
		delete(r.overrides, id)
		in = r.modifyLocked(l, s, StatusUnknown, lastDirty, now)
	}
	r.mu.Unlock()

	r.emit(Event{Kind: EventDeleteStatusOverride, App: app, ID: id, Instance: in, Prev: old.Status, Status: s, Replicated: replication})
	return nil
}

// UpdateMetadata merges kv into an instance's metadata and re-registers it
// (InstanceResource.updateMetadata): a new lease, a delta ADDED entry, and a
// Register event that is replicated to peers.
func (r *Registry) UpdateMetadata(app, id string, kv map[string]string) (*Instance, error) {
	app = strings.ToUpper(app)
	r.mu.RLock()
	l := r.apps[app][id]
	var in *Instance
	if l != nil {
		in = l.inst.Clone()
	}
	r.mu.RUnlock()
	if in == nil {
		return nil, ErrNotFound
	}
	if in.Metadata == nil {
		in.Metadata = make(map[string]string, len(kv))
	}
	maps.Copy(in.Metadata, kv)
	return r.Register(in, false)
}

// Get returns one instance with its lease.
func (r *Registry) Get(app, id string) (LeaseView, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	l := r.apps[strings.ToUpper(app)][id]
	if l == nil {
		return LeaseView{}, false
	}
	return l.view(), true
}

// GetByID returns the instance with this id in any application (the first
// application by name when several hold it).
func (r *Registry) GetByID(id string) (LeaseView, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var best *lease
	for name, group := range r.apps {
		if l := group[id]; l != nil && (best == nil || name < best.inst.App) {
			best = l
		}
	}
	if best == nil {
		return LeaseView{}, false
	}
	return best.view(), true
}

// IsExpired reports whether the view's lease has expired at now (plus extra),
// for readers that hide expired leases while lease expiration is enabled.
func (v LeaseView) IsExpired(now time.Time, extra time.Duration) bool {
	if !v.EvictionTimestamp.IsZero() {
		return true
	}
	return now.After(v.LastRenewalTimestamp.Add(v.Duration + extra))
}

// Applications returns the full registry (versions__delta 1).
func (r *Registry) Applications() *Applications {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := &Applications{VersionDelta: 1, HashCode: hashCode(r.counts)}
	out.Apps = make([]Application, 0, len(r.apps))
	for name, group := range r.apps {
		out.Apps = append(out.Apps, applicationOf(name, group))
	}
	slices.SortFunc(out.Apps, func(a, b Application) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

func applicationOf(name string, group map[string]*lease) Application {
	app := Application{Name: name, Instances: make([]LeaseView, 0, len(group))}
	for _, l := range group {
		app.Instances = append(app.Instances, l.view())
	}
	sortViews(app.Instances)
	return app
}

func sortViews(vs []LeaseView) {
	slices.SortFunc(vs, func(a, b LeaseView) int { return cmp.Compare(a.Instance.ID(), b.Instance.ID()) })
}

// Application returns one application; false if it has no instances.
func (r *Registry) Application(name string) (Application, bool) {
	name = strings.ToUpper(name)
	r.mu.RLock()
	defer r.mu.RUnlock()
	group := r.apps[name]
	if len(group) == 0 {
		return Application{}, false
	}
	return applicationOf(name, group), true
}

// Delta returns the instances changed within the retention window, each in
// its current state, with the hash of the whole registry taken under the same
// lock, so a client that applies it reaches exactly that hash. Every call
// takes a new versions__delta (ResponseCacheImpl bumps it per generation).
func (r *Registry) Delta() *Applications {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := &Applications{VersionDelta: r.versionDelta.Add(1), HashCode: hashCode(r.counts)}
	byApp := make(map[string]map[string]*lease)
	for _, c := range r.recent {
		in := c.l.inst
		g := byApp[in.App]
		if g == nil {
			g = make(map[string]*lease)
			byApp[in.App] = g
		}
		g[in.ID()] = c.l
	}
	for name, g := range byApp {
		out.Apps = append(out.Apps, applicationOf(name, g))
	}
	slices.SortFunc(out.Apps, func(a, b Application) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// VIP returns the instances whose vipAddress (secure: secureVipAddress)
// contains name as one of its comma-separated pieces, compared exactly
// (ResponseCacheImpl.getApplicationsForVip). versions__delta is -1 and the
// hash covers only the matched instances, as in Eureka.
func (r *Registry) VIP(name string, secure bool) *Applications {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := &Applications{VersionDelta: -1}
	counts := make(map[Status]int)
	for appName, group := range r.apps {
		var app Application
		for _, l := range group {
			addr := l.inst.VIPAddress
			if secure {
				addr = l.inst.SecureVIPAddress
			}
			if !vipMatches(addr, name) {
				continue
			}
			app.Instances = append(app.Instances, l.view())
			counts[l.inst.Status]++
		}
		if len(app.Instances) > 0 {
			app.Name = appName
			sortViews(app.Instances)
			out.Apps = append(out.Apps, app)
		}
	}
	slices.SortFunc(out.Apps, func(a, b Application) int { return cmp.Compare(a.Name, b.Name) })
	out.HashCode = hashCode(counts)
	return out
}

func vipMatches(addr, name string) bool {
	if addr == "" {
		return false
	}
	for piece := range strings.SplitSeq(addr, ",") {
		if piece == name {
			return true
		}
	}
	return false
}

// StatusOverrides returns a copy of the override map (id -> status).
func (r *Registry) StatusOverrides() map[string]Status {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return maps.Clone(r.overrides)
}

// HashCode returns the registry's apps__hashcode now.
func (r *Registry) HashCode() string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return hashCode(r.counts)
}

// Size returns the number of registered instances.
func (r *Registry) Size() int {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.size
}

// InstanceKey addresses one lease.
type InstanceKey struct{ App, ID string }

// Expired lists the leases expired at now with the eviction job's lateness
// compensation extra (Lease.isExpired(additionalLeaseMs)).
func (r *Registry) Expired(now time.Time, extra time.Duration) []InstanceKey {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var out []InstanceKey
	for app, group := range r.apps {
		for id, l := range group {
			if l.expired(now, extra) {
				out = append(out, InstanceKey{app, id})
			}
		}
	}
	slices.SortFunc(out, func(a, b InstanceKey) int {
		return cmp.Or(cmp.Compare(a.App, b.App), cmp.Compare(a.ID, b.ID))
	})
	return out
}

// PruneRecentlyChanged drops changes older than retention from the head of
// the recently-changed queue (Eureka's delta retention task).
func (r *Registry) PruneRecentlyChanged(retention time.Duration) {
	cutoff := r.now().Add(-retention)
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for n < len(r.recent) && r.recent[n].at.Before(cutoff) {
		n++
	}
	if n > 0 {
		r.recent = slices.Delete(r.recent, 0, n)
	}
}

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
