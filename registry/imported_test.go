package registry

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

func imported(app, id string, s Status) *Instance {
	in := inst(app, id, s)
	in.Metadata = map[string]string{MetaSource: "kubernetes", "k8s-namespace": "shop"}
	return in
}

// An imported instance is lease-less: it never expires, is not expected to
// renew, its heartbeats are neither counted nor sent on, and its events
// and views carry Static (which replication skips) and its Source.
func TestImportedIsLeaseLess(t *testing.T) {
	r, c, events := newReg(t)
	var renewals int
	r.onRenew = func(Renewal) { renewals++ }
	r.SetExpectedClients(1)
	mustRegister(t, r, inst("APP", "a-1", StatusUp), false)
	if changed, err := r.Import(imported("WEB", "web-0", StatusUp)); err != nil || !changed {
		t.Fatalf("Import: %v %v", changed, err)
	}
	e := (*events)[len(*events)-1]
	if e.Kind != EventRegister || !e.Lease.Static || e.Lease.Source != "kubernetes" || e.FromPeer {
		t.Fatalf("import event %+v", e)
	}
	if r.ExpectedClients() != 2 || r.Renewing() != 1 || r.Size() != 2 {
		t.Fatalf("expected %d renewing %d size %d: an imported instance is not expected to renew", r.ExpectedClients(), r.Renewing(), r.Size())
	}
	c.Advance(24 * time.Hour)
	if got := r.Expired(c.Now(), 0); !slices.Equal(got, staticKeys("APP/a-1")) {
		t.Fatalf("expired after a day: %v", got)
	}
	if err := r.EvictExpired("WEB", "web-0", c.Now(), 0); !errors.Is(err, ErrNotExpired) {
		t.Fatalf("EvictExpired(imported) = %v", err)
	}
	rev := r.Revision()
	if err := r.Renew(RenewRequest{App: "WEB", ID: "web-0"}); err != nil || renewals != 0 || r.Revision() != rev {
		t.Fatalf("Renew(imported) = %v, renewals %d", err, renewals)
	}
	v, ok := r.Get("WEB", "web-0")
	if !ok || !v.Static || v.Source != "kubernetes" || v.IsExpired(c.Now(), time.Hour) || v.Lifecycle(c.Now()) != LifecycleUp {
		t.Fatalf("view after a day: %+v", v)
	}
}

// Only the importer changes or removes an imported instance: a client's or
// a peer's register, cancel, eviction, metadata update or adopted copy is
// refused, naming the source; the registry is unchanged.
func TestImportedRefusesOthersWrites(t *testing.T) {
	r, _, _ := newReg(t)
	if _, err := r.Import(imported("WEB", "web-0", StatusUp)); err != nil {
		t.Fatal(err)
	}
	rev := r.Revision()
	var ve *ValidationError
	for name, err := range map[string]error{
		"register":      second(r.Register(inst("WEB", "web-0", StatusDown), false)),
		"peer register": second(r.Register(inst("WEB", "web-0", StatusDown), true)),
		"cancel":        r.Cancel("WEB", "web-0", false),
		"peer cancel":   r.Cancel("WEB", "web-0", true),
		"evict":         r.Evict("WEB", "web-0"),
		"metadata":      second(r.UpdateMetadata("WEB", "web-0", map[string]string{"k": "v"})),
		"adopt":         r.Adopt(LeaseView{Instance: inst("WEB", "web-0", StatusDown)}, 0),
	} {
		if !errors.As(err, &ve) || !strings.Contains(ve.Msg, "WEB/web-0 is imported (source kubernetes)") {
			t.Errorf("%s over an imported instance: %v", name, err)
		}
	}
	if r.Revision() != rev || status(t, r, "WEB", "web-0") != StatusUp {
		t.Fatal("a refused write changed the registry")
	}
	// Nobody but Import sets the source: not a client, not a peer's copy
	// (a start-up sync fetching a peer's imported instances), not a
	// metadata update.
	for name, err := range map[string]error{
		"register":      second(r.Register(imported("OTHER", "o-1", StatusUp), false)),
		"peer register": second(r.Register(imported("OTHER", "o-1", StatusUp), true)),
		"metadata":      second(r.UpdateMetadata("WEB", "web-0", map[string]string{MetaSource: "x"})),
	} {
		if !errors.As(err, &ve) || !strings.Contains(ve.Msg, "reserved") {
			t.Errorf("%s with %s: %v", name, MetaSource, err)
		}
	}
	if _, ok := r.Get("OTHER", "o-1"); ok {
		t.Fatal("an instance claiming a source was registered")
	}
	if _, err := r.Import(inst("NOSRC", "n", StatusUp)); !errors.As(err, &ve) {
		t.Errorf("Import without %s: %v", MetaSource, err)
	}
}

func second[T any](_ T, err error) error { return err }

// Import again with the same instance is no change and no event (an
// informer's resync); a change is one event; Withdraw removes it; the
// importer's list of keys follows.
func TestImportWithdraw(t *testing.T) {
	r, c, events := newReg(t)
	for _, id := range []string{"web-1", "web-0"} {
		if _, err := r.Import(imported("WEB", id, StatusUp)); err != nil {
			t.Fatal(err)
		}
	}
	n := len(*events)
	c.Advance(time.Second)
	if changed, err := r.Import(imported("WEB", "web-0", StatusUp)); err != nil || changed || len(*events) != n {
		t.Fatalf("same instance again: changed %v err %v, %d events", changed, err, len(*events)-n)
	}
	if changed, err := r.Import(imported("WEB", "web-0", StatusOutOfService)); err != nil || !changed {
		t.Fatalf("status change: %v %v", changed, err)
	}
	if status(t, r, "WEB", "web-0") != StatusOutOfService || len(*events) != n+1 {
		t.Fatalf("status %s, %d events", status(t, r, "WEB", "web-0"), len(*events)-n)
	}
	if got := r.ImportedKeys("kubernetes"); !slices.Equal(got, staticKeys("WEB/web-0", "WEB/web-1")) {
		t.Fatalf("ImportedKeys %v", got)
	}
	if len(r.ImportedKeys("other")) != 0 {
		t.Fatal("keys of another source")
	}
	if err := r.Withdraw("web", "web-0"); err != nil {
		t.Fatal(err)
	}
	if e := (*events)[len(*events)-1]; e.Kind != EventCancel || !e.Lease.Static || e.Lease.Source != "kubernetes" {
		t.Fatalf("withdraw event %+v", e)
	}
	if err := r.Withdraw("WEB", "web-0"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second Withdraw: %v", err)
	}
	mustRegister(t, r, inst("APP", "a-1", StatusUp), false)
	if err := r.Withdraw("APP", "a-1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Withdraw of an ordinary lease: %v", err)
	}
	if got := r.ImportedKeys("kubernetes"); !slices.Equal(got, staticKeys("WEB/web-1")) {
		t.Fatalf("ImportedKeys after withdraw %v", got)
	}
}

// Import takes over an ordinary lease of the same key; a static
// registration wins over an import, and takes over an imported one.
func TestImportedAndOtherOwners(t *testing.T) {
	r, _, _ := newReg(t)
	mustRegister(t, r, inst("WEB", "web-0", StatusUp), true)
	if _, err := r.Import(imported("WEB", "web-0", StatusUp)); err != nil {
		t.Fatal(err)
	}
	if v, _ := r.Get("WEB", "web-0"); v.Source != "kubernetes" || r.Renewing() != 0 {
		t.Fatalf("ordinary lease not taken over: %+v", v)
	}
	if _, err := r.SetStatic([]*Instance{inst("DB", "db-1", StatusUp), inst("WEB", "web-0", StatusUp)}); err != nil {
		t.Fatal(err)
	}
	if v, _ := r.Get("WEB", "web-0"); v.Source != "" || !v.Static {
		t.Fatalf("static did not take over the imported one: %+v", v)
	}
	var ve *ValidationError
	if _, err := r.Import(imported("DB", "db-1", StatusUp)); !errors.As(err, &ve) || !strings.Contains(ve.Msg, "static registration") {
		t.Fatalf("Import over static: %v", err)
	}
	if len(r.ImportedKeys("kubernetes")) != 0 {
		t.Fatal("the taken-over import still listed")
	}
	if err := r.Withdraw("DB", "db-1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Withdraw of a static registration: %v", err)
	}
}

// A snapshot keeps imported instances (static ones are left to the
// configuration) and Restore brings them back lease-less and imported,
// until the importer withdraws them.
func TestImportedSnapshot(t *testing.T) {
	r, c, _ := newReg(t)
	if _, err := r.Import(imported("WEB", "web-0", StatusUp)); err != nil {
		t.Fatal(err)
	}
	if _, err := r.SetStatic([]*Instance{inst("DB", "db-1", StatusUp)}); err != nil {
		t.Fatal(err)
	}
	mustRegister(t, r, inst("APP", "a-1", StatusUp), false)
	s := r.Export()
	if len(s.Instances) != 2 || s.Instances[1].Instance.App != "WEB" {
		t.Fatalf("exported %d instances: %+v", len(s.Instances), s.Instances)
	}
	// Without an importer, nobody would withdraw them: not restored.
	r0, _, _ := newReg(t)
	if n := r0.Restore(s); n != 1 || len(r0.ImportedKeys("kubernetes")) != 0 {
		t.Fatalf("restored %d without an importer", n)
	}
	r2, c2, _ := newReg(t)
	r2.keepImp = true
	if n := r2.Restore(s); n != 2 {
		t.Fatalf("restored %d", n)
	}
	if r2.Renewing() != 1 {
		t.Fatalf("Renewing %d after restore, want the ordinary lease only", r2.Renewing())
	}
	c2.Advance(24 * time.Hour)
	c.Advance(24 * time.Hour)
	if got := r2.Expired(c2.Now(), 0); !slices.Equal(got, staticKeys("APP/a-1")) {
		t.Fatalf("expired after a day: %v", got)
	}
	if v, ok := r2.Get("WEB", "web-0"); !ok || !v.Static || v.Source != "kubernetes" {
		t.Fatalf("restored import %+v", v)
	}
	if got := r2.ImportedKeys("kubernetes"); !slices.Equal(got, staticKeys("WEB/web-0")) {
		t.Fatalf("ImportedKeys after restore %v", got)
	}
	if err := r2.Cancel("WEB", "web-0", false); err == nil {
		t.Fatal("a client cancelled a restored import")
	}
	if err := r2.Withdraw("WEB", "web-0"); err != nil {
		t.Fatal(err)
	}
}
