package registry

import (
	"fmt"
	"maps"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/goreka/goreka/registry/clocktest"
)

// populated returns a registry with the kinds of state a snapshot must keep:
// plain instances, a REST status override, REST-set metadata, a DOWN
// instance, a custom lease and an override for an unregistered id.
func populated(t *testing.T) (*Registry, *clocktest.Clock) {
	t.Helper()
	r, c, _ := newReg(t)
	a := inst("SVC", "svc-1", StatusUp)
	a.LeaseInfo = LeaseInfo{RenewalInterval: 5 * time.Second, Duration: 15 * time.Second}
	mustRegister(t, r, a, false)
	c.Advance(time.Second)
	mustRegister(t, r, inst("SVC", "svc-2", StatusUp), false)
	mustRegister(t, r, inst("OTHER", "other-1", StatusDown), true)
	c.Advance(time.Second)
	if err := r.StatusUpdate("SVC", "svc-2", StatusOutOfService, time.Time{}, false); err != nil {
		t.Fatal(err)
	}
	if _, err := r.UpdateMetadata("OTHER", "other-1", map[string]string{"weight": "3"}); err != nil {
		t.Fatal(err)
	}
	r.storeOverride("GONE", "gone-1", StatusDown)
	c.Advance(time.Second)
	if err := r.Renew(RenewRequest{App: "SVC", ID: "svc-1"}); err != nil {
		t.Fatalf("renew: %v", err)
	}
	return r, c
}

func TestExportRestoreRoundTrip(t *testing.T) {
	src, c := populated(t)
	snap := src.Export()
	if got := len(snap.Instances); got != 3 {
		t.Fatalf("exported %d instances, want 3", got)
	}
	var order []string
	for _, v := range snap.Instances {
		order = append(order, v.Instance.App+"/"+v.Instance.ID())
	}
	if want := []string{"OTHER/other-1", "SVC/svc-1", "SVC/svc-2"}; !reflect.DeepEqual(order, want) {
		t.Fatalf("export order %v, want %v", order, want)
	}

	c.Advance(time.Hour)
	loadAt := c.Now()
	dst := New(Options{Now: c.Now, ExpectedClients: 1})
	if n := dst.Restore(snap); n != 3 {
		t.Fatalf("Restore = %d, want 3", n)
	}
	if dst.Size() != 3 || dst.HashCode() != src.HashCode() {
		t.Fatalf("size %d hash %q, want 3 %q", dst.Size(), dst.HashCode(), src.HashCode())
	}
	if !maps.Equal(dst.StatusOverrides(), src.StatusOverrides()) {
		t.Fatalf("overrides %v, want %v", dst.StatusOverrides(), src.StatusOverrides())
	}
	if got := dst.ExpectedClients(); got != 1 {
		t.Errorf("expected clients %d: Restore must leave it to openForTraffic", got)
	}
	if d := dst.Delta(); len(d.Apps) != 0 {
		t.Errorf("delta after restore has %d apps, want an empty queue", len(d.Apps))
	}
	for _, want := range snap.Instances {
		got, ok := dst.Get(want.Instance.App, want.Instance.ID())
		if !ok {
			t.Fatalf("%s not restored", want.Instance.ID())
		}
		if got.Instance == want.Instance {
			t.Errorf("%s: restored instance shares the exported pointer", want.Instance.ID())
		}
		if !reflect.DeepEqual(got.Instance, want.Instance) {
			t.Errorf("%s: instance\n got %+v\nwant %+v", want.Instance.ID(), got.Instance, want.Instance)
		}
		if !got.LastRenewalTimestamp.Equal(loadAt) {
			t.Errorf("%s: lastRenewal %v, want the load time %v", want.Instance.ID(), got.LastRenewalTimestamp, loadAt)
		}
		if !got.RegistrationTimestamp.Equal(want.RegistrationTimestamp) || !got.ServiceUpTimestamp.Equal(want.ServiceUpTimestamp) ||
			got.Duration != want.Duration || got.RenewalInterval != want.RenewalInterval {
			t.Errorf("%s: lease %+v, want %+v", want.Instance.ID(), got, want)
		}
	}
	if v, _ := dst.Get("SVC", "svc-2"); v.Instance.Status != StatusOutOfService || v.Instance.OverriddenStatus != StatusOutOfService {
		t.Errorf("svc-2 status %s/%s, want the override kept", v.Instance.Status, v.Instance.OverriddenStatus)
	}
	if v, _ := dst.Get("OTHER", "other-1"); v.Instance.Metadata["weight"] != "3" {
		t.Errorf("other-1 metadata %v, want the REST-set weight", v.Instance.Metadata)
	}
	// The override rules still apply after a restore: a heartbeat keeps
	// the overridden status.
	if err := dst.Renew(RenewRequest{App: "SVC", ID: "svc-2"}); err != nil || status(t, dst, "SVC", "svc-2") != StatusOutOfService {
		t.Errorf("renew after restore: %v, %s", err, status(t, dst, "SVC", "svc-2"))
	}
}

func TestRestoreReportsReplicatedRegisters(t *testing.T) {
	src, _ := populated(t)
	dst, _, events := newReg(t)
	n := dst.Restore(src.Export())
	if len(*events) != n {
		t.Fatalf("%d events for %d restored instances", len(*events), n)
	}
	for _, e := range *events {
		if e.Kind != EventRegister || !e.FromPeer || e.Prev != "" || e.Instance() == nil || e.Instance().ID() != e.ID {
			t.Errorf("event %+v: want a replicated Register of a new instance", e)
		}
	}
}

func TestRestoredLeaseExpiresAfterItsOwnDuration(t *testing.T) {
	src, c := populated(t)
	snap := src.Export()
	c.Advance(24 * time.Hour) // the snapshot's own lease times are long past
	dst := New(Options{Now: c.Now})
	dst.Restore(snap)
	if exp := dst.Expired(c.Now(), 0); len(exp) != 0 {
		t.Fatalf("expired right after restore: %v", exp)
	}
	c.Advance(15 * time.Second) // svc-1's own duration
	if exp := dst.Expired(c.Now(), 0); len(exp) != 0 {
		t.Fatalf("expired at exactly the lease duration: %v", exp)
	}
	c.Advance(time.Nanosecond)
	if exp := dst.Expired(c.Now(), 0); !reflect.DeepEqual(exp, []InstanceKey{{"SVC", "svc-1"}}) {
		t.Fatalf("expired %v, want svc-1 (15 s lease) only", exp)
	}
	c.Advance(DefaultLeaseDuration - 15*time.Second)
	if err := dst.Renew(RenewRequest{App: "OTHER", ID: "other-1"}); err != nil {
		t.Fatalf("renew other-1: %v", err)
	}
	c.Advance(time.Nanosecond)
	if exp := dst.Expired(c.Now(), 0); !reflect.DeepEqual(exp, []InstanceKey{{"SVC", "svc-1"}, {"SVC", "svc-2"}}) {
		t.Fatalf("expired %v, want svc-1 and svc-2; the renewed other-1 lives on", exp)
	}
	if err := dst.Evict("SVC", "svc-1"); err != nil {
		t.Fatal(err)
	}
	if got, want := dst.HashCode(), "DOWN_1_OUT_OF_SERVICE_1_"; got != want {
		t.Errorf("hash after evicting a restored lease %q, want %q", got, want)
	}
}

func TestRestoreSkipsLiveInvalidAndNil(t *testing.T) {
	r, _, _ := newReg(t)
	r.selfID = "self"
	mustRegister(t, r, inst("SVC", "svc-1", StatusDown), false)
	r.storeOverride("SVC", "svc-1", StatusDown)

	stale := inst("svc", "svc-1", StatusUp)
	bad := inst("SVC", "bad", StatusUp)
	bad.IPAddr = ""
	self := inst("EUREKA", "self", StatusUp)
	snap := Snapshot{
		Instances: []LeaseView{{Instance: stale}, {Instance: bad}, {}, {Instance: self}},
		Overrides: map[string]Status{"svc-1": StatusUp, "x": "BOGUS", "y": StatusOutOfService},
	}
	before := *stale
	if n := r.Restore(snap); n != 1 {
		t.Fatalf("Restore = %d, want 1 (only self)", n)
	}
	if v, _ := r.Get("SVC", "svc-1"); v.Instance.Status != StatusDown || v.Instance.HostName != "host-svc-1" || r.Size() != 2 {
		t.Errorf("live registration replaced by the snapshot's copy")
	}
	if v, ok := r.Get("EUREKA", "self"); !ok || !v.Instance.IsCoordinatingDiscoveryServer {
		t.Errorf("self not restored as the coordinating server: %+v", v.Instance)
	}
	if self.IsCoordinatingDiscoveryServer || !reflect.DeepEqual(*stale, before) {
		t.Errorf("Restore modified the snapshot's instances")
	}
	want := map[string]Status{"svc-1": StatusDown, "y": StatusOutOfService}
	if got := r.StatusOverrides(); !maps.Equal(got, want) {
		t.Errorf("overrides %v, want %v (live kept, invalid dropped)", got, want)
	}
	if v, _ := r.Get("EUREKA", "self"); v.Duration != DefaultLeaseDuration || v.RenewalInterval != DefaultRenewalInterval {
		t.Errorf("zero lease timings not defaulted: %v %v", v.Duration, v.RenewalInterval)
	}
}

func TestSameState(t *testing.T) {
	r, c := populated(t)
	prev := r.Export()
	steps := []struct {
		name    string
		do      func()
		changed bool
	}{
		{"nothing", func() {}, false},
		{"renew", func() { r.Renew(RenewRequest{App: "SVC", ID: "svc-1"}) }, false},
		{"clock", func() { c.Advance(time.Minute) }, false},
		{"register", func() { mustRegister(t, r, inst("NEW", "new-1", StatusUp), false) }, true},
		{"re-register same id", func() { mustRegister(t, r, inst("NEW", "new-1", StatusUp), false) }, true},
		{"status update", func() { r.StatusUpdate("NEW", "new-1", StatusDown, time.Time{}, false) }, true},
		{"status update no-op", func() { r.StatusUpdate("NEW", "new-1", StatusDown, time.Time{}, false) }, false},
		{"delete override", func() { r.DeleteStatusOverride("NEW", "new-1", StatusUp, time.Time{}, false) }, true},
		{"metadata", func() { r.UpdateMetadata("NEW", "new-1", map[string]string{"k": "v"}) }, true},
		{"peer override on heartbeat", func() {
			r.Renew(RenewRequest{App: "NEW", ID: "new-1", FromPeer: true,
				LastDirtyTimestamp: c.Now().Add(time.Hour), OverriddenStatus: StatusOutOfService})
		}, true},
		{"override of unregistered id", func() { r.storeOverride("NOPE", "nope", StatusDown) }, true},
		{"cancel", func() { r.Cancel("NEW", "new-1", false) }, true},
		{"cancel unknown", func() { r.Cancel("NEW", "new-1", false) }, false},
		{"evict", func() { r.Evict("OTHER", "other-1") }, true},
	}
	for _, s := range steps {
		s.do()
		next := r.Export()
		if got := !next.SameState(prev); got != s.changed {
			t.Errorf("%s: changed = %v, want %v", s.name, got, s.changed)
		}
		prev = next
	}
}

func TestExportDuringWrites(t *testing.T) {
	r, _, _ := newReg(t)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 200 {
				id := fmt.Sprintf("w%d-%d", w, i%20)
				mustRegister(t, r, inst("APP", id, StatusUp), false)
				r.Renew(RenewRequest{App: "APP", ID: id})
				if i%3 == 0 {
					r.Cancel("APP", id, false)
				}
			}
		})
	}
	for range 50 {
		s := r.Export()
		for i := 1; i < len(s.Instances); i++ {
			if s.Instances[i-1].Instance.ID() >= s.Instances[i].Instance.ID() {
				t.Fatalf("export not sorted by id at %d", i)
			}
		}
		dst := New(Options{})
		if n := dst.Restore(s); n != len(s.Instances) {
			t.Fatalf("restored %d of %d", n, len(s.Instances))
		}
	}
	wg.Wait()
}

// BenchmarkExportSameState10k is one writer tick on an unchanged registry:
// export under the read lock, then compare with the last written state.
func BenchmarkExportSameState10k(b *testing.B) {
	r, _ := benchRegistry(b, 10_000)
	prev := r.Export()
	b.ReportAllocs()
	for b.Loop() {
		if s := r.Export(); !s.SameState(prev) {
			b.Fatal("changed")
		}
	}
}
