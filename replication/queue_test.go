package replication

import (
	"fmt"
	"testing"
	"time"

	"github.com/goreka/goreka/compat"
	"github.com/goreka/goreka/registry"
	"github.com/goreka/goreka/registry/clocktest"
)

func TestQueueCoalescesAndMovesToBack(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1000, 0)
	q := newQueue(10)
	mk := func(a compat.ReplicationAction, id string, at time.Duration) *task {
		return &task{key: taskKey(a, "APP", id), item: compat.ReplicationItem{Action: a, ID: id, Status: at.String()},
			enqueued: t0.Add(at), expires: t0.Add(time.Hour)}
	}
	q.push(mk(compat.ActionRegister, "a", 0))
	q.push(mk(compat.ActionCancel, "a", 1))
	if replaced, _ := q.push(mk(compat.ActionRegister, "a", 2)); !replaced {
		t.Error("second register did not replace the first")
	}
	q.push(mk(compat.ActionHeartbeat, "b", 3))
	batch, _ := q.take(10, t0)
	var got []string
	for _, tk := range batch {
		got = append(got, tk.key+"@"+tk.item.Status)
	}
	want := []string{"cancel#APP/a@1ns", "register#APP/a@2ns", "heartbeat#APP/b@3ns"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("order = %v, want %v", got, want)
	}
	if q.len() != 0 || q.head != nil || q.tail != nil {
		t.Error("queue not empty after take")
	}
}

func TestQueueRequeueKeepsOrderAndSkipsSuperseded(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1000, 0)
	q := newQueue(10)
	mk := func(id string, exp time.Duration) *task {
		return &task{key: taskKey(compat.ActionHeartbeat, "APP", id), enqueued: t0, expires: t0.Add(exp)}
	}
	for _, id := range []string{"a", "b", "c"} {
		q.push(mk(id, time.Hour))
	}
	batch, _ := q.take(3, t0)
	q.push(mk("d", time.Hour))
	q.push(mk("b", time.Hour)) // newer b supersedes the one in flight
	batch[2].expires = t0      // c expires meanwhile
	exp, drop := q.requeue(batch, t0)
	if exp != 1 || drop != 0 {
		t.Errorf("expired %d dropped %d, want 1 0", exp, drop)
	}
	rest, _ := q.take(10, t0)
	var got []string
	for _, tk := range rest {
		got = append(got, tk.key)
	}
	want := []string{"heartbeat#APP/a", "heartbeat#APP/d", "heartbeat#APP/b"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("after requeue = %v, want %v", got, want)
	}
}

// A peer that never answers and 100k distinct instances: the queue stays at
// its bound and the overflow is counted.
func TestDeadPeerMemoryBounded(t *testing.T) {
	t.Parallel()
	clk := clocktest.New(time.Unix(1000, 0))
	cfg := Config{Now: clk.Now, MaxElementsInPeerReplicationPool: 1000, Seed: 1}
	reg := registry.New(registry.Options{Now: clk.Now})
	rep := New(cfg, reg, []Peer{mustPeer(t, "http://127.0.0.1:1/eureka/")})
	in := instance("APP", "x", clk.Now())
	const n = 100_000
	for i := range n {
		rep.OnEvent(registry.Event{Kind: registry.EventHeartbeat, App: "APP", ID: fmt.Sprint("i-", i), Instance: in})
	}
	// The same instances again coalesce instead of growing anything.
	for i := n - 1000; i < n; i++ {
		rep.OnEvent(registry.Event{Kind: registry.EventHeartbeat, App: "APP", ID: fmt.Sprint("i-", i), Instance: in})
	}
	st := rep.Status()[0]
	if st.QueueDepth != 1000 || st.Dropped != n-1000 || st.Coalesced != 1000 {
		t.Errorf("depth %d dropped %d coalesced %d; want 1000 %d 1000", st.QueueDepth, st.Dropped, st.Coalesced, n-1000)
	}
	p := rep.peers[0]
	if len(p.q.byKey) != 1000 {
		t.Errorf("index holds %d tasks", len(p.q.byKey))
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
	rep.OnEvent(registry.Event{Kind: registry.EventRegister, App: "APP", ID: "a", Instance: in, Replicated: true})
	rep.OnEvent(registry.Event{Kind: registry.EventEvict, App: "APP", ID: "a", Instance: in})
	if d := rep.Status()[0].QueueDepth; d != 0 {
		t.Errorf("queued %d tasks for replicated/evict events", d)
	}
	rep.OnEvent(registry.Event{Kind: registry.EventCancel, App: "APP", ID: "a", Instance: in})
	if d := rep.Status()[0].QueueDepth; d != 1 {
		t.Errorf("cancel queued %d tasks, want 1", d)
	}
}

func TestItemOf(t *testing.T) {
	t.Parallel()
	clk := clocktest.New(time.UnixMilli(1_700_000_000_000))
	reg := registry.New(registry.Options{Now: clk.Now})
	rep := New(Config{Now: clk.Now}, reg, nil)
	in, err := reg.Register(instance("APP", "a", clk.Now()), false)
	if err != nil {
		t.Fatal(err)
	}
	ms := clk.Now().UnixMilli()
	tests := []struct {
		e    registry.Event
		want compat.ReplicationItem
	}{
		{registry.Event{Kind: registry.EventHeartbeat, App: "APP", ID: "a", Instance: in, OverriddenStatus: registry.StatusOutOfService},
			compat.ReplicationItem{AppName: "APP", ID: "a", Action: compat.ActionHeartbeat, Status: "UP", OverriddenStatus: "OUT_OF_SERVICE", LastDirtyTimestamp: ms, HasLastDirty: true}},
		{registry.Event{Kind: registry.EventCancel, App: "APP", ID: "a", Instance: in},
			compat.ReplicationItem{AppName: "APP", ID: "a", Action: compat.ActionCancel}},
		{registry.Event{Kind: registry.EventStatusUpdate, App: "APP", ID: "a", Instance: in, Status: registry.StatusOutOfService},
			compat.ReplicationItem{AppName: "APP", ID: "a", Action: compat.ActionStatusUpdate, Status: "OUT_OF_SERVICE", LastDirtyTimestamp: ms, HasLastDirty: true}},
		{registry.Event{Kind: registry.EventDeleteStatusOverride, App: "APP", ID: "a", Instance: in, Status: registry.StatusUnknown},
			compat.ReplicationItem{AppName: "APP", ID: "a", Action: compat.ActionDeleteStatusOverride, Status: "UNKNOWN", LastDirtyTimestamp: ms, HasLastDirty: true}},
	}
	for _, tc := range tests {
		got, ok := rep.itemOf(tc.e)
		if !ok || got != tc.want {
			t.Errorf("%v: item = %+v, want %+v", tc.e.Kind, got, tc.want)
		}
	}
	got, ok := rep.itemOf(registry.Event{Kind: registry.EventRegister, App: "APP", ID: "a", Instance: in})
	if !ok || got.Action != compat.ActionRegister || got.Instance == nil || got.Instance.Instance != in ||
		got.Instance.Duration != 90*time.Second || got.Status != "UP" || got.LastDirtyTimestamp != ms {
		t.Errorf("register item = %+v", got)
	}
}
