package main

// The harness of every test here that runs goreka as a server: a node is one
// goreka on a loopback address and port, run either as a separate process
// (this test binary re-executed as goreka, through internal/proctest, which
// also hands out the ports; see TestMain) or in this process (newApp +
// run, so that the race detector covers the server code and a test can read
// its registry and replicator). Either kind starts, stops and starts again
// on the same port with the same arguments; a process can also be killed
// (SIGKILL) and signalled. Its logs are kept per start for grepping, for
// waiting on a line, and for the failure report.
//
// Every wait polls with a bounded deadline and reports what it last saw;
// nothing sleeps to wait for a condition.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/goreka/goreka/cmd/goreka/config"
	"github.com/goreka/goreka/compat"
	"github.com/goreka/goreka/internal/proctest"
	"github.com/goreka/goreka/registry"
)

// TestMain makes the test binary goreka's main when a process node started
// it (proctest.Self): it runs run instead of the tests, so no separate go
// build is needed.
func TestMain(m *testing.M) {
	proctest.RunAsGoreka(run)
	os.Exit(m.Run())
}

const (
	// stopWithin bounds a graceful stop (drain, flush of the replication
	// queues) and the exit after a SIGKILL.
	stopWithin = 60 * time.Second
	// startWithin bounds the time for a node to accept connections.
	startWithin = 30 * time.Second
)

// standaloneArgs run goreka on ip:port with no peers, not registering
// itself and not syncing from anybody.
func standaloneArgs(ip string, port int, extra ...string) []string {
	return append(loopbackArgs(ip, port,
		"--eureka.client.service-url.defaultZone=",
		"--eureka.client.register-with-eureka=false",
		"--eureka.client.fetch-registry=false",
	), extra...)
}

// loopbackArgs bind goreka to ip:port and name it by ip.
func loopbackArgs(ip string, port int, extra ...string) []string {
	return append([]string{
		"--server.port=" + strconv.Itoa(port),
		"--server.address=" + ip,
		"--eureka.instance.hostname=" + ip,
		"--eureka.instance.ip-address=" + ip,
	}, extra...)
}

// node is one goreka server; see the file comment.
type node struct {
	t    *testing.T
	name string
	ip   string
	port int
	args []string
	proc bool // a separate process, not in this one

	mu    sync.Mutex
	lives []*life // one per start, the current last
}

// life is one start of a node.
type life struct {
	log    *logBuf // slog output (a process's stderr)
	stdout *logBuf // a process's stdout

	// A process.
	proc *proctest.Proc

	// In this process.
	a      *app
	cancel context.CancelFunc
	done   chan struct{} // closed when run returned, with err set
	err    error
}

// processNode returns a node run as a separate process; nothing runs until
// start (or spawn). The test's cleanup kills what is left running, fails the
// test on a data race the process reported, and logs every start's output
// if the test failed.
func processNode(t *testing.T, name, ip string, port int, args ...string) *node {
	return newNode(t, name, ip, port, true, args)
}

// inProcessNode returns a node run in this process; nothing runs until
// start. The test's cleanup stops it gracefully.
func inProcessNode(t *testing.T, name, ip string, port int, args ...string) *node {
	return newNode(t, name, ip, port, false, args)
}

func newNode(t *testing.T, name, ip string, port int, proc bool, args []string) *node {
	t.Helper()
	n := &node{t: t, name: name, ip: ip, port: port, args: args, proc: proc}
	t.Cleanup(func() {
		if proc {
			n.kill()
		} else {
			n.stop()
		}
		n.mu.Lock()
		lives := n.lives
		n.mu.Unlock()
		for i, l := range lives {
			out := l.stdout.String() + l.log.String()
			if strings.Contains(out, "WARNING: DATA RACE") {
				t.Errorf("data race in node %s (start %d)", n.name, i+1)
			}
			if t.Failed() && out != "" {
				t.Logf("--- node %s, start %d ---\n%s", n.name, i+1, out)
			}
		}
	})
	return n
}

func (n *node) addr() string { return net.JoinHostPort(n.ip, strconv.Itoa(n.port)) }

// base is the node's Eureka API root, http://ip:port/eureka.
func (n *node) base() string { return "http://" + n.addr() + "/eureka" }

// url is the node's service URL as peers list it, http://ip:port/eureka/.
func (n *node) url() string { return n.base() + "/" }

func (n *node) cur() *life {
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.lives) == 0 {
		return nil
	}
	return n.lives[len(n.lives)-1]
}

// logs is the log of the current (or last) start.
func (n *node) logs() *logBuf {
	if l := n.cur(); l != nil {
		return l.log
	}
	return &logBuf{}
}

// stdout is a process's standard output of the current (or last) start.
func (n *node) stdout() *logBuf {
	if l := n.cur(); l != nil {
		return l.stdout
	}
	return &logBuf{}
}

// app is the running in-process server.
func (n *node) app() *app {
	n.t.Helper()
	l := n.cur()
	if n.proc || l == nil || l.a == nil {
		n.t.Fatalf("node %s: app of a node that is not running in this process", n.name)
	}
	return l.a
}

// alive reports whether the current start is still running.
func (n *node) alive() bool {
	l := n.cur()
	if l == nil {
		return false
	}
	var ch <-chan struct{} = l.done
	if n.proc {
		ch = l.proc.Done()
	}
	select {
	case <-ch:
		return false
	default:
		return true
	}
}

// start runs the node and returns once it accepts connections. It does
// not wait for the start-up sync; waitServing does.
func (n *node) start() {
	n.t.Helper()
	n.spawn()
	if !n.proc {
		return // the listener is open before run starts
	}
	l := n.cur()
	if err := l.proc.WaitListening(n.addr(), startWithin); errors.Is(err, proctest.ErrExited) {
		n.t.Fatalf("node %s exited during start-up (code %d):\n%s%s", n.name, l.proc.ExitCode(), l.stdout, l.log)
	} else if err != nil {
		n.t.Fatalf("node %s not listening on %s after %s:\n%s", n.name, n.addr(), startWithin, l.log)
	}
}

// spawn runs the node without waiting for it. An in-process node has its
// listener open when spawn returns, so a request sent right away is the
// server's first.
func (n *node) spawn() {
	n.t.Helper()
	if n.alive() {
		n.t.Fatalf("node %s started while running", n.name)
	}
	l := &life{log: &logBuf{}, stdout: &logBuf{}}
	if n.proc {
		n.spawnProcess(l)
	} else {
		n.spawnInProcess(l)
	}
	n.mu.Lock()
	n.lives = append(n.lives, l)
	n.mu.Unlock()
}

func (n *node) spawnProcess(l *life) {
	t := n.t
	t.Helper()
	exe, asGoreka, err := proctest.Self()
	if err != nil {
		t.Fatal(err)
	}
	// Nothing from the test's environment reaches the configuration, and
	// no application.yml from the package directory.
	l.proc, err = proctest.Start(proctest.Options{Name: "node " + n.name, Path: exe, Args: n.args,
		Env: []string{asGoreka, "HOME=" + t.TempDir()}, Dir: t.TempDir(), Stdout: l.stdout, Stderr: l.log})
	if err != nil {
		t.Fatal(err)
	}
}

func (n *node) spawnInProcess(l *life) {
	t := n.t
	t.Helper()
	cfg, err := config.Load(n.args, nil, t.TempDir())
	if err != nil {
		t.Fatalf("node %s config: %v", n.name, err)
	}
	a, err := newApp(cfg, newLogger(cfg, l.log), time.Now)
	if err != nil {
		t.Fatalf("node %s: %v", n.name, err)
	}
	var ln net.Listener
	deadline := time.Now().Add(startWithin)
	for {
		// A restarted node takes its port back; allow for the old
		// listener to go.
		if ln, err = net.Listen("tcp", n.addr()); err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("node %s listen: %v", n.name, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	l.a, l.cancel, l.done = a, cancel, make(chan struct{})
	go func() { l.err = a.run(ctx, ln); close(l.done) }()
}

// waitServing waits until the node answers GET /eureka/apps with 200: its
// start-up sync is done.
func (n *node) waitServing() {
	n.t.Helper()
	waitUntil(n.t, "node "+n.name+" serves reads", startWithin, func() (bool, string) {
		code, _, err := do("GET", n.base()+"/apps", "")
		return code == http.StatusOK, fmt.Sprintf("%d %v", code, err)
	})
}

// stop shuts the node down gracefully (SIGTERM for a process) and waits
// for it; it returns a process's exit code. An in-process run that returns
// an error fails the test.
func (n *node) stop() int {
	n.t.Helper()
	l := n.cur()
	if l == nil || !n.alive() {
		return n.exitCode()
	}
	if n.proc {
		if err := l.proc.Stop(syscall.SIGTERM, stopWithin); err != nil {
			n.t.Fatalf("node %s (goreka %v): %v; log:\n%s", n.name, n.args, err, l.log)
		}
		return l.proc.ExitCode()
	}
	l.cancel()
	select {
	case <-l.done:
		if l.err != nil {
			n.t.Errorf("node %s stopped with %v", n.name, l.err)
			return 1
		}
	case <-time.After(stopWithin):
		n.t.Errorf("node %s did not stop within %s", n.name, stopWithin)
		return -1
	}
	return 0
}

// waitExit waits for a process to exit by itself and returns its code.
func (n *node) waitExit(within time.Duration) int {
	n.t.Helper()
	l := n.cur()
	if !n.proc || l == nil {
		n.t.Fatalf("node %s: waitExit needs a started process", n.name)
	}
	code, err := l.proc.Wait(within)
	if err != nil {
		n.t.Fatalf("node %s (goreka %v) did not exit within %s; log:\n%s", n.name, n.args, within, l.log)
	}
	return code
}

func (n *node) exitCode() int {
	l := n.cur()
	if l == nil || !n.proc {
		return 0
	}
	return l.proc.ExitCode()
}

// kill is kill -9 and waits for the process to go.
func (n *node) kill() {
	n.t.Helper()
	if !n.proc {
		n.t.Fatalf("node %s: kill needs a process node", n.name)
	}
	l := n.cur()
	if l == nil || !n.alive() {
		return
	}
	if err := l.proc.Stop(syscall.SIGKILL, stopWithin); err != nil {
		n.t.Errorf("node %s (pid %d) did not exit after SIGKILL", n.name, l.proc.Pid())
	}
}

// signal sends sig to the process.
func (n *node) signal(sig syscall.Signal) {
	n.t.Helper()
	l := n.cur()
	if !n.proc || l == nil {
		n.t.Fatalf("node %s: signal needs a started process", n.name)
	}
	if err := l.proc.Signal(sig); err != nil {
		n.t.Fatal(err)
	}
}

// stopped reports whether the process is SIGSTOPped.
func (n *node) stopped() bool {
	l := n.cur()
	return l != nil && l.proc != nil && l.proc.Paused()
}

// waitLine returns the first complete log line of the current start that
// contains s and comes after the line the previous waitLine returned, like
// reading the log as it is written. It fails the test if the process exits
// without writing one or after startWithin.
func (n *node) waitLine(s string) string {
	n.t.Helper()
	l := n.cur()
	if l == nil {
		n.t.Fatalf("node %s not started", n.name)
	}
	deadline := time.Now().Add(startWithin)
	for {
		if line, ok := l.log.next(s); ok {
			return line
		}
		if n.proc {
			select {
			case <-l.proc.Done():
				if line, ok := l.log.next(s); ok {
					return line
				}
				n.t.Fatalf("node %s exited before logging %q; log:\n%s", n.name, s, l.log)
			default:
			}
		}
		if time.Now().After(deadline) {
			n.t.Fatalf("node %s: no log line with %q after %s; log:\n%s", n.name, s, startWithin, l.log)
		}
		time.Sleep(10 * time.Millisecond) // polling the log
	}
}

// runToExit runs goreka with args as a process until it exits by itself and
// returns its exit code and output.
func runToExit(t *testing.T, within time.Duration, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	n := processNode(t, "run", "127.0.0.1", 0, args...)
	n.spawn()
	code = n.waitExit(within)
	return code, n.stdout().String(), n.logs().String()
}

// logBuf is a node's log (stderr or stdout of one start); see proctest.Log.
type logBuf struct{ proctest.Log }

// grep returns the log lines containing s.
func (l *logBuf) grep(s string) []string { return l.Grep(s) }

// next returns the first complete line after the last one next returned
// that contains s.
func (l *logBuf) next(s string) (string, bool) { return l.Next(s) }

// waitUntil polls cond until it holds and returns the time that took; past
// within it fails the test with what cond last described.
func waitUntil(t *testing.T, what string, within time.Duration, cond func() (bool, string)) time.Duration {
	t.Helper()
	start := time.Now()
	deadline := start.Add(within)
	poll := 5 * time.Millisecond
	for {
		ok, desc := cond()
		if ok {
			return time.Since(start)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after %s; last: %s", what, within, desc)
		}
		time.Sleep(poll)
		poll = min(2*poll, 50*time.Millisecond)
	}
}

// freePort returns a port free now on every one of ips (loopback
// addresses, such as 127.0.0.2), below the kernel's ephemeral range and
// given to no other test (proctest.Port). The test is skipped if the first
// address cannot be listened on at all.
func freePort(t *testing.T, ips ...string) int {
	t.Helper()
	return proctest.Port(t, ips...)
}

// testClient is shared by every request of the tests; its timeout only
// bounds a broken test.
var testClient = &http.Client{
	Timeout:   30 * time.Second,
	Transport: &http.Transport{MaxIdleConnsPerHost: 32, IdleConnTimeout: 10 * time.Second},
}

// do sends a request with Accept: application/json (and a JSON body if
// any); err is a transport error (refused, timed out).
func do(method, u, body string) (int, []byte, error) {
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
	resp, err := testClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// must is do that fails the test unless the answer has status want; it
// returns the body.
func must(t *testing.T, method, u, body string, want int) []byte {
	t.Helper()
	code, b, err := do(method, u, body)
	if err != nil || code != want {
		t.Fatalf("%s %s: %d %v %s, want %d", method, u, code, err, b, want)
	}
	return b
}

// instanceBody is a client's registration, status UP; renewal and duration
// are its leaseInfo in seconds.
func instanceBody(app, id string, renewal, duration int) string {
	return fmt.Sprintf(`{"instance":{"instanceId":%q,"hostName":"%s.test","app":%q,"ipAddr":"10.9.8.7","status":"UP",`+
		`"overriddenStatus":"UNKNOWN","port":{"$":8080,"@enabled":"true"},"securePort":{"$":443,"@enabled":"false"},`+
		`"vipAddress":%q,"dataCenterInfo":{"@class":"com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo","name":"MyOwn"},`+
		`"leaseInfo":{"renewalIntervalInSecs":%d,"durationInSecs":%d}}}`, id, id, app, strings.ToLower(app), renewal, duration)
}

// register is a client's registration on n; it must answer 204.
func register(t *testing.T, n *node, app, id string, renewal, duration int) {
	t.Helper()
	must(t, "POST", n.base()+"/apps/"+app, instanceBody(app, id, renewal, duration), http.StatusNoContent)
}

// heartbeat is a client's renew on n (no replication header).
func heartbeat(n *node, app, id string) (int, error) {
	code, _, err := do("PUT", n.base()+"/apps/"+app+"/"+id, "")
	return code, err
}

// apps is GET /eureka/apps on n as "APP/id" -> status.
func apps(n *node) (map[string]string, error) {
	views, err := appViews(n)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for k, v := range views {
		out[k] = string(v.Instance.Status)
	}
	return out, nil
}

// appViews is GET /eureka/apps on n as "APP/id" -> instance.
func appViews(n *node) (map[string]registry.LeaseView, error) {
	code, body, err := do("GET", n.base()+"/apps", "")
	if err != nil {
		return nil, err
	}
	if code != http.StatusOK {
		return nil, fmt.Errorf("GET %s/apps: status %d", n.base(), code)
	}
	all, err := compat.DecodeApplications(body, compat.JSON)
	if err != nil {
		return nil, fmt.Errorf("GET %s/apps: %v: %s", n.base(), err, body)
	}
	out := map[string]registry.LeaseView{}
	for _, a := range all.Apps {
		for _, v := range a.Instances {
			out[a.Name+"/"+v.Instance.ID()] = v
		}
	}
	return out, nil
}

// appInstances is GET /eureka/apps/{app} on n as "APP/id" -> status; the
// code is the HTTP status (0 on a transport error, -1 for a body that does
// not decode).
func appInstances(n *node, app string) (map[string]string, int) {
	code, body, err := do("GET", n.base()+"/apps/"+app, "")
	if err != nil || code != http.StatusOK {
		return nil, code
	}
	var doc struct {
		Application json.RawMessage `json:"application"`
	}
	if json.Unmarshal(body, &doc) != nil || doc.Application == nil {
		return nil, -1
	}
	// Reuse the lenient registry decoder: wrap the application in a document.
	wrapped := append([]byte(`{"applications":{"versions__delta":"1","apps__hashcode":"","application":[`), doc.Application...)
	wrapped = append(wrapped, "]}}"...)
	all, err := compat.DecodeApplications(wrapped, compat.JSON)
	if err != nil {
		return nil, -1
	}
	out := map[string]string{}
	for _, a := range all.Apps {
		for _, v := range a.Instances {
			out[a.Name+"/"+v.Instance.ID()] = string(v.Instance.Status)
		}
	}
	return out, http.StatusOK
}

// only returns the entries of m ("APP/id" keys) of app.
func only(m map[string]string, app string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		if strings.HasPrefix(k, app+"/") {
			out[k] = v
		}
	}
	return out
}

// scrape reads n's /metrics into "name{labels}" -> value.
func scrape(t *testing.T, n *node) map[string]float64 {
	t.Helper()
	body := must(t, "GET", "http://"+n.addr()+"/metrics", "", http.StatusOK)
	out := map[string]float64{}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			continue
		}
		out[line[:i]] = v
	}
	return out
}

// raceEnabled reports whether the test binary was built with -race.
func raceEnabled() bool {
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
