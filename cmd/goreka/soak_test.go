package main

// Soak: one goreka server on loopback (in this process, so its heap can be
// read) with many instances renewing and clients fetching the full registry
// and deltas, for a fixed time. No request may fail, and the live heap and
// goroutine count must be flat from the end of the warm-up to the end.
//
// The short variant (2000 instances, 20 s) runs with every go test, under
// the race detector in make test. The long variant is chosen with
// GOREKA_SOAK, e.g. GOREKA_SOAK=5m GOREKA_SOAK_INSTANCES=30000:
//
//	GOREKA_SOAK=5m GOREKA_SOAK_INSTANCES=30000 go test ./cmd/goreka -run TestSoak -v -timeout 30m

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func fltSoakParams(t *testing.T) (time.Duration, int) {
	d, n := 20*time.Second, 2000
	if v := os.Getenv("GOREKA_SOAK"); v != "" {
		var err error
		if d, err = time.ParseDuration(v); err != nil {
			t.Fatalf("GOREKA_SOAK=%q: %v", v, err)
		}
		n = 30000
	}
	if v := os.Getenv("GOREKA_SOAK_INSTANCES"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n <= 0 {
			t.Fatalf("GOREKA_SOAK_INSTANCES=%q", v)
		}
	}
	return d, n
}

// fltHeap is the live heap after a full collection.
func fltHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// fltRSS is the resident set from /proc (0 where there is none).
func fltRSS() string {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return "n/a"
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "n/a"
}

func TestSoak(t *testing.T) {
	if testing.Short() {
		t.Skip("soak runs for a fixed time")
	}
	dur, n := fltSoakParams(t)
	port := freePort(t, "127.0.0.1")
	// Its only service URL is itself: no peers.
	node := fltNode(t, "S", port, "http://127.0.0.1:"+strconv.Itoa(port)+"/eureka/")
	fltStart(node)

	ids := fltIDs("soak", n)
	var reg fltLoad
	reg.run(ids, 16, fltRegister(node), 204)
	if len(reg.errors) > 0 {
		t.Fatalf("registration: %v", reg.errors)
	}

	var (
		renews, fetches, deltas atomic.Int64
		errMu                   sync.Mutex
		errs                    []string
		failures                atomic.Int64
	)
	fail := func(what string, code int, err error) {
		failures.Add(1)
		errMu.Lock()
		if len(errs) < 10 {
			errs = append(errs, fmt.Sprintf("%s: %d %v", what, code, err))
		}
		errMu.Unlock()
	}
	start := time.Now()
	end := start.Add(dur)
	warm := start.Add(dur / 4)
	var heapWarm, heapEnd uint64
	var gWarm int
	var wg sync.WaitGroup
	// Renewers: each walks its share of the instances over and over; the
	// loop is bounded by the clock and by a count.
	const renewers = 8
	for w := range renewers {
		wg.Go(func() {
			for i := w; time.Now().Before(end) && i < 100*n; i += renewers {
				id := ids[i%n]
				if code, err := fltRenew(node)(id); err != nil || code != 200 {
					fail("renew "+id, code, err)
				}
				renews.Add(1)
			}
		})
	}
	// Fetchers: full registry and delta, as clients do every 30 s.
	for w := range 2 {
		wg.Go(func() {
			for i := 0; time.Now().Before(end) && i < 1_000_000; i++ {
				path, c := "apps", &fetches
				if (i+w)%2 == 1 {
					path, c = "apps/delta", &deltas
				}
				code, body, err := do("GET", node.url()+path, "")
				if err != nil || code != 200 || len(body) == 0 {
					fail("GET "+path, code, err)
				}
				c.Add(1)
			}
		})
	}
	// The heap sample after the warm-up is taken by the test goroutine.
	time.Sleep(time.Until(warm))
	heapWarm, gWarm, rssWarm := fltHeap(), runtime.NumGoroutine(), fltRSS()
	wg.Wait()
	heapEnd, rssEnd := fltHeap(), fltRSS()
	gEnd := runtime.NumGoroutine()
	took := time.Since(start)

	got, err := fltRegistry(node)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("measured: %d instances, %v: %d renews (%.0f/s), %d full fetches, %d delta fetches, %d errors; live heap %d KiB after warm-up, %d KiB at the end; RSS %s -> %s; goroutines %d -> %d; registry holds %d",
		n, took.Round(time.Second), renews.Load(), float64(renews.Load())/took.Seconds(), fetches.Load(), deltas.Load(), failures.Load(),
		heapWarm>>10, heapEnd>>10, rssWarm, rssEnd, gWarm, gEnd, len(got))
	if failures.Load() > 0 {
		t.Errorf("%d failed requests, first: %v", failures.Load(), errs)
	}
	if len(got) != n {
		t.Errorf("registry holds %d of %d instances", len(got), n)
	}
	// Flat: the live heap at the end is within 25% + 16 MiB of the heap
	// after the warm-up (response buffers and connection state vary).
	if heapEnd > heapWarm+heapWarm/4+16<<20 {
		t.Errorf("live heap grew from %d to %d bytes", heapWarm, heapEnd)
	}
	if gEnd > gWarm+20 {
		t.Errorf("goroutines grew from %d to %d", gWarm, gEnd)
	}
}
