package registry

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Under concurrent writers, listeners see every change exactly once, in
// strictly increasing revision order, one at a time; each event is
// self-contained (its lease view is the state right after the change), and
// a writer's own change has been delivered when its call returns.
func TestEventsOrderedAndNeverConcurrent(t *testing.T) {
	var (
		mu       sync.Mutex
		inFlight atomic.Int32
		got      []Event
		seen     = map[*Instance]bool{}
		overlap  atomic.Bool
	)
	c := newClock()
	r := New(Options{Now: c.Now, OnEvent: func(e Event) {
		if inFlight.Add(1) != 1 {
			overlap.Store(true)
		}
		mu.Lock()
		got = append(got, e)
		seen[e.Lease.Instance] = true
		mu.Unlock()
		inFlight.Add(-1)
	}})
	statuses := []Status{StatusUp, StatusDown, StatusOutOfService}
	var wg sync.WaitGroup
	var lateDelivery atomic.Bool
	for w := range 8 {
		wg.Go(func() {
			rnd := rand.New(rand.NewPCG(uint64(w), 7))
			for range 300 {
				id := fmt.Sprint("i-", rnd.IntN(4))
				var err error
				switch rnd.IntN(5) {
				case 0, 1:
					var stored *Instance
					stored, err = r.Register(inst("svc", id, StatusUp), rnd.IntN(2) == 0)
					if err == nil {
						// The change was delivered before Register returned.
						mu.Lock()
						if !seen[stored] {
							lateDelivery.Store(true)
						}
						mu.Unlock()
					}
				case 2:
					err = r.StatusUpdate("svc", id, statuses[rnd.IntN(3)], time.Time{}, false)
				case 3:
					err = r.DeleteStatusOverride("svc", id, "", time.Time{}, false)
				default:
					err = r.Cancel("svc", id, false)
				}
				if err != nil && !errors.Is(err, ErrNotFound) {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if overlap.Load() {
		t.Fatal("listener called concurrently")
	}
	if lateDelivery.Load() {
		t.Fatal("a successful write returned before its change was delivered")
	}
	if int64(len(got)) != r.Revision() {
		t.Fatalf("%d events for revision %d", len(got), r.Revision())
	}
	for i, e := range got {
		if e.Revision != int64(i+1) {
			t.Fatalf("event %d has revision %d", i, e.Revision)
		}
		if e.Lease.Instance == nil || e.Lease.Instance.ID() != e.ID || e.App != "SVC" {
			t.Fatalf("event %d not self-contained: %+v", i, e)
		}
		if e.Changed && !e.Kind.Removal() && e.Lease.Revision != e.Revision {
			t.Fatalf("event %d: lease revision %d, want %d", i, e.Lease.Revision, e.Revision)
		}
	}
	// Replaying the events gives the registry's final state.
	state := map[string]Status{}
	for _, e := range got {
		if e.Kind.Removal() {
			delete(state, e.ID)
			continue
		}
		state[e.ID] = e.Lease.Instance.Status
	}
	want := map[string]Status{}
	for _, a := range r.Applications().Apps {
		for _, v := range a.Instances {
			want[v.Instance.ID()] = v.Instance.Status
		}
	}
	if fmt.Sprint(state) != fmt.Sprint(want) {
		t.Fatalf("replayed events %v, registry %v", state, want)
	}
}

// Each kind carries what a listener needs: previous status, the asked
// status, whether anything changed, and where the change came from.
func TestEventContents(t *testing.T) {
	r, _, events := newReg(t)
	mustRegister(t, r, inst("svc", "a", StatusUp), false)
	if err := r.StatusUpdate("svc", "a", StatusOutOfService, time.Time{}, true); err != nil {
		t.Fatal(err)
	}
	if err := r.StatusUpdate("svc", "a", StatusOutOfService, time.Time{}, false); err != nil {
		t.Fatal(err)
	}
	if err := r.DeleteStatusOverride("svc", "a", StatusUp, time.Time{}, false); err != nil {
		t.Fatal(err)
	}
	if err := r.DeleteStatusOverride("svc", "a", StatusUp, time.Time{}, false); err != nil {
		t.Fatal(err)
	}
	if err := r.Cancel("svc", "a", false); err != nil {
		t.Fatal(err)
	}
	type row struct {
		kind          EventKind
		prev, now, as Status
		changed, peer bool
	}
	want := []row{
		{EventRegister, "", StatusUp, "", true, false},
		{EventStatusUpdate, StatusUp, StatusOutOfService, StatusOutOfService, true, true},
		{EventStatusUpdate, StatusOutOfService, StatusOutOfService, StatusOutOfService, false, false},
		{EventDeleteStatusOverride, StatusOutOfService, StatusUp, StatusUp, true, false},
		{EventDeleteStatusOverride, StatusUp, StatusUp, StatusUp, false, false},
		{EventCancel, StatusUp, StatusUp, "", true, false},
	}
	if len(*events) != len(want) {
		t.Fatalf("%d events, want %d", len(*events), len(want))
	}
	for i, w := range want {
		e := (*events)[i]
		g := row{e.Kind, e.Prev, e.Lease.Instance.Status, e.Status, e.Changed, e.FromPeer}
		if g != w {
			t.Errorf("event %d = %+v, want %+v", i, g, w)
		}
	}
	last := (*events)[len(*events)-1]
	if last.Lease.Instance.ActionType != ActionDeleted || last.Lease.EvictionTimestamp.IsZero() {
		t.Errorf("cancel event does not carry the last stored copy: %+v", last.Lease)
	}
}

// A renew that changes nothing is not a change: no revision, an OnRenew
// call instead. One whose rule chain corrects the status is both.
func TestRenewIsNotAChangeUnlessItCorrects(t *testing.T) {
	var renews []Renewal
	var events []Event
	r := New(Options{OnEvent: func(e Event) { events = append(events, e) }, OnRenew: func(rn Renewal) { renews = append(renews, rn) }})
	mustRegister(t, r, inst("svc", "a", StatusUp), false)
	rev := r.Revision()
	if err := r.Renew(RenewRequest{App: "svc", ID: "a", FromPeer: true}); err != nil {
		t.Fatal(err)
	}
	if r.Revision() != rev || len(events) != 1 {
		t.Fatalf("plain renew made a change: revision %d -> %d", rev, r.Revision())
	}
	if len(renews) != 1 || renews[0].ID != "a" || !renews[0].FromPeer || renews[0].Instance.Status != StatusUp {
		t.Fatalf("renewals %+v", renews)
	}
	// An override the stored status does not reflect (stored by a peer's
	// newer heartbeat) is corrected by the next renew.
	r.storeOverride("SVC", "a", StatusOutOfService)
	if err := r.Renew(RenewRequest{App: "svc", ID: "a"}); err != nil {
		t.Fatal(err)
	}
	k := []EventKind{}
	for _, e := range events {
		k = append(k, e.Kind)
	}
	if fmt.Sprint(k) != fmt.Sprint([]EventKind{EventRegister, EventOverrideStored, EventStatusCorrected}) {
		t.Fatalf("events %v", k)
	}
	if c := events[2]; c.Prev != StatusUp || c.Lease.Instance.Status != StatusOutOfService {
		t.Fatalf("correction %+v", c)
	}
}

// A subscriber sees every change after its start, in order; a slow one is
// ended with the revision to resume from, and writers never wait for it.
func TestSubscribeAndLag(t *testing.T) {
	r := New(Options{})
	mustRegister(t, r, inst("svc", "a", StatusUp), false)
	s := r.Subscribe(3)
	if s.Start() != 1 {
		t.Fatalf("start %d", s.Start())
	}
	for i := range 3 {
		mustRegister(t, r, inst("svc", fmt.Sprint("b", i), StatusUp), false)
	}
	for want := int64(2); want <= 4; want++ {
		if e := <-s.Events(); e.Revision != want {
			t.Fatalf("revision %d, want %d", e.Revision, want)
		}
	}
	// Fill the buffer and go past it: the writer does not block.
	for i := range 5 {
		mustRegister(t, r, inst("svc", fmt.Sprint("c", i), StatusUp), false)
	}
	n := 0
	for range s.Events() {
		n++
	}
	var lag *LaggedError
	if n != 3 || !errors.As(s.Err(), &lag) || lag.Revision != 7 {
		t.Fatalf("after overflow: %d events, err %v", n, s.Err())
	}
	// Resume: subscribe, then take a view; events at or below the view's
	// revision are in the view.
	s2 := r.Subscribe(10)
	view := r.Applications()
	if view.Revision != r.Revision() || view.Revision < s2.Start() {
		t.Fatalf("view at %d, subscription from %d", view.Revision, s2.Start())
	}
	if err := r.Cancel("svc", "a", false); err != nil {
		t.Fatal(err)
	}
	if e := <-s2.Events(); e.Revision != view.Revision+1 || e.Kind != EventCancel {
		t.Fatalf("after the view: %+v", e)
	}
	s2.Close()
	s2.Close()
	if _, ok := <-s2.Events(); ok || s2.Err() != nil {
		t.Fatalf("closed subscription: err %v", s2.Err())
	}
	mustRegister(t, r, inst("svc", "z", StatusUp), false) // no subscriber left: nothing blocks
}

// A subscription that starts while a change at or below its start revision
// is still waiting for delivery does not receive it: its view (any read
// after Subscribe) already holds it.
func TestSubscribeSkipsChangesAtOrBelowItsStart(t *testing.T) {
	r := New(Options{})
	mustRegister(t, r, inst("svc", "a", StatusUp), false)
	// Commit a change without delivering it yet (what a writer between its
	// unlock and its delivery looks like).
	r.mu.Lock()
	l := r.apps["SVC"]["a"]
	r.commitLocked(EventStatusUpdate, l, StatusUp, StatusUp, false, false)
	r.mu.Unlock()
	s := r.Subscribe(4)
	if s.Start() != 2 {
		t.Fatalf("start %d, want 2", s.Start())
	}
	r.deliver()
	mustRegister(t, r, inst("svc", "b", StatusUp), false)
	if e := <-s.Events(); e.Revision != 3 {
		t.Fatalf("first event revision %d, want 3", e.Revision)
	}
}

// A listener that panics does not cost the other changes of the batch, nor
// the subscribers, their delivery; the panic reaches the writer.
func TestPanickingListenerDoesNotLoseChanges(t *testing.T) {
	var seen []int64
	r := New(Options{OnEvent: func(e Event) {
		seen = append(seen, e.Revision)
		if e.Revision == 2 {
			panic("listener bug")
		}
	}})
	s := r.Subscribe(8)
	mustRegister(t, r, inst("svc", "a", StatusUp), false)
	// Two changes pending at once; the first one's listener call panics.
	r.mu.Lock()
	l := r.apps["SVC"]["a"]
	r.commitLocked(EventStatusUpdate, l, StatusUp, StatusUp, false, false)
	r.commitLocked(EventStatusUpdate, l, StatusUp, StatusUp, false, false)
	r.mu.Unlock()
	func() {
		defer func() {
			if p := recover(); p != "listener bug" {
				t.Fatalf("recovered %v", p)
			}
		}()
		r.deliver()
	}()
	if fmt.Sprint(seen) != "[1 2 3]" {
		t.Fatalf("listener saw %v", seen)
	}
	for want := int64(1); want <= 3; want++ {
		if e := <-s.Events(); e.Revision != want {
			t.Fatalf("subscriber got %d, want %d", e.Revision, want)
		}
	}
	mustRegister(t, r, inst("svc", "b", StatusUp), false) // delivery goes on
	if seen[len(seen)-1] != 4 {
		t.Fatalf("after the panic: %v", seen)
	}
}

// A peer's copy is adopted only while the local lease is still the one the
// refused heartbeat was about.
func TestAdoptOnlyTheSameLease(t *testing.T) {
	r := New(Options{})
	mustRegister(t, r, inst("svc", "a", StatusUp), false)
	v, _ := r.Get("svc", "a")
	peer := *v.Instance.Clone()
	peer.Status = StatusDown
	peer.LastDirtyTimestamp = peer.LastDirtyTimestamp.Add(time.Minute)
	pv := v
	pv.Instance = &peer
	if err := r.StatusUpdate("svc", "a", StatusOutOfService, time.Time{}, false); err != nil {
		t.Fatal(err)
	}
	if err := r.Adopt(pv, v.Revision); err != nil {
		t.Fatal(err)
	}
	if got, _ := r.Get("svc", "a"); got.Instance.Status != StatusOutOfService {
		t.Fatalf("a newer local change was undone: %s", got.Instance.Status)
	}
	cur, _ := r.Get("svc", "a")
	if err := r.Adopt(pv, cur.Revision); err != nil {
		t.Fatal(err)
	}
	if got, _ := r.Get("svc", "a"); got.Instance.LastDirtyTimestamp != peer.LastDirtyTimestamp {
		t.Fatalf("the same lease's copy not adopted: %+v", got.Instance)
	}
	if err := r.Cancel("svc", "a", false); err != nil {
		t.Fatal(err)
	}
	if err := r.Adopt(pv, cur.Revision); err != nil {
		t.Fatal(err)
	}
	if _, ok := r.Get("svc", "a"); ok {
		t.Fatal("a cancelled instance was brought back")
	}
}
