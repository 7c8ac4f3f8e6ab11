package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// pairProbeArgs: periodic probes every second on both nodes of the pair.
var pairProbeArgs = []string{
	"--goreka.health.probe.enabled=true", "--goreka.health.probe.mode=periodic",
	"--goreka.health.probe.interval=1s", "--goreka.health.probe.jitter=100ms", "--goreka.health.probe.timeout=500ms",
}

// lifeRow is one row of a node's dashboard lifecycle section.
type lifeRow struct {
	ID        string `json:"instanceId"`
	State     string `json:"state"`
	Status    string `json:"status"`
	LastProbe string `json:"lastProbe"`
	Note      string `json:"note"`
}

// lifeRowOf returns n's dashboard lifecycle row of id.
func lifeRowOf(n *node, id string) (lifeRow, bool, string) {
	code, body, err := do("GET", "http://"+n.addr()+"/goreka/api/dashboard", "")
	if err != nil || code != http.StatusOK {
		return lifeRow{}, false, fmt.Sprintf("GET dashboard on %s: %d %v", n.name, code, err)
	}
	var d struct {
		Rows []lifeRow `json:"lifecycleInstances"`
	}
	if err := json.Unmarshal(body, &d); err != nil {
		return lifeRow{}, false, err.Error()
	}
	for _, r := range d.Rows {
		if r.ID == id {
			return r, true, fmt.Sprintf("%+v", r)
		}
	}
	return lifeRow{}, false, "no row for " + id
}

// TestHealthPeriodicPair: periodic probes on both nodes of a pair; an
// instance heartbeats to A (as a Spring client does: status and
// lastDirtyTimestamp on every renew) and its health endpoint starts
// answering 503. A serves it DOWN and B follows through replication; B
// never probes it (its dashboard has no probe of it), never lifts the
// verdict and never holds an opinion of its own, and over several
// intervals neither node flips. When the endpoint recovers both serve it
// UP, again without flapping.
func TestHealthPeriodicPair(t *testing.T) {
	if testing.Short() {
		t.Skip("starts goreka processes")
	}
	t.Parallel()
	p1 := freePort(t, "127.0.0.1")
	p2 := freePort(t, "127.0.0.1")
	for p2 == p1 {
		p2 = freePort(t, "127.0.0.1")
	}
	nodes := clCluster(t, []string{"127.0.0.1", "127.0.0.1"}, []int{p1, p2}, true, pairProbeArgs...)
	a, b := nodes[0], nodes[1]

	var code atomic.Int32
	code.Store(http.StatusOK)
	var probes atomic.Int64
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		probes.Add(1)
		w.Header().Set("Content-Type", "application/json")
		c := int(code.Load())
		w.WriteHeader(c)
		if c == http.StatusOK {
			io.WriteString(w, `{"status":"UP"}`)
		} else {
			io.WriteString(w, `{"status":"DOWN"}`)
		}
	}))
	defer hs.Close()

	const app, id = "PROBED", "probed-1"
	key := app + "/" + id
	dirty := time.Now().UnixMilli()
	body := strings.Replace(instanceBody(app, id, 1, 30), `"leaseInfo"`,
		fmt.Sprintf(`"healthCheckUrl":%q,"lastDirtyTimestamp":"%d","leaseInfo"`, hs.URL+"/actuator/health", dirty), 1)
	must(t, "POST", a.base()+"/apps/"+app, body, http.StatusNoContent)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var renew404 atomic.Int64
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(300 * time.Millisecond):
			}
			c, _, _ := do("PUT", fmt.Sprintf("%s/apps/%s/%s?status=UP&lastDirtyTimestamp=%d", a.base(), app, id, dirty), "")
			if c == http.StatusNotFound {
				renew404.Add(1)
			}
		}
	})
	defer func() { close(stop); wg.Wait() }()

	statusOn := func(n *node) string { ids, _ := appInstances(n, app); return ids[key] }
	both := func(want string) func() (bool, string) {
		return func() (bool, string) {
			sa, sb := statusOn(a), statusOn(b)
			return sa == want && sb == want, fmt.Sprintf("A %q, B %q", sa, sb)
		}
	}
	// steady polls both nodes for d and fails on any other status.
	steady := func(want string, d time.Duration) int {
		t.Helper()
		n := 0
		for end := time.Now().Add(d); time.Now().Before(end); n++ {
			if sa, sb := statusOn(a), statusOn(b); sa != want || sb != want {
				t.Fatalf("flapped: want %s on both, A %q, B %q after %d polls", want, sa, sb, n)
			}
			time.Sleep(50 * time.Millisecond)
		}
		return n
	}
	waitUntil(t, "the instance UP on both", clDeadline, both("UP"))
	waitUntil(t, "A probes the instance healthy", clDeadline, func() (bool, string) {
		r, ok, last := lifeRowOf(a, id)
		return ok && strings.Contains(r.LastProbe, "HTTP 200"), last
	})

	code.Store(http.StatusServiceUnavailable)
	took := waitUntil(t, "the instance DOWN on both", clDeadline, both("DOWN"))
	t.Logf("measured: DOWN on both %s after the endpoint failed", took.Round(time.Millisecond))
	if r, _, last := lifeRowOf(a, id); !strings.HasPrefix(r.Note, "DOWN by probe: 3 failures, HTTP 503") {
		t.Errorf("A's dashboard: %s, want the reason", last)
	}
	polls := steady("DOWN", 5*time.Second)
	t.Logf("DOWN on both for 5 s (%d polls of each)", polls)

	code.Store(http.StatusOK)
	took = waitUntil(t, "the instance UP on both", clDeadline, both("UP"))
	t.Logf("measured: UP on both %s after the endpoint recovered", took.Round(time.Millisecond))
	polls = steady("UP", 5*time.Second)
	t.Logf("UP on both for 5 s (%d polls of each)", polls)

	// B never probed it and holds no verdict of its own.
	r, ok, last := lifeRowOf(b, id)
	if !ok || r.LastProbe != "" || r.Note != "" {
		t.Errorf("B's dashboard row: %s, want no probe and no note (only A judges)", last)
	}
	if n := renew404.Load(); n > 0 {
		t.Errorf("%d heartbeats answered 404 (lease lost) while DOWN by probe", n)
	}
	// One prober at about one probe per interval (plus jitter): over the
	// ~10 s above, two probers would have made about twice as many.
	t.Logf("health endpoint answered %d probes", probes.Load())
	for _, n := range nodes {
		for _, line := range n.logs().grep("served as DOWN by probe") {
			if n == b {
				t.Errorf("B judged the instance: %s", line)
			}
		}
	}
	if got := len(a.logs().grep("served as DOWN by probe")); got != 1 {
		t.Errorf("A logged %d DOWN verdicts, want 1", got)
	}
}
