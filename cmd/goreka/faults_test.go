package main

// Fault tests: three full goreka servers (newApp + run, the same code the
// binary runs) on loopback, A, B and C. Clients register and renew against
// A only. A reaches C through a proxy the test controls (fltProxy), which
// can make C slow, answer garbage, or cut every connection (a partition);
// C can also be stopped and started again, and A restarted under a storm of
// re-registrations. Each test checks that client-facing latency on A stays
// low while the fault lasts, that A's replication queue to C stays within
// its bound, and that once the fault heals every node holds every
// registration (full registries compared across nodes).
//
// The servers are in-process nodes (harness_test.go), so a test can read
// A's replication queue directly (Replicator.Status); cluster_test.go
// covers the same code as separate processes. Waits poll with generous
// deadlines; nothing sleeps to assert.

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/goreka/goreka/replication"
)

const (
	fltApp = "FLT-APP"
	// fltPool is A's per-peer queue bound in these tests
	// (max-elements-in-peer-replication-pool), small enough for a test's
	// load to hit it.
	fltPool = 300
	// fltReadTimeout is the peer read timeout: the slow peer answers after
	// 10 s, so a client request that waited on replication would take at
	// least this long.
	fltReadTimeout = 2 * time.Second
	// fltP99 bounds the client-facing p99 of register and renew on A while
	// a peer is failing: well under fltReadTimeout, so a client request
	// that waits on a peer fails it, yet loose enough for -race on a loaded
	// machine. The measured figure is logged.
	fltP99 = time.Second
	// fltStormP99 bounds the p99 during the re-registration storm (32
	// concurrent clients on a machine that may have 2 cores), scaled by 4
	// under the race detector, which slows the encoding of the registry
	// that every change triggers.
	fltStormP99 = 2 * time.Second
	// fltHeal bounds the time for every node to hold every registration
	// after a fault heals (back-off after failures is up to 30 s).
	fltHeal = 90 * time.Second
	// fltFaultFor is how long clients keep renewing while a fault is on at
	// least: longer than the read timeout, so that timeouts and back-off
	// happen, not just one stuck request.
	fltFaultFor = 3 * fltReadTimeout
)

// fltNode is one goreka server of a fault test, running in this process.
func fltNode(t *testing.T, name string, port int, peers ...string) *node {
	return inProcessNode(t, name, "127.0.0.1", port, loopbackArgs("127.0.0.1", port,
		"--eureka.client.register-with-eureka=false",
		"--eureka.client.service-url.defaultZone="+strings.Join(peers, ","),
		"--eureka.server.enable-self-preservation=false",
		"--eureka.server.wait-time-in-ms-when-sync-empty=0",
		"--eureka.server.peer-node-read-timeout-ms="+strconv.Itoa(int(fltReadTimeout/time.Millisecond)),
		"--eureka.server.max-elements-in-peer-replication-pool="+strconv.Itoa(fltPool),
		"--logging.level.goreka=WARN",
	)...)
}

// fltStart starts n and waits until it serves reads.
func fltStart(n *node) {
	n.t.Helper()
	n.start()
	n.waitServing()
}

// fltMode is what the proxy in front of C does.
type fltMode int32

const (
	fltPass      fltMode = iota
	fltSlow              // hold each request 10 s (or until healed), then forward
	fltGarbage           // answer 200 with a body that is not Eureka's
	fltPartition         // close every connection without an answer
)

// fltProxy forwards to a node, or injects a fault.
type fltProxy struct {
	srv      *http.Server
	addr     string
	mode     atomic.Int32
	healed   chan struct{}
	mu       sync.Mutex
	faults   atomic.Int64 // requests that met a fault
	forwards atomic.Int64
}

func fltNewProxy(t *testing.T, target string) *fltProxy {
	t.Helper()
	u, _ := url.Parse(target)
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.ErrorLog = slog.NewLogLogger(slog.DiscardHandler, slog.LevelError)
	// A stopped C refuses connections; A must see a network error, as it
	// would without the proxy, not a 502 from it.
	rp.ErrorHandler = func(w http.ResponseWriter, r *http.Request, err error) {
		if c, _, err := http.NewResponseController(w).Hijack(); err == nil {
			c.Close()
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &fltProxy{addr: ln.Addr().String(), healed: make(chan struct{})}
	p.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch fltMode(p.mode.Load()) {
		case fltSlow:
			p.faults.Add(1)
			p.mu.Lock()
			healed := p.healed
			p.mu.Unlock()
			t := time.NewTimer(10 * time.Second)
			defer t.Stop()
			select {
			case <-t.C:
			case <-healed:
			case <-r.Context().Done():
				return
			}
		case fltGarbage:
			p.faults.Add(1)
			io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte("<html><body>502 Bad Gateway from a load balancer</body></html>"))
			return
		case fltPartition:
			p.faults.Add(1)
			if c, _, err := http.NewResponseController(w).Hijack(); err == nil {
				c.Close()
			}
			return
		}
		p.forwards.Add(1)
		rp.ServeHTTP(w, r)
	}), ReadHeaderTimeout: 10 * time.Second}
	go p.srv.Serve(ln)
	t.Cleanup(func() {
		p.set(fltPass)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		p.srv.Shutdown(ctx)
	})
	return p
}

func (p *fltProxy) url() string { return "http://" + p.addr + "/eureka/" }

// set changes the mode; leaving fltSlow releases the held requests.
func (p *fltProxy) set(m fltMode) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if fltMode(p.mode.Swap(int32(m))) == fltSlow && m != fltSlow {
		close(p.healed)
		p.healed = make(chan struct{})
	}
}

// fltWait polls cond until it holds or a generous deadline passes.
func fltWait(t *testing.T, what string, cond func() (bool, string)) time.Duration {
	t.Helper()
	return waitUntil(t, what, fltHeal, cond)
}

// fltCluster starts A, B and C. A lists B directly and C through a proxy;
// B and C list each other and A directly.
func fltCluster(t *testing.T) (a, b, c *node, px *fltProxy) {
	t.Helper()
	ports := make([]int, 3)
	for i := range ports {
		ports[i] = freePort(t, "127.0.0.1")
	}
	u := func(i int) string { return "http://127.0.0.1:" + strconv.Itoa(ports[i]) + "/eureka/" }
	px = fltNewProxy(t, "http://127.0.0.1:"+strconv.Itoa(ports[2]))
	// Made after the proxy, so that they stop (C, B, then A) before it.
	a = fltNode(t, "A", ports[0], u(1), px.url())
	b = fltNode(t, "B", ports[1], u(0), u(2))
	c = fltNode(t, "C", ports[2], u(0), u(1))
	// C first: each node's start-up sync finds its peers serving or refusing.
	for _, n := range []*node{c, b, a} {
		fltStart(n)
	}
	return a, b, c, px
}

// fltPeer returns A's replication status for the peer at url.
func fltPeer(n *node, u string) replication.PeerStatus {
	for _, s := range n.app().repl.Status() {
		if strings.TrimSuffix(s.URL, "/") == strings.TrimSuffix(u, "/") {
			return s
		}
	}
	n.t.Fatalf("node %s has no peer %s: %+v", n.name, u, n.app().repl.Status())
	return replication.PeerStatus{}
}

// fltLoad is a bounded client load against one node: register and renew
// instances from a few workers, recording every latency.
type fltLoad struct {
	mu        sync.Mutex
	latencies []time.Duration
	errors    []string
	requests  int
}

// run sends op(id) for every id, from workers goroutines.
func (l *fltLoad) run(ids []string, workers int, op func(id string) (int, error), want ...int) {
	var wg sync.WaitGroup
	next := atomic.Int64{}
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(ids) {
					return
				}
				start := time.Now()
				code, err := op(ids[i])
				took := time.Since(start)
				l.mu.Lock()
				l.requests++
				l.latencies = append(l.latencies, took)
				if err != nil || !slices.Contains(want, code) {
					if len(l.errors) < 10 {
						l.errors = append(l.errors, fmt.Sprintf("%s: %d %v", ids[i], code, err))
					}
				}
				l.mu.Unlock()
			}
		})
	}
	wg.Wait()
}

func (l *fltLoad) p99() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.latencies) == 0 {
		return 0
	}
	s := slices.Clone(l.latencies)
	slices.Sort(s)
	return s[len(s)*99/100]
}

func fltRegister(n *node) func(string) (int, error) {
	return func(id string) (int, error) {
		code, _, err := do("POST", n.base()+"/apps/"+fltApp, instanceBody(fltApp, id, 30, 90))
		return code, err
	}
}

func fltRenew(n *node) func(string) (int, error) {
	return func(id string) (int, error) { return heartbeat(n, fltApp, id) }
}

func fltIDs(prefix string, n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("%s-%04d", prefix, i)
	}
	return ids
}

// fltRegistry is a node's FLT-APP instances (id -> status) as its full
// registry read shows them.
func fltRegistry(n *node) (map[string]string, error) {
	all, err := apps(n)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for k, v := range only(all, fltApp) {
		out[strings.TrimPrefix(k, fltApp+"/")] = v
	}
	return out, nil
}

// fltConverge renews every id on A (heartbeats are what repairs a peer
// that missed a registration: it answers 404 and A sends the register)
// until every node holds exactly ids, all UP. It returns how long that
// took and fails the test past fltHeal.
func fltConverge(t *testing.T, a *node, ids []string, nodes ...*node) time.Duration {
	t.Helper()
	var lastRenew time.Time
	return fltWait(t, "every node holds every registration", func() (bool, string) {
		if time.Since(lastRenew) > 2*time.Second {
			var l fltLoad
			l.run(ids, 4, fltRenew(a), 200)
			lastRenew = time.Now()
		}
		var diffs []string
		for _, n := range nodes {
			got, err := fltRegistry(n)
			if err != nil {
				diffs = append(diffs, n.name+": "+err.Error())
				continue
			}
			missing := 0
			for _, id := range ids {
				if got[id] != "UP" {
					missing++
				}
			}
			if missing > 0 || len(got) != len(ids) {
				diffs = append(diffs, fmt.Sprintf("%s holds %d of %d (%d missing or not UP)", n.name, len(got), len(ids), missing))
			}
		}
		return len(diffs) == 0, strings.Join(diffs, "; ")
	})
}

// fltUnderFault registers and renews ids on A while the fault is on,
// sampling A's queue to C, and checks latency and the queue bound.
func fltUnderFault(t *testing.T, a *node, px *fltProxy, ids []string, viaProxy bool) {
	t.Helper()
	stop := make(chan struct{})
	maxDepth := atomic.Int64{}
	var sampler sync.WaitGroup
	sampler.Go(func() {
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			d := int64(fltPeer(a, px.url()).QueueDepth)
			if d > maxDepth.Load() {
				maxDepth.Store(d)
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	})
	var l fltLoad
	start := time.Now()
	l.run(ids, 8, fltRegister(a), 204)
	for round := 0; round < 50 && (round < 2 || time.Since(start) < fltFaultFor); round++ {
		l.run(ids, 8, fltRenew(a), 200)
	}
	close(stop)
	sampler.Wait()
	st := fltPeer(a, px.url())
	t.Logf("measured: %d requests on A under the fault, p99 %v; queue to C max %d (bound %d), dropped %d, failures %+v; proxy faults %d",
		l.requests, l.p99(), maxDepth.Load(), fltPool, st.Dropped, st.Failures, px.faults.Load())
	if len(l.errors) > 0 {
		t.Fatalf("client requests failed under the fault: %v", l.errors)
	}
	if p := l.p99(); p > fltP99 {
		t.Errorf("client p99 %v under the fault, bound %v", p, fltP99)
	}
	if m := maxDepth.Load(); m > fltPool {
		t.Errorf("queue to the failing peer reached %d, bound %d", m, fltPool)
	}
	if viaProxy && px.faults.Load() == 0 {
		t.Error("the fault was never exercised: no request reached the proxy while it was on")
	}
}

// fltFaultTest: the fault is on while clients work against A, then it
// heals and every node must converge.
func fltFaultTest(t *testing.T, mode fltMode, n int) {
	if testing.Short() {
		t.Skip("fault tests start three servers")
	}
	a, b, c, px := fltCluster(t)
	px.set(mode)
	ids := fltIDs("i", n)
	fltUnderFault(t, a, px, ids, true)
	px.set(fltPass)
	took := fltConverge(t, a, ids, a, b, c)
	t.Logf("measured: all %d registrations on A, B and C %v after the fault healed; registrations lost: 0", n, took.Round(time.Millisecond))
}

// 500 instances give 1000 distinct tasks (register + heartbeat each) for a
// pool of 300: the bound is hit and the oldest tasks are dropped, which the
// heartbeat repair must then make good.

func TestFaultSlowPeer(t *testing.T)    { fltFaultTest(t, fltSlow, 500) }
func TestFaultGarbagePeer(t *testing.T) { fltFaultTest(t, fltGarbage, 500) }
func TestFaultPartition(t *testing.T)   { fltFaultTest(t, fltPartition, 500) }

// TestFaultPeerDownComesBack stops C while clients register on A, then
// starts it again on the same port: its start-up sync and A's queued and
// repaired replication must give it every registration.
func TestFaultPeerDownComesBack(t *testing.T) {
	if testing.Short() {
		t.Skip("fault tests start three servers")
	}
	a, b, c, px := fltCluster(t)
	first := fltIDs("pre", 100)
	var l fltLoad
	l.run(first, 4, fltRegister(a), 204)
	fltConverge(t, a, first, a, b, c)

	c.stop()
	ids := append(first, fltIDs("down", 400)...)
	fltUnderFault(t, a, px, ids[len(first):], false)
	if st := fltPeer(a, px.url()); st.Failures.Network+st.Failures.Congestion+st.Failures.Rejected+st.Failures.BadResponse == 0 {
		t.Errorf("A never failed to reach the stopped peer: %+v", st)
	}
	fltStart(c)
	took := fltConverge(t, a, ids, a, b, c)
	t.Logf("measured: C back; all %d registrations on A, B and C %v after its restart; registrations lost: 0", len(ids), took.Round(time.Millisecond))
}

// TestFaultRestartStorm restarts A with an empty registry; its start-up
// sync refills it from B and C, then every client re-registers at once (as
// Eureka clients do when their heartbeat gets 404 after a restart).
func TestFaultRestartStorm(t *testing.T) {
	if testing.Short() {
		t.Skip("fault tests start three servers")
	}
	a, b, c, px := fltCluster(t)
	ids := fltIDs("s", 1000)
	var l fltLoad
	l.run(ids, 8, fltRegister(a), 204)
	fltConverge(t, a, ids, a, b, c)

	a.stop()
	fltStart(a)
	synced, err := fltRegistry(a)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("measured: restarted A holds %d of %d registrations after its start-up sync", len(synced), len(ids))

	var storm fltLoad
	start := time.Now()
	storm.run(ids, 32, fltRegister(a), 204)
	storm.run(ids, 32, fltRenew(a), 200)
	st := fltPeer(a, px.url())
	t.Logf("measured: storm of %d re-registrations + renews from 32 clients in %v, p99 %v; queue to C %d (bound %d), dropped %d",
		storm.requests, time.Since(start).Round(time.Millisecond), storm.p99(), st.QueueDepth, fltPool, st.Dropped)
	if len(storm.errors) > 0 {
		t.Fatalf("storm requests failed: %v", storm.errors)
	}
	bound := fltStormP99
	if raceEnabled() {
		bound *= 4
	}
	if p := storm.p99(); p > bound {
		t.Errorf("client p99 %v during the storm, bound %v", p, bound)
	}
	if st.QueueDepth > fltPool {
		t.Errorf("queue %d over its bound %d", st.QueueDepth, fltPool)
	}
	took := fltConverge(t, a, ids, a, b, c)
	t.Logf("measured: all %d registrations on A, B and C %v after the storm; registrations lost: 0", len(ids), took.Round(time.Millisecond))
}
