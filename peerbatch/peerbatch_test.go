package peerbatch

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/goreka/goreka/compat"
	"github.com/goreka/goreka/registry"
	"github.com/goreka/goreka/registry/clocktest"
)

func TestStatus(t *testing.T) {
	tests := []struct {
		err  error
		want int
	}{
		{nil, 200},
		{registry.ErrNotFound, 404},
		{fmt.Errorf("wrapped: %w", registry.ErrNotFound), 404},
		{&registry.ConflictError{}, 409},
		{&registry.ValidationError{Msg: "bad"}, 400},
		{&registry.LimitError{}, 403},
		{errors.New("disk on fire"), 500},
	}
	for _, tc := range tests {
		if got := Status(tc.err); got != tc.want {
			t.Errorf("Status(%v) = %d, want %d", tc.err, got, tc.want)
		}
	}
}

type expiry bool

func (e expiry) LeaseExpirationEnabled() bool { return bool(e) }

func TestVisible(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	fresh := registry.LeaseView{LastRenewalTimestamp: now, Duration: time.Minute}
	stale := registry.LeaseView{LastRenewalTimestamp: now.Add(-2 * time.Minute), Duration: time.Minute}
	tests := []struct {
		v      registry.LeaseView
		expiry Expiry
		want   bool
	}{
		{fresh, expiry(true), true},
		{stale, expiry(true), false},
		{stale, expiry(false), true}, // self-preservation: expired leases are shown
		{stale, nil, true},
	}
	for i, tc := range tests {
		if got := Visible(tc.v, now, tc.expiry); got != tc.want {
			t.Errorf("%d: Visible = %v, want %v", i, got, tc.want)
		}
	}
}

func TestBatch(t *testing.T) {
	clk := clocktest.New(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	reg := registry.New(registry.Options{Now: clk.Now})
	for _, id := range []string{"a1", "x1"} {
		in := &registry.Instance{InstanceID: id, HostName: id, App: "APP", IPAddr: "10.0.0.1", Status: registry.StatusUp,
			DataCenterInfo: registry.DataCenterInfo{Name: registry.DataCenterMyOwn},
			LeaseInfo:      registry.LeaseInfo{Duration: time.Second}}
		if _, err := reg.Register(in, false); err != nil {
			t.Fatal(err)
		}
	}
	clk.Advance(2 * time.Second) // both expired
	if err := reg.Renew(registry.RenewRequest{App: "APP", ID: "a1"}); err != nil {
		t.Fatal(err)
	}
	a := &Applier{Registry: reg, Expiry: expiry(true), Now: clk.Now}
	items := []compat.ReplicationItem{
		{AppName: "APP", ID: "a1", Status: "OUT_OF_SERVICE", Action: compat.ActionStatusUpdate},
		{AppName: "APP", ID: "x1", Status: "OUT_OF_SERVICE", Action: compat.ActionStatusUpdate},
		{AppName: "APP", ID: "x1", Action: compat.ActionDeleteStatusOverride},
		{AppName: "APP", ID: "a1", Status: "sideways", Action: compat.ActionStatusUpdate},
		{AppName: "APP", ID: "ghost", Status: "sideways", Action: compat.ActionStatusUpdate},
		{AppName: "APP", ID: "", Status: "UP", Action: compat.ActionStatusUpdate},
		{AppName: "APP", ID: "x1", Action: compat.ActionHeartbeat},
		{AppName: "OTHER", ID: "o1", Action: compat.ActionCancel},
		{AppName: "APP", ID: "a1", Action: compat.ActionRegister},
		{AppName: "APP", ID: "a1", Action: "Explode"},
	}
	got := a.Batch(items, func(app string) bool { return app != "OTHER" })
	want := []int{200, 404, 404, 400, 404, 400, 200, 403, 400, 400}
	if len(got) != len(want) {
		t.Fatalf("%d responses for %d items", len(got), len(items))
	}
	for i := range want {
		if got[i].StatusCode != want[i] {
			t.Errorf("item %d (%s %s): %d, want %d", i, items[i].Action, items[i].ID, got[i].StatusCode, want[i])
		}
	}
	if v, _ := reg.Get("APP", "a1"); v.Instance.Status != registry.StatusOutOfService {
		t.Errorf("a1 = %s, want OUT_OF_SERVICE", v.Instance.Status)
	}
	if v, _ := reg.Get("APP", "x1"); v.Instance.Status != registry.StatusUp {
		t.Errorf("x1 = %s, want UP: the hidden lease's status must not change", v.Instance.Status)
	}
}

// TestLookUp: the REST path's and the batch's lookup, 404 (ErrNotFound)
// for an unknown instance and for an expired one while expiry is enabled.
func TestLookUp(t *testing.T) {
	clk := clocktest.New(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	reg := registry.New(registry.Options{Now: clk.Now})
	in := &registry.Instance{InstanceID: "a1", HostName: "a1", App: "APP", IPAddr: "10.0.0.1", Status: registry.StatusUp,
		DataCenterInfo: registry.DataCenterInfo{Name: registry.DataCenterMyOwn},
		LeaseInfo:      registry.LeaseInfo{Duration: time.Second}}
	if _, err := reg.Register(in, false); err != nil {
		t.Fatal(err)
	}
	if err := LookUp(reg, "APP", "a1", clk.Now(), expiry(true)); err != nil {
		t.Fatalf("fresh: %v", err)
	}
	if err := LookUp(reg, "APP", "ghost", clk.Now(), nil); !errors.Is(err, registry.ErrNotFound) {
		t.Fatalf("unknown: %v", err)
	}
	clk.Advance(2 * time.Second)
	if err := LookUp(reg, "APP", "a1", clk.Now(), expiry(true)); !errors.Is(err, registry.ErrNotFound) {
		t.Fatalf("expired, expiry enabled: %v", err)
	}
	if err := LookUp(reg, "APP", "a1", clk.Now(), expiry(false)); err != nil {
		t.Fatalf("expired, held by self-preservation: %v", err)
	}
}
