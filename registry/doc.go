// Package registry is Eureka's instance registry: application -> instance id
// -> lease, the rules that decide an instance's status, the recently-changed
// queue behind /apps/delta, the per-status counts behind apps__hashcode, and
// an ordered stream of the changes it makes.
//
// It imports nothing else of goreka and no wire format: HTTP, JSON and XML,
// peers and caches are its callers' business. Operations return results and
// typed errors (ErrNotFound, *ConflictError, *ValidationError); the HTTP edge
// maps them to status codes in one place.
//
// # The change stream
//
// Every change is given a revision (int64, starting at 1, one more per
// change) while the registry's write lock is held, so revisions order
// changes exactly as they were applied. Listeners (Options.OnEvent) are
// called with each change as an Event:
//
//   - in revision order, and never concurrently: one change at a time, by
//     whichever writer goroutine is delivering (the writers combine: a
//     writer delivers the changes pending when it gets the delivery lock,
//     its own included, before its call returns — so a caller that got an
//     answer from Register knows its listeners have seen the change);
//   - outside the registry's lock, so a listener may read the registry, but
//     it must not call a registry write method, Subscribe or
//     Subscription.Close (they take the delivery lock: a deadlock) and must
//     not block: listeners are on the writers' path. A panicking listener
//     does not cost the others their changes: the batch is delivered, then
//     the panic goes on to the writer;
//     A listener that needs slow work (a network write, a watch client)
//     uses Subscribe instead;
//   - self-contained: kind, revision, the stored lease view after the change
//     (for a removal, the last stored copy), the status before, and whether
//     the change came from a peer. No listener needs to read the registry
//     back to know what an event means.
//
// Subscribe gives a slow consumer a bounded buffer of its own. Delivery
// never waits for a subscriber: when its buffer is full, the subscription
// ends with a *LaggedError naming the last revision it received, and the
// consumer resynchronises from a consistent view (Applications carries the
// revision it was taken at) and subscribes again. A subscriber therefore
// either sees every change after its start revision, in order, or is told
// that it has not.
//
// Heartbeats that change nothing are not changes: they carry no revision of
// their own and are reported through Options.OnRenew, synchronously and
// concurrently (the renew path holds only the read lock), so they are not
// ordered with changes. Renewal.Revision names the lease's last change at
// the renew, which lets a listener tell a heartbeat that overtook that
// change (replication holds such a heartbeat back). A heartbeat that makes
// the rule chain correct the stored status is a change (EventStatusCorrected)
// as well.
//
// # Static registrations
//
// SetStatic stores the configured static registrations: leases that never
// expire, refuse the writes the configuration owns, are left out of
// Renewing (self-preservation's count), Export and replication (their
// events and views carry Static). See static.go.
//
// # Immutability
//
// Stored *Instance values are never mutated: every change stores a modified
// copy. Events, views and snapshots hand out the stored pointers; readers
// use them without locks and must not modify them.
//
// # Time
//
// Nothing reads the wall clock: every method takes time from Options.Now.
package registry
