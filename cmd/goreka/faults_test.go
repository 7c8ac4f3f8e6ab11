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
// The servers run in this test process, so a test can read A's replication
// queue directly (Replicator.Status); cluster_test.go covers the same code
// as separate processes. Waits poll with generous deadlines; nothing
// sleeps to assert.

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/goreka/goreka/cmd/goreka/config"
	"github.com/goreka/goreka/compat"
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

// fltLogs collects a node's logs for failure reports.
type fltLogs struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *fltLogs) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.buf.Len() > 1<<20 {
		l.buf.Reset()
		l.buf.WriteString("[earlier logs dropped]\n")
	}
	return l.buf.Write(p)
}

func (l *fltLogs) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.buf.String() }

// fltNode is one goreka server running in this process.
type fltNode struct {
	t      *testing.T
	name   string
	port   int
	peers  []string
	logs   *fltLogs
	a      *app
	cancel context.CancelFunc
	done   chan error
}

func (n *fltNode) base() string { return "http://127.0.0.1:" + strconv.Itoa(n.port) }
func (n *fltNode) url() string  { return n.base() + "/eureka/" }

// start builds and runs the server on its port; it returns once the
// server answers requests.
func (n *fltNode) start() {
	t := n.t
	t.Helper()
	args := []string{
		"--server.port=" + strconv.Itoa(n.port),
		"--server.address=127.0.0.1",
		"--eureka.instance.hostname=127.0.0.1",
		"--eureka.instance.ip-address=127.0.0.1",
		"--eureka.client.register-with-eureka=false",
		"--eureka.client.service-url.defaultZone=" + strings.Join(n.peers, ","),
		"--eureka.server.enable-self-preservation=false",
		"--eureka.server.wait-time-in-ms-when-sync-empty=0",
		"--eureka.server.peer-node-read-timeout-ms=" + strconv.Itoa(int(fltReadTimeout/time.Millisecond)),
		"--eureka.server.max-elements-in-peer-replication-pool=" + strconv.Itoa(fltPool),
		"--logging.level.goreka=WARN",
	}
	cfg, err := config.Load(args, nil, t.TempDir())
	if err != nil {
		t.Fatalf("node %s config: %v", n.name, err)
	}
	if n.logs == nil {
		n.logs = &fltLogs{}
	}
	fmt.Fprintf(n.logs, "--- node %s starting\n", n.name)
	a, err := newApp(cfg, newLogger(cfg, n.logs), time.Now)
	if err != nil {
		t.Fatalf("node %s: %v", n.name, err)
	}
	var ln net.Listener
	deadline := time.Now().Add(20 * time.Second)
	for {
		// A restarted node takes its port back; the old listener may take
		// a moment to go.
		if ln, err = net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(n.port))); err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("node %s listen: %v", n.name, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	n.a, n.cancel, n.done = a, cancel, make(chan error, 1)
	go func() { n.done <- a.run(ctx, ln) }()
	fltWait(t, "node "+n.name+" serves", func() (bool, string) {
		code, _, err := fltDo("GET", n.url()+"apps", "")
		return code == 200, fmt.Sprintf("%d %v", code, err)
	})
}

// stop shuts the server down and waits for it.
func (n *fltNode) stop() {
	if n.cancel == nil {
		return
	}
	n.cancel()
	select {
	case err := <-n.done:
		if err != nil {
			n.t.Errorf("node %s stopped with %v", n.name, err)
		}
	case <-time.After(60 * time.Second):
		n.t.Errorf("node %s did not stop within 60 s", n.name)
	}
	n.cancel = nil
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

var fltClient = &http.Client{
	Timeout:   30 * time.Second,
	Transport: &http.Transport{MaxIdleConnsPerHost: 32, IdleConnTimeout: 10 * time.Second},
}

func fltDo(method, u, body string) (int, []byte, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, u, rd)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Accept", "application/json")
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := fltClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// fltWait polls cond until it holds or a generous deadline passes.
func fltWait(t *testing.T, what string, cond func() (bool, string)) time.Duration {
	t.Helper()
	start := time.Now()
	var last string
	for time.Since(start) < fltHeal {
		ok, s := cond()
		if ok {
			return time.Since(start)
		}
		last = s
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s: not within %v; last: %s", what, fltHeal, last)
	return 0
}

// fltCluster starts A, B and C. A lists B directly and C through a proxy;
// B and C list each other and A directly.
func fltCluster(t *testing.T) (a, b, c *fltNode, px *fltProxy) {
	t.Helper()
	ports := make([]int, 3)
	for i := range ports {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ports[i] = ln.Addr().(*net.TCPAddr).Port
		ln.Close()
	}
	u := func(i int) string { return "http://127.0.0.1:" + strconv.Itoa(ports[i]) + "/eureka/" }
	px = fltNewProxy(t, "http://127.0.0.1:"+strconv.Itoa(ports[2]))
	a = &fltNode{t: t, name: "A", port: ports[0], peers: []string{u(1), px.url()}}
	b = &fltNode{t: t, name: "B", port: ports[1], peers: []string{u(0), u(2)}}
	c = &fltNode{t: t, name: "C", port: ports[2], peers: []string{u(0), u(1)}}
	nodes := []*fltNode{c, b, a} // C first: each node's start-up sync finds its peers serving or refusing
	t.Cleanup(func() {
		for _, n := range nodes {
			n.stop()
		}
		if t.Failed() {
			for _, n := range nodes {
				t.Logf("logs of %s:\n%s", n.name, n.logs)
			}
		}
	})
	for _, n := range nodes {
		n.start()
	}
	return a, b, c, px
}

// fltPeer returns A's replication status for the peer at url.
func fltPeer(n *fltNode, u string) replication.PeerStatus {
	for _, s := range n.a.repl.Status() {
		if strings.TrimSuffix(s.URL, "/") == strings.TrimSuffix(u, "/") {
			return s
		}
	}
	n.t.Fatalf("node %s has no peer %s: %+v", n.name, u, n.a.repl.Status())
	return replication.PeerStatus{}
}

func fltInstanceBody(id string) string {
	return `{"instance":{"instanceId":"` + id + `","hostName":"h-` + id + `","app":"` + fltApp + `","ipAddr":"10.1.0.1","status":"UP",` +
		`"port":{"$":8080,"@enabled":"true"},"vipAddress":"flt","dataCenterInfo":{"@class":"com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo","name":"MyOwn"},` +
		`"leaseInfo":{"renewalIntervalInSecs":30,"durationInSecs":90}}}`
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

func fltRegister(n *fltNode) func(string) (int, error) {
	return func(id string) (int, error) {
		code, _, err := fltDo("POST", n.url()+"apps/"+fltApp, fltInstanceBody(id))
		return code, err
	}
}

func fltRenew(n *fltNode) func(string) (int, error) {
	return func(id string) (int, error) {
		code, _, err := fltDo("PUT", n.url()+"apps/"+fltApp+"/"+id, "")
		return code, err
	}
}

// fltRace reports whether the test binary was built with -race.
func fltRace() bool {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, s := range bi.Settings {
		if s.Key == "-race" {
			return s.Value == "true"
		}
	}
	return false
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
func fltRegistry(n *fltNode) (map[string]string, error) {
	code, body, err := fltDo("GET", n.url()+"apps", "")
	if err != nil || code != 200 {
		return nil, fmt.Errorf("GET apps: %d %v", code, err)
	}
	apps, err := compat.DecodeApplications(body, compat.JSON)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, app := range apps.Apps {
		if app.Name != fltApp {
			continue
		}
		for _, v := range app.Instances {
			out[v.Instance.ID()] = string(v.Instance.Status)
		}
	}
	return out, nil
}

// fltConverge renews every id on A (heartbeats are what repairs a peer
// that missed a registration: it answers 404 and A sends the register)
// until every node holds exactly ids, all UP. It returns how long that
// took and fails the test past fltHeal.
func fltConverge(t *testing.T, a *fltNode, ids []string, nodes ...*fltNode) time.Duration {
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
func fltUnderFault(t *testing.T, a *fltNode, px *fltProxy, ids []string, viaProxy bool) {
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
	c.start()
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
	a.start()
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
	if fltRace() {
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
