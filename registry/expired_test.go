package registry

import (
	"cmp"
	"fmt"
	"slices"
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
