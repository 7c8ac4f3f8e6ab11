package cache_test

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/goreka/goreka/cache"
	"github.com/goreka/goreka/document"
	"github.com/goreka/goreka/registry"
)

// idleFleet is a registry of n instances in n/50 applications shaped like
// goreka-bench's (see document's springInstance), registered at t0.
func idleFleet(b testing.TB, n int, t0 time.Time) *registry.Registry {
	b.Helper()
	reg := registry.New(registry.Options{Now: func() time.Time { return t0 }})
	apps := n / 50
	for i := range n {
		app := fmt.Sprintf("BENCH-SERVICE-%03d", i%apps)
		host := fmt.Sprintf("bench-host-%06d.bench.local", i)
		base := "http://" + host + ":8080"
		in := &registry.Instance{
			InstanceID: host + ":" + app + ":8080", HostName: host, App: app,
			IPAddr: fmt.Sprintf("10.%d.%d.%d", (i>>16)&255, (i>>8)&255, i&255),
			Status: registry.StatusUp, OverriddenStatus: registry.StatusUnknown,
			Port: registry.Port{Number: 8080, Enabled: true}, SecurePort: registry.Port{Number: 443},
			CountryID: 1, DataCenterInfo: registry.DataCenterInfo{Name: registry.DataCenterMyOwn},
			LeaseInfo:   registry.LeaseInfo{RenewalInterval: 30 * time.Second, Duration: 90 * time.Second},
			Metadata:    map[string]string{"management.port": "8080", "zone": "zone" + strconv.Itoa(i%3+1)},
			HomePageURL: base + "/", StatusPageURL: base + "/actuator/info", HealthCheckURL: base + "/actuator/health",
			VIPAddress: app, SecureVIPAddress: app, LastDirtyTimestamp: t0,
		}
		if _, err := reg.Register(in, false); err != nil {
			b.Fatal(err)
		}
	}
	return reg
}

// BenchmarkIdleHousekeeping is the housekeeping's cost in an idle registry
// (100k instances, no change at all, the full registry and the delta read
// by clients): one op is AutoExpiration's worth of ticks (96 of
// UpdateInterval/16 on a fake clock) after one AutoExpiration of warm-up,
// so that the chunks' ages are spread as in a long-running server.
// rebuilds/op counts the ticks that rebuilt a document; cpu-ms/op and B/op
// are the process's CPU and the bytes allocated by those 96 ticks.
// "floor" is what freshness needs at least: every byte re-encoded once per
// AutoExpiration (Eureka's readWrite entry, rebuilt whole when it expires),
// here one build of every chunk of both documents per op.
// GOREKA_IDLE_INSTANCES sets the size.
func BenchmarkIdleHousekeeping(b *testing.B) {
	n := 100_000
	if v, err := strconv.Atoi(os.Getenv("GOREKA_IDLE_INSTANCES")); err == nil && v > 0 {
		n = v
	}
	t0 := time.Unix(1764500000, 0)
	reg := idleFleet(b, n, t0)
	keys := []cache.Key{
		{Entity: cache.Application, Name: cache.AllApps, JSON: true},
		{Entity: cache.Application, Name: cache.AllAppsDelta, JSON: true},
	}
	b.Run("housekeeping", func(b *testing.B) {
		now := t0
		var mu sync.Mutex
		clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
		advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
		docs := document.New(document.Config{Registry: reg})
		cfg := cache.DefaultConfig()
		cfg.Now = clock
		c := cache.NewStreaming(cfg, docs.Load)
		tick := cfg.UpdateInterval / 16
		ticks := int(cfg.AutoExpiration / tick)
		rebuilds := 0
		run := func() {
			for range ticks {
				advance(tick)
				for _, k := range keys {
					if _, err := c.Get(k); err != nil {
						b.Fatal(err)
					}
				}
				if c.HousekeepingTick(clock()) > 0 {
					rebuilds++
				}
			}
		}
		run() // warm-up: the loading's chunks come due and spread
		rebuilds = 0
		b.ReportAllocs()
		cpu := cpuTime()
		b.ResetTimer()
		for range b.N {
			run()
		}
		b.StopTimer()
		b.ReportMetric(float64(cpuTime()-cpu)/1e6/float64(b.N), "cpu-ms/op")
		b.ReportMetric(float64(rebuilds)/float64(b.N), "rebuilds/op")
	})
	b.Run("floor", func(b *testing.B) {
		b.ReportAllocs()
		cpu := cpuTime()
		for b.Loop() {
			docs := document.New(document.Config{Registry: reg})
			for _, k := range keys {
				if _, err := cache.BuildValue(func(w io.Writer) (bool, error) { return docs.Load(k, w) }, time.Now, cache.DefaultAutoExpiration); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(float64(cpuTime()-cpu)/1e6/float64(b.N), "cpu-ms/op")
	})
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
