package main

// Process-level tests of the registry snapshot (goreka.snapshot.*): a
// server run in-process on a loopback port, and for kill -9 the test binary
// re-executed as a real goreka process.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/goreka/goreka/cmd/goreka/config"
	"github.com/goreka/goreka/compat"
	"github.com/goreka/goreka/registry"
	"github.com/goreka/goreka/snapshot"
)

// snapArgs configures a standalone server on 127.0.0.1:port: its only
// service URL is itself, so it has no peers and syncs from nobody.
func snapArgs(port int, extra ...string) []string {
	p := strconv.Itoa(port)
	return append([]string{
		"--server.port=" + p,
		"--server.address=127.0.0.1",
		"--eureka.instance.hostname=localhost",
		"--eureka.client.service-url.defaultZone=http://localhost:" + p + "/eureka/",
		"--eureka.client.register-with-eureka=false",
		"--eureka.client.fetch-registry=false",
	}, extra...)
}

// snapLogs keeps a server's log lines for assertions.
type snapLogs struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *snapLogs) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// grep returns the log lines containing s.
func (l *snapLogs) grep(s string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for line := range strings.Lines(l.buf.String()) {
		if strings.Contains(line, s) {
			out = append(out, line)
		}
	}
	return out
}

type snapServer struct {
	base string // http://127.0.0.1:port/eureka
	logs *snapLogs
	stop func() // graceful shutdown; waits for run to return
}

// snapStart runs a server in-process. Its listener is open before run
// starts, so a request sent right away is the server's first request.
func snapStart(t *testing.T, extra ...string) *snapServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	cfg, err := config.Load(snapArgs(port, extra...), nil, t.TempDir())
	if err != nil {
		ln.Close()
		t.Fatal(err)
	}
	logs := &snapLogs{}
	log := slog.New(slog.NewTextHandler(io.MultiWriter(logs, t.Output()), &slog.HandlerOptions{Level: slog.LevelInfo}))
	a, err := newApp(cfg, log, time.Now)
	if err != nil {
		ln.Close()
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.run(ctx, ln) }()
	stop := sync.OnceFunc(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
	})
	t.Cleanup(stop)
	return &snapServer{base: fmt.Sprintf("http://127.0.0.1:%d/eureka", port), logs: logs, stop: stop}
}

func snapDo(t *testing.T, method, url, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json")
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

func snapInstanceBody(app, id string, leaseSecs int) string {
	return fmt.Sprintf(`{"instance":{"instanceId":%q,"hostName":"%s.local","app":%q,"ipAddr":"10.1.2.3","status":"UP",`+
		`"port":{"$":8080,"@enabled":"true"},"vipAddress":%q,`+
		`"dataCenterInfo":{"@class":"com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo","name":"MyOwn"},`+
		`"leaseInfo":{"renewalIntervalInSecs":1,"durationInSecs":%d}}}`, id, id, app, strings.ToLower(app), leaseSecs)
}

func snapRegister(t *testing.T, base, app, id string, leaseSecs int) {
	t.Helper()
	if code, body := snapDo(t, "POST", base+"/apps/"+app, snapInstanceBody(app, id, leaseSecs)); code != http.StatusNoContent {
		t.Fatalf("register %s: %d %s", id, code, body)
	}
}

// snapApps is GET /eureka/apps as id -> instance.
func snapApps(t *testing.T, base string) map[string]registry.LeaseView {
	t.Helper()
	code, body := snapDo(t, "GET", base+"/apps", "")
	if code != http.StatusOK {
		t.Fatalf("GET /apps: %d %s", code, body)
	}
	apps, err := compat.DecodeApplications(body, compat.JSON)
	if err != nil {
		t.Fatalf("GET /apps: %v\n%s", err, body)
	}
	out := map[string]registry.LeaseView{}
	for _, a := range apps.Apps {
		for _, v := range a.Instances {
			out[v.Instance.ID()] = v
		}
	}
	return out
}

func TestSnapshotWarmRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "registry.snapshot")
	// A long interval: only the write on shutdown can have saved the state.
	args := []string{"--goreka.snapshot.path=" + path, "--goreka.snapshot.interval=1h"}

	s := snapStart(t, args...)
	snapRegister(t, s.base, "ORDERS", "orders-1", 90)
	snapRegister(t, s.base, "ORDERS", "orders-2", 90)
	snapRegister(t, s.base, "BILLING", "billing-1", 90)
	if code, b := snapDo(t, "PUT", s.base+"/apps/ORDERS/orders-2/status?value=OUT_OF_SERVICE", ""); code != http.StatusOK {
		t.Fatalf("status override: %d %s", code, b)
	}
	if code, b := snapDo(t, "PUT", s.base+"/apps/BILLING/billing-1/metadata?weight=7", ""); code != http.StatusOK {
		t.Fatalf("metadata: %d %s", code, b)
	}
	before := snapApps(t, s.base)
	s.stop()

	if f, err := snapshot.ReadFile(path); err != nil || len(f.Snapshot.Instances) != 3 {
		t.Fatalf("snapshot after graceful stop: %v", err)
	}

	s = snapStart(t, args...)
	after := snapApps(t, s.base) // the first request
	if len(after) != 3 {
		t.Fatalf("first GET /apps after restart lists %d instances, want 3", len(after))
	}
	for id, b := range before {
		a, ok := after[id]
		if !ok {
			t.Errorf("%s missing after restart", id)
			continue
		}
		if a.Instance.Status != b.Instance.Status || a.Instance.OverriddenStatus != b.Instance.OverriddenStatus ||
			a.Instance.Metadata["weight"] != b.Instance.Metadata["weight"] ||
			!a.Instance.LastDirtyTimestamp.Equal(b.Instance.LastDirtyTimestamp) || !a.RegistrationTimestamp.Equal(b.RegistrationTimestamp) {
			t.Errorf("%s after restart:\n got %+v\nwant %+v", id, a.Instance, b.Instance)
		}
	}
	if after["orders-2"].Instance.Status != registry.StatusOutOfService || after["billing-1"].Instance.Metadata["weight"] != "7" {
		t.Errorf("override or REST metadata lost: %+v %+v", after["orders-2"].Instance, after["billing-1"].Instance)
	}
	// The override is live state, not just a copied field: a heartbeat
	// keeps it.
	if code, _ := snapDo(t, "PUT", s.base+"/apps/ORDERS/orders-2", ""); code != http.StatusOK {
		t.Fatalf("renew restored instance: %d", code)
	}
	if code, b := snapDo(t, "GET", s.base+"/apps/ORDERS/orders-2", ""); code != http.StatusOK || !bytes.Contains(b, []byte(`"status":"OUT_OF_SERVICE"`)) {
		t.Errorf("after renew: %d %s", code, b)
	}
	if got := s.logs.grep("registry restored from snapshot"); len(got) != 1 || !strings.Contains(got[0], "count=3") {
		t.Errorf("restore log %q", got)
	}
}

func TestSnapshotStaleIgnored(t *testing.T) {
	path := filepath.Join(t.TempDir(), "registry.snapshot")
	r := registry.New(registry.Options{})
	in, err := compat.DecodeInstance([]byte(snapInstanceBody("OLD", "old-1", 90)), compat.JSON)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Register(in, false); err != nil {
		t.Fatal(err)
	}
	if err := snapshot.WriteFile(path, snapshot.Marshal(r.Export(), time.Now().Add(-2*time.Hour), "old")); err != nil {
		t.Fatal(err)
	}

	s := snapStart(t, "--goreka.snapshot.path="+path, "--goreka.snapshot.max-age=1h")
	if apps := snapApps(t, s.base); len(apps) != 0 {
		t.Fatalf("a 2 h old snapshot was restored: %v", apps)
	}
	if got := s.logs.grep("too old, ignored"); len(got) != 1 || !strings.Contains(got[0], "max_age=1h0m0s") {
		t.Errorf("stale log %q, want one line", got)
	}
}

func TestSnapshotCorruptFileMovedAside(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "registry.snapshot")
	junk := []byte(`{"format":"goreka-registry-snapshot","version":1,"written":"2026-03-01T12:00:00Z","count":1,` + "\n" + `"instances":[{"hostName":"h"`)
	if err := os.WriteFile(path, junk, 0o600); err != nil {
		t.Fatal(err)
	}

	s := snapStart(t, "--goreka.snapshot.path="+path)
	if apps := snapApps(t, s.base); len(apps) != 0 {
		t.Fatalf("instances from a truncated file: %v", apps)
	}
	got := s.logs.grep("moved aside")
	if len(got) != 1 || !strings.Contains(got[0], "truncated") {
		t.Fatalf("corrupt log %q, want one clear line", got)
	}
	moved, _ := filepath.Glob(path + ".corrupt-*")
	if len(moved) != 1 {
		t.Fatalf("moved-aside files %v", moved)
	}
	if b, _ := os.ReadFile(moved[0]); !bytes.Equal(b, junk) {
		t.Errorf("moved file content changed")
	}
	snapRegister(t, s.base, "NEW", "new-1", 90)
	s.stop()
	if f, err := snapshot.ReadFile(path); err != nil || len(f.Snapshot.Instances) != 1 {
		t.Fatalf("server started after a corrupt file did not write a good snapshot: %v", err)
	}
}

func TestSnapshotRestoredInstancesExpire(t *testing.T) {
	path := filepath.Join(t.TempDir(), "registry.snapshot")
	args := []string{"--goreka.snapshot.path=" + path,
		"--eureka.server.eviction-interval-timer-in-ms=1000", "--eureka.server.enable-self-preservation=false"}

	s := snapStart(t, args...)
	snapRegister(t, s.base, "SHORT", "short-1", 1)
	snapRegister(t, s.base, "LONG", "long-1", 60)
	s.stop()

	s = snapStart(t, args...)
	if apps := snapApps(t, s.base); len(apps) != 2 {
		t.Fatalf("restored %d instances, want both (a restored lease starts fresh)", len(apps))
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		code, _ := snapDo(t, "GET", s.base+"/apps/SHORT", "")
		if code == http.StatusNotFound {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("restored 1 s lease never evicted (GET /apps/SHORT: %d)", code)
		}
		time.Sleep(100 * time.Millisecond) // waiting for the real eviction timer
	}
	if code, _ := snapDo(t, "GET", s.base+"/apps/LONG", ""); code != http.StatusOK {
		t.Errorf("the 60 s lease was evicted too: %d", code)
	}
}

// TestSnapshotHelperProcess is a goreka process for the kill -9 test; it
// does nothing unless started by it.
func TestSnapshotHelperProcess(t *testing.T) {
	args := os.Getenv("GOREKA_SNAPSHOT_HELPER_ARGS")
	if args == "" {
		return
	}
	os.Exit(run(strings.Split(args, "\x1f"), nil, os.Stdout, os.Stderr))
}

func TestSnapshotSurvivesKill9DuringWrites(t *testing.T) {
	if testing.Short() {
		t.Skip("starts goreka processes")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "registry.snapshot")
	lastCount := -1
	for round := range 4 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		// A 1 ms interval with registrations streaming in keeps the writer
		// busy, so the kill lands during writes.
		args := snapArgs(port, "--goreka.snapshot.path="+path, "--goreka.snapshot.interval=1ms", "--logging.level.root=warn")
		cmd := exec.Command(exe, "-test.run=^TestSnapshotHelperProcess$")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOREKA_SNAPSHOT_HELPER_ARGS="+strings.Join(args, "\x1f"))
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		base := fmt.Sprintf("http://127.0.0.1:%d/eureka", port)
		client := &http.Client{Timeout: 2 * time.Second}
		deadline := time.Now().Add(30 * time.Second)
		for {
			resp, err := client.Get(base + "/apps")
			if err == nil {
				resp.Body.Close()
				break
			}
			if time.Now().After(deadline) {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("round %d: server did not come up: %v\n%s", round, err, stderr.String())
			}
			time.Sleep(20 * time.Millisecond) // waiting for a process to start
		}

		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				id := fmt.Sprintf("r%d-%d", round, i)
				resp, err := client.Post(base+"/apps/STREAM", "application/json", strings.NewReader(snapInstanceBody("STREAM", id, 90)))
				if err != nil {
					return // killed
				}
				resp.Body.Close()
			}
		})
		time.Sleep(time.Duration(150+rand.IntN(250)) * time.Millisecond) // let registrations and writes run
		if err := cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		cmd.Wait()
		close(stop)
		wg.Wait()

		f, err := snapshot.ReadFile(path)
		if err != nil {
			t.Fatalf("round %d: snapshot after kill -9 does not load: %v", round, err)
		}
		if n := len(f.Snapshot.Instances); n < lastCount {
			t.Fatalf("round %d: snapshot holds %d instances, fewer than the %d restored at start", round, n, lastCount)
		}
		lastCount = len(f.Snapshot.Instances)
		_, tmpErr := os.Stat(path + ".tmp")
		t.Logf("round %d: snapshot loads with %d instances; killed mid-write: %v", round, lastCount, !errors.Is(tmpErr, fs.ErrNotExist))
	}
	if lastCount <= 0 {
		t.Fatalf("no registrations reached the snapshot")
	}

	s := snapStart(t, "--goreka.snapshot.path="+path)
	if got := len(snapApps(t, s.base)); got != lastCount {
		t.Fatalf("restart after kill -9 serves %d instances, the snapshot holds %d", got, lastCount)
	}
}
