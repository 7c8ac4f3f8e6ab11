package eviction

import (
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/goreka/goreka/registry"
	"github.com/goreka/goreka/registry/clocktest"
)

// benchInstance is an instance shaped like goreka-bench's registrations.
func benchInstance(i, apps int) *registry.Instance {
	app := fmt.Sprintf("BENCH-SERVICE-%d", i%apps)
	host := fmt.Sprintf("bench-host-%06d.bench.local", i)
	return &registry.Instance{
		InstanceID: host + ":" + app + ":8080", HostName: host, App: app, IPAddr: "10.0.0.1",
		VIPAddress: app, SecureVIPAddress: app, Port: registry.Port{Number: 8080, Enabled: true},
		DataCenterInfo: registry.DataCenterInfo{Name: registry.DataCenterMyOwn},
		Metadata:       map[string]string{"management.port": "8080", "zone": "z1"},
	}
}

// benchLeases is the registry size of the held-back benchmarks: 1M, the
// ladder's top rung, unless GOREKA_BENCH_LEASES says otherwise.
func benchLeases(b *testing.B) int {
	if s := os.Getenv("GOREKA_BENCH_LEASES"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			b.Fatalf("GOREKA_BENCH_LEASES=%q", s)
		}
		return n
	}
	return 1_000_000
}

// BenchmarkRunOnceHeldDuringRegistrations is the ladder's 1M rung in
// process: n leases in n/50 applications, all expired, self-preservation
// holding them (no renewals), and paced writers registering new instances
// while the eviction pass runs. Each op is one RunOnce; max-reg-ms is the worst
// registration latency seen during the passes and regs/op the registrations
// that completed during one. A registration must never wait for the pass.
// The floor is the same writers with a 200 ms sleep for a pass: their own
// contention, GC and scheduling on a busy machine.
func BenchmarkRunOnceHeldDuringRegistrations(b *testing.B) {
	b.Run("floor", func(b *testing.B) { benchHeldPass(b, false, true) })
	for _, down := range []bool{false, true} {
		b.Run(fmt.Sprintf("report-held-as-down=%v", down), func(b *testing.B) {
			benchHeldPass(b, down, false)
		})
	}
}

func benchHeldPass(b *testing.B, down, floor bool) {
	n := benchLeases(b)
	apps := max(n/50, 1)
	clock := clocktest.New(time.Date(2026, 12, 2, 7, 0, 0, 0, time.UTC))
	reg := registry.New(registry.Options{Now: clock.Now, ExpectedClients: 1})
	batch := make([]*registry.Instance, 0, 4096)
	for i := range n {
		batch = append(batch, benchInstance(i, apps))
		if len(batch) == cap(batch) || i == n-1 {
			if res := reg.RegisterAll(batch, false); len(res.Refused) > 0 {
				b.Fatal(res.Refused[0].Err)
			}
			batch = batch[:0]
		}
	}
	clock.Advance(5 * time.Minute) // every lease expired, none renewed
	cfg := Default()
	cfg.Now = clock.Now
	cfg.Rand = rand.New(rand.NewPCG(1, 2))
	cfg.Logger = slog.New(slog.DiscardHandler)
	cfg.ReportHeldAsDown = down
	ev := New(reg, cfg)
	ev.OpenForTraffic(n)
	// The set-up's garbage is collected before the writers start, so that
	// every variant measures from the same heap, not from a GC cycle the
	// set-up left running.
	runtime.GC()

	// The ladder's load: 32 clients at about 2,900 registrations a second.
	// Paced, so that the registry and the writers' own contention stay as
	// in the ladder and the latency is the wait for the pass.
	const writers, pause = 8, 2 * time.Millisecond
	var (
		stop  atomic.Bool
		next  atomic.Int64
		worst atomic.Int64
		regs  atomic.Int64
		wg    sync.WaitGroup
	)
	next.Store(int64(n))
	for range writers {
		wg.Go(func() {
			for !stop.Load() {
				in := benchInstance(int(next.Add(1)), apps)
				t0 := time.Now()
				if _, err := reg.Register(in, false); err != nil {
					b.Error(err)
					return
				}
				d := int64(time.Since(t0))
				regs.Add(1)
				for w := worst.Load(); d > w && !worst.CompareAndSwap(w, d); w = worst.Load() {
				}
				time.Sleep(pause)
			}
		})
	}
	for b.Loop() {
		if floor {
			time.Sleep(200 * time.Millisecond)
		} else {
			ev.RunOnce()
		}
	}
	stop.Store(true)
	wg.Wait()
	b.ReportMetric(float64(worst.Load())/1e6, "max-reg-ms")
	b.ReportMetric(float64(regs.Load())/float64(b.N), "regs/op")
	if st := ev.Status(); !floor && st.HeldBack < n {
		b.Fatalf("held back %d of %d", st.HeldBack, n)
	}
}
