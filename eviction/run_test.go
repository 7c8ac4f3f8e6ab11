package eviction

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"testing"
	"testing/synctest"
	"time"

	"github.com/goreka/goreka/registry"
)

// The cron loop inside a synctest bubble: time.Now and cron's timers run on
// the bubble's fake clock, and synctest.Test fails if Run leaks a goroutine.
func TestRunSchedulesJobsFromOpenForTraffic(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := registry.New(registry.Options{ExpectedClients: 1}) // time.Now: the bubble's clock
		cfg := Default()
		cfg.EnableSelfPreservation = false
		cfg.Rand = rand.New(rand.NewPCG(1, 1))
		cfg.Logger = slog.New(slog.NewTextHandler(t.Output(), nil))
		ev := New(reg, cfg)

		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- ev.Run(ctx) }()
		synctest.Wait()
		if err := ev.Run(ctx); !errors.Is(err, ErrRunning) {
			t.Fatalf("second Run: %v", err)
		}

		register := func(id string, lease time.Duration) {
			in := &registry.Instance{InstanceID: id, HostName: id, App: "svc", IPAddr: "10.0.0.1",
				DataCenterInfo: registry.DataCenterInfo{Name: registry.DataCenterMyOwn},
				LeaseInfo:      registry.LeaseInfo{Duration: lease}}
			if _, err := reg.Register(in, false); err != nil {
				t.Fatal(err)
			}
		}
		register("dead", 0) // never renews: expired 90 s after registration

		// Not open for traffic: no eviction, but the delta queue is pruned.
		time.Sleep(10 * time.Minute)
		synctest.Wait()
		if _, ok := reg.Get("svc", "dead"); !ok {
			t.Fatal("evicted before OpenForTraffic")
		}
		if d := reg.Delta(); len(d.Apps) != 0 {
			t.Fatalf("delta queue not pruned: %+v", d.Apps)
		}

		ev.OpenForTraffic(1)
		opened := time.Now()
		time.Sleep(59 * time.Second)
		synctest.Wait()
		if _, ok := reg.Get("svc", "dead"); !ok {
			t.Fatal("evicted before the first interval")
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if _, ok := reg.Get("svc", "dead"); ok {
			t.Fatal("not evicted by the first run")
		}
		if st := ev.Status(); !st.LastRun.Equal(opened.Add(time.Minute)) || st.TotalEvicted != 1 {
			t.Fatalf("after the first run: %+v", st)
		}

		// Expected is 0 after the eviction, so new registrations do not
		// raise it (the > 0 guard); the 15-minute job resets it to the
		// count because self-preservation is off.
		register("a", time.Hour)
		register("b", time.Hour)
		if got := reg.ExpectedClients(); got != 0 {
			t.Fatalf("expected %d", got)
		}
		time.Sleep(opened.Add(15*time.Minute - time.Second).Sub(time.Now()))
		synctest.Wait()
		if got := reg.ExpectedClients(); got != 0 {
			t.Fatalf("threshold job ran early: expected %d", got)
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if got := reg.ExpectedClients(); got != 2 {
			t.Fatalf("after the threshold job: expected %d, want 2", got)
		}

		cancel()
		if err := <-done; err != nil {
			t.Fatalf("Run returned %v", err)
		}
		runs := ev.Status().LastRun
		time.Sleep(10 * time.Minute)
		synctest.Wait()
		if ev.Status().LastRun != runs {
			t.Fatal("eviction still running after Run returned")
		}
	})
}

// Run returns promptly when cancelled before OpenForTraffic.
func TestRunStopsBeforeOpen(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ev := New(registry.New(registry.Options{}), Default())
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		start := time.Now()
		if err := ev.Run(ctx); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d != time.Minute {
			t.Fatalf("Run returned after %v", d)
		}
	})
}
