package health

import (
	"context"
	"fmt"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"

	"github.com/goreka/goreka/registry"
	"github.com/goreka/goreka/registry/clocktest"
)

func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkOnSuspicion100k is the cost target: 100k instances,
// on-suspicion mode, 1 % suspect (they stopped heartbeating and answer
// their probes, so they are probed every interval forever). One iteration
// is 30 s of the monitor's life on the fake clock: a round every second, a
// registry scan every 10 s, each suspect probed once (plus the controls).
// The prober answers at once, so the figure is goreka's own cost (scan,
// scheduling, bookkeeping, goroutines), not the network's. cpu-%-core is
// the process's CPU time during the rounds over the simulated time; the
// target is under 5.
func BenchmarkOnSuspicion100k(b *testing.B) {
	const n, suspect = 100_000, 1_000
	c := clocktest.New(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	reg := registry.New(registry.Options{Now: c.Now})
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("i-%06d", i)
		in := instance(fmt.Sprintf("APP-%03d", i%500), ids[i], "http://127.0.0.1:1/actuator/health")
		if _, err := reg.Register(in, false); err != nil {
			b.Fatal(err)
		}
	}
	renew := func() {
		for i := suspect; i < n; i++ {
			if err := reg.Renew(registry.RenewRequest{App: fmt.Sprintf("APP-%03d", i%500), ID: ids[i]}); err != nil {
				b.Fatal(err)
			}
		}
	}
	probes := 0
	cfg := Default()
	cfg.Enabled = true
	cfg.Now = c.Now
	cfg.Rand = rand.New(rand.NewPCG(1, 1))
	m := New(reg, nil, ProberFunc(func(context.Context, string) Result { return Result{Healthy, "HTTP 200"} }), cfg)
	// Make the first 1 % suspect: everyone else renews, they do not.
	c.Advance(30 * time.Second)
	renew()
	c.Advance(30 * time.Second)
	renew()
	c.Advance(5 * time.Second)
	ctx := context.Background()
	for range 40 { // warm up: records exist, first probes done
		c.Advance(time.Second)
		m.Check(ctx)
	}
	if st := m.Status(); st.Probing < suspect {
		b.Fatalf("%d instances probed, want %d suspects", st.Probing, suspect)
	}
	b.ReportAllocs()
	b.ResetTimer()
	var cpu time.Duration
	for range b.N {
		b.StopTimer()
		renew() // the fleet's heartbeats are the registry's cost, not the monitor's
		before := m.Status().Counters.Probes[Healthy]
		b.StartTimer()
		t0 := cpuTime(b)
		for range 30 {
			c.Advance(time.Second)
			m.Check(ctx)
		}
		cpu += cpuTime(b) - t0
		probes += int(m.Status().Counters.Probes[Healthy] - before)
	}
	simulated := time.Duration(b.N) * 30 * time.Second
	b.ReportMetric(100*cpu.Seconds()/simulated.Seconds(), "cpu-%-core")
	b.ReportMetric(float64(probes)/float64(b.N), "probes/30s")
}
