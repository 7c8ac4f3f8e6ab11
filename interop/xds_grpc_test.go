package interop

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	_ "google.golang.org/grpc/xds" // the xds:/// resolver and its balancers, as an application links them

	"github.com/goreka/goreka/registry"
	"github.com/goreka/goreka/xds"
)

// The proxyless gRPC consumer: grpc-go resolves xds:///echo through
// goreka's xDS server with nothing but a bootstrap. grpc-go reads
// GRPC_XDS_BOOTSTRAP_CONFIG when its packages initialise, before any test
// code runs, so the client is this test binary run again as a subprocess
// (TestMain), with the bootstrap naming the xDS server's port; the test
// drives it over stdin ("call N") and reads which backend answered each
// call from its stdout.

const clientEnv = "GOREKA_INTEROP_XDS_CLIENT"

func TestMain(m *testing.M) {
	if os.Getenv(clientEnv) != "" {
		os.Exit(xdsClient(os.Stdin, os.Stdout))
	}
	os.Exit(m.Run())
}

// tally is one batch of calls: answers per backend, and failed calls.
type tally struct {
	Backends map[string]int `json:"backends"`
	Errors   int            `json:"errors"`
	LastErr  string         `json:"last_err,omitempty"`
}

// batchLimit bounds one batch of calls (all of them, whatever N), so that
// a broken resolution fails the test with a message instead of running
// into go test's timeout; readLimit bounds the test's wait for a batch.
const (
	batchLimit = 30 * time.Second
	readLimit  = batchLimit + 15*time.Second
)

// xdsClient is the subprocess: one channel to xds:///echo, a batch of
// health checks per "call N" line, each batch's tally as one JSON line.
func xdsClient(in io.Reader, out io.Writer) int {
	conn, err := grpc.NewClient("xds:///echo", grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer conn.Close()
	hc := healthpb.NewHealthClient(conn)
	sc := bufio.NewScanner(in)
	enc := json.NewEncoder(out)
	for sc.Scan() {
		n, err := strconv.Atoi(strings.TrimPrefix(sc.Text(), "call "))
		if err != nil {
			fmt.Fprintln(os.Stderr, "bad command", sc.Text())
			return 2
		}
		t := tally{Backends: map[string]int{}}
		// One deadline for the whole batch: WaitForReady lets the first
		// call wait for the xDS resolution, but not past batchLimit.
		ctx, cancel := context.WithTimeout(context.Background(), batchLimit)
		for i := range n {
			if ctx.Err() != nil {
				t.Errors += n - i
				t.LastErr = fmt.Sprintf("batch deadline (%v) passed after %d of %d calls: %s", batchLimit, i, n, t.LastErr)
				break
			}
			var md metadata.MD
			_, err := hc.Check(ctx, &healthpb.HealthCheckRequest{}, grpc.Header(&md), grpc.WaitForReady(true))
			if err != nil {
				t.Errors++
				t.LastErr = err.Error()
				continue
			}
			t.Backends[strings.Join(md.Get("backend"), ",")]++
		}
		cancel()
		if err := enc.Encode(t); err != nil {
			return 2
		}
	}
	return 0
}

// echoServer is a real gRPC server on a free port that answers the health
// service and names itself in the "backend" response header.
func echoServer(t *testing.T, name string) int {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer(grpc.UnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		_ = grpc.SetHeader(ctx, metadata.Pairs("backend", name))
		return h(ctx, req)
	}))
	healthpb.RegisterHealthServer(s, health.NewServer())
	go func() { _ = s.Serve(lis) }()
	t.Cleanup(s.Stop)
	return lis.Addr().(*net.TCPAddr).Port
}

// client is the subprocess, driven line by line.
type client struct {
	t   *testing.T
	in  io.WriteCloser
	out *bufio.Scanner
}

func startClient(t *testing.T, xdsAddr string) *client {
	t.Helper()
	return startClientIn(t, xdsAddr, "")
}

// startClientIn starts the client subprocess as a node in zone ("": a
// node that declares no locality).
func startClientIn(t *testing.T, xdsAddr, zone string) *client {
	t.Helper()
	locality := ""
	if zone != "" {
		locality = fmt.Sprintf(`,"locality":{"zone":%q}`, zone)
	}
	bootstrap := fmt.Sprintf(`{"xds_servers":[{"server_uri":%q,"channel_creds":[{"type":"insecure"}],"server_features":["xds_v3"]}],"node":{"id":"interop-client"%s}}`, xdsAddr, locality)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), clientEnv+"=1", "GRPC_XDS_BOOTSTRAP_CONFIG="+bootstrap)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = in.Close()
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	return &client{t: t, in: in, out: sc}
}

func (c *client) call(n int) tally {
	c.t.Helper()
	if _, err := fmt.Fprintf(c.in, "call %d\n", n); err != nil {
		c.t.Fatal(err)
	}
	type line struct {
		b  []byte
		ok bool
	}
	got := make(chan line, 1)
	go func() {
		ok := c.out.Scan()
		got <- line{append([]byte(nil), c.out.Bytes()...), ok}
	}()
	var l line
	select {
	case l = <-got:
	case <-time.After(readLimit):
		c.t.Fatalf("the client answered no batch of %d calls within %v", n, readLimit)
	}
	if !l.ok {
		c.t.Fatalf("the client exited: %v", c.out.Err())
	}
	var t tally
	if err := json.Unmarshal(l.b, &t); err != nil {
		c.t.Fatal(err)
	}
	return t
}

// until calls batches of n until ok accepts one, for at most limit.
func (c *client) until(n int, limit time.Duration, ok func(tally) bool) {
	c.t.Helper()
	start := time.Now()
	var last tally
	for time.Since(start) < limit {
		if last = c.call(n); ok(last) {
			return
		}
	}
	c.t.Fatalf("after %v the calls still spread as %v (errors %d, %s)", limit, last.Backends, last.Errors, last.LastErr)
}

// pushes reads goreka_xds_pushes_total{type=typ} from srv's metrics.
func pushes(t *testing.T, srv *xds.Server, typ string) float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(srv.Collector())
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "goreka_xds_pushes_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "type" && l.GetValue() == typ {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// waitPush waits (polling every millisecond, bounded) until srv has sent
// more EDS responses than before, and returns the time since start.
func waitPush(t *testing.T, srv *xds.Server, before float64, start time.Time) time.Duration {
	t.Helper()
	for pushes(t, srv, "eds") <= before {
		if time.Since(start) > 20*time.Second {
			t.Fatal("the server pushed no EDS response within 20 s of the change")
		}
		time.Sleep(time.Millisecond) // polling another goroutine's send
	}
	return time.Since(start)
}

func echoInstance(id string, grpcPort int, weight string) *registry.Instance {
	md := map[string]string{xds.MetaGRPCPort: strconv.Itoa(grpcPort)}
	if weight != "" {
		md[xds.MetaWeight] = weight
	}
	return &registry.Instance{InstanceID: id, App: "ECHO", HostName: id, IPAddr: "127.0.0.1",
		Port: registry.Port{Number: 8080, Enabled: true}, VIPAddress: "echo", Status: registry.StatusUp,
		DataCenterInfo: registry.DataCenterInfo{Name: registry.DataCenterMyOwn}, Metadata: md}
}

func TestGRPCGoResolvesThroughXDS(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a gRPC client subprocess")
	}
	reg, srv := startXDS(t)

	portA, portB := echoServer(t, "a"), echoServer(t, "b")
	for _, in := range []*registry.Instance{echoInstance("a", portA, ""), echoInstance("b", portB, "")} {
		if _, err := reg.Register(in, false); err != nil {
			t.Fatal(err)
		}
	}
	c := startClient(t, srv.Addr().String())

	// Spread: equal weights share the calls. grpc-go picks a locality at
	// random by weight (weighted_target), so 100 calls split 50 +- 5 (one
	// standard deviation); each >= 30 is 4 deviations out. Batches are
	// repeated (bounded) while the second backend connects on a slow
	// machine.
	c.until(100, 20*time.Second, func(t tally) bool {
		return t.Errors == 0 && t.Backends["a"] >= 30 && t.Backends["b"] >= 30
	})

	// Weights 90/10, pushed as metadata updates (a re-registration, as
	// PUT .../metadata?weight= does), in a fixed order, each awaited until
	// the server has pushed the assignment holding it: the split is
	// measured only once the final state (both weights) has been sent.
	for _, u := range [][2]string{{"b", "10"}, {"a", "90"}} {
		before := pushes(t, srv, "eds")
		if _, err := reg.UpdateMetadata("ECHO", u[0], map[string]string{xds.MetaWeight: u[1]}); err != nil {
			t.Fatal(err)
		}
		waitPush(t, srv, before, time.Now())
	}
	c.call(100) // the picks of a batch that may have started before the client applied it
	// 100 picks at 0.1: 10 +- 3; the intermediate 50/10 gives 17 +- 4.
	c.until(100, 20*time.Second, func(t tally) bool { return t.Errors == 0 && t.Backends["b"] >= 3 && t.Backends["b"] <= 15 })
	// 1000 random picks at 0.9: 900 +- 9.5 (one standard deviation), so
	// the tolerance of +- 50 is more than 5 deviations.
	split := c.call(1000)
	t.Logf("1000 calls at weights 90/10: %v", split.Backends)
	if a, b := split.Backends["a"], split.Backends["b"]; split.Errors > 0 || a < 850 || a > 950 || a+b != 1000 {
		t.Errorf("1000 calls at weights 90/10: a %d, b %d (errors %d); want a within 900 ± 50", a, b, split.Errors)
	}

	// OUT_OF_SERVICE is DRAINING: b gets no more calls. The push (status
	// applied to EDS response handed to the stream, measured server-side)
	// must take under 1 s; end to end (until a batch of 10 calls, a few
	// milliseconds each, reaches only a) is logged and allowed 5 s for a
	// loaded CI machine's scheduling.
	before := pushes(t, srv, "eds")
	start := time.Now()
	if err := reg.StatusUpdate("ECHO", "b", registry.StatusOutOfService, time.Time{}, false); err != nil {
		t.Fatal(err)
	}
	pushed := waitPush(t, srv, before, start)
	c.until(10, 20*time.Second, func(t tally) bool { return t.Backends["b"] == 0 && t.Backends["a"] == 10 })
	took := time.Since(start)
	checkOutOfServiceTimes(t, "the client", "b", "calls", pushed, took)
	if after := c.call(200); after.Backends["b"] != 0 || after.Errors > 0 {
		t.Errorf("calls after OUT_OF_SERVICE: %v (errors %d), want all on a", after.Backends, after.Errors)
	}
}

// A client that declares its zone stays in it: grpc-go uses the priority 0
// endpoints (its zone's) only, fails over to the other zone when its own
// has no healthy endpoint, and comes back when it has one again.
func TestGRPCGoStaysInItsZone(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a gRPC client subprocess")
	}
	reg, srv := startXDS(t)
	for _, b := range []struct{ id, zone string }{{"a", "z1"}, {"b", "z2"}, {"c", "z2"}} {
		in := echoInstance(b.id, echoServer(t, b.id), "")
		in.Metadata[xds.MetaZone] = b.zone
		if _, err := reg.Register(in, false); err != nil {
			t.Fatal(err)
		}
	}
	c := startClientIn(t, srv.Addr().String(), "z1")
	c.until(50, 20*time.Second, func(t tally) bool { return t.Errors == 0 && t.Backends["a"] == 50 })
	if got := c.call(200); got.Errors > 0 || got.Backends["a"] != 200 {
		t.Errorf("200 calls from z1 with a (z1) healthy: %v (errors %d, %s), want all on a", got.Backends, got.Errors, got.LastErr)
	}

	// z1 has no healthy endpoint: the calls go to z2.
	if err := reg.StatusUpdate("ECHO", "a", registry.StatusOutOfService, time.Time{}, false); err != nil {
		t.Fatal(err)
	}
	c.until(50, 20*time.Second, func(t tally) bool {
		return t.Errors == 0 && t.Backends["a"] == 0 && t.Backends["b"] > 0 && t.Backends["c"] > 0
	})

	// a is back: the calls return to z1.
	if err := reg.StatusUpdate("ECHO", "a", registry.StatusUp, time.Time{}, false); err != nil {
		t.Fatal(err)
	}
	c.until(50, 20*time.Second, func(t tally) bool { return t.Errors == 0 && t.Backends["a"] == 50 })
}
