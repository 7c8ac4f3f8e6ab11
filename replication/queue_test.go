package replication

import (
	"fmt"
	"testing"
	"time"

	"github.com/goreka/goreka/compat"
	"github.com/goreka/goreka/registry"
	"github.com/goreka/goreka/registry/clocktest"
)

func TestQueueFoldsOnlyAnInstancesLastTaskOfTheSameAction(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1000, 0)
	q := newQueue(10)
	mk := func(a compat.ReplicationAction, id string, at time.Duration) *task {
		return &task{item: compat.ReplicationItem{Action: a, AppName: "APP", ID: id, Status: at.String()},
			enqueued: t0.Add(at), expires: t0.Add(time.Hour)}
	}
	q.push(mk(compat.ActionRegister, "a", 0))
	q.push(mk(compat.ActionCancel, "a", 1))
	if folded, _ := q.push(mk(compat.ActionRegister, "a", 2)); folded {
		t.Error("register folded into one before the cancel: the peer would lose the instance")
	}
	q.push(mk(compat.ActionHeartbeat, "b", 3))
	if folded, _ := q.push(mk(compat.ActionHeartbeat, "b", 4)); !folded {
		t.Error("heartbeat in a row not folded")
	}
	q.push(mk(compat.ActionStatusUpdate, "b", 5))
	if folded, _ := q.push(mk(compat.ActionStatusUpdate, "b", 6)); folded {
		t.Error("status updates folded: OUT_OF_SERVICE then UP is not UP")
	}
	batch, _ := q.take(10, t0)
	var got []string
	for _, tk := range batch {
		got = append(got, string(tk.item.Action)+"/"+tk.item.ID+"@"+tk.item.Status)
	}
	want := []string{"Register/a@0s", "Cancel/a@1ns", "Register/a@2ns", "Heartbeat/b@4ns", "StatusUpdate/b@5ns", "StatusUpdate/b@6ns"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("order = %v, want %v", got, want)
	}
	if q.len() != 0 || q.head != nil || q.tail != nil || len(q.last) != 0 {
		t.Error("queue not empty after take")
	}
}

func TestQueueRequeueKeepsOrder(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1000, 0)
	q := newQueue(10)
	mk := func(id string, exp time.Duration) *task {
		return &task{item: compat.ReplicationItem{Action: compat.ActionHeartbeat, AppName: "APP", ID: id}, enqueued: t0, expires: t0.Add(exp)}
	}
	for _, id := range []string{"a", "b", "c"} {
		q.push(mk(id, time.Hour))
	}
	batch, _ := q.take(3, t0)
	q.push(mk("d", time.Hour))
	q.push(mk("b", time.Hour)) // newer b, queued while the batch was in flight
	batch[2].expires = t0      // c expires meanwhile
	exp, drop := q.requeue(batch, t0)
	if exp != 1 || drop != 0 {
		t.Errorf("expired %d dropped %d, want 1 0", exp, drop)
	}
	// The newest pending b is still b's last task: a further heartbeat of b
	// folds into it, not into the requeued older one.
	if folded, _ := q.push(mk("b", time.Hour)); !folded || q.last[instanceKey{"APP", "b"}] != q.tail {
		t.Error("b's newest task lost after requeue")
	}
	rest, _ := q.take(10, t0)
	var got []string
	for _, tk := range rest {
		got = append(got, tk.item.ID)
	}
	want := []string{"a", "b", "d", "b"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("after requeue = %v, want %v", got, want)
	}
}

// A peer that never answers and 100k distinct instances: the queue stays at
// its bound, the overflow is marked for a resync up to the registry's size
// plus that bound (here the registry is empty: 1000 marks), and the rest is
// dropped and counted.
func TestDeadPeerMemoryBounded(t *testing.T) {
	t.Parallel()
	clk := clocktest.New(time.Unix(1000, 0))
	cfg := Config{Now: clk.Now, MaxElementsInPeerReplicationPool: 1000, Seed: 1}
	reg := registry.New(registry.Options{Now: clk.Now})
	rep := New(cfg, reg, []Peer{mustPeer(t, "http://127.0.0.1:1/eureka/")})
	in := instance("APP", "x", clk.Now())
	const n = 100_000
	for i := range n {
		rep.OnRenew(registry.Renewal{App: "APP", ID: fmt.Sprint("i-", i), Instance: in})
	}
	// The same instances again coalesce instead of growing anything.
	for i := n - 1000; i < n; i++ {
		rep.OnRenew(registry.Renewal{App: "APP", ID: fmt.Sprint("i-", i), Instance: in})
	}
	st := rep.Status()[0]
	if st.QueueDepth != 1000 || st.ResyncPending != 1000 || st.Dropped != n-2000 || st.Coalesced != 1000 {
		t.Errorf("depth %d resyncs %d dropped %d coalesced %d; want 1000 1000 %d 1000",
			st.QueueDepth, st.ResyncPending, st.Dropped, st.Coalesced, n-2000)
	}
	p := rep.list()[0]
	if len(p.q.last) != 1000 {
		t.Errorf("index holds %d tasks", len(p.q.last))
	}
	// The survivors are the newest.
	if p.q.head.item.ID != fmt.Sprint("i-", n-1000) {
		t.Errorf("oldest kept = %s", p.q.head.item.ID)
	}
}

func TestOnEventIgnoresReplicatedAndEvict(t *testing.T) {
	t.Parallel()
	clk := clocktest.New(time.Unix(1000, 0))
	reg := registry.New(registry.Options{Now: clk.Now})
	rep := New(Config{Now: clk.Now}, reg, []Peer{mustPeer(t, "http://127.0.0.1:1/eureka/")})
	in := instance("APP", "a", clk.Now())
	rep.OnEvent(registry.Event{Kind: registry.EventRegister, App: "APP", ID: "a", Lease: registry.LeaseView{Instance: in}, FromPeer: true})
	rep.OnEvent(registry.Event{Kind: registry.EventEvict, App: "APP", ID: "a", Lease: registry.LeaseView{Instance: in}})
	// A static registration's changes stay on this node, whatever the kind.
	for _, k := range []registry.EventKind{registry.EventRegister, registry.EventCancel, registry.EventStatusUpdate, registry.EventDeleteStatusOverride} {
		rep.OnEvent(registry.Event{Kind: k, App: "APP", ID: "a", Lease: registry.LeaseView{Instance: in, Static: true}, Status: registry.StatusUp, Changed: true})
	}
	if d := rep.Status()[0].QueueDepth; d != 0 {
		t.Errorf("queued %d tasks for replicated/evict/static events", d)
	}
	rep.OnEvent(registry.Event{Kind: registry.EventCancel, App: "APP", ID: "a", Lease: registry.LeaseView{Instance: in}})
	if d := rep.Status()[0].QueueDepth; d != 1 {
		t.Errorf("cancel queued %d tasks, want 1", d)
	}
}

func TestItemOf(t *testing.T) {
	t.Parallel()
	clk := clocktest.New(time.UnixMilli(1_700_000_000_000))
	reg := registry.New(registry.Options{Now: clk.Now})
	in, err := reg.Register(instance("APP", "a", clk.Now()), false)
	if err != nil {
		t.Fatal(err)
	}
	ms := clk.Now().UnixMilli()
	tests := []struct {
		e    registry.Event
		want compat.ReplicationItem
	}{
		{registry.Event{Kind: registry.EventCancel, App: "APP", ID: "a", Lease: registry.LeaseView{Instance: in}},
			compat.ReplicationItem{AppName: "APP", ID: "a", Action: compat.ActionCancel}},
		{registry.Event{Kind: registry.EventStatusUpdate, App: "APP", ID: "a", Lease: registry.LeaseView{Instance: in}, Status: registry.StatusOutOfService},
			compat.ReplicationItem{AppName: "APP", ID: "a", Action: compat.ActionStatusUpdate, Status: "OUT_OF_SERVICE", LastDirtyTimestamp: ms, HasLastDirty: true}},
		{registry.Event{Kind: registry.EventDeleteStatusOverride, App: "APP", ID: "a", Lease: registry.LeaseView{Instance: in}, Status: registry.StatusUnknown},
			compat.ReplicationItem{AppName: "APP", ID: "a", Action: compat.ActionDeleteStatusOverride, Status: "UNKNOWN", LastDirtyTimestamp: ms, HasLastDirty: true}},
	}
	for _, tc := range tests {
		got, ok := itemOf(&tc.e)
		if !ok || got != tc.want {
			t.Errorf("%v: item = %+v, want %+v", tc.e.Kind, got, tc.want)
		}
	}
	v, _ := reg.Get("APP", "a")
	got, ok := itemOf(&registry.Event{Kind: registry.EventRegister, App: "APP", ID: "a", Lease: v})
	if !ok || got.Action != compat.ActionRegister || got.Instance == nil || got.Instance.Instance != in ||
		got.Instance.Duration != 90*time.Second || got.Status != "UP" || got.LastDirtyTimestamp != ms {
		t.Errorf("register item = %+v", got)
	}
	// A heartbeat carries the stored status and the override-map entry.
	rep := New(Config{Now: clk.Now, Seed: 1}, reg, []Peer{mustPeer(t, "http://127.0.0.1:1/eureka/")})
	rep.OnRenew(registry.Renewal{App: "APP", ID: "a", Instance: in, OverriddenStatus: registry.StatusOutOfService})
	hb := rep.list()[0].q.head.item
	want := compat.ReplicationItem{AppName: "APP", ID: "a", Action: compat.ActionHeartbeat, Status: "UP", OverriddenStatus: "OUT_OF_SERVICE", LastDirtyTimestamp: ms, HasLastDirty: true}
	if hb != want {
		t.Errorf("heartbeat item = %+v, want %+v", hb, want)
	}
}
