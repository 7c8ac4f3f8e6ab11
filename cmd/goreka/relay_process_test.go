package main

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// sumMetric adds the series of name whose labels hold every one of parts.
func sumMetric(m map[string]float64, name string, parts ...string) float64 {
	total := 0.0
	for k, v := range m {
		if !strings.HasPrefix(k, name+"{") && k != name {
			continue
		}
		ok := true
		for _, p := range parts {
			ok = ok && strings.Contains(k, p)
		}
		if ok {
			total += v
		}
	}
	return total
}

// heartbeatsAt counts the heartbeat requests n was sent by clients or
// relays (per-instance renews and aggregated renewals), not by its peers.
func heartbeatsAt(t *testing.T, n *node) float64 {
	m := scrape(t, n)
	return sumMetric(m, "goreka_http_requests_total", `method="PUT"`, `route="/eureka/apps/:app/:id"`) +
		sumMetric(m, "goreka_http_requests_total", `method="POST"`, `route="/eureka/goreka/renewals"`)
}

// relayClients are Eureka clients as the Java client behaves: each
// heartbeats every 250 ms (a renewal interval of 1 s, four times over:
// more client heartbeats for the same relay intervals) at the first server
// of its defaultZone that answers, and registers there again when a
// heartbeat is answered 404.
type relayClients struct {
	t       *testing.T
	app     string
	ids     []string
	zone    []*node // its defaultZone, in order
	beats   atomic.Int64
	regs    atomic.Int64
	mu      sync.Mutex
	skipped map[string]bool // cancelled: no longer heartbeats
}

func (c *relayClients) run(ctx context.Context) {
	for ctx.Err() == nil {
		for _, id := range c.ids {
			c.mu.Lock()
			skip := c.skipped[id]
			c.mu.Unlock()
			if skip {
				continue
			}
			for _, n := range c.zone {
				code, err := heartbeat(n, c.app, id)
				if err != nil {
					continue // the next server of the zone
				}
				c.beats.Add(1)
				if code == 404 {
					if code, _, err := do("POST", n.base()+"/apps/"+c.app, instanceBody(c.app, id, 1, 3)); err == nil && code == 204 {
						c.regs.Add(1)
					}
				}
				break
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(250 * time.Millisecond): // the clients' pace, not a timing assertion
		}
	}
}

func (c *relayClients) cancel(id string) {
	c.mu.Lock()
	c.skipped[id] = true
	c.mu.Unlock()
}

// TestRelaysInFrontOfACorePair runs a core pair of goreka nodes, two relays
// in front of it (each listing both core nodes, in another order) and a
// third-level relay in front of the first relay. Clients register and
// heartbeat at the relays only (leases of 3 s): every registration is seen
// at the core and at the other relays, the core keeps the leases on the
// relays' aggregated heartbeats alone (it evicts nothing), the heartbeat
// requests reaching the core are at most 1/50 of the clients', and a cancel
// at a relay leaves no ghost anywhere. Then the first relay is killed (-9):
// its clients fail over to the other relay (their defaultZone lists both)
// and the core evicts none of them, while the third level, whose only
// upstream it was, keeps serving its own client and the last copy, marked
// stale.
func TestRelaysInFrontOfACorePair(t *testing.T) {
	t.Parallel()
	ip := "127.0.0.1"
	ports := []int{freePort(t, ip), freePort(t, ip)}
	core := clCluster(t, []string{ip, ip}, ports, false)
	coreURL := func(i int) string { return "http://" + net.JoinHostPort(ip, strconv.Itoa(ports[i])) + "/eureka/" }
	relayNode := func(name, upstream string) *node {
		p := freePort(t, ip)
		n := processNode(t, name, ip, p, standaloneArgs(ip, p,
			"--goreka.relay.upstream="+upstream,
			"--goreka.relay.id="+name,
			"--goreka.relay.heartbeat-interval=1s",
			"--goreka.relay.fetch-interval=1s",
			"--eureka.server.eviction-interval-timer-in-ms=1000",
			"--eureka.server.enable-self-preservation=false")...)
		n.start()
		return n
	}
	r1 := relayNode("relay1", coreURL(0)+","+coreURL(1))
	r2 := relayNode("relay2", coreURL(1)+","+coreURL(0))
	r3 := relayNode("relay3", r1.url()) // a third level

	const perRelay = 100
	mk := func(app string, n int, zone ...*node) *relayClients {
		c := &relayClients{t: t, app: app, zone: zone, skipped: map[string]bool{}}
		for i := range n {
			c.ids = append(c.ids, fmt.Sprintf("%s-%d", strings.ToLower(app), i))
		}
		for _, id := range c.ids {
			register(t, zone[0], app, id, 1, 3)
		}
		return c
	}
	fleets := []*relayClients{mk("SITEA", perRelay, r1, r2), mk("SITEB", perRelay, r2, r1), mk("DEEP", 1, r3)}
	ctx, stop := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	defer func() { stop(); wg.Wait() }()
	for _, f := range fleets {
		wg.Go(func() { f.run(ctx) })
	}
	beats := func() int64 { return fleets[0].beats.Load() + fleets[1].beats.Load() }

	everywhere := []*node{core[0], core[1], r1, r2, r3}
	seen := func(key string) func() (bool, string) {
		return func() (bool, string) {
			var missing []string
			for _, n := range everywhere {
				got, err := apps(n)
				if err != nil || got[key] != "UP" {
					missing = append(missing, fmt.Sprint(n.name, err))
				}
			}
			return len(missing) == 0, "missing at " + strings.Join(missing, ", ")
		}
	}
	waitUntil(t, "a relay's registration seen at the core and the other relays", 20*time.Second, seen("SITEA/sitea-7"))
	waitUntil(t, "the other relay's too", 10*time.Second, seen("SITEB/siteb-42"))
	waitUntil(t, "a third-level registration everywhere", 10*time.Second, seen("DEEP/deep-0"))

	// Heartbeats for 6 s (two core lease durations): counted at the core.
	before, beatsBefore := heartbeatsAt(t, core[0])+heartbeatsAt(t, core[1]), beats()
	time.Sleep(6 * time.Second) // the window the clients heartbeat in, not a timing assertion
	atCore := heartbeatsAt(t, core[0]) + heartbeatsAt(t, core[1]) - before
	clientBeats := beats() - beatsBefore
	t.Logf("heartbeats: %d from clients at the relays, %.0f requests at the core (1/%.0f)", clientBeats, atCore, float64(clientBeats)/atCore)
	if clientBeats < 2*perRelay || atCore*50 > float64(clientBeats) {
		t.Fatalf("%.0f heartbeat requests reached the core for %d client heartbeats: more than 1/50", atCore, clientBeats)
	}
	noEviction := func(what string) {
		t.Helper()
		for _, c := range core {
			got, err := apps(c)
			if err != nil {
				t.Fatal(err)
			}
			if n := len(only(got, "SITEA")) + len(only(got, "SITEB")); n < 2*perRelay-1 {
				t.Fatalf("%s: core %s holds %d site instances, want %d", what, c.name, n, 2*perRelay)
			}
			if m := scrape(t, c); sumMetric(m, "goreka_evictions_total") != 0 {
				t.Fatalf("%s: core %s evicted %v leases", what, c.name, sumMetric(m, "goreka_evictions_total"))
			}
		}
	}
	noEviction("on aggregated heartbeats")
	if m := scrape(t, r1); sumMetric(m, "goreka_relay_heartbeats_aggregated_total") < perRelay {
		t.Fatalf("relay1 aggregated %v heartbeats", sumMetric(m, "goreka_relay_heartbeats_aggregated_total"))
	}

	// A cancel at a relay: gone everywhere, no ghost.
	fleets[0].cancel("sitea-7")
	must(t, "DELETE", r1.base()+"/apps/SITEA/sitea-7", "", 200)
	waitUntil(t, "a cancel at a relay gone everywhere", 10*time.Second, func() (bool, string) {
		for _, n := range everywhere {
			got, err := apps(n)
			if err != nil || got["SITEA/sitea-7"] != "" {
				return false, fmt.Sprint(n.name, " still has it ", err)
			}
		}
		return true, ""
	})

	// Relay gone: kill -9 relay1. Its clients move on along their
	// defaultZone to relay2 and register there at the first 404.
	regsBefore := fleets[0].regs.Load()
	r1.kill()
	time.Sleep(4 * time.Second) // longer than a core lease: the window of the failover, not a timing assertion
	if fleets[0].regs.Load()-regsBefore < perRelay-1 {
		t.Fatalf("%d SITEA clients registered at relay2 after relay1 died, want %d", fleets[0].regs.Load()-regsBefore, perRelay-1)
	}
	noEviction("while the clients failed over")
	got, err := apps(r3)
	if err != nil || got["DEEP/deep-0"] != "UP" || got["SITEB/siteb-1"] != "UP" {
		t.Fatalf("relay3 without its upstream serves %d instances (DEEP/deep-0 %q, SITEB/siteb-1 %q), err %v", len(got), got["DEEP/deep-0"], got["SITEB/siteb-1"], err)
	}
	if m := scrape(t, r3); sumMetric(m, "goreka_relay_upstream_staleness_seconds") < 2 {
		t.Fatalf("relay3's staleness %v s after 4 s without its upstream", sumMetric(m, "goreka_relay_upstream_staleness_seconds"))
	}
}

// TestRelayUpstreamItselfIsRefused: a relay whose upstream is its own
// address does not start, and says which property is wrong.
func TestRelayUpstreamItselfIsRefused(t *testing.T) {
	t.Parallel()
	ip := "127.0.0.1"
	p := freePort(t, ip)
	code, _, stderr := runToExit(t, 30*time.Second, standaloneArgs(ip, p,
		"--goreka.relay.upstream=http://localhost:"+strconv.Itoa(p)+"/eureka/")...)
	if code != 2 || !strings.Contains(stderr, "goreka.relay.upstream") || !strings.Contains(stderr, "this server itself") {
		t.Fatalf("exit %d, stderr %s", code, stderr)
	}
	code, _, stderr = runToExit(t, 30*time.Second, standaloneArgs(ip, p, "--goreka.relay.read-only=true")...)
	if code != 2 || !strings.Contains(stderr, "goreka.relay.read-only") || !strings.Contains(stderr, "need goreka.relay.upstream") {
		t.Fatalf("read-only without upstream: exit %d, stderr %s", code, stderr)
	}
}
