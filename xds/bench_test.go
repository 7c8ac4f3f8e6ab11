package xds

import (
	"context"
	"fmt"
	"net"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/test/bufconn"

	"github.com/goreka/goreka/registry"
)

// benchClients is the subscribed xDS clients of the benchmark: in two
// zones, as Envoys (SotW ADS, CDS wildcard, EDS naming every cluster, each
// response ACKed, as Envoy does).
const benchClients = 100

// benchFleet registers n instances in n/50 applications, half in zone z1,
// half in z2, each with a VIP and three metadata entries.
func benchFleet(b *testing.B, reg *registry.Registry, n int) []string {
	b.Helper()
	apps := n / 50
	var names []string
	for a := range apps {
		app := fmt.Sprintf("APP-%04d", a)
		names = append(names, fmt.Sprintf("app-%04d", a))
		for i := range 50 {
			in := inst(app, fmt.Sprintf("%s-%02d", app, i), fmt.Sprintf("10.%d.%d.%d", a/250, a%250, i+1),
				MetaZone, "z"+strconv.Itoa(1+i%2), "version", "v1", "team", "t"+strconv.Itoa(a%7))
			in.VIPAddress = names[len(names)-1]
			if _, err := reg.Register(in, false); err != nil {
				b.Fatal(err)
			}
		}
	}
	return names
}

// benchClient is one subscribed client: the latest EDS revision it got.
// seen, when set, is called after rev rose (the client process's report).
type benchClient struct {
	mu   sync.Mutex
	cond *sync.Cond
	rev  int64
	seen func()
}

// got records an EDS response at revision r.
func (c *benchClient) got(r int64) {
	c.mu.Lock()
	rose := r > c.rev
	c.rev = max(c.rev, r)
	c.mu.Unlock()
	c.cond.Broadcast()
	if rose && c.seen != nil {
		c.seen()
	}
}

func (c *benchClient) last() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rev
}

// runDelta is run over the delta protocol (Envoy's DELTA_GRPC): ACKs name
// nothing, only the nonce.
func (c *benchClient) runDelta(fail func(...any), ctx context.Context, cc *grpc.ClientConn, id int, names []string) {
	st, err := discovery.NewAggregatedDiscoveryServiceClient(cc).DeltaAggregatedResources(ctx)
	if err != nil {
		fail(err)
		return
	}
	n := &core.Node{Id: "bench-" + strconv.Itoa(id), UserAgentName: "envoy", Locality: &core.Locality{Zone: "z" + strconv.Itoa(1+id%2)}}
	if err := st.Send(&discovery.DeltaDiscoveryRequest{Node: n, TypeUrl: resource.ClusterType}); err != nil {
		fail(err)
		return
	}
	if err := st.Send(&discovery.DeltaDiscoveryRequest{TypeUrl: resource.EndpointType, ResourceNamesSubscribe: names}); err != nil {
		fail(err)
		return
	}
	for {
		resp, err := st.Recv()
		if err != nil {
			return
		}
		if resp.GetTypeUrl() == resource.EndpointType {
			if r, ok := leadingRevision(resp.GetSystemVersionInfo()); ok {
				c.got(r)
			}
		}
		if err := st.Send(&discovery.DeltaDiscoveryRequest{TypeUrl: resp.GetTypeUrl(), ResponseNonce: resp.GetNonce()}); err != nil {
			return
		}
	}
}

func (c *benchClient) run(fail func(...any), ctx context.Context, cc *grpc.ClientConn, id int, names []string) {
	st, err := discovery.NewAggregatedDiscoveryServiceClient(cc).StreamAggregatedResources(ctx)
	if err != nil {
		fail(err)
		return
	}
	n := &core.Node{Id: "bench-" + strconv.Itoa(id), UserAgentName: "envoy", Locality: &core.Locality{Zone: "z" + strconv.Itoa(1+id%2)}}
	if err := st.Send(&discovery.DiscoveryRequest{Node: n, TypeUrl: resource.ClusterType}); err != nil {
		fail(err)
		return
	}
	if err := st.Send(&discovery.DiscoveryRequest{TypeUrl: resource.EndpointType, ResourceNames: names}); err != nil {
		fail(err)
		return
	}
	for {
		resp, err := st.Recv()
		if err != nil {
			return // the benchmark ended
		}
		req := &discovery.DiscoveryRequest{TypeUrl: resp.GetTypeUrl(), VersionInfo: resp.GetVersionInfo(), ResponseNonce: resp.GetNonce()}
		if resp.GetTypeUrl() == resource.EndpointType {
			req.ResourceNames = names
			if r, ok := leadingRevision(resp.GetVersionInfo()); ok {
				c.got(r)
			}
		}
		if err := st.Send(req); err != nil {
			return
		}
	}
}

func (c *benchClient) wait(rev int64) {
	c.mu.Lock()
	for c.rev < rev {
		c.cond.Wait()
	}
	c.mu.Unlock()
}

// cpuTime is the process's CPU time so far (user and system).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// rss is the process's resident set size now (Linux; 0 elsewhere), after
// a collection that returns freed memory to the system.
func rss() int64 {
	debug.FreeOSMemory()
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, _ := strconv.ParseInt(f[1], 10, 64)
	return pages * int64(os.Getpagesize())
}

func heap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// BenchmarkXDSPush: n instances in n/50 applications, 100 Envoy-like
// clients over real gRPC streams (bufconn). One op is one registration
// (a new instance of an existing application) until all 100 clients have
// an EDS response at its revision. ns/op is that time; allocs/op and
// B/op are the whole process's (server and the in-process clients) per
// pushed change. The heap added by xDS (server, caches, streams, after
// the pushes) is reported against the registry's own, and so is the
// resident set it adds; cpu-ms/push is the process's CPU time (user and
// system, server and clients) per pushed change. mode sotw is
// Envoy's default ADS (each EDS ACK names every cluster again), delta its
// DELTA_GRPC (ACKs name nothing).
func BenchmarkXDSPush(b *testing.B) {
	for _, mode := range []string{"sotw", "delta"} {
		for _, n := range []int{10_000, 100_000} {
			b.Run(fmt.Sprintf("mode=%s/instances=%d", mode, n), func(b *testing.B) { benchPush(b, mode, n) })
		}
	}
}

func benchPush(b *testing.B, mode string, n int) {
	{
		{
			base, baseRSS := heap(), rss()
			reg := registry.New(registry.Options{})
			names := benchFleet(b, reg, n)
			regHeap, regRSS := heap()-base, rss()-baseRSS

			s := New(Config{ZonePriority: true, HeldAsUnhealthy: true})
			b.Cleanup(s.Close)
			s.Attach("default", reg)
			lis := bufconn.Listen(1 << 20)
			gs := grpc.NewServer(s.grpcOptions()...) // as Start serves
			s.Register(gs)
			go gs.Serve(lis)
			b.Cleanup(gs.Stop)
			ctx, cancel := context.WithCancel(context.Background())
			b.Cleanup(cancel)
			cc, err := grpc.NewClient("passthrough:///bufnet",
				grpc.WithContextDialer(func(context.Context, string) (net.Conn, error) { return lis.Dial() }),
				grpc.WithTransportCredentials(insecure.NewCredentials()),
				grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(1<<30)))
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { cc.Close() })
			clients := make([]*benchClient, benchClients)
			for i := range clients {
				c := &benchClient{}
				c.cond = sync.NewCond(&c.mu)
				clients[i] = c
				if mode == "delta" {
					go c.runDelta(b.Error, ctx, cc, i, names)
				} else {
					go c.run(b.Error, ctx, cc, i, names)
				}
			}
			start := reg.Revision()
			for _, c := range clients {
				c.wait(start)
			}

			worst, cpu := pushes(b, reg, names, func(rev int64) {
				for _, c := range clients {
					c.wait(rev)
				}
			})
			// Measured after the pushes, when each in-process client holds
			// only its last (small) answer: the heap beyond the registry's
			// is the xDS server's (index, caches, marshalled resources,
			// streams) and, unavoidably, the clients' few buffers.
			xdsHeap := int64(heap()) - int64(base) - int64(regHeap)
			xdsRSS := rss() - baseRSS - regRSS
			if p := os.Getenv("XDS_BENCH_HEAPPROFILE"); p != "" {
				// What the heap holds at this point, for go tool pprof.
				if f, err := os.Create(fmt.Sprintf("%s.%s.%d", p, mode, n)); err == nil {
					pprof.WriteHeapProfile(f)
					f.Close()
				}
			}
			b.ReportMetric(worst.Seconds(), "worst-s/push")
			// After the loop: ResetTimer drops metrics reported before it.
			b.ReportMetric(float64(xdsHeap)/float64(regHeap), "xds-heap/registry-heap")
			b.ReportMetric(float64(xdsRSS)/float64(regRSS), "xds-rss/registry-rss")
			b.ReportMetric(cpu.Seconds()*1000/float64(b.N), "cpu-ms/push")
			b.ReportMetric(float64(regHeap)/float64(n), "registry-B/instance")
		}
	}
}

// pushes is the measured loop of the push benchmarks: one registration per
// op in an application of names (its VIP address the name), each waited
// for by wait(the registry's revision) before the next; the worst push and
// the process's CPU in the loop. The timer is stopped on return.
func pushes(b *testing.B, reg *registry.Registry, names []string, wait func(rev int64)) (worst, cpu time.Duration) {
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	for i := 0; b.Loop(); i++ {
		app := fmt.Sprintf("APP-%04d", i%len(names))
		in := inst(app, fmt.Sprintf("%s-new-%d", app, i), fmt.Sprintf("10.255.%d.%d", (i/250)%250, i%250+1), MetaZone, "z1")
		in.VIPAddress = names[i%len(names)]
		t0 := time.Now()
		if _, err := reg.Register(in, false); err != nil {
			b.Fatal(err)
		}
		wait(reg.Revision())
		worst = max(worst, time.Since(t0))
	}
	b.StopTimer()
	return worst, cpuTime() - cpu0
}
