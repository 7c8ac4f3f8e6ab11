package registry

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/goreka/goreka/registry/clocktest"
)

func newClock() *clocktest.Clock {
	return clocktest.New(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
}

func inst(app, id string, s Status) *Instance {
	return &Instance{
		InstanceID: id, HostName: "host-" + id, App: app, IPAddr: "10.0.0.1", Status: s,
		DataCenterInfo: DataCenterInfo{Name: DataCenterMyOwn}, VIPAddress: app, SecureVIPAddress: app,
		Port: Port{8080, true},
	}
}

func newReg(t *testing.T) (*Registry, *clocktest.Clock, *[]Event) {
	t.Helper()
	c := newClock()
	var mu sync.Mutex
	events := &[]Event{}
	r := New(Options{Now: c.Now, ExpectedClients: 1, OnEvent: func(e Event) {
		mu.Lock()
		*events = append(*events, e)
		mu.Unlock()
	}})
	return r, c, events
}

func mustRegister(t *testing.T, r *Registry, in *Instance, repl bool) *Instance {
	t.Helper()
	out, err := r.Register(in, repl)
	if err != nil {
		t.Fatalf("Register(%s): %v", in.ID(), err)
	}
	return out
}

func status(t *testing.T, r *Registry, app, id string) Status {
	t.Helper()
	v, ok := r.Get(app, id)
	if !ok {
		return ""
	}
	return v.Instance.Status
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(*Instance)
		pathApp string
		want    string
	}{
		{"ok", func(*Instance) {}, "svc", ""},
		{"no id no host", func(in *Instance) { in.InstanceID, in.HostName = "", "" }, "", "Missing instanceId"},
		{"id falls back to host", func(in *Instance) { in.InstanceID = "" }, "", ""},
		{"no host", func(in *Instance) { in.HostName = " " }, "", "Missing hostname"},
		{"no ip", func(in *Instance) { in.IPAddr = "" }, "", "Missing ip address"},
		{"no app", func(in *Instance) { in.App = "" }, "", "Missing appName"},
		{"mismatch", func(in *Instance) {}, "other", "Mismatched appName, expecting OTHER but was SVC"},
		{"no dc name", func(in *Instance) { in.DataCenterInfo.Name = "" }, "", "Missing dataCenterInfo Name"},
		{"bad status", func(in *Instance) { in.Status = "up" }, "", `Invalid status "up"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := inst("SVC", "a", StatusUp)
			tc.mutate(in)
			err := in.Validate(tc.pathApp)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			var ve *ValidationError
			if !errors.As(err, &ve) || ve.Msg != tc.want {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
}

func TestRegisterAndRead(t *testing.T) {
	r, c, events := newReg(t)
	in := inst("svc", "a", StatusUp)
	got := mustRegister(t, r, in, false)
	if got.App != "SVC" || got.ActionType != ActionAdded || got.OverriddenStatus != StatusUnknown {
		t.Fatalf("stored %+v", got)
	}
	if !got.LastDirtyTimestamp.Equal(c.Now()) || !got.LastUpdatedTimestamp.Equal(c.Now()) {
		t.Fatalf("timestamps not filled: %v %v", got.LastDirtyTimestamp, got.LastUpdatedTimestamp)
	}
	v, ok := r.Get("svc", "a")
	if !ok || v.Duration != DefaultLeaseDuration || v.RenewalInterval != DefaultRenewalInterval || !v.ServiceUpTimestamp.Equal(c.Now()) {
		t.Fatalf("Get = %+v %v", v, ok)
	}
	if _, ok := r.GetByID("a"); !ok {
		t.Fatal("GetByID")
	}
	if r.Size() != 1 || r.HashCode() != "UP_1_" || r.ExpectedClients() != 2 {
		t.Fatalf("size %d hash %q expected %d", r.Size(), r.HashCode(), r.ExpectedClients())
	}
	apps := r.Applications()
	if apps.VersionDelta != 1 || len(apps.Apps) != 1 || apps.Apps[0].Name != "SVC" || apps.HashCode != "UP_1_" {
		t.Fatalf("Applications = %+v", apps)
	}
	if len(*events) != 1 || (*events)[0].Kind != EventRegister || (*events)[0].Prev != "" {
		t.Fatalf("events %+v", *events)
	}
	if _, ok := r.Application("nope"); ok {
		t.Fatal("unknown app found")
	}
	// Re-registration is not a new client.
	mustRegister(t, r, inst("svc", "a", StatusUp), false)
	if r.ExpectedClients() != 2 || r.Size() != 1 {
		t.Fatalf("re-register: expected %d size %d", r.ExpectedClients(), r.Size())
	}
}

func TestRegisterKeepsNewerStoredCopy(t *testing.T) {
	r, c, _ := newReg(t)
	a := inst("svc", "a", StatusUp)
	a.HomePageURL = "newer"
	a.LastDirtyTimestamp = c.Now()
	mustRegister(t, r, a, false)
	old := inst("svc", "a", StatusUp)
	old.HomePageURL = "older"
	old.LastDirtyTimestamp = c.Now().Add(-time.Minute)
	got := mustRegister(t, r, old, true)
	if got.HomePageURL != "newer" {
		t.Fatalf("older registration replaced a newer one: %q", got.HomePageURL)
	}
	same := inst("svc", "a", StatusUp)
	same.HomePageURL = "same"
	same.LastDirtyTimestamp = c.Now()
	if got := mustRegister(t, r, same, true); got.HomePageURL != "same" {
		t.Fatalf("equal timestamps: incoming copy must win, got %q", got.HomePageURL)
	}
}

func TestRenewDirtyTimestamp(t *testing.T) {
	r, c, _ := newReg(t)
	in := inst("svc", "a", StatusUp)
	in.LastDirtyTimestamp = c.Now()
	mustRegister(t, r, in, false)
	stored := c.Now()
	// want is what errors.Is/As must find; nil means success.
	var conflict *ConflictError
	tests := []struct {
		name string
		req  RenewRequest
		want error
	}{
		{"unknown", RenewRequest{App: "svc", ID: "zz"}, ErrNotFound},
		{"no timestamp", RenewRequest{App: "svc", ID: "a"}, nil},
		{"equal", RenewRequest{App: "SVC", ID: "a", LastDirtyTimestamp: stored}, nil},
		{"client newer", RenewRequest{App: "svc", ID: "a", LastDirtyTimestamp: stored.Add(time.Second)}, ErrNewerCopy},
		{"client older", RenewRequest{App: "svc", ID: "a", LastDirtyTimestamp: stored.Add(-time.Second)}, nil},
		{"peer older", RenewRequest{App: "svc", ID: "a", FromPeer: true, LastDirtyTimestamp: stored.Add(-time.Second)}, conflict},
		{"peer newer", RenewRequest{App: "svc", ID: "a", FromPeer: true, LastDirtyTimestamp: stored.Add(time.Second)}, ErrNewerCopy},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := r.Renew(tc.req)
			switch want := tc.want.(type) {
			case nil:
				if err != nil {
					t.Fatalf("Renew = %v, want success", err)
				}
			case *ConflictError:
				var ce *ConflictError
				if !errors.As(err, &ce) {
					t.Fatalf("Renew = %v, want a conflict", err)
				}
				if ce.Stored.Instance == nil || ce.Stored.Instance.ID() != "a" {
					t.Fatalf("conflict without the stored instance: %+v", ce.Stored)
				}
			default:
				if !errors.Is(err, want) {
					t.Fatalf("Renew = %v, want %v", err, want)
				}
			}
			if tc.want == ErrNewerCopy && !errors.Is(err, ErrNotFound) {
				t.Fatalf("ErrNewerCopy must be an ErrNotFound (both are 404)")
			}
		})
	}
	// A newer peer heartbeat carrying an override stores it.
	r.Renew(RenewRequest{App: "svc", ID: "a", FromPeer: true, LastDirtyTimestamp: stored.Add(time.Second), OverriddenStatus: StatusOutOfService})
	if r.StatusOverrides()["a"] != StatusOutOfService {
		t.Fatalf("peer override not stored: %v", r.StatusOverrides())
	}
}

func TestStatusOverrideLifecycle(t *testing.T) {
	r, c, _ := newReg(t)
	mustRegister(t, r, inst("svc", "a", StatusUp), false)
	if err := r.StatusUpdate("svc", "a", StatusOutOfService, time.Time{}, false); err != nil {
		t.Fatal(err)
	}
	if s := status(t, r, "svc", "a"); s != StatusOutOfService {
		t.Fatalf("status %s", s)
	}
	if r.HashCode() != "OUT_OF_SERVICE_1_" {
		t.Fatalf("hash %q", r.HashCode())
	}
	// The client re-registers UP: the override wins.
	mustRegister(t, r, inst("svc", "a", StatusUp), false)
	if s := status(t, r, "svc", "a"); s != StatusOutOfService {
		t.Fatalf("override lost on re-register: %s", s)
	}
	// Its own DOWN is always believed.
	mustRegister(t, r, inst("svc", "a", StatusDown), false)
	if s := status(t, r, "svc", "a"); s != StatusDown {
		t.Fatalf("DOWN not believed: %s", s)
	}
	mustRegister(t, r, inst("svc", "a", StatusUp), false)
	if err := r.Renew(RenewRequest{App: "svc", ID: "a"}); err != nil {
		t.Fatalf("renew with override: %v", err)
	}
	// Removing the override without a value leaves UNKNOWN -> next renew 404.
	if err := r.DeleteStatusOverride("svc", "a", "", time.Time{}, false); err != nil {
		t.Fatal(err)
	}
	if s := status(t, r, "svc", "a"); s != StatusUnknown {
		t.Fatalf("after delete: %s", s)
	}
	if err := r.Renew(RenewRequest{App: "svc", ID: "a"}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("renew after delete: %v, want not found", err)
	}
	c.Advance(time.Second)
	mustRegister(t, r, inst("svc", "a", StatusUp), false)
	if s := status(t, r, "svc", "a"); s != StatusUp {
		t.Fatalf("re-registered status %s", s)
	}
	if err := r.StatusUpdate("svc", "zz", StatusUp, time.Time{}, false); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown instance: %v", err)
	}
}

func TestLeaseExistsRule(t *testing.T) {
	r, _, _ := newReg(t)
	mustRegister(t, r, inst("svc", "a", StatusUp), false)
	r.StatusUpdate("svc", "a", StatusOutOfService, time.Time{}, false)
	r.mu.Lock()
	delete(r.overrides, "a") // as if the override map entry expired
	r.mu.Unlock()
	mustRegister(t, r, inst("svc", "a", StatusUp), false)
	if s := status(t, r, "svc", "a"); s != StatusOutOfService {
		t.Fatalf("client: existing OUT_OF_SERVICE must win, got %s", s)
	}
	mustRegister(t, r, inst("svc", "a", StatusUp), true)
	if s := status(t, r, "svc", "a"); s != StatusUp {
		t.Fatalf("replication skips LeaseExistsRule, got %s", s)
	}
}

func TestCancel(t *testing.T) {
	r, _, events := newReg(t)
	mustRegister(t, r, inst("svc", "a", StatusUp), false)
	r.StatusUpdate("svc", "a", StatusOutOfService, time.Time{}, false)
	if err := r.Cancel("svc", "a", false); err != nil {
		t.Fatal(err)
	}
	if _, ok := r.Get("svc", "a"); ok || r.Size() != 0 || r.HashCode() != "" {
		t.Fatal("still registered")
	}
	if len(r.StatusOverrides()) != 0 {
		t.Fatal("override survived cancel")
	}
	if err := r.Cancel("svc", "a", false); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second cancel: %v", err)
	}
	if n := len(r.RecentlyCancelled()); n != 2 {
		t.Fatalf("recently cancelled = %d, want 2 (misses are recorded too)", n)
	}
	if r.ExpectedClients() != 1 {
		t.Fatalf("expected %d", r.ExpectedClients())
	}
	last := (*events)[len(*events)-1]
	if last.Kind != EventCancel || last.Instance().ActionType != ActionDeleted {
		t.Fatalf("last event %+v", last)
	}
	d := r.Delta()
	if len(d.Apps) != 1 || d.Apps[0].Instances[0].Instance.ActionType != ActionDeleted {
		t.Fatalf("delta %+v", d)
	}
}

func TestExpectedClientsRules(t *testing.T) {
	r := New(Options{})
	mustRegister(t, r, inst("svc", "a", StatusUp), false)
	if r.ExpectedClients() != 0 {
		t.Fatal("expected must not grow from 0")
	}
	r.Cancel("svc", "a", false)
	if r.ExpectedClients() != 0 {
		t.Fatal("expected must not go below 0")
	}
}

func TestLeaseExpiry(t *testing.T) {
	r, c, _ := newReg(t)
	in := inst("svc", "a", StatusUp)
	in.LeaseInfo.Duration = 10 * time.Second
	mustRegister(t, r, in, false)
	c.Advance(10 * time.Second)
	if len(r.Expired(c.Now(), 0)) != 0 {
		t.Fatal("expired at exactly the duration")
	}
	c.Advance(time.Millisecond)
	if len(r.Expired(c.Now(), 0)) != 1 {
		t.Fatal("never-renewed lease must expire one duration after registration")
	}
	r.Renew(RenewRequest{App: "svc", ID: "a"})
	c.Advance(20 * time.Second) // 2 x duration after the renewal
	if len(r.Expired(c.Now(), 0)) != 0 {
		t.Fatal("a renewed lease lives two durations (Eureka's quirk)")
	}
	c.Advance(time.Millisecond)
	if len(r.Expired(c.Now(), 0)) != 1 {
		t.Fatal("renewed lease must expire after two durations")
	}
	if len(r.Expired(c.Now(), time.Second)) != 0 {
		t.Fatal("compensation time must extend the lease")
	}
	r.Renew(RenewRequest{App: "svc", ID: "a"})
	if err := r.EvictExpired("svc", "a", c.Now(), 0); !errors.Is(err, ErrNotExpired) {
		t.Fatalf("a lease renewed since it was found expired must stay: %v", err)
	}
	c.Advance(41 * time.Second)
	if err := r.EvictExpired("svc", "a", c.Now(), 0); err != nil {
		t.Fatal(err)
	}
}

func TestVIP(t *testing.T) {
	r, _, _ := newReg(t)
	a := inst("svc", "a", StatusUp)
	a.VIPAddress = "alpha,beta"
	mustRegister(t, r, a, false)
	b := inst("other", "b", StatusDown)
	b.VIPAddress = "Alpha"
	mustRegister(t, r, b, false)
	got := r.VIP("alpha", false)
	if got.VersionDelta != -1 || len(got.Apps) != 1 || got.HashCode != "UP_1_" {
		t.Fatalf("vip alpha = %+v", got)
	}
	if len(r.VIP("beta", false).Apps) != 1 || len(r.VIP("alpha,beta", false).Apps) != 0 || len(r.VIP(" beta", false).Apps) != 0 {
		t.Fatal("pieces must match exactly")
	}
	if len(r.VIP("svc", true).Apps) != 1 {
		t.Fatal("secure vip")
	}
}

func TestUpdateMetadata(t *testing.T) {
	r, _, events := newReg(t)
	a := inst("svc", "a", StatusUp)
	a.Metadata = map[string]string{"k": "1", "keep": "x"}
	mustRegister(t, r, a, false)
	got, err := r.UpdateMetadata("svc", "a", map[string]string{"k": "2", "new": "y"})
	if err != nil {
		t.Fatal(err)
	}
	if got.Metadata["k"] != "2" || got.Metadata["keep"] != "x" || got.Metadata["new"] != "y" {
		t.Fatalf("metadata %v", got.Metadata)
	}
	if a.Metadata["k"] != "1" {
		t.Fatal("stored instance was mutated in place")
	}
	if e := (*events)[len(*events)-1]; e.Kind != EventRegister || e.FromPeer {
		t.Fatalf("metadata update must replicate as a Register: %+v", e)
	}
	if _, err := r.UpdateMetadata("svc", "zz", nil); !errors.Is(err, ErrNotFound) {
		t.Fatal(err)
	}
}

func TestRenewsLastMinute(t *testing.T) {
	r, c, _ := newReg(t)
	mustRegister(t, r, inst("svc", "a", StatusUp), false)
	c.Advance(time.Minute - time.Duration(c.Now().Second())*time.Second) // start of a minute
	for range 5 {
		r.Renew(RenewRequest{App: "svc", ID: "a"})
	}
	if n := r.RenewsLastMinute(); n != 0 {
		t.Fatalf("current minute must not count yet: %d", n)
	}
	c.Advance(time.Minute)
	if n := r.RenewsLastMinute(); n != 5 {
		t.Fatalf("last minute = %d, want 5", n)
	}
	c.Advance(2 * time.Minute)
	if n := r.RenewsLastMinute(); n != 0 {
		t.Fatalf("after an idle minute = %d", n)
	}
	h := r.RenewsHistory()
	if len(h) != 60 || h[len(h)-3].Count != 5 {
		t.Fatalf("history tail %+v", h[len(h)-4:])
	}
}

func TestPruneRecentlyChanged(t *testing.T) {
	r, c, _ := newReg(t)
	mustRegister(t, r, inst("svc", "a", StatusUp), false)
	c.Advance(100 * time.Second)
	mustRegister(t, r, inst("svc", "b", StatusUp), false)
	c.Advance(100 * time.Second)
	r.PruneRecentlyChanged(180 * time.Second)
	d := r.Delta()
	if len(d.Apps) != 1 || len(d.Apps[0].Instances) != 1 || d.Apps[0].Instances[0].Instance.ID() != "b" {
		t.Fatalf("delta after prune %+v", d)
	}
	if v1, v2 := d.VersionDelta, r.Delta().VersionDelta; v2 != v1+1 {
		t.Fatalf("versions__delta %d then %d", v1, v2)
	}
}

func TestRingNewestFirst(t *testing.T) {
	q := ring{max: 3}
	base := time.Unix(0, 0)
	for i := range 5 {
		q.add(base.Add(time.Duration(i)*time.Second), "A", fmt.Sprint(i))
	}
	got := q.list()
	if len(got) != 3 || got[0].ID != "4" || got[2].ID != "2" {
		t.Fatalf("ring %+v", got)
	}
}

// clientModel applies deltas the way DiscoveryClient.updateDelta does and
// checks the reconcile hash after each one, as the Java client does.
type clientModel struct {
	apps map[string]map[string]Status
}

func (m *clientModel) replace(full *Applications) {
	m.apps = map[string]map[string]Status{}
	for _, a := range full.Apps {
		for _, v := range a.Instances {
			m.upsert(a.Name, v.Instance.ID(), v.Instance.Status)
		}
	}
}

func (m *clientModel) upsert(app, id string, s Status) {
	if m.apps[app] == nil {
		m.apps[app] = map[string]Status{}
	}
	m.apps[app][id] = s
}

func (m *clientModel) apply(d *Applications) {
	for _, a := range d.Apps {
		for _, v := range a.Instances {
			switch v.Instance.ActionType {
			case ActionAdded, ActionModified:
				m.upsert(a.Name, v.Instance.ID(), v.Instance.Status)
			case ActionDeleted:
				delete(m.apps[a.Name], v.Instance.ID())
			}
		}
	}
}

func (m *clientModel) hash() string {
	counts := map[Status]int{}
	for _, g := range m.apps {
		for _, s := range g {
			counts[s]++
		}
	}
	return HashCode(counts)
}

func TestDeltaHashConsistencyUnderConcurrentWrites(t *testing.T) {
	r, c, _ := newReg(t)
	statuses := []Status{StatusUp, StatusDown, StatusOutOfService, StatusStarting}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for w := range 4 {
		wg.Go(func() {
			rnd := rand.New(rand.NewPCG(uint64(w), 7))
			for {
				select {
				case <-stop:
					return
				default:
				}
				app := fmt.Sprintf("app%d", rnd.IntN(5))
				id := fmt.Sprintf("%s-%d", app, rnd.IntN(20))
				switch rnd.IntN(6) {
				case 0, 1:
					r.Register(inst(app, id, statuses[rnd.IntN(len(statuses))]), rnd.IntN(2) == 0)
				case 2:
					r.Cancel(app, id, false)
				case 3:
					r.StatusUpdate(app, id, statuses[rnd.IntN(len(statuses))], time.Time{}, false)
				case 4:
					r.DeleteStatusOverride(app, id, StatusUp, time.Time{}, false)
				case 5:
					r.Renew(RenewRequest{App: app, ID: id})
				}
			}
		})
	}
	m := &clientModel{}
	m.replace(r.Applications())
	mismatches := 0
	for range 300 {
		c.Advance(100 * time.Millisecond)
		d := r.Delta()
		m.apply(d)
		if m.hash() != d.HashCode {
			mismatches++
			m.replace(r.Applications())
		}
	}
	close(stop)
	wg.Wait()
	if mismatches != 0 {
		t.Fatalf("%d of 300 deltas left the client with a hash mismatch", mismatches)
	}
}

func TestGeneratedDirtyTimestampIsMilliseconds(t *testing.T) {
	c := newClock()
	c.Advance(123456789 * time.Nanosecond)
	r := New(Options{Now: c.Now})
	a := inst("svc", "a", StatusUp)
	a.Metadata = map[string]string{"v": "old"}
	stored := mustRegister(t, r, a, false)
	if stored.LastDirtyTimestamp.Nanosecond()%int(time.Millisecond) != 0 {
		t.Fatalf("lastDirtyTimestamp %v has sub-millisecond precision", stored.LastDirtyTimestamp)
	}
	// The same copy back from a peer, with the timestamp as the wire carries it.
	b := inst("svc", "a", StatusUp)
	b.Metadata = map[string]string{"v": "new"}
	b.LastDirtyTimestamp = time.UnixMilli(stored.LastDirtyTimestamp.UnixMilli())
	if got := mustRegister(t, r, b, true); got.Metadata["v"] != "new" {
		t.Fatal("an equal timestamp must let the incoming copy win")
	}
}

// TestAppStatusCounts: the per-application counts follow registrations,
// status changes, re-registrations and removals, with no zero entries.
func TestAppStatusCounts(t *testing.T) {
	r := New(Options{})
	for _, in := range []*Instance{inst("A", "a1", StatusUp), inst("A", "a2", StatusUp), inst("B", "b1", StatusStarting)} {
		if _, err := r.Register(in, false); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.StatusUpdate("A", "a2", StatusOutOfService, time.Time{}, false); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Register(inst("B", "b1", StatusUp), false); err != nil {
		t.Fatal(err)
	}
	if err := r.Cancel("A", "a1", false); err != nil {
		t.Fatal(err)
	}
	got := r.AppStatusCounts()
	slices.SortFunc(got, func(a, b AppStatusCount) int { return strings.Compare(a.App+string(a.Status), b.App+string(b.Status)) })
	want := []AppStatusCount{{"A", StatusOutOfService, 1}, {"B", StatusUp, 1}}
	if !slices.Equal(got, want) {
		t.Fatalf("AppStatusCounts = %v, want %v", got, want)
	}
	if err := r.Cancel("A", "a2", false); err != nil {
		t.Fatal(err)
	}
	if err := r.Cancel("B", "b1", false); err != nil {
		t.Fatal(err)
	}
	if got := r.AppStatusCounts(); len(got) != 0 || len(r.appCounts) != 0 {
		t.Fatalf("after every cancel: %v, %d apps kept", got, len(r.appCounts))
	}
}
