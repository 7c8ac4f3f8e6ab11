package eviction

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/goreka/goreka/registry"
)

func newGateEnv(t *testing.T, defaultCount int, wait time.Duration) *env {
	t.Helper()
	e := newEnv(t, true)
	cfg := e.ev.cfg
	cfg.DefaultOpenForTrafficCount = defaultCount
	cfg.WaitTimeWhenSyncEmpty = wait
	e.ev = New(e.reg, cfg)
	return e
}

// OpenAfterSync substitutes default-open-for-traffic-count for an empty
// sync, as Spring's InstanceRegistry does; a sync that copied instances
// expects that many clients.
func TestOpenAfterSyncExpectedClients(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name                 string
		defaultCount, synced int
		want                 int
	}{
		{"empty sync, Spring's default 1", 1, 0, 1},
		{"empty sync, Netflix's 0", 0, 0, 0},
		{"copied instances win", 1, 7, 7},
		{"copied instances, default 0", 0, 3, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newGateEnv(t, tc.defaultCount, 5*time.Minute)
			e.ev.OpenAfterSync(tc.synced)
			if got := e.reg.ExpectedClients(); got != tc.want {
				t.Fatalf("expected clients = %d, want %d", got, tc.want)
			}
			if st := e.ev.Status(); st.StartupTime != e.clock.Now() {
				t.Fatalf("startup time %v, want %v", st.StartupTime, e.clock.Now())
			}
		})
	}
}

// After a warm restart the snapshot's renewing leases are the expected
// clients when the sync copied nothing; a sync that copied instances wins,
// and without a snapshot the empty sync's rule applies.
func TestOpenAfterStartupRestored(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name             string
		synced, restored int
		want             int
	}{
		{"restored, no peer answered", 0, 3, 3},
		{"restored, peers answered", 2, 3, 2},
		{"nothing restored, empty sync", 0, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newGateEnv(t, 1, 5*time.Minute)
			for _, id := range []string{"a", "b", "c"} {
				e.register("APP", id, 90*time.Second)
			}
			e.ev.OpenAfterStartup(tc.synced, tc.restored)
			if got := e.reg.ExpectedClients(); got != tc.want {
				t.Fatalf("expected clients = %d, want %d", got, tc.want)
			}
		})
	}
}

// After an empty start-up with nothing standing in for it, reads are
// refused until wait-time-in-ms-when-sync-empty has passed (strictly after,
// like Java's currentTimeMillis() > startupTime + wait); otherwise they
// are allowed from OpenForTraffic on.
func TestAllowAccessAfterEmptySync(t *testing.T) {
	t.Parallel()
	const wait = 5 * time.Minute
	e := newGateEnv(t, 0, wait)
	e.ev.OpenAfterSync(0)
	for _, step := range []struct {
		advance time.Duration
		want    bool
	}{{0, false}, {wait - time.Second, false}, {time.Second, false}, {time.Millisecond, true}, {time.Hour, true}} {
		e.clock.Advance(step.advance)
		if got := e.ev.AllowAccess(); got != step.want {
			t.Fatalf("%v after open: AllowAccess = %v, want %v", e.clock.Now().Sub(e.ev.Status().StartupTime), got, step.want)
		}
	}

	for _, tc := range []struct {
		name                 string
		defaultCount, synced int
		wait                 time.Duration
	}{
		{"the default count stands in", 1, 0, wait},
		{"the sync copied instances", 0, 4, wait},
		{"no wait configured", 0, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newGateEnv(t, tc.defaultCount, tc.wait)
			e.ev.OpenAfterSync(tc.synced)
			if tc.wait == 0 {
				e.clock.Advance(time.Millisecond) // strictly after the start-up time
			}
			if !e.ev.AllowAccess() {
				t.Fatal("reads refused right after open")
			}
		})
	}
}

// A read that arrives during the start-up sync waits for OpenForTraffic up
// to SyncReadWait, then is refused; one that sees it open is allowed.
func TestAllowAccessWaitsForStartupSync(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := Default()
		cfg.SyncReadWait = 2500 * time.Millisecond
		ev := New(registry.New(registry.Options{}), cfg) // time.Now: the bubble's clock

		start := time.Now()
		if ev.AllowAccess() {
			t.Fatal("a read before OpenForTraffic was allowed")
		}
		if waited := time.Since(start); waited != cfg.SyncReadWait {
			t.Fatalf("refused after %v, want %v", waited, cfg.SyncReadWait)
		}

		start = time.Now()
		got := make(chan bool)
		go func() { got <- ev.AllowAccess() }()
		time.Sleep(time.Second)
		synctest.Wait()
		select {
		case v := <-got:
			t.Fatalf("AllowAccess returned %v before OpenForTraffic", v)
		default:
		}
		ev.OpenAfterSync(2)
		if !<-got {
			t.Fatal("a read waiting for the sync was refused once it finished")
		}
		if waited := time.Since(start); waited != time.Second {
			t.Fatalf("allowed after %v, want 1s", waited)
		}
	})
}

func TestAllowAccessWithoutSyncReadWaitRefusesAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ev := New(registry.New(registry.Options{}), Default())
		start := time.Now()
		if ev.AllowAccess() || time.Since(start) != 0 {
			t.Fatalf("AllowAccess before open without a wait: waited %v", time.Since(start))
		}
		ev.OpenAfterSync(0)
		if !ev.AllowAccess() {
			t.Fatal("refused after open with Spring's default count")
		}
	})
}

// LeaseExpirationEnabled agrees with Status (the eviction job's view) as
// renewals cross the threshold, and is always on without self-preservation.
func TestLeaseExpirationEnabledFollowsRenewals(t *testing.T) {
	t.Parallel()
	e := newEnv(t, true)
	e.ev.OpenForTraffic(1)
	ids := e.fleet("svc", 3) // expected 4: threshold int(4 × 2 × 0.85) = 6
	check := func(want bool) {
		t.Helper()
		if got := e.ev.LeaseExpirationEnabled(); got != want || e.ev.Status().LeaseExpirationEnabled != want {
			t.Fatalf("LeaseExpirationEnabled = %v, Status says %v, want %v", got, e.ev.Status().LeaseExpirationEnabled, want)
		}
	}
	check(false) // no renewals yet
	for range 7 {
		e.renew("svc", ids[0])
	}
	e.clock.Advance(time.Minute) // the minute with 7 renewals is now the last full one
	check(true)
	e.clock.Advance(time.Minute) // and now an empty minute
	check(false)

	off := newEnv(t, false)
	if !off.ev.LeaseExpirationEnabled() {
		t.Fatal("lease expiration disabled with self-preservation off")
	}
}
