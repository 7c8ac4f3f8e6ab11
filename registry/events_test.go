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
