package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/goreka/goreka/ctl"
	"github.com/goreka/goreka/server/api/wire"
)

// The exit codes and the diff row of package ctl, which these tests run
// through the binary's run against real servers.
const (
	exitFailed      = ctl.ExitFailed
	exitUsage       = ctl.ExitUsage
	exitUnreachable = ctl.ExitUnreachable
)

type diffRow = ctl.DiffRow

// ctlRun runs goreka ctl in this process against running servers.
func ctlRun(t *testing.T, env []string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(append([]string{"ctl"}, args...), env, &out, &errb)
	return code, out.String(), errb.String()
}

func ctlNode(t *testing.T, name string, extra ...string) *node {
	t.Helper()
	port := freePort(t, "127.0.0.1")
	n := inProcessNode(t, name, "127.0.0.1", port, standaloneArgs("127.0.0.1", port, extra...)...)
	n.start()
	return n
}

func TestCtlUsageAndUnreachable(t *testing.T) {
	for _, args := range [][]string{{}, {"nonsense"}, {"-o", "yaml", "apps"}, {"override", "A", "1", "SLEEPING"},
		{"cancel", "A"}, {"instances", "colour=red"}, {"-bogus", "apps"}, {"-server", "ftp://x", "apps"}} {
		if code, _, stderr := ctlRun(t, nil, args...); code != exitUsage || stderr == "" {
			t.Errorf("%q: exit %d, stderr %q; want %d and a message", args, code, stderr, exitUsage)
		}
	}
	if code, out, _ := ctlRun(t, nil, "-h"); code != 0 || !strings.Contains(out, "Exit codes") {
		t.Errorf("-h: %d %q", code, out)
	}
	port := freePort(t, "127.0.0.1")
	code, _, stderr := ctlRun(t, []string{fmt.Sprintf("GOREKA_URL=http://127.0.0.1:%d", port)}, "apps")
	if code != exitUnreachable || !strings.Contains(stderr, "unreachable") {
		t.Errorf("nothing listening: exit %d %q, want %d", code, stderr, exitUnreachable)
	}
}

// Every command against a running server: tables and JSON, the Eureka
// operations, the watch, and the exit code of a failed operation.
func TestCtlAgainstServer(t *testing.T) {
	n := ctlNode(t, "ctl", "--goreka.static-instances[0].app=db", "--goreka.static-instances[0].ip-addr=10.0.0.5",
		"--goreka.static-instances[0].port=5432")
	register(t, n, "ORDERS", "o1", 30, 90)
	register(t, n, "ORDERS", "o2", 30, 90)
	srv := "-server=http://" + n.addr() + "/eureka/" // a Eureka service URL works too

	code, out, stderr := ctlRun(t, nil, srv, "apps")
	if code != 0 || !strings.Contains(out, "ORDERS") || !strings.Contains(out, "UP=2") || !strings.Contains(out, "DB") {
		t.Fatalf("apps: %d %q %q", code, out, stderr)
	}
	var aa wire.AppsAnswer
	if code, out, _ = ctlRun(t, nil, srv, "apps", "-o", "json"); code != 0 || json.Unmarshal([]byte(out), &aa) != nil || len(aa.Apps) != 2 {
		t.Fatalf("apps -o json: %d %q", code, out)
	}

	var page wire.InstancesPage
	if code, out, _ = ctlRun(t, nil, srv, "-o=json", "instances", "app=orders"); code != 0 || json.Unmarshal([]byte(out), &page) != nil || len(page.Instances) != 2 {
		t.Fatalf("instances app=orders: %d %q", code, out)
	}
	if code, out, _ = ctlRun(t, nil, srv, "instances", "app=DB"); code != 0 || !strings.Contains(out, "static") || !strings.Contains(out, "10.0.0.5:5432") {
		t.Fatalf("instances app=DB: %d %q", code, out)
	}
	if code, _, stderr = ctlRun(t, nil, srv, "instances", "lifecycle=asleep"); code != exitFailed || !strings.Contains(stderr, "lifecycle") {
		t.Fatalf("bad filter value: %d %q, want 1 naming the parameter", code, stderr)
	}

	// A watch from the current revision sees the next changes, in order.
	rev := aa.Revision
	var wout string
	var wcode int
	var wg sync.WaitGroup
	wg.Go(func() {
		var o, e bytes.Buffer
		wcode = run([]string{"ctl", srv, "watch", fmt.Sprintf("since=%d", rev), "-n", "4"}, nil, &o, &e)
		wout = o.String() + e.String()
	})

	if code, out, stderr = ctlRun(t, nil, srv, "override", "orders", "o1", "OUT_OF_SERVICE"); code != 0 || !strings.Contains(out, "ORDERS/o1") {
		t.Fatalf("override: %d %q %q", code, out, stderr)
	}
	if code, out, _ = ctlRun(t, nil, srv, "instances", "status=OUT_OF_SERVICE"); code != 0 || !strings.Contains(out, "override=OUT_OF_SERVICE") {
		t.Fatalf("after override: %d %q", code, out)
	}
	if code, _, stderr = ctlRun(t, nil, srv, "remove-override", "ORDERS", "o1"); code != 0 {
		t.Fatalf("remove-override: %d %q", code, stderr)
	}
	if code, _, stderr = ctlRun(t, nil, srv, "cancel", "ORDERS", "o2"); code != 0 {
		t.Fatalf("cancel: %d %q", code, stderr)
	}
	if code, _, stderr = ctlRun(t, nil, srv, "cancel", "ORDERS", "o2"); code != exitFailed || !strings.Contains(stderr, "HTTP 404") {
		t.Fatalf("cancel again: %d %q, want 1 with the 404", code, stderr)
	}
	if code, _, stderr = ctlRun(t, nil, srv, "cancel", "DB", "10.0.0.5:db:5432"); code != exitFailed || !strings.Contains(stderr, "static registration") {
		t.Fatalf("cancel static: %d %q", code, stderr)
	}
	register(t, n, "ORDERS", "o3", 30, 90)

	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(startWithin):
		t.Fatal("watch -n 4 did not end")
	}
	lines := strings.Split(strings.TrimSpace(wout), "\n")
	wantKinds := []string{"status-update\tORDERS/o1\tOUT_OF_SERVICE (was UP)", "delete-status-override\tORDERS/o1", "cancel\tORDERS/o2", "register\tORDERS/o3"}
	if wcode != 0 || len(lines) != 4 {
		t.Fatalf("watch: exit %d, output %q", wcode, wout)
	}
	for i, w := range wantKinds {
		if !strings.Contains(lines[i], w) {
			t.Errorf("watch line %d: %q, want %q", i, lines[i], w)
		}
	}

	if code, out, _ = ctlRun(t, nil, srv, "status"); code != 0 || !strings.Contains(out, "instances") || !strings.Contains(out, "server-uptime") {
		t.Fatalf("status: %d %q", code, out)
	}
}

// diff compares two nodes: missing, extra, different status; exit 1 when
// they differ, 0 when they agree.
func TestCtlDiff(t *testing.T) {
	a, b := ctlNode(t, "a"), ctlNode(t, "b")
	register(t, a, "ORDERS", "o1", 30, 90)
	register(t, a, "ORDERS", "o2", 30, 90)
	register(t, b, "ORDERS", "o1", 30, 90)
	register(t, b, "BILLING", "b1", 30, 90)
	must(t, "PUT", b.base()+"/apps/ORDERS/o1/status?value=DOWN", "", 200)
	ua, ub := "http://"+a.addr(), "http://"+b.addr()

	code, out, stderr := ctlRun(t, nil, "diff", ua, ub)
	if code != exitFailed {
		t.Fatalf("diff: %d %q %q", code, out, stderr)
	}
	for _, w := range []string{"extra   BILLING  b1", "status  ORDERS   o1  UP", "missing  ORDERS   o2  UP"} {
		if !strings.Contains(strings.Join(strings.Fields(out), " "), strings.Join(strings.Fields(w), " ")) {
			t.Errorf("diff output lacks %q:\n%s", w, out)
		}
	}
	var d struct {
		Differences []diffRow `json:"differences"`
	}
	code, out, _ = ctlRun(t, nil, "-o", "json", "diff", ua, ub)
	if code != exitFailed || json.Unmarshal([]byte(out), &d) != nil || len(d.Differences) != 3 || d.Differences[1] != (diffRow{Kind: "status", App: "ORDERS", ID: "o1", First: "UP", Second: "DOWN"}) {
		t.Fatalf("diff -o json: %d %+v %q", code, d, out)
	}
	if code, out, _ = ctlRun(t, nil, "diff", ua, ua); code != 0 || !strings.Contains(out, "0 differences") {
		t.Fatalf("diff of a node with itself: %d %q", code, out)
	}
}

// Credentials: from the URL (GOREKA_URL or -server), from flags; a missing
// or wrong one, or a read-only user writing, is exit 3.
func TestCtlCredentials(t *testing.T) {
	n := ctlNode(t, "auth", "--spring.security.user.name=admin", "--spring.security.user.password=pw",
		"--goreka.security.read-only-user=viewer", "--goreka.security.read-only-password=look")
	must(t, "POST", "http://admin:pw@"+n.addr()+"/eureka/apps/ORDERS", instanceBody("ORDERS", "o1", 30, 90), 204)
	host := n.addr()
	if code, _, stderr := ctlRun(t, nil, "-server", "http://"+host, "apps"); code != exitUnreachable || !strings.Contains(stderr, "HTTP 401") {
		t.Errorf("no credentials: %d %q", code, stderr)
	}
	if code, _, _ := ctlRun(t, nil, "-server", "http://"+host, "-user", "admin", "-password", "nope", "apps"); code != exitUnreachable {
		t.Errorf("wrong password: %d", code)
	}
	viewer := []string{"GOREKA_URL=http://viewer:look@" + host}
	if code, out, _ := ctlRun(t, viewer, "instances"); code != 0 || !strings.Contains(out, "o1") {
		t.Errorf("read-only user from GOREKA_URL: %d %q", code, out)
	}
	if code, _, stderr := ctlRun(t, viewer, "cancel", "ORDERS", "o1"); code != exitUnreachable || !strings.Contains(stderr, "HTTP 403") {
		t.Errorf("read-only user cancelling: %d %q", code, stderr)
	}
	env := []string{"GOREKA_URL=http://" + host, "GOREKA_USER=admin", "GOREKA_PASSWORD=pw"}
	if code, _, stderr := ctlRun(t, env, "cancel", "ORDERS", "o1"); code != 0 {
		t.Errorf("full user from the environment: %d %q", code, stderr)
	}
}
