package registry

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/goreka/goreka/registry/clocktest"
)

// renewFixture is a registry with one lease for each path a heartbeat
// can take, and what its listeners saw.
type renewFixture struct {
	r       *Registry
	clock   *clocktest.Clock
	mu      sync.Mutex
	events  []string
	renewed []string
	stored  time.Time // the LastDirtyTimestamp of svc/a
}

func newRenewFixture(t *testing.T) *renewFixture {
	t.Helper()
	f := &renewFixture{clock: newClock()}
	f.r = New(Options{Now: f.clock.Now, ExpectedClients: 1,
		OnEvent: func(e Event) {
			f.mu.Lock()
			f.events = append(f.events, fmt.Sprintf("%v %s/%s rev %d %s<-%s peer=%v", e.Kind, e.App, e.ID, e.Revision, e.Lease.Instance.Status, e.Prev, e.FromPeer))
			f.mu.Unlock()
		},
		OnRenew: func(rn Renewal) {
			f.mu.Lock()
			f.renewed = append(f.renewed, fmt.Sprintf("%s/%s %s override=%q peer=%v rev %d", rn.App, rn.ID, rn.Instance.Status, rn.OverriddenStatus, rn.FromPeer, rn.Revision))
			f.mu.Unlock()
		}})
	a := inst("svc", "a", StatusUp)
	a.LastDirtyTimestamp = f.clock.Now()
	f.stored = a.LastDirtyTimestamp
	mustRegister(t, f.r, a, false)
	mustRegister(t, f.r, inst("svc", "b", StatusUp), true)
	if _, err := f.r.SetStatic([]*Instance{inst("svc", "static", StatusUp)}); err != nil {
		t.Fatal(err)
	}
	// corr is stored UP with an OUT_OF_SERVICE override (as after a lost
	// correction): its next heartbeat corrects the status.
	mustRegister(t, f.r, inst("svc", "corr", StatusUp), false)
	f.r.mu.Lock()
	f.r.overrides["corr"] = StatusOutOfService
	f.r.mu.Unlock()
	// held is held by self-preservation: a heartbeat ends the hold.
	mustRegister(t, f.r, inst("svc", "held", StatusUp), false)
	if err := f.r.MarkDown("svc", "held", DownByHeld, true); err != nil {
		t.Fatal(err)
	}
	// unk's rule chain says UNKNOWN: 404, the client registers again.
	mustRegister(t, f.r, inst("svc", "unk", StatusUp), false)
	if err := f.r.StatusUpdate("svc", "unk", StatusOutOfService, time.Time{}, false); err != nil {
		t.Fatal(err)
	}
	if err := f.r.DeleteStatusOverride("svc", "unk", "", time.Time{}, false); err != nil {
		t.Fatal(err)
	}
	f.events, f.renewed = nil, nil
	return f
}

// state is what a test can see of the fixture after the heartbeats.
func (f *renewFixture) state() map[string]any {
	f.clock.Advance(time.Minute) // the renews meter reports whole minutes
	leases := map[string]string{}
	for _, id := range []string{"a", "b", "static", "corr", "held", "unk"} {
		v, ok := f.r.Get("svc", id)
		if ok {
			leases[id] = fmt.Sprintf("%s renewed %v", v.Instance.Status, v.LastRenewalTimestamp)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return map[string]any{"events": f.events, "renewed": f.renewed, "leases": leases,
		"overrides": f.r.StatusOverrides(), "renews": f.r.RenewsLastMinute(), "revision": f.r.Revision()}
}

// renewCases are heartbeats for every path, with Renew's answer on the
// fixture as it was built (want: nil success, else what errors.Is finds;
// conflict: a *ConflictError).
func renewCases(stored time.Time) []struct {
	name     string
	req      RenewRequest
	want     error
	conflict bool
} {
	return []struct {
		name     string
		req      RenewRequest
		want     error
		conflict bool
	}{
		{name: "plain", req: RenewRequest{App: "svc", ID: "a"}},
		{name: "upper-case app", req: RenewRequest{App: "SVC", ID: "b"}},
		{name: "unknown id", req: RenewRequest{App: "svc", ID: "zz"}, want: ErrNotFound},
		{name: "unknown app", req: RenewRequest{App: "nope", ID: "a"}, want: ErrNotFound},
		{name: "no app", req: RenewRequest{ID: "a"}, want: &ValidationError{}},
		{name: "static", req: RenewRequest{App: "svc", ID: "static"}},
		{name: "correcting status", req: RenewRequest{App: "svc", ID: "corr"}},
		{name: "ends a hold", req: RenewRequest{App: "svc", ID: "held"}},
		{name: "rule chain unknown", req: RenewRequest{App: "svc", ID: "unk"}, want: ErrNotFound},
		{name: "dirty equal", req: RenewRequest{App: "svc", ID: "a", LastDirtyTimestamp: stored}},
		{name: "dirty client newer", req: RenewRequest{App: "svc", ID: "a", LastDirtyTimestamp: stored.Add(time.Second)}, want: ErrNewerCopy},
		{name: "dirty client older", req: RenewRequest{App: "svc", ID: "a", LastDirtyTimestamp: stored.Add(-time.Second)}},
		{name: "dirty peer older", req: RenewRequest{App: "svc", ID: "a", FromPeer: true, LastDirtyTimestamp: stored.Add(-time.Second)}, conflict: true},
		{name: "dirty peer newer with override", req: RenewRequest{App: "svc", ID: "b", FromPeer: true, LastDirtyTimestamp: time.Now().Add(time.Hour), OverriddenStatus: StatusOutOfService}, want: ErrNewerCopy},
	}
}

func sameAnswer(a, b error) bool {
	if (a == nil) != (b == nil) {
		return false
	}
	return a == nil || reflect.TypeOf(a) == reflect.TypeOf(b) && a.Error() == b.Error()
}

// TestRenewAllAnswersAsRenew: each heartbeat of a batch gets the answer
// Renew gives it, and the registry, its listeners and the renews meter end
// as after Renew item by item, across chunk boundaries.
func TestRenewAllAnswersAsRenew(t *testing.T) {
	cases := renewCases(time.Time{})
	t.Run("table", func(t *testing.T) {
		f := newRenewFixture(t)
		cases = renewCases(f.stored)
		reqs := make([]RenewRequest, len(cases))
		for i, tc := range cases {
			reqs[i] = tc.req
		}
		got := make([]error, len(reqs))
		calls := 0
		f.r.RenewAll(reqs, func(i int, err error) {
			if i != calls {
				t.Fatalf("answer %d called as %d: not in order", calls, i)
			}
			calls++
			got[i] = err
		})
		if calls != len(reqs) {
			t.Fatalf("%d answers for %d heartbeats", calls, len(reqs))
		}
		for i, tc := range cases {
			err := got[i]
			var ve *ValidationError
			var ce *ConflictError
			switch {
			case tc.conflict:
				if !errors.As(err, &ce) || ce.Stored.Instance.ID() != tc.req.ID {
					t.Errorf("%s: %v, want a conflict with the stored copy", tc.name, err)
				}
			case tc.want == nil:
				if err != nil {
					t.Errorf("%s: %v, want success", tc.name, err)
				}
			case errors.As(tc.want, &ve):
				if !errors.As(err, &ve) {
					t.Errorf("%s: %v, want a validation error", tc.name, err)
				}
			case !errors.Is(err, tc.want):
				t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
			}
		}
		st := f.state()
		if s := st["leases"].(map[string]string)["corr"]; s[:len(StatusOutOfService)] != string(StatusOutOfService) {
			t.Errorf("corr not corrected: %s", s)
		}
		if f.r.StatusOverrides()["b"] != StatusOutOfService {
			t.Errorf("a newer peer heartbeat's override not stored: %v", f.r.StatusOverrides())
		}
	})
	for _, n := range []int{1, renewChunk - 1, renewChunk, renewChunk + 1, 3*renewChunk + 17} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			one, all := newRenewFixture(t), newRenewFixture(t)
			cases := renewCases(one.stored)
			rng := rand.New(rand.NewPCG(uint64(n), 28))
			reqs := make([]RenewRequest, n)
			for i := range reqs {
				reqs[i] = cases[rng.IntN(len(cases))].req
			}
			want := make([]error, n)
			for i, req := range reqs {
				want[i] = one.r.Renew(req)
			}
			answered := 0
			all.r.RenewAll(reqs, func(i int, err error) {
				answered++
				if !sameAnswer(err, want[i]) {
					t.Errorf("item %d (%s/%s): RenewAll %v, Renew %v", i, reqs[i].App, reqs[i].ID, err, want[i])
				}
			})
			if answered != n {
				t.Fatalf("%d answers for %d heartbeats", answered, n)
			}
			if a, b := one.state(), all.state(); !reflect.DeepEqual(a, b) {
				t.Errorf("after Renew one by one:\n%v\nafter RenewAll:\n%v", a, b)
			}
		})
	}
}

// TestRenewAllReleasesTheLockBetweenChunks: a writer gets the lock between
// two chunks of a large batch (answers are given outside the locks).
func TestRenewAllReleasesTheLockBetweenChunks(t *testing.T) {
	f := newRenewFixture(t)
	reqs := make([]RenewRequest, 2*renewChunk)
	for i := range reqs {
		reqs[i] = RenewRequest{App: "svc", ID: "a"}
	}
	f.r.RenewAll(reqs, func(i int, err error) {
		if i == renewChunk-1 {
			if !f.r.mu.TryLock() {
				t.Fatal("the registry's lock is held while a chunk is answered")
			}
			f.r.mu.Unlock()
			mustRegister(t, f.r, inst("svc", "new", StatusUp), false)
		}
	})
	if _, ok := f.r.Get("svc", "new"); !ok {
		t.Fatal("the registration between chunks is lost")
	}
}

// TestRenewAllRace runs batches beside every kind of writer (go test -race).
func TestRenewAllRace(t *testing.T) {
	f := newRenewFixture(t)
	const ids = 50
	for i := range ids {
		mustRegister(t, f.r, inst("race", fmt.Sprint(i), StatusUp), false)
	}
	reqs := make([]RenewRequest, 3*renewChunk)
	for i := range reqs {
		reqs[i] = RenewRequest{App: "race", ID: fmt.Sprint(i % (ids + 5))}
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for w := range 3 {
		wg.Go(func() {
			for k := 0; ; k++ {
				select {
				case <-stop:
					return
				default:
				}
				id := fmt.Sprint((k*7 + w) % ids)
				switch k % 4 {
				case 0:
					f.r.Cancel("race", id, false)
				case 1:
					f.r.Register(inst("race", id, StatusUp), false)
				case 2:
					f.r.StatusUpdate("race", id, StatusOutOfService, time.Time{}, false)
				case 3:
					f.r.DeleteStatusOverride("race", id, StatusUp, time.Time{}, false)
				}
			}
		})
	}
	var batches sync.WaitGroup
	for range 2 {
		batches.Go(func() {
			for range 20 {
				n := 0
				f.r.RenewAll(reqs, func(i int, err error) {
					n++
					if err != nil && !errors.Is(err, ErrNotFound) {
						t.Errorf("item %d: %v", i, err)
					}
				})
				if n != len(reqs) {
					t.Errorf("%d answers for %d heartbeats", n, len(reqs))
				}
			}
		})
	}
	batches.Wait()
	close(stop)
	wg.Wait()
}
