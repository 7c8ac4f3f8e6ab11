package main

// Process-level tests of the registry snapshot (goreka.snapshot.*): an
// in-process node on a loopback port, and for kill -9 a process node
// (harness_test.go).

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/goreka/goreka/compat"
	"github.com/goreka/goreka/registry"
	"github.com/goreka/goreka/snapshot"
)

// snapNode is a standalone in-process server on a free loopback port;
// nothing runs until start.
func snapNode(t *testing.T, extra ...string) *node {
	t.Helper()
	port := freePort(t, "127.0.0.1")
	return inProcessNode(t, "S", "127.0.0.1", port, standaloneArgs("127.0.0.1", port, extra...)...)
}

func snapRegister(t *testing.T, n *node, app, id string, leaseSecs int) {
	t.Helper()
	must(t, "POST", n.base()+"/apps/"+app, instanceBody(app, id, 1, leaseSecs), http.StatusNoContent)
}

// snapApps is GET /eureka/apps as id -> instance.
func snapApps(t *testing.T, n *node) map[string]registry.LeaseView {
	t.Helper()
	views, err := appViews(n)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]registry.LeaseView{}
	for _, v := range views {
		out[v.Instance.ID()] = v
	}
	return out
}

func TestSnapshotWarmRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "registry.snapshot")
	// A long interval: only the write on shutdown can have saved the state.
	args := []string{"--goreka.snapshot.path=" + path, "--goreka.snapshot.interval=1h"}

	s := snapNode(t, args...)
	s.start()
	snapRegister(t, s, "ORDERS", "orders-1", 90)
	snapRegister(t, s, "ORDERS", "orders-2", 90)
	snapRegister(t, s, "BILLING", "billing-1", 90)
	must(t, "PUT", s.base()+"/apps/ORDERS/orders-2/status?value=OUT_OF_SERVICE", "", http.StatusOK)
	must(t, "PUT", s.base()+"/apps/BILLING/billing-1/metadata?weight=7", "", http.StatusOK)
	before := snapApps(t, s)
	s.stop()

	if f, err := snapshot.ReadFile(path); err != nil || len(f.Snapshot.Instances) != 3 {
		t.Fatalf("snapshot after graceful stop: %v", err)
	}

	// The same port and arguments; the read is the server's first request.
	s.start()
	after := snapApps(t, s)
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
	if code, err := heartbeat(s, "ORDERS", "orders-2"); err != nil || code != http.StatusOK {
		t.Fatalf("renew restored instance: %d %v", code, err)
	}
	if code, b, err := do("GET", s.base()+"/apps/ORDERS/orders-2", ""); err != nil || code != http.StatusOK || !bytes.Contains(b, []byte(`"status":"OUT_OF_SERVICE"`)) {
		t.Errorf("after renew: %d %v %s", code, err, b)
	}
	if got := s.logs().grep("registry restored from snapshot"); len(got) != 1 || !strings.Contains(got[0], "count=3") {
		t.Errorf("restore log %q", got)
	}
}

func TestSnapshotStaleIgnored(t *testing.T) {
	path := filepath.Join(t.TempDir(), "registry.snapshot")
	r := registry.New(registry.Options{})
	in, err := compat.DecodeInstance([]byte(instanceBody("OLD", "old-1", 1, 90)), compat.JSON)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Register(in, false); err != nil {
		t.Fatal(err)
	}
	if err := snapshot.WriteFile(path, snapshot.Marshal(r.Export(), time.Now().Add(-2*time.Hour), "old")); err != nil {
		t.Fatal(err)
	}

	s := snapNode(t, "--goreka.snapshot.path="+path, "--goreka.snapshot.max-age=1h")
	s.start()
	if apps := snapApps(t, s); len(apps) != 0 {
		t.Fatalf("a 2 h old snapshot was restored: %v", apps)
	}
	if got := s.logs().grep("too old, ignored"); len(got) != 1 || !strings.Contains(got[0], "max_age=1h0m0s") {
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

	s := snapNode(t, "--goreka.snapshot.path="+path)
	s.start()
	if apps := snapApps(t, s); len(apps) != 0 {
		t.Fatalf("instances from a truncated file: %v", apps)
	}
	got := s.logs().grep("moved aside")
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
	snapRegister(t, s, "NEW", "new-1", 90)
	s.stop()
	if f, err := snapshot.ReadFile(path); err != nil || len(f.Snapshot.Instances) != 1 {
		t.Fatalf("server started after a corrupt file did not write a good snapshot: %v", err)
	}
}

func TestSnapshotRestoredInstancesExpire(t *testing.T) {
	path := filepath.Join(t.TempDir(), "registry.snapshot")
	args := []string{"--goreka.snapshot.path=" + path,
		"--eureka.server.eviction-interval-timer-in-ms=1000", "--eureka.server.enable-self-preservation=false"}

	s := snapNode(t, args...)
	s.start()
	snapRegister(t, s, "SHORT", "short-1", 1)
	snapRegister(t, s, "LONG", "long-1", 60)
	s.stop()

	s.start()
	if apps := snapApps(t, s); len(apps) != 2 {
		t.Fatalf("restored %d instances, want both (a restored lease starts fresh)", len(apps))
	}
	// The real eviction timer (every second) removes the 1 s lease.
	waitUntil(t, "restored 1 s lease evicted", 15*time.Second, func() (bool, string) {
		code, _, err := do("GET", s.base()+"/apps/SHORT", "")
		return code == http.StatusNotFound, fmt.Sprintf("GET /apps/SHORT: %d %v", code, err)
	})
	if code, _, err := do("GET", s.base()+"/apps/LONG", ""); err != nil || code != http.StatusOK {
		t.Errorf("the 60 s lease was evicted too: %d %v", code, err)
	}
}

func TestSnapshotSurvivesKill9DuringWrites(t *testing.T) {
	if testing.Short() {
		t.Skip("starts goreka processes")
	}
	path := filepath.Join(t.TempDir(), "registry.snapshot")
	port := freePort(t, "127.0.0.1")
	// A 1 ms interval with registrations streaming in keeps the writer
	// busy, so the kill lands during writes.
	n := processNode(t, "K", "127.0.0.1", port, standaloneArgs("127.0.0.1", port,
		"--goreka.snapshot.path="+path, "--goreka.snapshot.interval=1ms", "--logging.level.root=warn")...)
	lastCount := -1
	for round := range 4 {
		n.start() // the same port and arguments each round
		n.waitServing()

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
				if _, _, err := do("POST", n.base()+"/apps/STREAM", instanceBody("STREAM", id, 1, 90)); err != nil {
					return // killed
				}
			}
		})
		time.Sleep(time.Duration(150+rand.IntN(250)) * time.Millisecond) // let registrations and writes run
		n.kill()
		close(stop)
		wg.Wait()

		f, err := snapshot.ReadFile(path)
		if err != nil {
			t.Fatalf("round %d: snapshot after kill -9 does not load: %v", round, err)
		}
		if c := len(f.Snapshot.Instances); c < lastCount {
			t.Fatalf("round %d: snapshot holds %d instances, fewer than the %d restored at start", round, c, lastCount)
		}
		lastCount = len(f.Snapshot.Instances)
		_, tmpErr := os.Stat(path + ".tmp")
		t.Logf("round %d: snapshot loads with %d instances; killed mid-write: %v", round, lastCount, !errors.Is(tmpErr, fs.ErrNotExist))
	}
	if lastCount <= 0 {
		t.Fatalf("no registrations reached the snapshot")
	}

	s := snapNode(t, "--goreka.snapshot.path="+path)
	s.start()
	if got := len(snapApps(t, s)); got != lastCount {
		t.Fatalf("restart after kill -9 serves %d instances, the snapshot holds %d", got, lastCount)
	}
}
