package registry

import (
	"fmt"
	"sync"
)

// EventKind names what happened to an instance.
type EventKind uint8

// The changes a Registry reports. Evict is a cancel made by the eviction
// job: recorded like a cancel but never replicated. StatusCorrected is a
// renew whose rule chain changed the stored status (also not replicated:
// the heartbeat itself is, and the peer applies the same rules).
// OverrideStored is a peer's override adopted without a status change
// (Eureka's storeOverriddenStatusIfRequired).
const (
	EventRegister EventKind = iota + 1
	EventCancel
	EventEvict
	EventStatusUpdate
	EventDeleteStatusOverride
	EventStatusCorrected
	EventOverrideStored
	// EventProbeStatus is the health prober's verdict set or lifted
	// (MarkDown with DownByProbe). It is replicated as a registration of
	// the instance with Event.Status, so that peers serve the prober's
	// opinion as a plain status.
	EventProbeStatus
	// EventHeldStatus is a lease held back by self-preservation served as
	// DOWN, or back to UP (MarkDown with DownByHeld, or the heartbeat that
	// ends it). Every server decides it on its own: never replicated.
	EventHeldStatus
)

var eventNames = [...]string{"", "Register", "Cancel", "Evict", "StatusUpdate", "DeleteStatusOverride", "StatusCorrected", "OverrideStored", "ProbeStatus", "HeldStatus"}

func (k EventKind) String() string {
	if int(k) < len(eventNames) {
		return eventNames[k]
	}
	return fmt.Sprintf("EventKind(%d)", k)
}

// Removal reports whether the kind removes the instance.
func (k EventKind) Removal() bool { return k == EventCancel || k == EventEvict }

// Event is one change, delivered in revision order (see the package doc).
type Event struct {
	// Revision is the registry's revision after this change.
	Revision int64
	Kind     EventKind
	App, ID  string
	// Lease is the stored lease after the change; for Cancel and Evict the
	// last stored copy (Instance.ActionType DELETED, EvictionTimestamp set).
	Lease LeaseView
	// Prev is the status before the change, "" if the instance was not
	// registered. With Lease.Instance.Status (and Kind for removals) it
	// lets listeners keep per-status counts without scanning the registry.
	Prev Status
	// Status is the status the operation asked for: the new status of a
	// StatusUpdate, the status after a DeleteStatusOverride (UNKNOWN when
	// the caller named none), the prober's opinion of a ProbeStatus (DOWN,
	// or the instance's own status once lifted). Peers are sent this value.
	Status Status
	// Changed is false for an operation that succeeded without changing
	// what a read returns (a status update to the status the instance
	// already has, removing an override there is none of). Eureka still
	// replicates those, and so does goreka; caches can skip them.
	Changed bool
	// FromPeer is true when the change came from a peer (replication, the
	// start-up sync, a peer's copy adopted after a 409) or from a restored
	// snapshot: such changes are never replicated again.
	FromPeer bool
}

// Instance is the stored instance after the change (Lease.Instance).
func (e *Event) Instance() *Instance { return e.Lease.Instance }

// Renewal is one heartbeat that found its lease (Options.OnRenew).
type Renewal struct {
	App, ID string
	// Instance is the stored instance at the renew.
	Instance *Instance
	// OverriddenStatus is the override-map entry, sent to peers with the
	// heartbeat; "" if there is none.
	OverriddenStatus Status
	FromPeer         bool
	// Revision is the revision of the lease's last change at the renew.
	// Heartbeats are not ordered with changes (they run concurrently under
	// the read lock): a listener that must not let a heartbeat overtake the
	// change it saw compares this with the last revision it handled.
	Revision int64
}

// LaggedError ends a Subscription whose consumer fell behind by more than
// its buffer. Revision is the last revision it received: the consumer takes
// a consistent view (at a revision of its own) and subscribes again.
type LaggedError struct{ Revision int64 }

func (e *LaggedError) Error() string {
	return fmt.Sprintf("subscriber fell behind after revision %d: resynchronise", e.Revision)
}

// Subscription is a bounded, ordered feed of the changes after its start
// revision. Events is closed when the subscription ends; Err then says why.
type Subscription struct {
	r     *Registry
	start int64
	c     chan Event

	mu   sync.Mutex
	last int64 // last revision sent, guarded by the registry's delivery lock
	err  error
	done bool
}

// Start is the revision the subscription started after: it receives every
// change with a higher revision.
func (s *Subscription) Start() int64 { return s.start }

// Events returns the feed. It is closed when the subscription ends.
func (s *Subscription) Events() <-chan Event { return s.c }

// Err returns nil while the subscription runs (and after Close), or a
// *LaggedError once it was ended for falling behind.
func (s *Subscription) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Close ends the subscription. It is safe to call more than once and
// concurrently with delivery.
func (s *Subscription) Close() {
	s.r.deliverMu.Lock()
	defer s.r.deliverMu.Unlock()
	s.r.endLocked(s, nil)
}

// Subscribe starts a feed of every change after the current revision,
// buffered up to buffer events (at least 1). It never slows writers: a
// subscriber whose buffer is full when a change is delivered is ended with
// a *LaggedError. To start from a consistent view, subscribe first and then
// read (Applications().Revision): skip the events at or below the view's
// revision.
func (r *Registry) Subscribe(buffer int) *Subscription {
	s := &Subscription{r: r, c: make(chan Event, max(buffer, 1))}
	r.deliverMu.Lock()
	defer r.deliverMu.Unlock()
	r.mu.RLock()
	s.start = r.rev
	r.mu.RUnlock()
	s.last = s.start
	r.subs = append(r.subs, s)
	return s
}

// endLocked removes s from the subscribers and closes its feed. The caller
// holds r.deliverMu.
func (r *Registry) endLocked(s *Subscription, err error) {
	s.mu.Lock()
	if s.done {
		s.mu.Unlock()
		return
	}
	s.done, s.err = true, err
	s.mu.Unlock()
	for i, x := range r.subs {
		if x == s {
			r.subs = append(r.subs[:i], r.subs[i+1:]...)
			break
		}
	}
	close(s.c)
}

// Revision returns the revision of the last change (0 for a registry that
// never changed).
func (r *Registry) Revision() int64 {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.rev
}

// deliver hands the pending changes to the listeners in revision order. The
// caller must not hold r.mu. Whoever holds the delivery lock delivers for
// everyone; a writer that returns from deliver knows that its own change,
// queued before the call, has been delivered.
func (r *Registry) deliver() {
	// Everything committed before this call, the caller's own change
	// included, is delivered when it returns; what is committed meanwhile
	// is its writers' to deliver, so no writer delivers for others without
	// bound under a steady stream of writes.
	upTo := r.committed.Load()
	if r.delivered.Load() >= upTo {
		return
	}
	r.deliverMu.Lock()
	defer r.deliverMu.Unlock()
	var failure any
	for r.delivered.Load() < upTo {
		// Swap the queue for the spare buffer (both reused: no allocation
		// per change once they have grown).
		r.pendMu.Lock()
		batch := r.pending
		r.pending = r.spare[:0]
		r.pendMu.Unlock()
		r.spare = batch[:0]
		for i := range batch {
			e := &batch[i]
			if r.onEvent != nil {
				if p := r.call(e); p != nil && failure == nil {
					failure = p
				}
			}
			r.feed(e)
			r.delivered.Store(e.Revision)
			*e = Event{} // drop the references before the buffer is reused
		}
	}
	if failure != nil {
		// A listener's bug must not cost the other listeners and the
		// subscribers their changes: the whole batch was delivered; now
		// the panic goes on to the writer (gin's recovery answers 500).
		panic(failure)
	}
}

// call runs the listener and returns what it panicked with, if anything.
func (r *Registry) call(e *Event) (p any) {
	defer func() { p = recover() }()
	r.onEvent(*e)
	return nil
}

// feed sends e to every subscriber that started before it, ending those
// whose buffer is full. The caller holds r.deliverMu.
func (r *Registry) feed(e *Event) {
	for i := 0; i < len(r.subs); i++ {
		s := r.subs[i]
		if e.Revision <= s.last {
			continue
		}
		select {
		case s.c <- *e:
			s.last = e.Revision
		default:
			r.endLocked(s, &LaggedError{Revision: s.last})
			i--
		}
	}
}

func (r *Registry) renewed(rn Renewal) {
	if r.onRenew != nil {
		r.onRenew(rn)
	}
}
