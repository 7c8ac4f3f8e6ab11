package registry

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

func staticKeys(ks ...string) []InstanceKey {
	var out []InstanceKey
	for _, k := range ks {
		app, id, _ := strings.Cut(k, "/")
		out = append(out, InstanceKey{app, id})
	}
	return out
}

// A static registration never expires, is never evicted, is always up, and
// does not count among the instances expected to renew.
func TestStaticNeverExpires(t *testing.T) {
	r, c, _ := newReg(t)
	r.SetExpectedClients(0)
	if _, err := r.SetStatic([]*Instance{inst("DB", "db-1", StatusUp)}); err != nil {
		t.Fatal(err)
	}
	mustRegister(t, r, inst("APP", "a-1", StatusUp), false)
	c.Advance(24 * time.Hour)
	if got := r.Expired(c.Now(), 0); !slices.Equal(got, staticKeys("APP/a-1")) {
		t.Fatalf("expired after a day: %v, want only the ordinary lease", got)
	}
	if err := r.EvictExpired("DB", "db-1", c.Now(), 0); !errors.Is(err, ErrNotExpired) {
		t.Fatalf("EvictExpired(static) = %v, want ErrNotExpired", err)
	}
	v, ok := r.Get("DB", "db-1")
	if !ok || !v.Static || v.IsExpired(c.Now(), time.Hour) || v.Lifecycle(c.Now()) != LifecycleUp {
		t.Fatalf("static view after a day: ok %v static %v lifecycle %v", ok, v.Static, v.Lifecycle(c.Now()))
	}
	if r.Size() != 2 || r.Renewing() != 1 {
		t.Fatalf("Size %d Renewing %d, want 2 and 1", r.Size(), r.Renewing())
	}
	// Not part of the expected clients' arithmetic.
	r.SetExpectedClients(1)
	if err := r.Cancel("APP", "a-1", false); err != nil {
		t.Fatal(err)
	}
	if r.ExpectedClients() != 0 || r.Renewing() != 0 {
		t.Fatalf("after the last ordinary cancel: expected %d renewing %d", r.ExpectedClients(), r.Renewing())
	}
}

// Writes that the configuration owns are refused with a message naming the
// instance; the registry is unchanged. Heartbeats are found but not counted.
func TestStaticRefusesOwnedWrites(t *testing.T) {
	r, c, events := newReg(t)
	var renewals int
	r.onRenew = func(Renewal) { renewals++ }
	if _, err := r.SetStatic([]*Instance{inst("DB", "db-1", StatusUp)}); err != nil {
		t.Fatal(err)
	}
	rev := r.Revision()
	var ve *ValidationError
	if _, err := r.Register(inst("DB", "db-1", StatusDown), false); !errors.As(err, &ve) || !strings.Contains(ve.Msg, "DB/db-1 is a static registration") {
		t.Fatalf("Register over static: %v", err)
	}
	if _, err := r.Register(inst("DB", "db-1", StatusDown), true); !errors.As(err, &ve) {
		t.Fatalf("peer's Register over static: %v", err)
	}
	if err := r.Cancel("db", "db-1", false); !errors.As(err, &ve) {
		t.Fatalf("Cancel static: %v", err)
	}
	if err := r.Evict("DB", "db-1"); !errors.As(err, &ve) {
		t.Fatalf("Evict static: %v", err)
	}
	if _, err := r.UpdateMetadata("DB", "db-1", map[string]string{"k": "v"}); !errors.As(err, &ve) {
		t.Fatalf("UpdateMetadata static: %v", err)
	}
	if err := r.Adopt(LeaseView{Instance: inst("DB", "db-1", StatusDown)}, 0); !errors.As(err, &ve) {
		t.Fatalf("Adopt over static: %v", err)
	}
	c.Advance(time.Minute)
	if err := r.Renew(RenewRequest{App: "DB", ID: "db-1"}); err != nil {
		t.Fatalf("Renew static: %v", err)
	}
	if r.Revision() != rev || renewals != 0 || status(t, r, "DB", "db-1") != StatusUp {
		t.Fatalf("refused writes changed something: revision %d->%d, renewals %d", rev, r.Revision(), renewals)
	}
	// An operator's override applies as to any instance, and is an event
	// marked static (so that replication leaves it alone).
	if err := r.StatusUpdate("DB", "db-1", StatusOutOfService, time.Time{}, false); err != nil {
		t.Fatal(err)
	}
	last := (*events)[len(*events)-1]
	if last.Kind != EventStatusUpdate || !last.Lease.Static || status(t, r, "DB", "db-1") != StatusOutOfService {
		t.Fatalf("override on static: %+v", last)
	}
}

// SetStatic applies a new list: added, changed, removed, unchanged, one
// event per change in revision order; a bad list changes nothing.
func TestSetStaticReload(t *testing.T) {
	r, c, events := newReg(t)
	db := inst("DB", "db-1", StatusUp)
	db.Metadata = map[string]string{"zone": "a"}
	ext := inst("EXT", "api", StatusUp)
	if res, err := r.SetStatic([]*Instance{db, ext}); err != nil || len(res.Added) != 2 {
		t.Fatalf("first: %+v %v", res, err)
	}
	first := len(*events)
	c.Advance(time.Second)

	db2 := inst("DB", "db-1", StatusUp)
	db2.Metadata = map[string]string{"zone": "b"}
	newOne := inst("CACHE", "redis", StatusOutOfService)
	same := inst("EXT", "api", StatusUp)
	res, err := r.SetStatic([]*Instance{same, newOne, db2})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Added, staticKeys("CACHE/redis")) || !slices.Equal(res.Changed, staticKeys("DB/db-1")) ||
		len(res.Removed) != 0 || !slices.Equal(res.Unchanged, staticKeys("EXT/api")) {
		t.Fatalf("second: %+v", res)
	}
	got := (*events)[first:]
	if len(got) != 2 {
		t.Fatalf("events of the reload: %+v", got)
	}
	for i, e := range got {
		if e.Kind != EventRegister || !e.Lease.Static || e.FromPeer || (i > 0 && e.Revision != got[i-1].Revision+1) {
			t.Errorf("event %d: %+v", i, e)
		}
	}
	if v, _ := r.Get("DB", "db-1"); v.Instance.Metadata["zone"] != "b" {
		t.Errorf("changed metadata not applied: %v", v.Instance.Metadata)
	}
	if status(t, r, "CACHE", "redis") != StatusOutOfService {
		t.Errorf("configured status not kept: %s", status(t, r, "CACHE", "redis"))
	}

	res, err = r.SetStatic([]*Instance{inst("EXT", "api", StatusUp)})
	if err != nil || !slices.Equal(res.Removed, staticKeys("CACHE/redis", "DB/db-1")) {
		t.Fatalf("third: %+v %v", res, err)
	}
	if _, ok := r.Get("DB", "db-1"); ok || r.Size() != 1 {
		t.Fatalf("removed static still there (size %d)", r.Size())
	}
	if e := (*events)[len(*events)-1]; e.Kind != EventCancel || !e.Lease.Static {
		t.Fatalf("removal event %+v", e)
	}

	// A bad entry: nothing changes, the error names the entry.
	rev := r.Revision()
	bad := inst("BAD", "b", StatusUp)
	bad.IPAddr = ""
	_, err = r.SetStatic([]*Instance{inst("NEW", "n", StatusUp), bad})
	if err == nil || !strings.Contains(err.Error(), "static instance 1 (BAD/b): Missing ip address") {
		t.Fatalf("bad entry: %v", err)
	}
	_, err = r.SetStatic([]*Instance{inst("NEW", "n", StatusUp), inst("new", "n", StatusUp)})
	if err == nil || !strings.Contains(err.Error(), "static instance 1 (NEW/n): listed twice") {
		t.Fatalf("duplicate: %v", err)
	}
	if r.Revision() != rev || r.Size() != 1 {
		t.Fatalf("a refused list changed the registry")
	}
}

// A static entry takes over an ordinary lease of the same key (a peer's
// copy, a restored snapshot), and Export leaves static leases out.
func TestStaticTakesOverAndIsNotExported(t *testing.T) {
	r, _, _ := newReg(t)
	r.SetExpectedClients(0)
	mustRegister(t, r, inst("DB", "db-1", StatusDown), true)
	if _, err := r.SetStatic([]*Instance{inst("DB", "db-1", StatusUp)}); err != nil {
		t.Fatal(err)
	}
	v, _ := r.Get("DB", "db-1")
	if !v.Static || v.Instance.Status != StatusUp || r.Size() != 1 || r.Renewing() != 0 {
		t.Fatalf("take-over: static %v status %s size %d renewing %d", v.Static, v.Instance.Status, r.Size(), r.Renewing())
	}
	if got := r.HashCode(); got != "UP_1_" {
		t.Fatalf("hash %q", got)
	}
	mustRegister(t, r, inst("APP", "a", StatusUp), false)
	s := r.Export()
	if len(s.Instances) != 1 || s.Instances[0].Instance.App != "APP" {
		t.Fatalf("export holds %d instances: %+v", len(s.Instances), s.Instances)
	}
	// A restored snapshot does not replace a static one.
	if n := r.Restore(Snapshot{Instances: []LeaseView{{Instance: inst("DB", "db-1", StatusDown)}}}); n != 0 {
		t.Fatalf("restore over static loaded %d", n)
	}
}
