package registry

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

func benchRegistry(b *testing.B, n int) (*Registry, []RenewRequest) {
	b.Helper()
	r := New(Options{})
	reqs := make([]RenewRequest, 0, n)
	for i := range n {
		app := fmt.Sprintf("APP-%03d", i%200)
		id := fmt.Sprintf("host-%05d:%s:8080", i, app)
		in := inst(app, id, StatusUp)
		in.Metadata = map[string]string{"management.port": "8080", "zone": "z1"}
		if _, err := r.Register(in, false); err != nil {
			b.Fatal(err)
		}
		reqs = append(reqs, RenewRequest{App: app, ID: id, LastDirtyTimestamp: in.LastDirtyTimestamp})
	}
	return r, reqs
}

func BenchmarkRenew10k(b *testing.B) {
	r, reqs := benchRegistry(b, 10_000)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if err := r.Renew(reqs[i%len(reqs)]); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

func BenchmarkRenew10kParallel(b *testing.B) {
	r, reqs := benchRegistry(b, 10_000)
	var next atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := next.Add(1)
			r.Renew(reqs[int(i)%len(reqs)])
		}
	})
}

// BenchmarkRenew10kDuringSnapshots renews while another goroutine takes full
// registry snapshots back to back: heartbeats must not queue behind readers.
func BenchmarkRenew10kDuringSnapshots(b *testing.B) {
	r, reqs := benchRegistry(b, 10_000)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
				r.Applications()
			}
		}
	}()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		r.Renew(reqs[i%len(reqs)])
		i++
	}
	b.StopTimer()
	close(stop)
	<-done
}

func BenchmarkApplications10k(b *testing.B) {
	r, _ := benchRegistry(b, 10_000)
	b.ReportAllocs()
	for b.Loop() {
		r.Applications()
	}
}

func BenchmarkDelta10k(b *testing.B) {
	r, _ := benchRegistry(b, 10_000)
	b.ReportAllocs()
	for b.Loop() {
		r.Delta()
	}
}

func BenchmarkRegister(b *testing.B) {
	r, _ := benchRegistry(b, 10_000)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		app := fmt.Sprintf("APP-%03d", i%200)
		r.Register(inst(app, fmt.Sprintf("x-%d", i%10_000), StatusUp), false)
		i++
	}
}

// BenchmarkRenew is a heartbeat over the whole fleet, in order, at three
// registry sizes with 50 instances per application (the ladder's shape):
// its cost must not grow with the registry (issue 30: 1M <= 1.15x 10k).
func BenchmarkRenew(b *testing.B) {
	for _, size := range []int{10_000, 100_000, 1_000_000} {
		b.Run(fmt.Sprintf("size=%dk", size/1000), func(b *testing.B) {
			r := New(Options{})
			reqs := make([]RenewRequest, size)
			for i := range size {
				app := fmt.Sprintf("BENCH-SERVICE-%05d", i%(size/50))
				id := fmt.Sprintf("bench-host-%07d.bench.local:%s:8080", i, app)
				in := inst(app, id, StatusUp)
				in.Metadata = map[string]string{"management.port": "8080", "zone": "z1"}
				if _, err := r.Register(in, false); err != nil {
					b.Fatal(err)
				}
				reqs[i] = RenewRequest{App: app, ID: id, LastDirtyTimestamp: in.LastDirtyTimestamp}
			}
			// One goroutine: on a shared machine the minimum of a few
			// runs is then a per-heartbeat figure, not the scheduler's.
			b.ReportAllocs()
			i := 0
			cpu0 := cpuTime()
			for b.Loop() {
				if err := r.Renew(reqs[i%size]); err != nil {
					b.Fatal(err)
				}
				i++
			}
			// The process's CPU time per heartbeat: on a machine shared
			// with other work, wall time per op is mostly the wait for
			// a core.
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(i), "cpu-ns/op")
		})
	}
}

// BenchmarkBurstRetainedHeap is the ladder's memory question at registry
// level: the live heap after three registration bursts (each registering
// and then cancelling 100,000 new instances, as goreka-bench's burst phase
// does) against the live heap right after loading 100,000, within the
// delta's retention (the queue not pruned). Metric: heap-after/heap-loaded.
func BenchmarkBurstRetainedHeap(b *testing.B) {
	const n = 100_000
	live := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	// Each with the bench fleet's four metadata entries, its own map as a
	// decoded registration has.
	withMeta := func(in *Instance) *Instance {
		in.Metadata = map[string]string{"git.commit": "aa66d13", "management.port": "8080", "version": "1.4.3", "zone": "zone1"}
		return in
	}
	for b.Loop() {
		base := live()
		r := New(Options{})
		for i := range n {
			app := fmt.Sprintf("BENCH-SERVICE-%04d", i%(n/50))
			if _, err := r.Register(withMeta(inst(app, fmt.Sprintf("bench-%06d", i), StatusUp)), false); err != nil {
				b.Fatal(err)
			}
		}
		loaded := live() - base
		for range 3 {
			for i := range n {
				app := fmt.Sprintf("BURST-SERVICE-%04d", i%(n/50))
				if _, err := r.Register(withMeta(inst(app, fmt.Sprintf("burst-%06d", i), StatusUp)), false); err != nil {
					b.Fatal(err)
				}
			}
			for i := range n {
				if err := r.Cancel(fmt.Sprintf("BURST-SERVICE-%04d", i%(n/50)), fmt.Sprintf("burst-%06d", i), false); err != nil {
					b.Fatal(err)
				}
			}
		}
		after := live() - base
		runtime.KeepAlive(r)
		b.ReportMetric(float64(after)/float64(loaded), "after/loaded")
		b.ReportMetric(float64(loaded)/n, "B/instance")
	}
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkRegisterDuringExpired is the eviction job's Expired over a
// registry whose leases have all expired (a loading without heartbeats,
// self-preservation holding them), with a writer registering meanwhile:
// every registration waits while a reader holds the lock. It reports the
// longest registration (max-register-ms) besides the time per Expired.
// GOREKA_EXPIRED_INSTANCES sets the size (default 100,000).
func BenchmarkRegisterDuringExpired(b *testing.B) {
	n := 100_000
	if v, err := strconv.Atoi(os.Getenv("GOREKA_EXPIRED_INSTANCES")); err == nil && v > 0 {
		n = v
	}
	r, _ := benchRegistry(b, n)
	registerDuringExpired(b, r, n)
}

// registerDuringExpired walks r's n expired leases (registry.Expired) in
// a loop while a writer registers, and reports the writer's longest
// registration (max-register-ms).
func registerDuringExpired(b *testing.B, r *Registry, n int) {
	later := time.Now().Add(time.Hour)
	stop := make(chan struct{})
	var worst atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			t := time.Now()
			if _, err := r.Register(inst("WRITER", fmt.Sprintf("w-%d", i%1000), StatusUp), false); err != nil {
				panic(err)
			}
			if d := int64(time.Since(t)); d > worst.Load() {
				worst.Store(d)
			}
		}
	}()
	for b.Loop() {
		if got := r.Expired(later, 0); len(got) < n {
			b.Fatalf("expired %d, want >= %d", len(got), n)
		}
	}
	close(stop)
	<-done
	b.ReportMetric(float64(worst.Load())/1e6, "max-register-ms")
}
