package replication

import (
	"time"

	"github.com/goreka/goreka/compat"
)

// task is one pending replication to one peer.
type task struct {
	inst     instanceKey
	item     compat.ReplicationItem
	rev      int64     // heartbeats: the lease revision they were sent for
	enqueued time.Time // when the task joined the queue
	expires  time.Time

	prev, next   *task // the queue, oldest first
	older, newer *task // the same instance's other pending tasks
}

// instanceKey addresses the instance a task is about.
type instanceKey struct{ app, id string }

func keyOf(it *compat.ReplicationItem) instanceKey { return instanceKey{it.AppName, it.ID} }

// coalesces reports whether a pending task of action a may absorb a newer
// one of the same action on the same instance when nothing else for that
// instance is queued after it. Only idempotent, state-carrying actions do: a
// newer heartbeat says all an older one says, a register carries the whole
// instance, a second cancel finds nothing. Status updates and override
// removals never coalesce: applied on the peer, OUT_OF_SERVICE then UP leaves
// an UP override, UP alone leaves none (Eureka changes nothing when the
// status is already the asked one).
func coalesces(a compat.ReplicationAction) bool {
	return a == compat.ActionHeartbeat || a == compat.ActionRegister || a == compat.ActionCancel
}

// resyncFlags say what a pending resync of an instance must send besides
// its current presence: resyncOverride when one of the tasks it replaced
// changed the status override, so the peer gets the current override (or
// its removal) too.
type resyncFlags uint8

const (
	resyncState    resyncFlags = 1 << iota // always set: send the current copy, or a cancel
	resyncOverride                         // send the current override, or its removal
)

func flagsOf(a compat.ReplicationAction) resyncFlags {
	if a == compat.ActionStatusUpdate || a == compat.ActionDeleteStatusOverride {
		return resyncState | resyncOverride
	}
	return resyncState
}

// queue is a bounded FIFO of tasks that keeps each instance's tasks in the
// order the registry made the changes. A new task replaces the instance's
// last pending task, in place, only when both are of the same coalescing
// action (see coalesces): nothing is ever reordered, unlike Eureka's
// batcher, which keys tasks by action and instance and so can deliver
// "override OUT_OF_SERVICE, override UP" as "override UP" alone, or a
// register after its own cancel. Heartbeats, which follow each other with
// nothing in between, still collapse to one pending task per instance.
//
// When full, the queue does not lose the oldest change, as Eureka's does:
// the instance of the oldest task is marked for a resync instead, and all
// its pending tasks leave the queue. A resync sends the instance's current
// state, read from the registry when its batch is formed (see
// Replicator.resyncLocked), which says everything the replaced tasks said,
// so a burst larger than the bound still converges. While an instance is
// marked, its new tasks fold into the mark; once the resync is taken, its
// later tasks queue behind it as usual, so the instance's order holds. The
// marks cost one map entry per instance, bounded by the registry's size
// plus the queue's bound (limit); an instance marked beyond that is
// dropped and counted, as before. Not safe for concurrent use; the peer's
// mutex guards it.
type queue struct {
	max        int
	n          int
	last       map[instanceKey]*task // each instance's newest pending task
	head, tail *task

	// dirty holds the instances marked for a resync, with what to send;
	// order lists them in the order they were marked, from dirtyHead on
	// (entries no longer in dirty are skipped).
	dirty     map[instanceKey]resyncFlags
	order     []instanceKey
	dirtyHead int
	// limit returns the bound of dirty (nil: max); limitAt caches it
	// until dirty reaches it.
	limit   func() int
	limitAt int
	resyncs uint64 // instances marked, ever
}

func newQueue(max int) *queue {
	return &queue{max: max, last: make(map[instanceKey]*task)}
}

// len is the number of queued tasks, marks not included.
func (q *queue) len() int { return q.n }

// pendingResyncs is the number of instances marked for a resync.
func (q *queue) pendingResyncs() int { return len(q.dirty) }

func (q *queue) unlink(t *task) {
	if t.prev != nil {
		t.prev.next = t.next
	} else {
		q.head = t.next
	}
	if t.next != nil {
		t.next.prev = t.prev
	} else {
		q.tail = t.prev
	}
	if t.newer != nil {
		t.newer.older = t.older
	} else if t.older != nil {
		q.last[t.inst] = t.older
	} else {
		delete(q.last, t.inst)
	}
	if t.older != nil {
		t.older.newer = t.newer
	}
	t.prev, t.next, t.older, t.newer = nil, nil, nil, nil
	q.n--
}

// push appends t, or folds it into the instance's last pending task or its
// pending resync. It reports whether t was folded and how many tasks were
// dropped to stay within the bound.
func (q *queue) push(t *task) (coalesced bool, dropped int) {
	t.inst = keyOf(&t.item)
	if f, ok := q.dirty[t.inst]; ok {
		q.dirty[t.inst] = f | flagsOf(t.item.Action)
		return true, 0
	}
	if l := q.last[t.inst]; l != nil && l.item.Action == t.item.Action && coalesces(t.item.Action) {
		l.item, l.rev, l.expires = t.item, t.rev, t.expires
		return true, 0
	}
	for q.n >= q.max && q.head != nil {
		dropped += q.markDirty(q.head.inst, 0)
	}
	if f, ok := q.dirty[t.inst]; ok {
		// The overflow marked t's own instance (its oldest task was at the
		// head): t folds into the mark like any later task of a marked
		// instance. Queued, it would go out after the resync, and the
		// resync, read later, may already hold a newer change than t.
		q.dirty[t.inst] = f | flagsOf(t.item.Action)
		return true, dropped
	}
	q.append(t)
	return false, dropped
}

func (q *queue) append(t *task) {
	t.prev, t.next = q.tail, nil
	if q.tail != nil {
		q.tail.next = t
	} else {
		q.head = t
	}
	q.tail = t
	if l := q.last[t.inst]; l != nil {
		l.newer, t.older = t, l
	}
	q.last[t.inst] = t
	q.n++
}

// markDirty replaces every pending task of inst by a resync of inst (with
// flags f besides theirs). Beyond the bound of marks, the tasks are
// dropped instead; it returns how many were.
func (q *queue) markDirty(inst instanceKey, f resyncFlags) (dropped int) {
	f |= resyncState
	n := 0
	for t := q.last[inst]; t != nil; {
		older := t.older
		f |= flagsOf(t.item.Action)
		q.unlink(t)
		n++
		t = older
	}
	if old, ok := q.dirty[inst]; ok {
		q.dirty[inst] = old | f
		return 0
	}
	if len(q.dirty) >= q.limitAt {
		q.limitAt = q.max
		if q.limit != nil {
			q.limitAt = max(q.limit(), 0) + q.max
		}
		if len(q.dirty) >= q.limitAt {
			return n
		}
	}
	if q.dirty == nil {
		q.dirty = make(map[instanceKey]resyncFlags)
	}
	q.dirty[inst] = f
	q.order = append(q.order, inst)
	q.resyncs++
	return 0
}

// nextResync returns the oldest mark at or after position from of the
// marks' order whose instance skip does not reject (nil: none), without
// removing it, and its position for takeResyncAt; false when there is none.
// Skipped marks stay where they are, oldest first.
func (q *queue) nextResync(from int, skip func(instanceKey) bool) (k instanceKey, f resyncFlags, at int, ok bool) {
	for q.dirtyHead < len(q.order) {
		if _, ok := q.dirty[q.order[q.dirtyHead]]; ok {
			break
		}
		q.order[q.dirtyHead] = instanceKey{}
		q.dirtyHead++
	}
	if from == 0 && q.dirtyHead > 1024 && 2*q.dirtyHead > len(q.order) {
		// Only at the start of a scan: positions returned to a caller
		// scanning on (from > 0) stay valid.
		n := copy(q.order, q.order[q.dirtyHead:])
		clear(q.order[n:])
		q.order, q.dirtyHead = q.order[:n], 0
	}
	for i := max(from, q.dirtyHead); i < len(q.order); i++ {
		k := q.order[i]
		f, ok := q.dirty[k]
		if !ok || (skip != nil && skip(k)) {
			continue
		}
		return k, f, i, true
	}
	return instanceKey{}, 0, 0, false
}

// takeResyncAt removes the mark at position at, as nextResync returned it.
// A mark taken from behind skipped ones leaves a stale entry in the order,
// skipped from then on (an entry counts only while its instance is in
// dirty; if the instance is marked again meanwhile, the mark is merely
// taken at the older of its two places).
func (q *queue) takeResyncAt(at int) {
	delete(q.dirty, q.order[at])
	if at == q.dirtyHead {
		q.order[at] = instanceKey{}
		q.dirtyHead++
	}
	if len(q.dirty) == 0 {
		// Maps and slices keep their size: let a burst's go.
		q.dirty, q.order, q.dirtyHead = nil, nil, 0
	}
}

// takeResync removes the oldest mark; false when there is none.
func (q *queue) takeResync() (instanceKey, resyncFlags, bool) {
	k, f, at, ok := q.nextResync(0, nil)
	if ok {
		q.takeResyncAt(at)
	}
	return k, f, ok
}

// requeue puts the tasks of a failed batch back at the front, in their
// order, skipping those expired at now. While the batch was in flight, no
// other batch took a task of its instances (takeSkipping), so every pending
// task of theirs is newer than all of the batch's: an instance's newest
// pending task stays its newest. A task of an instance marked for a resync
// meanwhile folds into the mark. A change that finds no room becomes a
// resync of its instance, as in push. It returns how many expired and how
// many were dropped (heartbeats without room, changes beyond the bound of
// marks).
func (q *queue) requeue(ts []*task, now time.Time) (expired, dropped int) {
	for i := len(ts) - 1; i >= 0; i-- {
		t := ts[i]
		t.prev, t.next, t.older, t.newer = nil, nil, nil, nil
		if f, ok := q.dirty[t.inst]; ok {
			q.dirty[t.inst] = f | flagsOf(t.item.Action)
			continue
		}
		if !now.Before(t.expires) {
			expired++
			continue
		}
		if q.n >= q.max {
			// No room at the front: as in push, a change becomes a resync of
			// its instance (which also absorbs the instance's pending tasks,
			// all newer than t), so an overflow during a failed send loses
			// nothing. A lost heartbeat is the next one's to make good.
			if t.item.Action == compat.ActionHeartbeat {
				dropped++
				continue
			}
			dropped += q.markDirty(t.inst, flagsOf(t.item.Action))
			continue
		}
		t.next = q.head
		if q.head != nil {
			q.head.prev = t
		} else {
			q.tail = t
		}
		q.head = t
		// t is older than every pending task of its instance.
		if l := q.last[t.inst]; l != nil {
			o := l
			for o.older != nil {
				o = o.older
			}
			o.older, t.newer = t, o
		} else {
			q.last[t.inst] = t
		}
		q.n++
	}
	return expired, dropped
}

// oldest returns the enqueue time of the head; zero if empty.
func (q *queue) oldest() time.Time {
	if q.head == nil {
		return time.Time{}
	}
	return q.head.enqueued
}

// take removes up to n unexpired tasks from the front, counting the expired
// ones it discards on the way.
func (q *queue) take(n int, now time.Time) (batch []*task, expired int) {
	return q.takeSkipping(n, now, nil)
}

// takeSkipping is take, except that tasks whose instance skip rejects (nil:
// none) stay queued, in place, and so do their instance's later tasks (skip
// rejects them too): the pipelined sender skips the instances of batches in
// flight, so that no two batches in flight carry one instance.
func (q *queue) takeSkipping(n int, now time.Time, skip func(instanceKey) bool) (batch []*task, expired int) {
	for t := q.head; t != nil && len(batch) < n; {
		next := t.next
		if skip != nil && skip(t.inst) {
			t = next
			continue
		}
		q.unlink(t)
		if !now.Before(t.expires) {
			expired++
		} else {
			batch = append(batch, t)
		}
		t = next
	}
	return batch, expired
}
