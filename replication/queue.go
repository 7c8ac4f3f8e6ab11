package replication

import (
	"time"

	"github.com/goreka/goreka/compat"
)

// task is one pending replication to one peer.
type task struct {
	key      string // "<type>#<APP>/<id>", Eureka's task id
	item     compat.ReplicationItem
	enqueued time.Time // when the newest version of this task arrived
	expires  time.Time

	prev, next *task
}

// taskKey is Eureka's task id: register#APP/id, heartbeat#APP/id, ...
func taskKey(a compat.ReplicationAction, app, id string) string {
	var typ string
	switch a {
	case compat.ActionRegister:
		typ = "register"
	case compat.ActionHeartbeat:
		typ = "heartbeat"
	case compat.ActionCancel:
		typ = "cancel"
	case compat.ActionStatusUpdate:
		typ = "statusUpdate"
	default:
		typ = "deleteStatusOverride"
	}
	return typ + "#" + app + "/" + id
}

// queue is a bounded FIFO of tasks keyed by task id. A task whose id is
// pending replaces the pending one and moves to the back, so that the
// order of different operations on one instance is kept: with Eureka's
// keep-the-position rule, register, cancel, register would reach the peer
// as register(new), cancel and lose the instance. When full, the oldest
// task is dropped. Not safe for concurrent use; the peer's mutex guards it.
type queue struct {
	max        int
	byKey      map[string]*task
	head, tail *task
}

func newQueue(max int) *queue {
	return &queue{max: max, byKey: make(map[string]*task)}
}

func (q *queue) len() int { return len(q.byKey) }

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
	t.prev, t.next = nil, nil
	delete(q.byKey, t.key)
}

// push appends t, replacing a pending task with its key. It reports whether
// t replaced one and how many tasks were dropped to stay within the bound.
func (q *queue) push(t *task) (replaced bool, dropped int) {
	if old := q.byKey[t.key]; old != nil {
		q.unlink(old)
		replaced = true
	}
	for len(q.byKey) >= q.max && q.head != nil {
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
	q.byKey[t.key] = t
	return replaced, dropped
}

// requeue puts tasks of a failed batch back at the front in their order,
// skipping those a newer pending task replaced and those expired at now.
// It returns how many expired and how many were dropped for room.
func (q *queue) requeue(ts []*task, now time.Time) (expired, dropped int) {
	for i := len(ts) - 1; i >= 0; i-- {
		t := ts[i]
		if q.byKey[t.key] != nil {
			continue // superseded by a newer version
		}
		if !now.Before(t.expires) {
			expired++
			continue
		}
		if len(q.byKey) >= q.max {
			// The requeued tasks are the oldest there are: drop them.
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
		q.byKey[t.key] = t
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
