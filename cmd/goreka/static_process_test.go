package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/goreka/goreka/server/api/wire"
)

// staticSet reads the static registrations a node serves through the read
// API, as "APP/id status zone" strings, sorted.
func staticSet(n *node) ([]string, error) {
	code, b, err := do("GET", "http://"+n.addr()+"/goreka/api/v1/instances", "")
	if err != nil || code != 200 {
		return nil, fmt.Errorf("%d %v %s", code, err, b)
	}
	var page wire.InstancesPage
	if err := json.Unmarshal(b, &page); err != nil {
		return nil, err
	}
	var out []string
	for _, in := range page.Instances {
		if in.Static {
			out = append(out, fmt.Sprintf("%s/%s %s %s", in.App, in.ID, in.Status, in.Metadata["zone"]))
		}
	}
	slices.Sort(out)
	return out, nil
}

// A goreka process registers goreka.static-instances at start, serves them
// to Eureka clients and marks them static in the API, refuses to cancel
// them, and on SIGHUP applies the edited list (added, changed, removed); a
// broken file on SIGHUP changes nothing and the server keeps serving.
func TestStaticInstancesReloadOnSIGHUP(t *testing.T) {
	file := filepath.Join(t.TempDir(), "static.yml")
	write := func(body string) {
		t.Helper()
		if err := os.WriteFile(file, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(`goreka:
  static-instances:
    - {app: postgres, instance-id: pg-1, ip-addr: 10.0.0.5, port: 5432, metadata: {zone: a}}
    - {app: stripe, instance-id: stripe, host-name: api.stripe.com, secure-port: 443}
`)
	port := freePort(t, "127.0.0.1")
	n := processNode(t, "static", "127.0.0.1", port, standaloneArgs("127.0.0.1", port, "--spring.config.additional-location="+file)...)
	n.start()

	want := []string{"POSTGRES/pg-1 UP a", "STRIPE/stripe UP "}
	waitUntil(t, "static registrations served", startWithin, func() (bool, string) {
		got, err := staticSet(n)
		return err == nil && slices.Equal(got, want), fmt.Sprint(got, err)
	})
	// Eureka clients see them like any instance.
	waitUntil(t, "static registration in /eureka/apps/POSTGRES", startWithin, func() (bool, string) {
		got, code := appInstances(n, "POSTGRES")
		return got["POSTGRES/pg-1"] == "UP", fmt.Sprint(code, got)
	})
	code, body, _ := do("DELETE", n.base()+"/apps/POSTGRES/pg-1", "")
	if code != 400 || !strings.Contains(string(body), "static registration") {
		t.Fatalf("cancel of a static registration: %d %s, want 400 naming it", code, body)
	}

	write(`goreka:
  static-instances:
    - {app: postgres, instance-id: pg-1, ip-addr: 10.0.0.5, port: 5432, metadata: {zone: b}}
    - {app: redis, instance-id: r-1, ip-addr: 10.0.0.6, port: 6379, status: OUT_OF_SERVICE}
`)
	n.signal(syscall.SIGHUP)
	n.waitLine("static registrations applied")
	want = []string{"POSTGRES/pg-1 UP b", "REDIS/r-1 OUT_OF_SERVICE "}
	waitUntil(t, "reloaded static registrations", startWithin, func() (bool, string) {
		got, err := staticSet(n)
		return err == nil && slices.Equal(got, want), fmt.Sprint(got, err)
	})
	waitUntil(t, "removed static registration gone from /eureka/apps/STRIPE", startWithin, func() (bool, string) {
		got, code := appInstances(n, "STRIPE")
		return code == 404, fmt.Sprint(code, got)
	})

	write("goreka:\n  static-instances:\n    - {app: broken}\n")
	n.signal(syscall.SIGHUP)
	if line := n.waitLine("configuration not reloaded"); !strings.Contains(line, "goreka.static-instances[0]") {
		t.Fatalf("the error does not name the entry: %s", line)
	}
	if got, err := staticSet(n); err != nil || !slices.Equal(got, want) {
		t.Fatalf("a broken reload changed the registry: %v %v", got, err)
	}
	if code := n.stop(); code != 0 {
		t.Fatalf("exit code %d", code)
	}
}

// The peer-group rule (README "Tools"): a node serves the static
// registrations of its own configuration, and none of them reaches a peer
// by replication, while ordinary registrations do; a peer's start-up sync
// copies what the node serves, as an ordinary lease.
func TestStaticInstancesNotReplicated(t *testing.T) {
	if testing.Short() {
		t.Skip("starts goreka processes")
	}
	pa, pb := freePort(t, "127.0.0.1"), freePort(t, "127.0.0.1")
	urls := fmt.Sprintf("http://127.0.0.1:%d/eureka/,http://127.0.0.1:%d/eureka/", pa, pb)
	peer := func(port int, extra ...string) []string {
		return loopbackArgs("127.0.0.1", port, append([]string{"--eureka.client.service-url.defaultZone=" + urls,
			fmt.Sprintf("--eureka.server.my-url=http://127.0.0.1:%d/eureka/", port),
			"--eureka.instance.lease-renewal-interval-in-seconds=1"}, extra...)...)
	}
	file := filepath.Join(t.TempDir(), "static.yml")
	b := processNode(t, "B", "127.0.0.1", pb, peer(pb)...)
	b.start()
	a := processNode(t, "A", "127.0.0.1", pa, peer(pa, "--spring.config.additional-location=optional:"+file)...)
	a.start()
	// Both start-up syncs are over before the static registration exists:
	// the two nodes sync from each other at start, and a sync that A's
	// start-up gate held back would otherwise copy it to B.
	a.waitLine("start-up sync with peers")
	b.waitLine("start-up sync with peers")
	// Added while A replicates (at start it registers them before its
	// replicator exists): a SIGHUP reload.
	if err := os.WriteFile(file, []byte("goreka:\n  static-instances:\n    - {app: db, instance-id: pg-1, ip-addr: 10.0.0.5}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	a.signal(syscall.SIGHUP)
	waitUntil(t, "the static registration on A", startWithin, func() (bool, string) {
		got, err := staticSet(a)
		return err == nil && slices.Equal(got, []string{"DB/pg-1 UP "}), fmt.Sprint(got, err)
	})
	must(t, "PUT", a.base()+"/apps/DB/pg-1/status?value=OUT_OF_SERVICE", "", 200)
	register(t, a, "ORDERS", "o1", 30, 90)
	// A replicates in revision order: once o1 is on B, a replicated static
	// registration (and its override) would be there too.
	waitUntil(t, "the ordinary registration replicated to B", startWithin, func() (bool, string) {
		got, code := appInstances(b, "ORDERS")
		return got["ORDERS/o1"] == "UP", fmt.Sprint(code, got)
	})
	if got, code := appInstances(b, "DB"); code != 404 {
		t.Fatalf("B received A's static registration: %d %v", code, got)
	}

	// B restarts: its start-up sync copies what A serves, the static one
	// as an ordinary lease (it expires there, nobody renews it).
	b.stop()
	b.start()
	waitUntil(t, "B's start-up sync", startWithin, func() (bool, string) {
		got, code := appInstances(b, "DB")
		return got["DB/pg-1"] == "OUT_OF_SERVICE", fmt.Sprint(code, got)
	})
	if got, err := staticSet(b); err != nil || len(got) != 0 {
		t.Fatalf("B serves the synced copy as static: %v %v", got, err)
	}
}
