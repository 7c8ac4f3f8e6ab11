package main

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
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

// TestRelaysInFrontOfACorePair runs a core pair of goreka nodes, two relays
// in front of it (each listing both core nodes, in another order) and a
// third-level relay in front of the first relay. Clients register and
// heartbeat at the relays only: every registration is seen at the core
// and at the other relays, the core keeps the leases on the relays'
// aggregated heartbeats alone (no eviction), the heartbeat requests
// reaching the core are at most 1/50 of the clients', and a cancel at a
// relay leaves no ghost anywhere. Then the first relay is killed (-9): its
// clients fail over to the other relay (their defaultZone lists both) and
// the core evicts none of them, while the third level, whose only upstream
// it was, keeps serving its own client and the last copy, marked stale.
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
	sites := map[*node]string{r1: "SITEA", r2: "SITEB"}
	for n, app := range sites {
		for i := range perRelay {
			register(t, n, app, fmt.Sprintf("%s-%d", strings.ToLower(app), i), 1, 3)
		}
	}
	register(t, r3, "DEEP", "deep-1", 1, 3)

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
	waitUntil(t, "a third-level registration everywhere", 10*time.Second, seen("DEEP/deep-1"))

	// Heartbeats: every client every 250 ms (four times its renewal rate:
	// more client heartbeats, the same relay intervals) for 6 s, at its own
	// relay only; the leases at the core (3 s) live on the relays' alone.
	before := heartbeatsAt(t, core[0]) + heartbeatsAt(t, core[1])
	clientBeats := 0
	var mu sync.Mutex
	for range 24 {
		var wg sync.WaitGroup
		for n, app := range sites {
			wg.Go(func() {
				for i := range perRelay {
					if code, err := heartbeat(n, app, fmt.Sprintf("%s-%d", strings.ToLower(app), i)); err != nil || code != 200 {
						t.Errorf("heartbeat at %s: %d %v", n.name, code, err)
						return
					}
					mu.Lock()
					clientBeats++
					mu.Unlock()
				}
			})
		}
		heartbeat(r3, "DEEP", "deep-1")
		wg.Wait()
		time.Sleep(250 * time.Millisecond) // the clients' pace, not a timing assertion
	}
	atCore := heartbeatsAt(t, core[0]) + heartbeatsAt(t, core[1]) - before
	t.Logf("heartbeats: %d from clients at the relays, %.0f requests at the core (1/%.0f)", clientBeats, atCore, float64(clientBeats)/atCore)
	if atCore*50 > float64(clientBeats) {
		t.Fatalf("%.0f heartbeat requests reached the core for %d client heartbeats: more than 1/50", atCore, clientBeats)
	}
	for _, c := range core {
		got, err := apps(c)
		if err != nil {
			t.Fatal(err)
		}
		if n := len(only(got, "SITEA")) + len(only(got, "SITEB")); n != 2*perRelay {
			t.Fatalf("core %s holds %d site instances after 6 s on aggregated heartbeats, want %d (evicted?)", c.name, n, 2*perRelay)
		}
		if m := scrape(t, c); sumMetric(m, "goreka_evictions_total") != 0 {
			t.Fatalf("core %s evicted %v leases", c.name, sumMetric(m, "goreka_evictions_total"))
		}
	}
	if m := scrape(t, r1); sumMetric(m, "goreka_relay_heartbeats_aggregated_total") < perRelay {
		t.Fatalf("relay1 aggregated %v heartbeats", sumMetric(m, "goreka_relay_heartbeats_aggregated_total"))
	}

	// A cancel at a relay: gone everywhere, no ghost.
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

	// Relay gone: kill -9 relay1. Its clients move to relay2 as a Java
	// client moves along its defaultZone: a heartbeat answered 404 there
	// registers.
	r1.kill()
	for range 16 {
		for i := range perRelay {
			id := fmt.Sprintf("sitea-%d", i)
			if i == 7 {
				continue // cancelled above
			}
			if code, err := heartbeat(r2, "SITEA", id); err == nil && code == 404 {
				register(t, r2, "SITEA", id, 1, 3)
			} else if err != nil || code != 200 {
				t.Fatalf("heartbeat of %s at relay2: %d %v", id, code, err)
			}
		}
		for i := range perRelay {
			heartbeat(r2, "SITEB", fmt.Sprintf("siteb-%d", i))
		}
		time.Sleep(250 * time.Millisecond) // the clients' pace
	}
	for _, c := range core {
		got, err := apps(c)
		if err != nil {
			t.Fatal(err)
		}
		if n := len(only(got, "SITEA")); n != perRelay-1 {
			t.Fatalf("core %s holds %d SITEA instances after relay1 died, want %d", c.name, n, perRelay-1)
		}
		if m := scrape(t, c); sumMetric(m, "goreka_evictions_total", "") != 0 {
			t.Fatalf("core %s evicted %v leases while the clients failed over", c.name, sumMetric(m, "goreka_evictions_total"))
		}
	}
	got, err := apps(r3)
	if err != nil || got["DEEP/deep-1"] != "UP" || got["SITEB/siteb-1"] != "UP" {
		t.Fatalf("relay3 without its upstream serves %d instances (DEEP/deep-1 %q, SITEB/siteb-1 %q), err %v", len(got), got["DEEP/deep-1"], got["SITEB/siteb-1"], err)
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
}
