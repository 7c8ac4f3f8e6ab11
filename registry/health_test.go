package registry

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func lastEvent(t *testing.T, events *[]Event) Event {
	t.Helper()
	if len(*events) == 0 {
		t.Fatal("no event")
	}
	return (*events)[len(*events)-1]
}

func deltaStatus(r *Registry, app, id string) (Status, ActionType) {
	for _, a := range r.Delta().Apps {
		for _, v := range a.Instances {
			if a.Name == app && v.Instance.ID() == id {
				return v.Instance.Status, v.Instance.ActionType
			}
		}
	}
	return "", ""
}

// A probe verdict serves an UP instance as DOWN everywhere a read looks
// (instance, hash, delta), reports an EventProbeStatus with the opinion
// peers are sent, and lifting it brings the instance's own UP back.
func TestMarkDownProbe(t *testing.T) {
	r, c, events := newReg(t)
	mustRegister(t, r, inst("SVC", "a", StatusUp), false)
	mustRegister(t, r, inst("SVC", "b", StatusUp), false)
	c.Advance(time.Second)
	r.PruneRecentlyChanged(0)

	if err := r.MarkDown("svc", "a", DownByProbe, true); err != nil {
		t.Fatal(err)
	}
	if got := status(t, r, "SVC", "a"); got != StatusDown {
		t.Fatalf("status = %s, want DOWN", got)
	}
	if got := r.HashCode(); got != "DOWN_1_UP_1_" {
		t.Fatalf("hash = %s", got)
	}
	if s, act := deltaStatus(r, "SVC", "a"); s != StatusDown || act != ActionModified {
		t.Fatalf("delta = %s %s, want DOWN MODIFIED", s, act)
	}
	e := lastEvent(t, events)
	if e.Kind != EventProbeStatus || !e.Changed || e.Status != StatusDown || e.Prev != StatusUp || e.FromPeer {
		t.Fatalf("event = %+v", e)
	}
	v, _ := r.Get("SVC", "a")
	if v.DownBy != DownByProbe {
		t.Fatalf("DownBy = %d", v.DownBy)
	}
	// Idempotent: setting it again records nothing.
	n := len(*events)
	if err := r.MarkDown("SVC", "a", DownByProbe, true); err != nil || len(*events) != n {
		t.Fatalf("second MarkDown: err %v, events %d -> %d", err, n, len(*events))
	}
	// Heartbeats keep it DOWN and change nothing.
	if err := r.Renew(RenewRequest{App: "SVC", ID: "a"}); err != nil {
		t.Fatal(err)
	}
	if got := status(t, r, "SVC", "a"); got != StatusDown || len(*events) != n {
		t.Fatalf("after renew: %s, events %d -> %d", got, n, len(*events))
	}

	if err := r.MarkDown("SVC", "a", DownByProbe, false); err != nil {
		t.Fatal(err)
	}
	if got := status(t, r, "SVC", "a"); got != StatusUp {
		t.Fatalf("lifted: status = %s", got)
	}
	if e := lastEvent(t, events); e.Kind != EventProbeStatus || e.Status != StatusUp || !e.Changed {
		t.Fatalf("lift event = %+v", e)
	}
	if got := r.HashCode(); got != "UP_2_" {
		t.Fatalf("hash = %s", got)
	}
	if err := r.MarkDown("SVC", "nope", DownByProbe, true); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown: %v", err)
	}
}

// An operator's override wins over goreka's own DOWN, in both orders.
func TestMarkDownNeverOverridesOperator(t *testing.T) {
	r, _, events := newReg(t)
	mustRegister(t, r, inst("SVC", "a", StatusUp), false)
	if err := r.StatusUpdate("SVC", "a", StatusOutOfService, time.Time{}, false); err != nil {
		t.Fatal(err)
	}
	if err := r.MarkDown("SVC", "a", DownByProbe, true); err != nil {
		t.Fatal(err)
	}
	if got := status(t, r, "SVC", "a"); got != StatusOutOfService {
		t.Fatalf("status = %s, want OUT_OF_SERVICE", got)
	}
	if e := lastEvent(t, events); e.Kind != EventProbeStatus || e.Changed || e.Status != StatusOutOfService {
		t.Fatalf("event = %+v", e)
	}

	// Probe first, then an operator's DOWN: stored as an override, and
	// lifting the probe leaves the operator's DOWN.
	mustRegister(t, r, inst("SVC", "b", StatusUp), false)
	if err := r.MarkDown("SVC", "b", DownByProbe, true); err != nil {
		t.Fatal(err)
	}
	if err := r.StatusUpdate("SVC", "b", StatusDown, time.Time{}, false); err != nil {
		t.Fatal(err)
	}
	if got := r.StatusOverrides()["b"]; got != StatusDown {
		t.Fatalf("override = %q, want DOWN", got)
	}
	if err := r.MarkDown("SVC", "b", DownByProbe, false); err != nil {
		t.Fatal(err)
	}
	if got := status(t, r, "SVC", "b"); got != StatusDown {
		t.Fatalf("status = %s, want the operator's DOWN", got)
	}
	// Removing the override while the verdict stands serves DOWN again.
	if err := r.MarkDown("SVC", "b", DownByProbe, true); err != nil {
		t.Fatal(err)
	}
	if err := r.DeleteStatusOverride("SVC", "b", StatusUp, time.Time{}, false); err != nil {
		t.Fatal(err)
	}
	if got := status(t, r, "SVC", "b"); got != StatusDown {
		t.Fatalf("after override removal: %s, want DOWN by probe", got)
	}
}

// The verdict survives a re-registration; the snapshot keeps the
// instance's own status.
func TestMarkDownSurvivesRegisterNotSnapshot(t *testing.T) {
	r, c, _ := newReg(t)
	mustRegister(t, r, inst("SVC", "a", StatusUp), false)
	if err := r.MarkDown("SVC", "a", DownByProbe, true); err != nil {
		t.Fatal(err)
	}
	c.Advance(time.Second)
	mustRegister(t, r, inst("SVC", "a", StatusUp), false)
	if got := status(t, r, "SVC", "a"); got != StatusDown {
		t.Fatalf("re-registered: %s, want DOWN", got)
	}
	if got := r.HashCode(); got != "DOWN_1_" {
		t.Fatalf("hash = %s", got)
	}
	snap := r.Export()
	if got := snap.Instances[0].Instance.Status; got != StatusUp {
		t.Fatalf("snapshot status = %s, want UP", got)
	}
	if !r.Export().SameState(snap) {
		t.Fatal("two exports of an unchanged registry differ")
	}
	// An instance that registers itself DOWN is left alone, and lifting
	// does not make it UP.
	mustRegister(t, r, inst("SVC", "a", StatusDown), false)
	if err := r.MarkDown("SVC", "a", DownByProbe, false); err != nil {
		t.Fatal(err)
	}
	if got := status(t, r, "SVC", "a"); got != StatusDown {
		t.Fatalf("own DOWN: %s", got)
	}
}

// A held lease served as DOWN comes back UP with its next heartbeat, from
// the instance or a peer, and that change is an EventHeldStatus.
func TestMarkDownHeldEndsWithHeartbeat(t *testing.T) {
	for _, fromPeer := range []bool{false, true} {
		r, _, events := newReg(t)
		mustRegister(t, r, inst("SVC", "a", StatusUp), false)
		if err := r.MarkDown("SVC", "a", DownByHeld, true); err != nil {
			t.Fatal(err)
		}
		if e := lastEvent(t, events); e.Kind != EventHeldStatus || e.Lease.Instance.Status != StatusDown {
			t.Fatalf("event = %+v", e)
		}
		if err := r.Renew(RenewRequest{App: "SVC", ID: "a", FromPeer: fromPeer}); err != nil {
			t.Fatal(err)
		}
		if got := status(t, r, "SVC", "a"); got != StatusUp {
			t.Fatalf("peer %v: after renew %s, want UP", fromPeer, got)
		}
		if e := lastEvent(t, events); e.Kind != EventHeldStatus || e.Lease.Instance.Status != StatusUp || e.FromPeer != fromPeer {
			t.Fatalf("event = %+v", e)
		}
		if v, _ := r.Get("SVC", "a"); v.DownBy != 0 {
			t.Fatalf("DownBy = %d", v.DownBy)
		}
	}
}

// LastHeartbeat is plain time; LastClientRenewal ignores peers.
func TestHeartbeatTimes(t *testing.T) {
	r, c, _ := newReg(t)
	t0 := c.Now()
	mustRegister(t, r, inst("SVC", "a", StatusUp), false)
	mustRegister(t, r, inst("SVC", "p", StatusUp), true)
	c.Advance(10 * time.Second)
	if err := r.Renew(RenewRequest{App: "SVC", ID: "a", FromPeer: true}); err != nil {
		t.Fatal(err)
	}
	v, _ := r.Get("SVC", "a")
	if !v.LastHeartbeat.Equal(c.Now()) || !v.LastClientRenewal.Equal(t0) {
		t.Fatalf("heartbeat %v, client %v", v.LastHeartbeat, v.LastClientRenewal)
	}
	c.Advance(10 * time.Second)
	if err := r.Renew(RenewRequest{App: "SVC", ID: "a"}); err != nil {
		t.Fatal(err)
	}
	v, _ = r.Get("SVC", "a")
	if !v.LastClientRenewal.Equal(c.Now()) {
		t.Fatalf("client renewal %v, want %v", v.LastClientRenewal, c.Now())
	}
	if p, _ := r.Get("SVC", "p"); !p.LastClientRenewal.IsZero() {
		t.Fatalf("peer-registered: %v", p.LastClientRenewal)
	}
	got := r.Leases(func(v *LeaseView) bool { return strings.HasPrefix(v.Instance.ID(), "p") })
	if len(got) != 1 || got[0].Instance.ID() != "p" {
		t.Fatalf("Leases = %v", got)
	}
}

// A lease the eviction job listed as expired and that renewed before the job
// marked it held is left UP: MarkHeldExpired checks again under the lock.
func TestMarkHeldExpiredSkipsARenewedLease(t *testing.T) {
	r, c, _ := newReg(t)
	mustRegister(t, r, inst("SVC", "a", StatusUp), false)
	mustRegister(t, r, inst("SVC", "b", StatusUp), false)
	c.Advance(5 * time.Minute)
	listed := c.Now()
	if got := r.Expired(listed, 0); len(got) != 2 {
		t.Fatalf("expired %v, want both", got)
	}
	c.Advance(time.Millisecond)
	if err := r.Renew(RenewRequest{App: "SVC", ID: "a"}); err != nil {
		t.Fatal(err)
	}
	if err := r.MarkHeldExpired("SVC", "a", listed, 0); !errors.Is(err, ErrNotExpired) {
		t.Fatalf("renewed lease: %v, want ErrNotExpired", err)
	}
	if err := r.MarkHeldExpired("SVC", "b", listed, 0); err != nil {
		t.Fatal(err)
	}
	if a, b := status(t, r, "SVC", "a"), status(t, r, "SVC", "b"); a != StatusUp || b != StatusDown {
		t.Fatalf("renewed a %s, held b %s; want UP, DOWN", a, b)
	}
}
