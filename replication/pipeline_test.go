package replication

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/goreka/goreka/compat"
	"github.com/goreka/goreka/peerbatch"
	"github.com/goreka/goreka/registry"
)

// heldPeer is a peer client whose batches wait until the test answers them,
// in any order: each call is parked until answer or fail, and the peer's
// registry (applied with goreka's batch semantics, item by item, as a stock
// Java peer also applies them) changes only when a batch is answered.
type heldPeer struct {
	reg   *registry.Registry
	apply peerbatch.Applier

	mu       sync.Mutex
	pending  []*heldCall
	most     int                 // most calls pending at once
	overlaps []string            // instances two pending calls carried at once
	applied  map[string][]string // per instance: the override statuses applied, in order
	received int                 // calls so far
	log      map[string][]string // per instance: every item applied, its answer and the peer's copy after it
}

type heldCall struct {
	n      int // the peer's count of calls when it arrived
	items  []compat.ReplicationItem
	answer chan heldAnswer
}

type heldAnswer struct {
	resps []compat.ReplicationResponse
	err   error
}

func newHeldPeer() *heldPeer {
	reg := registry.New(registry.Options{})
	return &heldPeer{reg: reg, apply: peerbatch.Applier{Registry: reg}, applied: map[string][]string{}, log: map[string][]string{}}
}

func (h *heldPeer) sendBatch(ctx context.Context, _ *Peer, items []compat.ReplicationItem) ([]compat.ReplicationResponse, error) {
	c := &heldCall{items: items, answer: make(chan heldAnswer, 1)}
	h.mu.Lock()
	h.received++
	c.n = h.received
	for _, o := range h.pending {
		for _, a := range o.items {
			for _, b := range items {
				if keyOf(&a) == keyOf(&b) {
					h.overlaps = append(h.overlaps, a.ID)
				}
			}
		}
	}
	h.pending = append(h.pending, c)
	h.most = max(h.most, len(h.pending))
	h.mu.Unlock()
	select {
	case a := <-c.answer:
		return a.resps, a.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (h *heldPeer) fetchApps(context.Context, *Peer) (*registry.Applications, error) {
	return nil, errors.New("heldPeer: no start-up sync")
}

// calls takes the calls pending now, oldest first.
func (h *heldPeer) calls() []*heldCall {
	h.mu.Lock()
	defer h.mu.Unlock()
	cs := h.pending
	h.pending = nil
	return cs
}

// hold puts calls back, still pending.
func (h *heldPeer) hold(cs ...*heldCall) {
	h.mu.Lock()
	h.pending = append(cs, h.pending...)
	h.mu.Unlock()
}

// answer applies c's items in order and answers them.
func (h *heldPeer) answer(c *heldCall) {
	rs := make([]compat.ReplicationResponse, len(c.items))
	h.mu.Lock()
	for i := range c.items {
		rs[i] = h.apply.Apply(&c.items[i])
		it := c.items[i]
		after := "gone"
		if v, ok := h.reg.Get(it.AppName, it.ID); ok {
			after = fmt.Sprintf("%s/%s", v.Instance.Status, v.Instance.OverriddenStatus)
		}
		h.log[it.ID] = append(h.log[it.ID], fmt.Sprintf("#%d %s %s -> %d (peer %s)", c.n, it.Action, it.Status, rs[i].StatusCode, after))

		if it := c.items[i]; it.Action == compat.ActionStatusUpdate && rs[i].StatusCode == http.StatusOK {
			h.applied[it.ID] = append(h.applied[it.ID], it.Status)
		}
	}
	h.mu.Unlock()
	c.answer <- heldAnswer{resps: rs}
}

func (h *heldPeer) fail(c *heldCall, err error) { c.answer <- heldAnswer{err: err} }

// pipelined returns a Replicator sending to a held peer with batches of 5,
// feeding on reg's events.
func pipelined(t *testing.T, inFlight, bound int) (*registry.Registry, *Replicator, *heldPeer) {
	t.Helper()
	var rep *Replicator
	reg := registry.New(registry.Options{OnEvent: func(e registry.Event) { rep.OnEvent(e) }})
	peer := newHeldPeer()
	cfg := Config{Logger: testLogger(t), Seed: 1, BatchSize: 5, MaxBatchesInFlight: inFlight,
		MaxTimeForReplication: time.Hour, MaxElementsInPeerReplicationPool: bound}
	cfg.fill()
	rep = newReplicator(cfg, reg, []Peer{mustPeer(t, "http://peer1:8761/eureka/")}, peer, nil)
	return reg, rep, peer
}

// With several batches in flight, a peer that answers them newest first,
// holds some back for later and fails a quarter of them (503 and network
// errors) still receives each instance's changes in the order this server
// made them: every override of every instance arrives, in order, and the
// peer ends holding what this server holds. No two batches in flight ever
// carry the same instance. With one batch in flight there is never a
// second. (Disable the in-flight rule in takeBatch and this fails: a
// StatusUpdate overtakes its instance's Register or an older override.)
func TestPipelineKeepsEachInstancesOrder(t *testing.T) {
	for _, inFlight := range []int{1, 4} {
		t.Run(fmt.Sprint(inFlight, " in flight"), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { pipelineOrder(t, inFlight, 0) })
		})
	}
}

// The same with a queue far smaller than the changes: overflowing
// instances are resynced from the registry, and a resync of an instance in
// flight waits for that batch (a resync read now and applied before the
// older batch would be overwritten by it). The overrides then arrive
// folded into resyncs, but the peer ends holding what this server holds.
// (Disable the rule for marks in resyncLocked, skip nil, and this fails.)
func TestPipelineResyncsKeepEachInstancesOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) { pipelineOrder(t, 4, 8) })
}

func pipelineOrder(t *testing.T, inFlight, bound int) {
	reg, rep, peer := pipelined(t, inFlight, bound)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { rep.Run(ctx); close(done) }()

	const n, rounds = 12, 8
	app := func(i int) string { return fmt.Sprint("APP", i%3) }
	id := func(i int) string { return fmt.Sprint("i-", i) }
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	want := map[string][]string{}
	round := 0
	// step makes the next round of changes: registrations first, then
	// alternating overrides of every instance, then cancels of every
	// third one and a registration of a new instance.
	step := func() {
		switch {
		case round == 0:
			for i := range n {
				_, err := reg.Register(instance(app(i), id(i), time.Now()), false)
				must(err)
			}
		case round <= rounds:
			s := registry.StatusOutOfService
			if round%2 == 0 {
				s = registry.StatusUp
			}
			for i := range n {
				must(reg.StatusUpdate(app(i), id(i), s, time.Time{}, false))
				want[id(i)] = append(want[id(i)], string(s))
			}
		case round == rounds+1:
			for i := 0; i < n; i += 3 {
				must(reg.Cancel(app(i), id(i), false))
			}
			_, err := reg.Register(instance(app(n), id(n), time.Now()), false)
			must(err)
		}
		round++
	}
	// Half the changes are made before the first batch is sent.
	for range rounds / 2 {
		step()
	}
	rnd := rand.New(rand.NewPCG(7, uint64(inFlight)))
	for iter := 0; ; iter++ {
		if iter > 10_000 {
			t.Fatalf("no convergence: %+v", rep.Status()[0])
		}
		synctest.Wait()
		cs := peer.calls()
		if len(cs) == 0 {
			st := rep.Status()[0]
			if round > rounds+1 && st.QueueDepth == 0 && st.ResyncPending == 0 && st.InFlight == 0 {
				break
			}
			step()
			time.Sleep(100 * time.Millisecond) // batch delay, back-offs
			continue
		}
		// Newest first; the oldest may wait for a later round.
		slices.Reverse(cs)
		if len(cs) > 1 && rnd.IntN(3) == 0 {
			peer.hold(cs[len(cs)-1])
			cs = cs[:len(cs)-1]
		}
		for _, c := range cs {
			switch rnd.IntN(8) {
			case 0:
				peer.fail(c, &StatusError{Code: http.StatusServiceUnavailable})
			case 1:
				peer.fail(c, errors.New("connection reset by peer"))
			default:
				peer.answer(c)
			}
		}
	}
	cancel()
	<-done

	peer.mu.Lock()
	defer peer.mu.Unlock()
	if len(peer.overlaps) > 0 {
		t.Errorf("batches in flight together carried the same instances: %q", peer.overlaps[:min(len(peer.overlaps), 6)])
	}
	if peer.most > inFlight || (inFlight > 1 && peer.most < 2) {
		t.Errorf("at most %d batches in flight, want %d", peer.most, inFlight)
	}
	st := rep.Status()[0]
	if bound > 0 && st.Resyncs == 0 {
		t.Errorf("no resync through a queue of %d: %+v", bound, st)
	}
	for i := range n {
		if got := peer.applied[id(i)]; st.Resyncs == 0 && !slices.Equal(got, want[id(i)]) {
			t.Errorf("%s: overrides applied %q, want %q", id(i), got, want[id(i)])
		}
	}
	if got, want := stateOf(peer.reg), stateOf(reg); !slices.Equal(got, want) {
		t.Errorf("peer differs: %q", firstDiff(got, want))
		for i := range n + 1 {
			t.Logf("%s: %q", id(i), peer.log[id(i)])
		}
	}
	if st.Failures.Congestion+st.Failures.Network == 0 || st.Dropped != 0 || st.Failures.Items != 0 {
		t.Errorf("status %+v: want some retried failures, nothing dropped, no item refused", st)
	}
	t.Logf("%d batches, at most %d in flight, %d congestion and %d network failures, %d resyncs",
		st.BatchesSent, peer.most, st.Failures.Congestion, st.Failures.Network, st.Resyncs)
}

// Batches in flight together fail together when the peer goes away: the
// round backs off once (not once per batch, which would double the delay
// per batch in flight), and the success of a batch that was in flight with
// the failure does not end the back-off.
func TestPipelineBacksOffOncePerRound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, rep, peer := pipelined(t, 4, 0)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { rep.Run(ctx); close(done) }()
		for i := range 20 {
			rep.OnEvent(registry.Event{Kind: registry.EventCancel, App: "APP", ID: fmt.Sprint("i-", i), Revision: int64(i + 1)})
		}
		synctest.Wait()
		cs := peer.calls()
		if len(cs) != 4 {
			t.Fatalf("%d batches in flight, want 4", len(cs))
		}
		for _, c := range cs[:3] {
			peer.fail(c, &StatusError{Code: http.StatusServiceUnavailable})
		}
		peer.answer(cs[3]) // formed before the failures: says nothing about the retry
		synctest.Wait()
		st := rep.Status()[0]
		if st.State != "backing off" || st.Available || st.QueueDepth != 15 || st.InFlight != 0 || st.BatchesSent != 1 {
			t.Fatalf("after the round: %+v", st)
		}
		start := time.Now()
		for len(peer.calls()) == 0 {
			if time.Since(start) > 10*time.Second {
				t.Fatal("no retry")
			}
			time.Sleep(10 * time.Millisecond)
			synctest.Wait()
		}
		// One round, one step: the first back-off, [0.5 s, 1 s].
		if d := time.Since(start); d < 500*time.Millisecond || d > time.Second+10*time.Millisecond {
			t.Errorf("retried after %v, want the first back-off", d)
		}
		cancel()
		<-done
	})
}

// takeSkipping and nextResync leave an instance of a batch in flight where
// it is, with all its later tasks, and take the others in order.
func TestQueueSkipsInstancesInFlight(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1000, 0)
	q := newQueue(3)
	mk := func(a compat.ReplicationAction, id string) *task {
		return &task{item: compat.ReplicationItem{Action: a, AppName: "APP", ID: id}, enqueued: t0, expires: t0.Add(time.Hour)}
	}
	busy := func(k instanceKey) bool { return k.id == "a" }
	for _, tk := range []*task{mk(compat.ActionRegister, "a"), mk(compat.ActionRegister, "b"),
		mk(compat.ActionStatusUpdate, "a"), mk(compat.ActionRegister, "c"), mk(compat.ActionRegister, "d")} {
		q.push(tk) // c overflows the queue: a is marked
	}
	q.markDirty(instanceKey{"APP", "b"}, 0)
	if k, _, at, ok := q.nextResync(0, busy); !ok || k.id != "b" || at != 1 {
		t.Fatalf("nextResync skipping a = %v %d %v", k, at, ok)
	}
	q.takeResyncAt(1)
	if _, _, _, ok := q.nextResync(0, busy); ok {
		t.Fatal("a's mark taken while a is in flight")
	}
	q.push(mk(compat.ActionRegister, "e"))
	batch, _ := q.takeSkipping(10, t0, func(k instanceKey) bool { return k.id == "c" })
	var got []string
	for _, tk := range batch {
		got = append(got, tk.item.ID)
	}
	if !slices.Equal(got, []string{"d", "e"}) || q.len() != 1 || q.head.item.ID != "c" {
		t.Fatalf("took %q, left %d", got, q.len())
	}
	if k, _, ok := q.takeResync(); !ok || k.id != "a" || q.pendingResyncs() != 0 {
		t.Fatalf("takeResync = %v %v", k, ok)
	}
}

// A push that overflows the queue while its own instance's oldest task is
// at the head marks that instance; the pushed task then folds into the
// mark. Queued, it would go out after the resync, which reads the
// registry later and may already hold a newer change (found by
// TestPipelineResyncsKeepEachInstancesOrder: a peer left OUT_OF_SERVICE).
func TestQueueOverflowOfTheSameInstanceFolds(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1000, 0)
	q := newQueue(2)
	mk := func(a compat.ReplicationAction, id string) *task {
		return &task{item: compat.ReplicationItem{Action: a, AppName: "APP", ID: id}, enqueued: t0, expires: t0.Add(time.Hour)}
	}
	q.push(mk(compat.ActionRegister, "a"))
	q.push(mk(compat.ActionRegister, "b"))
	folded, dropped := q.push(mk(compat.ActionStatusUpdate, "a"))
	a := instanceKey{"APP", "a"}
	if !folded || dropped != 0 || q.last[a] != nil || q.len() != 1 || q.dirty[a] != resyncState|resyncOverride {
		t.Fatalf("folded %v, dropped %d, a queued %v, len %d, a's flags %b", folded, dropped, q.last[a] != nil, q.len(), q.dirty[a])
	}
}
