package xds

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/goreka/goreka/registry"
)

// benchClientsEnv, when set (to the server's address), makes the test
// binary the client process of BenchmarkXDSServerMemory instead of running
// tests: it is how the benchmark keeps its 100 clients out of the server's
// process.
const benchClientsEnv = "GOREKA_XDS_BENCH_CLIENTS"

func TestMain(m *testing.M) {
	if addr := os.Getenv(benchClientsEnv); addr != "" {
		os.Exit(benchClientProcess(addr))
	}
	os.Exit(m.Run())
}

// benchClientProcess runs benchClients clients against addr, each on its
// own connection (as 100 Envoys are), in the mode and for the number of
// applications the environment names. Whenever the lowest EDS revision
// all clients hold rises it writes it to stdout, one line each; it ends
// when stdin closes (the benchmark ended, or its process died).
func benchClientProcess(addr string) int {
	mode := os.Getenv(benchClientsEnv + "_MODE")
	apps, err := strconv.Atoi(os.Getenv(benchClientsEnv + "_APPS"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench clients:", err)
		return 2
	}
	names := make([]string, apps)
	for a := range names {
		names[a] = fmt.Sprintf("app-%04d", a)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fail := func(args ...any) {
		fmt.Fprintln(os.Stderr, append([]any{"bench clients:"}, args...)...)
		os.Exit(1)
	}
	var (
		mu       sync.Mutex
		reported int64 = -1
	)
	clients := make([]*benchClient, benchClients)
	report := func() {
		mu.Lock()
		defer mu.Unlock()
		low := clients[0].last()
		for _, c := range clients[1:] {
			low = min(low, c.last())
		}
		if low > reported {
			reported = low
			fmt.Println(low)
		}
	}
	for i := range clients {
		c := &benchClient{seen: report}
		c.cond = sync.NewCond(&c.mu)
		clients[i] = c
	}
	for i, c := range clients {
		cc, err := grpc.NewClient("passthrough:///"+addr,
			grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(1<<30)))
		if err != nil {
			fail(err)
		}
		defer cc.Close()
		if mode == "delta" {
			go c.runDelta(fail, ctx, cc, i, names)
		} else {
			go c.run(fail, ctx, cc, i, names)
		}
		if os.Getenv(benchClientsEnv+"_ONEBYONE") != "" {
			c.wait(1)
		}
	}
	io.Copy(io.Discard, os.Stdin)
	return 0
}

// procStatus is the named fields of /proc/self/status, in bytes (Linux;
// empty elsewhere).
func procStatus() map[string]int64 {
	out := map[string]int64{}
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return out
	}
	for line := range strings.Lines(string(b)) {
		k, v, ok := strings.Cut(line, ":")
		f := strings.Fields(v)
		if !ok || len(f) != 2 || f[1] != "kB" {
			continue
		}
		n, _ := strconv.ParseInt(f[0], 10, 64)
		out[k] = n << 10
	}
	return out
}

// memClasses are the runtime's memory classes the benchmark logs: where a
// resident set beyond the live heap goes.
var memClasses = []string{
	"/gc/heap/live:bytes",
	"/gc/heap/goal:bytes",
	"/memory/classes/heap/objects:bytes",
	"/memory/classes/heap/unused:bytes",
	"/memory/classes/heap/free:bytes",
	"/memory/classes/heap/released:bytes",
	"/memory/classes/heap/stacks:bytes",
	"/memory/classes/metadata/other:bytes",
	"/memory/classes/metadata/mspan/inuse:bytes",
	"/memory/classes/metadata/mcache/inuse:bytes",
	"/memory/classes/os-stacks:bytes",
	"/memory/classes/other:bytes",
	"/memory/classes/profiling/buckets:bytes",
	"/sched/goroutines:goroutines",
}

func readClasses() map[string]int64 {
	s := make([]metrics.Sample, len(memClasses))
	for i, n := range memClasses {
		s[i].Name = n
	}
	metrics.Read(s)
	out := map[string]int64{}
	for _, x := range s {
		if x.Value.Kind() == metrics.KindUint64 {
			out[x.Name] = int64(x.Value.Uint64())
		}
	}
	return out
}

// memPoint is the process's memory at one point: runtime classes, the
// kernel's view (RssAnon, RssFile, VmHWM) and the resident set after a
// forced collection that returns free pages (rss()).
type memPoint struct {
	heap    int64
	rss     int64 // after debug.FreeOSMemory
	idleRSS int64 // before it: what ps shows
	status  map[string]int64
	classes map[string]int64
	bySize  [68]int64 // live objects per size class (MemStats.BySize)
}

func measure() memPoint {
	var p memPoint
	p.idleRSS = procStatus()["VmRSS"]
	p.heap = int64(heap())
	p.rss = rss()
	p.status = procStatus()
	p.classes = readClasses()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	for i, c := range ms.BySize {
		p.bySize[i] = int64(c.Mallocs) - int64(c.Frees)
	}
	return p
}

// resetPeak makes VmHWM the resident set now (Linux: clear_refs 5).
func resetPeak() { os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }

// BenchmarkXDSServerMemory is BenchmarkXDSPush with the 100 clients in a
// child process (this test binary again, benchClientProcess), each over
// its own TCP connection to 127.0.0.1, so that the benchmark's process
// holds the registry and the xDS server only, served by Start with the
// server's own gRPC options. The memory figures compare what xDS adds
// with what the registry alone holds, in the same process:
// xds-rss/registry-rss is the resident set after a forced collection that
// returns free pages (as BenchmarkXDSPush's), xds-anon/registry-anon its
// anonymous part (without the binary's pages the xDS code touches),
// xds-idle-rss/registry-idle-rss the resident set before that collection
// (what ps shows), xds-peak-rss/registry-rss the high-water mark from the
// clients' connecting to the end of the pushes beyond the registry's
// resident set. cpu-ms/push is the server's CPU only. Set
// XDS_BENCH_HEAPPROFILE=path for a heap profile (every allocation after
// the server built its resources), XDS_BENCH_MEMLOG=1 for the runtime's
// memory classes at each point, GOREKA_XDS_BENCH_CLIENTS_ONEBYONE=1 to
// connect the clients one after another (each once the previous one got
// its endpoints) instead of all at once.
func BenchmarkXDSServerMemory(b *testing.B) {
	for _, mode := range []string{"sotw", "delta"} {
		for _, n := range []int{10_000, 100_000} {
			b.Run(fmt.Sprintf("mode=%s/instances=%d", mode, n), func(b *testing.B) { benchServerMemory(b, mode, n) })
		}
	}
}

func benchServerMemory(b *testing.B, mode string, n int) {
	base := measure()
	reg := registry.New(registry.Options{})
	names := benchFleet(b, reg, n)
	regp := measure()
	regHeap, regRSS := regp.heap-base.heap, regp.rss-base.rss
	regAnon := regp.status["RssAnon"] - base.status["RssAnon"]
	regIdle := regp.idleRSS - base.idleRSS
	resetPeak()

	s := New(Config{ZonePriority: true, HeldAsUnhealthy: true, Logger: slog.New(slog.DiscardHandler)})
	b.Cleanup(s.Close)
	built := make(chan struct{})
	var once sync.Once
	want := reg.Revision()
	s.synced = func(_ string, rev int64) {
		if rev >= want {
			once.Do(func() { close(built) })
		}
	}
	s.Attach("default", reg)
	<-built
	// attached: the server has built every resource, no client yet.
	attached := measure()
	if os.Getenv("XDS_BENCH_HEAPPROFILE") != "" {
		// Every allocation from here on in the profile (the ones before
		// are sampled as usual): what the clients' streams leave.
		runtime.MemProfileRate = 1
	}
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	if err := s.Start(ctx, "127.0.0.1:0"); err != nil {
		b.Fatal(err)
	}

	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), benchClientsEnv+"="+s.Addr().String(),
		benchClientsEnv+"_MODE="+mode, benchClientsEnv+"_APPS="+strconv.Itoa(len(names)))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { stdin.Close(); cmd.Wait() })
	// all is the lowest revision every client holds, as the client
	// process reports it.
	all := &benchClient{}
	all.cond = sync.NewCond(&all.mu)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if r, err := strconv.ParseInt(sc.Text(), 10, 64); err == nil {
				all.got(r)
			}
		}
		all.got(1 << 62) // the client process ended: let no wait hang
	}()
	start := reg.Revision()
	all.wait(start)
	if all.last() == 1<<62 {
		b.Fatal("the client process ended before its clients were in sync")
	}

	worst, cpu := pushes(b, reg, names, all.wait)
	if all.last() == 1<<62 {
		b.Fatal("the client process ended during the pushes")
	}
	peak := procStatus()["VmHWM"]
	end := measure()
	xdsHeap := end.heap - regp.heap
	xdsRSS := end.rss - regp.rss
	xdsAnon := end.status["RssAnon"] - regp.status["RssAnon"]
	xdsIdle := end.idleRSS - regp.idleRSS
	if p := os.Getenv("XDS_BENCH_HEAPPROFILE"); p != "" {
		if f, err := os.Create(fmt.Sprintf("%s.process.%s.%d", p, mode, n)); err == nil {
			pprof.WriteHeapProfile(f)
			f.Close()
		}
	}
	if os.Getenv("XDS_BENCH_MEMLOG") != "" {
		var sb strings.Builder
		fmt.Fprintf(&sb, "%-45s %14s %14s %14s %14s\n", "memory (bytes)", "start", "registry", "xDS built", "100 clients")
		row := func(k string, p func(memPoint) int64) {
			fmt.Fprintf(&sb, "%-45s %14d %14d %14d %14d\n", k, p(base), p(regp), p(attached), p(end))
		}
		row("heap (live after 2 GCs)", func(p memPoint) int64 { return p.heap })
		row("VmRSS before FreeOSMemory", func(p memPoint) int64 { return p.idleRSS })
		row("VmRSS after FreeOSMemory", func(p memPoint) int64 { return p.rss })
		for _, k := range []string{"RssAnon", "RssFile", "VmHWM"} {
			row(k, func(p memPoint) int64 { return p.status[k] })
		}
		for _, k := range memClasses {
			row(k, func(p memPoint) int64 { return p.classes[k] })
		}
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		fmt.Fprintf(&sb, "live objects the clients added, by size class (> 256 KB):\n")
		for i, c := range ms.BySize {
			if d := end.bySize[i] - attached.bySize[i]; d*int64(c.Size) > 256<<10 {
				fmt.Fprintf(&sb, "  %6d B: %8d objects, %6.1f MB\n", c.Size, d, float64(d*int64(c.Size))/(1<<20))
			}
		}
		b.Logf("%s/%d, GOMAXPROCS %d:\n%s", mode, n, runtime.GOMAXPROCS(0), sb.String())
	}
	b.ReportMetric(worst.Seconds(), "worst-s/push")
	b.ReportMetric(float64(xdsHeap)/float64(regHeap), "xds-heap/registry-heap")
	b.ReportMetric(float64(xdsRSS)/float64(regRSS), "xds-rss/registry-rss")
	b.ReportMetric(float64(xdsAnon)/float64(regAnon), "xds-anon/registry-anon")
	b.ReportMetric(float64(xdsIdle)/float64(regIdle), "xds-idle-rss/registry-idle-rss")
	b.ReportMetric(float64(peak-regp.rss)/float64(regRSS), "xds-peak-rss/registry-rss")
	b.ReportMetric(cpu.Seconds()*1000/float64(b.N), "server-cpu-ms/push")
	b.ReportMetric(float64(regRSS)/float64(n), "registry-rss-B/instance")
}
