package registry

import (
	"cmp"
	"fmt"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"
)

// Expired must let writers in between chunks: at 1M leases one walk under
// one hold of the read lock kept registrations waiting for seconds. The
// pause hook runs between chunks; there the write lock must be free, and a
// registration, a cancel and a renewal made there must show in the rest of
// the walk (Eureka's weakly consistent iteration).
func TestExpiredReleasesTheLockBetweenChunks(t *testing.T) {
	r, c, _ := newReg(t)
	const apps, per = 12, expiredChunk / 4 // three chunks or more
	var want []InstanceKey
	for a := range apps {
		app := fmt.Sprintf("APP-%02d", a)
		for i := range per {
			id := fmt.Sprintf("%s-%05d", app, i)
			if _, err := r.Register(inst(app, id, StatusUp), false); err != nil {
				t.Fatal(err)
			}
			want = append(want, InstanceKey{app, id})
		}
	}
	c.Advance(DefaultLeaseDuration + time.Second)

	// Changes made at the first pause, to the last application (not walked
	// yet): one lease cancelled, one renewed, one new (not expired).
	last := fmt.Sprintf("APP-%02d", apps-1)
	gone, renewed := InstanceKey{last, last + "-00000"}, InstanceKey{last, last + "-00001"}
	pauses := 0
	expiredPause = func() {
		pauses++
		if !r.mu.TryLock() {
			t.Error("Expired holds the registry's lock between chunks")
		} else {
			r.mu.Unlock()
		}
		if pauses > 1 {
			return
		}
		if err := r.Cancel(gone.App, gone.ID, false); err != nil {
			t.Error(err)
		}
		if err := r.Renew(RenewRequest{App: renewed.App, ID: renewed.ID}); err != nil {
			t.Error(err)
		}
		if _, err := r.Register(inst(last, last+"-new", StatusUp), false); err != nil {
			t.Error(err)
		}
	}
	defer func() { expiredPause = nil }()

	got := r.Expired(c.Now(), 0)
	if pauses < 2 {
		t.Fatalf("%d pauses in a walk of %d leases (chunks of %d)", pauses, apps*per, expiredChunk)
	}
	want = slices.DeleteFunc(want, func(k InstanceKey) bool { return k == gone || k == renewed })
	slices.SortFunc(want, func(a, b InstanceKey) int { return cmp.Or(cmp.Compare(a.App, b.App), cmp.Compare(a.ID, b.ID)) })
	if !slices.Equal(got, want) {
		t.Fatalf("Expired: %d keys, want %d (sorted by application and id)", len(got), len(want))
	}
}

// BenchmarkExpired1M is the eviction job's walk over 1M leases, all expired:
// its CPU (the registrations it delays are in eviction's
// BenchmarkRunOnceHeldDuringRegistrations).
func BenchmarkExpired1M(b *testing.B) {
	c := newClock()
	r := New(Options{Now: c.Now})
	batch := make([]*Instance, 0, 4096)
	for i := range 1_000_000 {
		app := fmt.Sprintf("BENCH-SERVICE-%d", i%20_000)
		batch = append(batch, inst(app, fmt.Sprintf("bench-host-%06d.bench.local:%s:8080", i, app), StatusUp))
		if len(batch) == cap(batch) || i == 999_999 {
			r.RegisterAll(batch, false)
			batch = batch[:0]
		}
	}
	c.Advance(5 * time.Minute)
	b.ReportAllocs()
	for b.Loop() {
		if n := len(r.Expired(c.Now(), 0)); n != 1_000_000 {
			b.Fatal(n)
		}
	}
}

// expiredWant is the sorted list Expired must return.
func expiredWant(keys []InstanceKey) []InstanceKey {
	slices.SortFunc(keys, func(a, b InstanceKey) int { return cmp.Or(cmp.Compare(a.App, b.App), cmp.Compare(a.ID, b.ID)) })
	return keys
}

// One application larger than a chunk is walked in several holds of the
// lock too (its range suspended between them): the write lock is free at
// every pause, and what writers do there to leases of the application not
// reached yet shows in the rest of the walk. A lease cancelled and
// registered again (expired) at a pause may be met twice by the resumed
// range, or not at all if the walk had not reached it (a new map entry,
// which a range may skip: the next walk lists it): it is listed at most once.
func TestExpiredSplitsALargeApplication(t *testing.T) {
	r, c, _ := newReg(t)
	const app, n = "BIG", 5*expiredChunk + 100
	for i := range n {
		if _, err := r.Register(inst(app, fmt.Sprintf("%s-%05d", app, i), StatusUp), false); err != nil {
			t.Fatal(err)
		}
	}
	c.Advance(DefaultLeaseDuration + time.Second)
	pauses := 0
	cancelled := map[string]bool{}
	reregistered := map[string]bool{}
	expiredPause = func() {
		pauses++
		if !r.mu.TryLock() {
			t.Error("Expired holds the registry's lock between chunks")
		} else {
			r.mu.Unlock()
		}
		// Cancel 500 leases and re-register 500 (cancel, then register again with
		// the clock moved back so the new lease is expired as well): whether
		// the walk met them already or not, each is listed at most once and
		// the cancelled ones not reached yet are not listed.
		for i := range 1000 {
			id := fmt.Sprintf("%s-%05d", app, (pauses*977+i*61)%n)
			if cancelled[id] {
				continue
			}
			if i%2 == 0 {
				if err := r.Cancel(app, id, false); err != nil {
					t.Error(err)
				}
				cancelled[id] = true
				continue
			}
			if err := r.Cancel(app, id, false); err != nil {
				t.Error(err)
			}
			c.Advance(-DefaultLeaseDuration - time.Second)
			if _, err := r.Register(inst(app, id, StatusUp), false); err != nil {
				t.Error(err)
			}
			reregistered[id] = true
			c.Advance(DefaultLeaseDuration + time.Second)
		}
	}
	defer func() { expiredPause = nil }()

	got := r.Expired(c.Now(), 0)
	if pauses < 3 {
		t.Fatalf("%d pauses in a walk of one application of %d leases (chunks of %d)", pauses, n, expiredChunk)
	}
	if !slices.IsSortedFunc(got, func(a, b InstanceKey) int { return cmp.Compare(a.ID, b.ID) }) {
		t.Fatal("Expired is not sorted")
	}
	if d := len(got) - len(slices.Compact(slices.Clone(got))); d > 0 {
		t.Fatalf("Expired lists %d keys twice", d)
	}
	// Every lease left alone is listed (all are expired); a cancelled one
	// only if the walk met it before its cancel; a re-registered one may be.
	listed := map[string]bool{}
	for _, k := range got {
		listed[k.ID] = true
	}
	for i := range n {
		id := fmt.Sprintf("%s-%05d", app, i)
		if !cancelled[id] && !reregistered[id] && !listed[id] {
			t.Fatalf("%s is registered and expired but not listed", id)
		}
	}
	if extra := len(got) - (n - len(cancelled)); extra < 0 || extra > len(cancelled) {
		t.Fatalf("Expired lists %d keys for %d leases left and %d cancelled", len(got), n-len(cancelled), len(cancelled))
	}
}

// Applications added and removed between chunks: one removed before the walk
// reaches it is not listed, one the walk already listed stays listed (the
// list is as weakly consistent as Eureka's iteration), one added (before or
// after the walk's position) waits for the next walk, and one removed and
// registered again before the walk reaches it is walked as it is when
// reached: its new lease is listed, the old ones not.
func TestExpiredWhileApplicationsComeAndGo(t *testing.T) {
	r, c, _ := newReg(t)
	const apps, per = 16, expiredChunk / 4 // four chunks
	var all []InstanceKey
	for a := range apps {
		app := fmt.Sprintf("APP-%02d", a)
		for i := range per {
			id := fmt.Sprintf("%s-%05d", app, i)
			if _, err := r.Register(inst(app, id, StatusUp), false); err != nil {
				t.Fatal(err)
			}
			all = append(all, InstanceKey{app, id})
		}
	}
	c.Advance(DefaultLeaseDuration + time.Second)
	removeApp := func(app string) {
		for i := range per {
			if err := r.Cancel(app, fmt.Sprintf("%s-%05d", app, i), false); err != nil {
				t.Error(err)
			}
		}
	}
	pauses := 0
	expiredPause = func() {
		pauses++
		if pauses != 1 {
			return
		}
		// The first pause comes after APP-00..APP-03.
		removeApp("APP-01") // walked already
		removeApp("APP-09") // not reached yet
		removeApp("APP-12") // not reached yet, registered again below
		c.Advance(-DefaultLeaseDuration - time.Second)
		for _, k := range []InstanceKey{{"APP-00A", "x"}, {"APP-99", "y"}, {"APP-12", "APP-12-again"}} {
			if _, err := r.Register(inst(k.App, k.ID, StatusUp), false); err != nil {
				t.Error(err)
			}
		}
		c.Advance(DefaultLeaseDuration + time.Second)
	}
	defer func() { expiredPause = nil }()

	got := r.Expired(c.Now(), 0)
	if pauses < 3 {
		t.Fatalf("%d pauses", pauses)
	}
	want := expiredWant(append(slices.DeleteFunc(all, func(k InstanceKey) bool { return k.App == "APP-09" || k.App == "APP-12" }),
		InstanceKey{"APP-12", "APP-12-again"}))
	if !slices.Equal(got, want) {
		t.Fatalf("Expired: %d keys, want %d", len(got), len(want))
	}
	// The next walk sees the registry as it is now.
	want = expiredWant(append(slices.DeleteFunc(want, func(k InstanceKey) bool { return k.App == "APP-01" }),
		InstanceKey{"APP-00A", "x"}, InstanceKey{"APP-99", "y"}))
	if got := r.Expired(c.Now(), 0); !slices.Equal(got, want) {
		t.Fatalf("the next walk: %d keys, want %d", len(got), len(want))
	}
}

// BenchmarkRegisterDuringExpiredOneApp is BenchmarkRegisterDuringExpired
// with every lease in one application (100,000; GOREKA_EXPIRED_INSTANCES
// sets it): the largest application bounded one hold of the read lock until
// Expired split applications too. max-register-ms is the longest
// registration of a writer meanwhile.
func BenchmarkRegisterDuringExpiredOneApp(b *testing.B) {
	n := 100_000
	if v, err := strconv.Atoi(os.Getenv("GOREKA_EXPIRED_INSTANCES")); err == nil && v > 0 {
		n = v
	}
	r := New(Options{})
	batch := make([]*Instance, 0, 4096)
	for i := range n {
		batch = append(batch, inst("HUGE", fmt.Sprintf("bench-host-%06d.bench.local:HUGE:8080", i), StatusUp))
		if len(batch) == cap(batch) || i == n-1 {
			r.RegisterAll(batch, false)
			batch = batch[:0]
		}
	}
	registerDuringExpired(b, r, n)
}
