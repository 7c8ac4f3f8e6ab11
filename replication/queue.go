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

	prev, next *task
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

// queue is a bounded FIFO of tasks that keeps each instance's tasks in the
// order the registry made the changes. A new task replaces the instance's
// last pending task, in place, only when both are of the same coalescing
// action (see coalesces): nothing is ever reordered, unlike Eureka's
// batcher, which keys tasks by action and instance and so can deliver
// "override OUT_OF_SERVICE, override UP" as "override UP" alone, or a
// register after its own cancel. Heartbeats, which follow each other with
// nothing in between, still collapse to one pending task per instance. When
// full, the oldest task is dropped. Not safe for concurrent use; the peer's
// mutex guards it.
type queue struct {
	max        int
	n          int
	last       map[instanceKey]*task // each instance's newest pending task
	head, tail *task
}

func newQueue(max int) *queue {
	return &queue{max: max, last: make(map[instanceKey]*task)}
}

func (q *queue) len() int { return q.n }

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
	if q.last[t.inst] == t {
		// The instance's newest pending task is now the one before t of the
		// same instance, if any; the tasks before t are older, so scan back.
		delete(q.last, t.inst)
		for p := t.prev; p != nil; p = p.prev {
			if p.inst == t.inst {
				q.last[t.inst] = p
				break
			}
		}
	}
	t.prev, t.next = nil, nil
	q.n--
}

// push appends t, or folds it into the instance's last pending task. It
// reports whether t was folded and how many tasks were dropped to stay
// within the bound.
func (q *queue) push(t *task) (coalesced bool, dropped int) {
	t.inst = keyOf(&t.item)
	if l := q.last[t.inst]; l != nil && l.item.Action == t.item.Action && coalesces(t.item.Action) {
		l.item, l.rev, l.expires = t.item, t.rev, t.expires
		return true, 0
	}
	for q.n >= q.max && q.head != nil {
		q.unlink(q.head)
		dropped++
	}
	t.prev, t.next = q.tail, nil
	if q.tail != nil {
		q.tail.next = t
	} else {
		q.head = t
	}
	q.tail = t
	q.last[t.inst] = t
	q.n++
	return false, dropped
}

// requeue puts the tasks of a failed batch back at the front, in their
// order, skipping those expired at now. The batch was taken from the front,
// so every pending task is newer than all of them: an instance's newest
// pending task stays its newest. It returns how many expired and how many
// were dropped for room (the requeued tasks are the oldest there are).
func (q *queue) requeue(ts []*task, now time.Time) (expired, dropped int) {
	for i := len(ts) - 1; i >= 0; i-- {
		t := ts[i]
		if !now.Before(t.expires) {
			expired++
			continue
		}
		if q.n >= q.max {
			dropped++
			continue
		}
		t.prev, t.next = nil, q.head
		if q.head != nil {
			q.head.prev = t
		} else {
			q.tail = t
		}
		q.head = t
		if q.last[t.inst] == nil {
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
	for q.head != nil && len(batch) < n {
		t := q.head
		q.unlink(t)
		if !now.Before(t.expires) {
			expired++
			continue
		}
		batch = append(batch, t)
	}
	return batch, expired
}
