package replication

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/goreka/goreka/compat"
	"github.com/goreka/goreka/registry"
	"github.com/goreka/goreka/registry/clocktest"
	"github.com/goreka/goreka/replication/peertest"
)

// peerState of a registry: every instance with its status and override.
func stateOf(reg *registry.Registry) []string {
	var out []string
	for _, app := range reg.Applications().Apps {
		for _, v := range app.Instances {
			out = append(out, fmt.Sprintf("%s/%s:%s/%s", app.Name, v.Instance.InstanceID, v.Instance.Status, v.Instance.OverriddenStatus))
		}
	}
	slices.Sort(out)
	return out
}

// A burst of changes far larger than the peer's queue (a restart storm while
// the peer is slow) must still leave the peer holding what this server
// holds once the sender catches up: registrations, cancels, overrides and
// their removals. Eureka's queue drops the oldest tasks, and the peer never
// learns of them (a heartbeat 404 repairs a lost registration only, and
// only with clients heartbeating).
func TestBurstLargerThanTheQueueConverges(t *testing.T) {
	t.Parallel()
	fake := peertest.New(t)
	clk := clocktest.New(time.UnixMilli(1_700_000_000_000))
	const bound, n = 100, 2000
	reg, rep := wired(t, Config{Now: clk.Now, MaxElementsInPeerReplicationPool: bound}, fake)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		_, err := reg.Register(instance(fmt.Sprintf("APP%d", i%7), fmt.Sprint("i-", i), clk.Now()), false)
		must(err)
	}
	for i := 0; i < n; i += 5 {
		app, id := fmt.Sprintf("APP%d", i%7), fmt.Sprint("i-", i)
		switch i % 4 {
		case 0:
			must(reg.Cancel(app, id, false))
		case 1:
			must(reg.StatusUpdate(app, id, registry.StatusOutOfService, time.Time{}, false))
		case 2:
			must(reg.StatusUpdate(app, id, registry.StatusOutOfService, time.Time{}, false))
			must(reg.DeleteStatusOverride(app, id, registry.StatusUp, time.Time{}, false))
		case 3:
			must(reg.StatusUpdate(app, id, registry.StatusOutOfService, time.Time{}, false))
			must(reg.StatusUpdate(app, id, registry.StatusUp, time.Time{}, false))
		}
	}
	// Overrides of instances whose registration is still queued.
	for i := n - 10; i < n; i++ {
		must(reg.StatusUpdate(fmt.Sprintf("APP%d", i%7), fmt.Sprint("i-", i), registry.StatusOutOfService, time.Time{}, false))
	}
	st := rep.Status()[0]
	if st.QueueDepth > bound || st.ResyncPending == 0 {
		t.Fatalf("after the burst: depth %d (bound %d), resyncs pending %d", st.QueueDepth, bound, st.ResyncPending)
	}
	must(rep.Flush(t.Context()))
	if got, want := stateOf(fake.Registry()), stateOf(reg); !slices.Equal(got, want) {
		t.Fatalf("peer differs after the burst: %d instances, want %d; first differences %q",
			len(got), len(want), firstDiff(got, want))
	}
	st = rep.Status()[0]
	if st.Dropped != 0 || st.ResyncPending != 0 || st.Resyncs == 0 || st.Resynced != st.Resyncs {
		t.Errorf("status after the flush: %+v", st)
	}
	for _, b := range fake.Batches() {
		if len(b) > Default().BatchSize {
			t.Errorf("batch of %d items", len(b))
		}
	}
	t.Logf("%d changes through a queue of %d: %d instances resynced, %d batches", reg.Revision(), bound, st.Resyncs, st.BatchesSent)
}

func firstDiff(a, b []string) []string {
	var out []string
	for _, s := range a {
		if !slices.Contains(b, s) {
			out = append(out, "extra "+s)
		}
	}
	for _, s := range b {
		if !slices.Contains(a, s) {
			out = append(out, "missing "+s)
		}
	}
	return out[:min(len(out), 6)]
}

// An overflow marks the instance of the oldest task and takes all its
// pending tasks out of the queue; what it replaced decides what the resync
// sends; new tasks of a marked instance fold into the mark; after the mark
// is taken, they queue again, behind it.
func TestQueueOverflowMarksTheInstance(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1000, 0)
	q := newQueue(4)
	mk := func(a compat.ReplicationAction, id string) *task {
		return &task{item: compat.ReplicationItem{Action: a, AppName: "APP", ID: id}, enqueued: t0, expires: t0.Add(time.Hour)}
	}
	q.push(mk(compat.ActionRegister, "a"))
	q.push(mk(compat.ActionRegister, "b"))
	q.push(mk(compat.ActionStatusUpdate, "a"))
	q.push(mk(compat.ActionRegister, "c"))
	if _, dropped := q.push(mk(compat.ActionRegister, "d")); dropped != 0 {
		t.Fatalf("dropped %d with room for marks", dropped)
	}
	// a's register and status update left together.
	if q.len() != 3 || q.pendingResyncs() != 1 || q.last[instanceKey{"APP", "a"}] != nil {
		t.Fatalf("len %d, marks %d, a still indexed: %v", q.len(), q.pendingResyncs(), q.last[instanceKey{"APP", "a"}] != nil)
	}
	if f := q.dirty[instanceKey{"APP", "a"}]; f != resyncState|resyncOverride {
		t.Errorf("a's flags %b", f)
	}
	if folded, _ := q.push(mk(compat.ActionCancel, "a")); !folded || q.len() != 3 {
		t.Error("a task of a marked instance was queued")
	}
	// A failed batch of a marked instance folds into the mark too.
	q.requeue([]*task{{inst: instanceKey{"APP", "a"}, item: compat.ReplicationItem{Action: compat.ActionHeartbeat, AppName: "APP", ID: "a"}, expires: t0.Add(time.Hour)}}, t0)
	if q.len() != 3 {
		t.Error("requeued task of a marked instance")
	}
	k, f, ok := q.takeResync()
	if !ok || k.id != "a" || f != resyncState|resyncOverride || q.pendingResyncs() != 0 {
		t.Fatalf("takeResync = %v %b %v", k, f, ok)
	}
	if _, _, ok := q.takeResync(); ok {
		t.Error("second resync of a")
	}
	if folded, _ := q.push(mk(compat.ActionCancel, "a")); folded || q.len() != 4 {
		t.Error("a's task after its resync was not queued")
	}
	// Unlinking from the middle of an instance's chain keeps the chain.
	q2 := newQueue(10)
	x1, y, x2, x3 := mk(compat.ActionRegister, "x"), mk(compat.ActionRegister, "y"), mk(compat.ActionStatusUpdate, "x"), mk(compat.ActionCancel, "x")
	for _, tk := range []*task{x1, y, x2, x3} {
		q2.push(tk)
	}
	q2.unlink(x2)
	if x3.older != x1 || x1.newer != x3 || q2.last[instanceKey{"APP", "x"}] != x3 {
		t.Error("chain broken by unlinking its middle")
	}
	q2.markDirty(instanceKey{"APP", "x"}, 0)
	if q2.len() != 1 || q2.head != y || q2.tail != y {
		t.Errorf("after marking x: len %d", q2.len())
	}
}

// TestRequeueIntoFullQueueResyncs: a batch that failed while a burst filled
// the queue comes back to no room; its changes must become resyncs, not be
// dropped (found in review: the peer never got x's override).
func TestRequeueIntoFullQueueResyncs(t *testing.T) {
	t0 := time.Unix(1000, 0)
	q := newQueue(2)
	mk := func(a compat.ReplicationAction, id string) *task {
		return &task{item: compat.ReplicationItem{Action: a, AppName: "APP", ID: id, Status: "OUT_OF_SERVICE"}, enqueued: t0, expires: t0.Add(time.Hour)}
	}
	q.push(mk(compat.ActionStatusUpdate, "x"))
	batch, _ := q.take(1, t0) // in flight: x's override
	q.push(mk(compat.ActionRegister, "y"))
	q.push(mk(compat.ActionRegister, "z")) // full again while the batch is in flight
	exp, drop := q.requeue(batch, t0)      // x's batch failed (a 503)
	if exp != 0 || drop != 0 {
		t.Fatalf("requeue: %d expired, %d dropped; want 0, 0", exp, drop)
	}
	if f, ok := q.dirty[instanceKey{"APP", "x"}]; !ok || f&flagsOf(compat.ActionStatusUpdate) == 0 {
		t.Fatalf("x's mark = %b %v; want a resync with its override", f, ok)
	}
	if q.len() != 2 {
		t.Errorf("queued %d, want y and z still queued", q.len())
	}
	// A heartbeat without room is dropped, as Eureka drops it: the next one
	// makes good for it.
	if _, drop := q.requeue([]*task{mk(compat.ActionHeartbeat, "v")}, t0); drop != 1 {
		t.Fatalf("heartbeat requeued into a full queue: %d dropped, want 1", drop)
	}
	if _, ok := q.dirty[instanceKey{"APP", "v"}]; ok {
		t.Errorf("a heartbeat became a resync")
	}
}
