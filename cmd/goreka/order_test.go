package main

// Proof that replication keeps the order of the operations on an instance:
// two in-process nodes, A and B, replicating to each other (so the race
// detector covers the server and replication code), take register, renew,
// override, override removal and cancel requests for the same few instances
// from concurrent writers in random interleavings. Once the writers stop
// and both replication queues have drained, B must hold exactly what A
// holds: the same instances per application, each with the same status and
// overriddenStatus. A difference is a ghost (an instance cancelled on its
// owner but kept on the other node), a lost cancel or registration, or a
// status the other node reached by applying the operations in another
// order. Three fixed sequences, each sent within one batch window, pin the
// cases a per-(action, instance) coalescing queue gets wrong.
//
// What the writers send is chosen so that the outcome is a function of the
// order of the operations on each instance alone, and so that Eureka's own
// rules cannot make the nodes differ:
//
//   - Every instance has an owner node, and all requests for it, heartbeats
//     included, go to its owner. Writes to one instance on both nodes have
//     no order between them, and Eureka's repair lets the nodes end up
//     different by design: a heartbeat from B for an instance A has just
//     cancelled (or made UNKNOWN) is answered 404 by A, so B registers its
//     copy on A again, while A's cancel then removes it from B: a ghost on
//     A that no reordering caused.
//   - Registrations are always UP, and overrides are removed without a
//     value or with value=UP, never OUT_OF_SERVICE. The status rule chain
//     keeps an existing UP or OUT_OF_SERVICE status for a local
//     registration only (registry.evalStatus: !replication && existing !=
//     nil), so an instance that is OUT_OF_SERVICE without an override would
//     keep that status on its owner and could take the registration's on
//     the other node. With these requests, OUT_OF_SERVICE always comes with
//     an override, which wins on both nodes.
//   - No request carries lastDirtyTimestamp, so only the owner stamps
//     registrations. A heartbeat for an instance whose override was removed
//     without a value finds it UNKNOWN and answers 404 without changing
//     anything, on the owner as on a peer that applied the same operations.
//   - Leases last 90 s, longer than the test: nothing is evicted.

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/goreka/goreka/registry"
)

const (
	// orderSeedEnv overrides the fixed seed of the random writers.
	orderSeedEnv = "GOREKA_ORDER_SEED"
	orderSeed    = 20260301
	orderWriters = 8
	orderRounds  = 4
	orderOps     = 60 // per writer and round
	orderN       = 5  // instances per application
	// orderSettle is how long both replication queues must stay empty with
	// no batch answered before the registries are compared: longer than
	// the 500 ms batch delay, so a batch taken from a queue just before has
	// been answered (on loopback), and a 404 it got has queued its repair.
	orderSettle = 750 * time.Millisecond
	// orderDrainWithin bounds the wait for the queues to drain.
	orderDrainWithin = 10 * time.Second
)

// orderInstance is one instance the writers work on, with its owner.
type orderInstance struct {
	app, id string
	owner   *node
}

func TestReplicationKeepsOrder(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two servers")
	}
	// Alongside the cluster tests, which mostly wait.
	t.Parallel()
	seed := uint64(orderSeed)
	if v := os.Getenv(orderSeedEnv); v != "" {
		s, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("%s=%q: %v", orderSeedEnv, v, err)
		}
		seed = s
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("seed=%d (rerun with %s=%d)", seed, orderSeedEnv, seed)
		}
	})
	start := time.Now()
	a, b := orderPair(t)

	// The fixed sequences: registered and replicated first, so that each
	// sequence's requests reach A's queue for B without the registration.
	const seqApp = "SEQ"
	for _, id := range []string{"seq-a", "seq-b", "seq-c"} {
		register(t, a, seqApp, id, 30, 90)
	}
	waitUntil(t, "B holds the sequence instances", orderDrainWithin, func() (bool, string) {
		got := orderState(b)
		return len(only(got, seqApp)) == 3, fmt.Sprintf("B: %v", got)
	})
	st := func(id, op string) string { return a.base() + "/apps/" + seqApp + "/" + id + "/status" + op }
	seqStart := time.Now()
	// (a) Two overrides: the second must win on both nodes, as an override
	// (A stores UP as an override because the status was OUT_OF_SERVICE).
	must(t, "PUT", st("seq-a", "?value=OUT_OF_SERVICE"), "", http.StatusOK)
	must(t, "PUT", st("seq-a", "?value=UP"), "", http.StatusOK)
	// (b) Override, removal, removal with value=UP: the second removal
	// finds no override and changes nothing.
	must(t, "PUT", st("seq-b", "?value=OUT_OF_SERVICE"), "", http.StatusOK)
	must(t, "DELETE", st("seq-b", ""), "", http.StatusOK)
	must(t, "DELETE", st("seq-b", "?value=UP"), "", http.StatusOK)
	// (c) Override, removal with value=UP, removal: likewise.
	must(t, "PUT", st("seq-c", "?value=OUT_OF_SERVICE"), "", http.StatusOK)
	must(t, "DELETE", st("seq-c", "?value=UP"), "", http.StatusOK)
	must(t, "DELETE", st("seq-c", ""), "", http.StatusOK)
	t.Logf("measured: the three sequences took %s on A (batch delay 500 ms)", time.Since(seqStart).Round(time.Millisecond))
	wantSeq := map[string]string{
		seqApp + "/seq-a": orderDesc(registry.StatusUp, registry.StatusUp, registry.StatusUp),
		seqApp + "/seq-b": orderDesc(registry.StatusUnknown, registry.StatusUnknown, ""),
		seqApp + "/seq-c": orderDesc(registry.StatusUp, registry.StatusUnknown, ""),
	}
	if got := only(orderState(a), seqApp); !maps.Equal(got, wantSeq) {
		t.Errorf("A after the sequences:\n%s", orderDiff("want", wantSeq, "A", got))
	}

	// The random writers: 10 instances in 2 applications, 8 owned by A and
	// 2 by B, so that both nodes replicate to each other. Few enough that
	// the writers often hit one instance at once, enough that an instance
	// sees only a few operations per batch window (with many, the last
	// operation of each kind decides and hides most reorderings).
	var insts []orderInstance
	for _, app := range []string{"ORDERS", "BILLING"} {
		p := strings.ToLower(app[:1])
		for i := range orderN {
			owner := a
			if i%3 == 2 {
				owner = b
			}
			insts = append(insts, orderInstance{app, p + "-" + strconv.Itoa(i), owner})
		}
	}
	// Rounds of writers, each compared once the queues drained: every round
	// is a further chance for a reordering to leave its mark before the
	// heartbeats' repair (a 404 makes the owner register its copy again)
	// or a later cancel erases it.
	random := func(m map[string]string) map[string]string { // all but the sequences
		maps.DeleteFunc(m, func(k, _ string) bool { return strings.HasPrefix(k, seqApp+"/") })
		return m
	}
	for round := range orderRounds {
		var wg sync.WaitGroup
		var bad atomic.Int64
		for w := range orderWriters {
			wg.Go(func() {
				rnd := rand.New(rand.NewPCG(seed, uint64(round*orderWriters+w)))
				for range orderOps {
					if !orderOp(t, rnd, insts[rnd.IntN(len(insts))]) {
						bad.Add(1)
					}
				}
			})
		}
		wg.Wait()
		if bad.Load() > 0 {
			t.FailNow() // the answers are reported
		}
		orderDrain(t, a, b)
		ga, gb := orderState(a), orderState(b) // fresh maps; random changes them
		if round == 0 {
			// The sequences, sent before the first round, once.
			if x, y := only(ga, seqApp), only(gb, seqApp); !maps.Equal(x, y) {
				t.Errorf("seed=%d: the sequences: B differs from A after both replication queues drained:\n%s", seed, orderDiff("A", x, "B", y))
			}
		}
		if x, y := random(ga), random(gb); !maps.Equal(x, y) {
			t.Errorf("seed=%d, round %d of the random writers: B differs from A after both replication queues drained:\n%s",
				seed, round+1, orderDiff("A", x, "B", y))
		}
	}
	t.Logf("measured: %d rounds of %d writers x %d operations on %d instances, in %s", orderRounds, orderWriters, orderOps, len(insts),
		time.Since(start).Round(time.Millisecond))
}

// orderPair starts A and B on 127.0.0.1, each listing both URLs and told
// its own.
func orderPair(t *testing.T) (a, b *node) {
	t.Helper()
	pa, pb := freePort(t, "127.0.0.1"), freePort(t, "127.0.0.1")
	urls := []string{fmt.Sprintf("http://127.0.0.1:%d/eureka/", pa), fmt.Sprintf("http://127.0.0.1:%d/eureka/", pb)}
	mk := func(name string, port int, self string) *node {
		return inProcessNode(t, name, "127.0.0.1", port, loopbackArgs("127.0.0.1", port,
			"--eureka.client.service-url.defaultZone="+strings.Join(urls, ","),
			"--eureka.server.my-url="+self,
			// No self-registration: the registries hold only what the
			// test wrote.
			"--eureka.client.register-with-eureka=false",
			"--eureka.server.wait-time-in-ms-when-sync-empty=0",
			"--eureka.server.enable-self-preservation=false",
			// Warnings only, so that a failure report shows the diff, not
			// a line per request.
			"--logging.level.goreka=WARN",
		)...)
	}
	a, b = mk("A", pa, urls[0]), mk("B", pb, urls[1])
	a.start()
	b.start()
	a.waitServing()
	b.waitServing()
	return a, b
}

// orderOp sends one random operation for in to its owner and reports
// whether the answer was one it accepts. Every accepted answer leaves a
// state that depends only on the operations before it on that instance.
func orderOp(t *testing.T, rnd *rand.Rand, in orderInstance) bool {
	base := in.owner.base() + "/apps/" + in.app
	inst := base + "/" + in.id
	var method, u, body string
	want := []int{http.StatusOK, http.StatusNotFound}
	switch p := rnd.IntN(100); {
	case p < 10:
		method, u, body, want = "POST", base, instanceBody(in.app, in.id, 30, 90), []int{http.StatusNoContent}
	case p < 20:
		method, u = "PUT", inst // heartbeat; 404 when unknown
	case p < 42:
		method, u = "PUT", inst+"/status?value=OUT_OF_SERVICE"
	case p < 60:
		method, u = "PUT", inst+"/status?value=UP"
	case p < 76:
		method, u = "DELETE", inst+"/status"
	case p < 92:
		method, u = "DELETE", inst+"/status?value=UP"
	default:
		method, u = "DELETE", inst // cancel
	}
	code, b, err := do(method, u, body)
	if err != nil || !slices.Contains(want, code) {
		t.Errorf("%s %s: %d %v %s, want one of %v", method, u, code, err, b, want)
		return false
	}
	return true
}

// orderDrain waits until both nodes' replication queues are empty and no
// batch was answered for orderSettle.
func orderDrain(t *testing.T, nodes ...*node) {
	t.Helper()
	var last string
	var since time.Time
	waitUntil(t, "replication queues drained", orderDrainWithin, func() (bool, string) {
		var sig strings.Builder
		depth := 0
		for _, n := range nodes {
			for _, s := range n.app().repl.Status() {
				depth += s.QueueDepth
				fmt.Fprintf(&sig, "%s->%s: depth %d, batches %d, items %d, failures %+v, dropped %d, expired %d; ",
					n.name, s.URL, s.QueueDepth, s.BatchesSent, s.ItemsSent, s.Failures, s.Dropped, s.Expired)
			}
		}
		if depth > 0 || sig.String() != last {
			last, since = sig.String(), time.Now()
			return false, last
		}
		return time.Since(since) >= orderSettle, last
	})
}

// orderState is n's registry, read directly, as "APP/id" -> status,
// overriddenStatus and the override map's entry for the instance.
func orderState(n *node) map[string]string {
	reg := n.app().reg
	overrides := reg.StatusOverrides()
	out := map[string]string{}
	for _, app := range reg.Applications().Apps {
		for _, v := range app.Instances {
			id := v.Instance.ID()
			out[app.Name+"/"+id] = orderDesc(v.Instance.Status, v.Instance.OverriddenStatus, overrides[id])
		}
	}
	return out
}

func orderDesc(status, overridden, override registry.Status) string {
	s := "status " + string(status) + ", overriddenStatus " + string(overridden)
	if override != "" {
		s += ", override " + string(override)
	}
	return s
}

// orderDiff lists the instances whose entries differ, one per line.
func orderDiff(xName string, x map[string]string, yName string, y map[string]string) string {
	var keys []string
	for k := range x {
		keys = append(keys, k)
	}
	for k := range y {
		if _, ok := x[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		vx, okx := x[k]
		vy, oky := y[k]
		switch {
		case !okx:
			fmt.Fprintf(&b, "  %s: %s: absent; %s: %s  (only on %s)\n", k, xName, yName, vy, yName)
		case !oky:
			fmt.Fprintf(&b, "  %s: %s: %s; %s: absent  (only on %s)\n", k, xName, vx, yName, xName)
		case vx != vy:
			fmt.Fprintf(&b, "  %s: %s: %s; %s: %s\n", k, xName, vx, yName, vy)
		}
	}
	fmt.Fprintf(&b, "  (%d instances on %s, %d on %s)", len(x), xName, len(y), yName)
	return b.String()
}
