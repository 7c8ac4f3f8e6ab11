package replication

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/goreka/goreka/compat"
	"github.com/goreka/goreka/registry"
	"github.com/goreka/goreka/registry/clocktest"
)

// queued lists a peer's pending tasks as "action:status" in queue order.
func queued(p *peerState) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for t := p.q.head; t != nil; t = t.next {
		out = append(out, fmt.Sprintf("%s/%s:%s", t.item.Action, t.item.ID, t.item.Status))
	}
	return out
}

// The registry's changes reach a peer's queue in the order they were made,
// and only same-action idempotent tasks of one instance fold together:
// the sequences that used to leave a peer different from this server.
func TestQueueKeepsEachInstancesOrder(t *testing.T) {
	clk := clocktest.New(time.UnixMilli(1_000_000))
	reg, rep := wiredNoRun(t, clk)
	p := rep.list()[0]
	if _, err := reg.Register(instance("APP", "a", clk.Now()), false); err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	// Heartbeats in a row fold into one.
	for range 3 {
		must(reg.Renew(registry.RenewRequest{App: "APP", ID: "a"}))
	}
	// Override OUT_OF_SERVICE then UP: both must reach the peer, in order
	// (UP alone changes nothing on an UP instance and leaves no override).
	must(reg.StatusUpdate("APP", "a", registry.StatusOutOfService, time.Time{}, false))
	must(reg.StatusUpdate("APP", "a", registry.StatusUp, time.Time{}, false))
	// Removal without value, then with value=UP.
	must(reg.DeleteStatusOverride("APP", "a", "", time.Time{}, false))
	must(reg.DeleteStatusOverride("APP", "a", registry.StatusUp, time.Time{}, false))
	// Cancel, register, cancel: never reordered.
	must(reg.Cancel("APP", "a", false))
	if _, err := reg.Register(instance("APP", "a", clk.Now().Add(time.Millisecond)), false); err != nil {
		t.Fatal(err)
	}
	must(reg.Cancel("APP", "a", false))

	want := []string{
		"Register/a:UP",
		"Heartbeat/a:UP",
		"StatusUpdate/a:OUT_OF_SERVICE",
		"StatusUpdate/a:UP",
		"DeleteStatusOverride/a:UNKNOWN",
		"DeleteStatusOverride/a:UP",
		"Cancel/a:",
		"Register/a:UP",
		"Cancel/a:",
	}
	if got := queued(p); !slices.Equal(got, want) {
		t.Fatalf("queue\n got %q\nwant %q", got, want)
	}
}

// Changes from peers, evictions and corrections are not replicated, but the
// queue still learns their revision.
func TestOnEventSkipsPeerChangesAndEvictions(t *testing.T) {
	clk := clocktest.New(time.UnixMilli(1_000_000))
	reg, rep := wiredNoRun(t, clk)
	p := rep.list()[0]
	if _, err := reg.Register(instance("APP", "a", clk.Now()), true); err != nil {
		t.Fatal(err)
	}
	if err := reg.Evict("APP", "a"); err != nil {
		t.Fatal(err)
	}
	if got := queued(p); len(got) != 0 {
		t.Fatalf("replicated %q", got)
	}
	p.mu.Lock()
	seen := p.seen
	p.mu.Unlock()
	if seen != reg.Revision() || seen != 2 {
		t.Fatalf("seen revision %d, registry at %d", seen, reg.Revision())
	}
}

// A peer's 404 to a heartbeat queues a Register of the local copy, unless
// the copy belongs to a change the queue has not seen yet (it is on its
// way, in order) or the instance is gone.
func TestReregisterNeverOvertakesANewerChange(t *testing.T) {
	clk := clocktest.New(time.UnixMilli(1_000_000))
	reg, rep := wiredNoRun(t, clk)
	p := rep.list()[0]
	if _, err := reg.Register(instance("APP", "a", clk.Now()), false); err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	p.q = newQueue(100)
	p.mu.Unlock()

	rep.reregister(p, "APP", "a")
	if got := queued(p); !slices.Equal(got, []string{"Register/a:UP"}) {
		t.Fatalf("after a 404: %q", got)
	}

	// Pretend the queue has not been told of the registration (revision 1)
	// yet: the copy belongs to a change still being delivered, and a
	// Register built from it must not overtake that change.
	p.mu.Lock()
	p.q, p.seen = newQueue(100), 0
	p.mu.Unlock()
	rep.reregister(p, "APP", "a")
	if got := queued(p); len(got) != 0 {
		t.Fatalf("register queued ahead of an undelivered change: %q", got)
	}

	if err := reg.Cancel("APP", "a", false); err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	p.q = newQueue(100)
	p.mu.Unlock()
	rep.reregister(p, "APP", "a")
	if got := queued(p); len(got) != 0 {
		t.Fatalf("cancelled instance registered again: %q", got)
	}
}

// itemOf builds every replicated item from the event alone.
func TestItemOfUsesTheEventOnly(t *testing.T) {
	in := instance("APP", "x", time.UnixMilli(1000))
	in.LastDirtyTimestamp = time.UnixMilli(1234)
	v := registry.LeaseView{Instance: in, Duration: 90 * time.Second, RenewalInterval: 30 * time.Second}
	it, ok := itemOf(&registry.Event{Kind: registry.EventRegister, App: "APP", ID: "x", Lease: v})
	if !ok || it.Action != compat.ActionRegister || it.Instance == nil || it.Instance.Instance != in ||
		it.LastDirtyTimestamp != 1234 || !it.HasLastDirty {
		t.Fatalf("register item %+v %v", it, ok)
	}
	if _, ok := itemOf(&registry.Event{Kind: registry.EventRegister, App: "APP", ID: "x", Lease: v, FromPeer: true}); ok {
		t.Fatal("a peer's change replicated")
	}
	// The prober's verdict goes out as a registration carrying its opinion;
	// the stored instance is not modified.
	down := in.Clone()
	down.Status = registry.StatusDown
	dv := v
	dv.Instance = down
	it, ok = itemOf(&registry.Event{Kind: registry.EventProbeStatus, App: "APP", ID: "x", Lease: dv, Status: registry.StatusDown})
	if !ok || it.Action != compat.ActionRegister || it.Instance.Instance.Status != registry.StatusDown || it.Status != "DOWN" {
		t.Fatalf("probe item %+v %v", it, ok)
	}
	it, ok = itemOf(&registry.Event{Kind: registry.EventProbeStatus, App: "APP", ID: "x", Lease: dv, Status: registry.StatusOutOfService})
	if !ok || it.Instance.Instance.Status != registry.StatusOutOfService || down.Status != registry.StatusDown {
		t.Fatalf("probe item with an opinion unlike the stored status: %+v", it)
	}
	for _, k := range []registry.EventKind{registry.EventEvict, registry.EventStatusCorrected, registry.EventOverrideStored, registry.EventHeldStatus} {
		if _, ok := itemOf(&registry.Event{Kind: k, App: "APP", ID: "x", Lease: v}); ok {
			t.Fatalf("%s replicated", k)
		}
	}
}

// wiredNoRun is a registry feeding a Replicator whose one peer is never
// contacted (no sender runs): the tests read its queue.
func wiredNoRun(t *testing.T, clk *clocktest.Clock) (*registry.Registry, *Replicator) {
	t.Helper()
	var rep *Replicator
	reg := registry.New(registry.Options{Now: clk.Now,
		OnEvent: func(e registry.Event) { rep.OnEvent(e) },
		OnRenew: func(rn registry.Renewal) { rep.OnRenew(rn) }})
	rep = New(Config{Now: clk.Now, Logger: testLogger(t), Seed: 1}, reg, []Peer{mustPeer(t, "http://127.0.0.1:1/eureka/")})
	return reg, rep
}

// A heartbeat that read a lease whose last change the peer's queue has not
// seen yet is held back: queued, it would reach the peer before the change.
func TestHeartbeatNeverOvertakesItsChange(t *testing.T) {
	clk := clocktest.New(time.UnixMilli(1_000_000))
	reg, rep := wiredNoRun(t, clk)
	p := rep.list()[0]
	in, err := reg.Register(instance("APP", "a", clk.Now()), false)
	if err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	p.q, p.seen = newQueue(100), 0 // the Register (revision 1) not yet queued
	p.mu.Unlock()
	rep.OnRenew(registry.Renewal{App: "APP", ID: "a", Instance: in, Revision: 1})
	if got := queued(p); len(got) != 0 {
		t.Fatalf("heartbeat queued before its change: %q", got)
	}
	if st := rep.Status()[0]; st.HeldBack != 1 {
		t.Fatalf("held back %d, want 1", st.HeldBack)
	}
	p.mu.Lock()
	p.seen = 1
	p.mu.Unlock()
	rep.OnRenew(registry.Renewal{App: "APP", ID: "a", Instance: in, Revision: 1})
	if got := queued(p); !slices.Equal(got, []string{"Heartbeat/a:UP"}) {
		t.Fatalf("heartbeat after its change: %q", got)
	}
	if rev := p.q.head.rev; rev != 1 {
		t.Fatalf("heartbeat task revision %d, want 1", rev)
	}
}
