package main

// Process tests of peers found in DNS (issue 17): a DNS server inside the
// test serves the peers' name; goreka processes on 127.0.0.2-5 share one
// port and find each other through it, with the cluster tests' process
// helpers (clNode, clWait, ... in cluster_test.go).

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/goreka/goreka/discovery/dnstest"
)

// dnsPeerMode is one way of publishing the peers in DNS.
type dnsPeerMode struct {
	args    func(dnsAddr string) []string
	publish func(s *dnstest.Server, ips []string)
}

func TestDNSPeersHeadless(t *testing.T) {
	testDNSPeers(t, dnsPeerMode{
		args: func(addr string) []string {
			return []string{"--goreka.peers.dns-name=goreka-headless.ns.svc.cluster.local", "--goreka.peers.dns-server=" + addr}
		},
		publish: func(s *dnstest.Server, ips []string) { s.SetA("goreka-headless.ns.svc.cluster.local", ips...) },
	})
}

// Eureka's DNS mode: txt.{region}.{name} lists the zone, txt.{zone name}
// the servers.
func TestDNSPeersEurekaTXT(t *testing.T) {
	testDNSPeers(t, dnsPeerMode{
		args: func(addr string) []string {
			return []string{"--eureka.client.use-dns-for-fetching-service-urls=true", "--eureka.client.eureka-server-d-n-s-name=goreka.test",
				"--eureka.client.region=us-east-1", "--goreka.peers.dns-server=" + addr}
		},
		publish: func(s *dnstest.Server, ips []string) {
			s.SetTXT("txt.us-east-1.goreka.test", "us-east-1a.goreka.test")
			s.SetTXT("txt.us-east-1a.goreka.test", strings.Join(ips, " "))
		},
	})
}

func testDNSPeers(t *testing.T, mode dnsPeerMode) {
	if testing.Short() {
		t.Skip("process test")
	}
	ips := []string{"127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5"}
	port := freePort(t, ips...)
	dns := dnstest.New(t)
	mode.publish(dns, ips[:3])
	var nodes []*node
	for i, ip := range ips {
		args := append([]string{
			"--server.port=" + strconv.Itoa(port),
			"--server.address=" + ip,
			"--eureka.instance.hostname=" + ip,
			"--eureka.instance.ip-address=" + ip,
			"--goreka.peers.refresh-interval=200ms",
			"--eureka.server.enable-self-preservation=false",
			"--eureka.instance.lease-renewal-interval-in-seconds=1",
			"--eureka.server.peer-node-read-timeout-ms=1000",
		}, mode.args(dns.Addr)...)
		nodes = append(nodes, processNode(t, string(rune('A'+i)), ip, port, args...))
	}
	a, b, c, d := nodes[0], nodes[1], nodes[2], nodes[3]
	peerURL := func(n *node) string { return n.url() }
	// peersOf waits until n replicates to exactly want (by its metrics) and
	// registers with them (they list it as EUREKA-SERVER).
	peersOf := func(n *node, want ...*node) {
		t.Helper()
		waitUntil(t, "node "+n.name+" replicates to its DNS peers", clDeadline, func() (bool, string) {
			m := scrape(t, n)
			var got []string
			for k := range m {
				if s, ok := strings.CutPrefix(k, `goreka_replication_queue_depth{namespace="default",peer="`); ok {
					got = append(got, strings.TrimSuffix(s, `"}`))
				}
			}
			var exp []string
			for _, w := range want {
				exp = append(exp, peerURL(w))
			}
			slices.Sort(got)
			slices.Sort(exp)
			return slices.Equal(got, exp) && m[`goreka_replication_peers{namespace="default"}`] == float64(len(want)), fmt.Sprintf("peers %q", got)
		})
	}
	visible := func(what, app, id string, on ...*node) {
		t.Helper()
		clVisible(t, what, time.Now(), 0, on, clHas(app+"/"+id, "UP"), app)
	}

	for _, n := range nodes[:3] {
		n.start()
	}
	peersOf(a, b, c)
	peersOf(b, a, c)
	peersOf(c, a, b)
	for _, n := range nodes[:3] {
		visible("the other servers' self-registrations on "+n.name, "EUREKA-SERVER", clOthers(nodes[:3], n)[0].ip+":eureka-server:"+strconv.Itoa(port), n)
	}
	register(t, a, "ORDERS", "o1", 30, 600)
	visible("o1", "ORDERS", "o1", b, c)

	// A fourth node joins through DNS: the others add it, it syncs at start.
	mode.publish(dns, ips)
	d.start()
	peersOf(a, b, c, d)
	peersOf(d, a, b, c)
	visible("o1 on the new node", "ORDERS", "o1", d)
	register(t, d, "ORDERS", "o2", 30, 600)
	visible("o2 from the new node", "ORDERS", "o2", a, b, c)
	register(t, b, "ORDERS", "o3", 30, 600)
	visible("o3 to the new node", "ORDERS", "o3", a, c, d)

	// C leaves DNS and stops: the others drop it and its queue.
	mode.publish(dns, []string{a.ip, b.ip, d.ip})
	c.kill()
	register(t, a, "ORDERS", "o4", 30, 600)
	peersOf(a, b, d)
	peersOf(b, a, d)
	peersOf(d, a, b)
	visible("o4 while c leaves", "ORDERS", "o4", b, d)
	register(t, b, "ORDERS", "o5", 30, 600)
	for _, n := range []*node{a, b, d} {
		visible("every registration on "+n.name, "ORDERS", "o5", n)
		for _, id := range []string{"o1", "o2", "o3", "o4"} {
			if ids, _ := appInstances(n, "ORDERS"); ids["ORDERS/"+id] != "UP" {
				t.Errorf("node %s misses %s: %v", n.name, id, ids)
			}
		}
		if l := n.logs().String(); n != d && !strings.Contains(l, `msg="peer removed" component=replication peer=`+c.url()) {
			t.Errorf("node %s did not log the removal of %s", n.name, c.url())
		}
		// Its status page lists the live peers as available by their
		// replication health.
		waitUntil(t, "node "+n.name+" lists its peers as available replicas", clDeadline, func() (bool, string) {
			_, body, _ := do("GET", n.base()+"/status", "")
			s := string(body)
			ok := !strings.Contains(s, c.url())
			for _, o := range []*node{a, b, d} {
				if o != n {
					ok = ok && strings.Contains(s, o.url())
				}
			}
			return ok && strings.Contains(s, `"available-replicas"`), s
		})
	}
	_, body, _ := do("GET", a.base()+"/status", "")
	if !strings.Contains(string(body), `"unavailable-replicas":""`) {
		t.Errorf("node A's status lists unavailable replicas: %s", body)
	}
}

// The configuration file's service URLs are read again on SIGHUP and every
// eureka.server.peer-eureka-nodes-update-interval-ms: a peer added to the
// file is replicated to without a restart, one removed is dropped.
func TestConfigFilePeersReload(t *testing.T) {
	if testing.Short() {
		t.Skip("process test")
	}
	ips := []string{"127.0.0.2", "127.0.0.3"}
	port := freePort(t, ips...)
	file := filepath.Join(t.TempDir(), "application.yml")
	write := func(peers string) {
		t.Helper()
		y := "eureka:\n  server:\n    peer-eureka-nodes-update-interval-ms: 600000\n"
		if peers != "" {
			y += "  client:\n    service-url:\n      defaultZone: " + peers + "\n"
		}
		if err := os.WriteFile(file, []byte(y), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("")
	mk := func(i int, extra ...string) *node {
		ip := ips[i]
		args := append([]string{"--server.port=" + strconv.Itoa(port), "--server.address=" + ip,
			"--eureka.instance.hostname=" + ip, "--eureka.instance.ip-address=" + ip}, extra...)
		return processNode(t, string(rune('A'+i)), ip, port, args...)
	}
	a := mk(0, "--spring.config.location="+file)
	b := mk(1)
	b.args = append(b.args, "--eureka.client.service-url.defaultZone="+a.url())
	a.start()
	b.start()
	peers := func(n *node) float64 { return scrape(t, n)[`goreka_replication_peers{namespace="default"}`] }
	waitUntil(t, "A starts without peers, B with A", clDeadline, func() (bool, string) {
		return peers(a) == 0 && peers(b) == 1, fmt.Sprint(peers(a), peers(b))
	})
	write(b.url())
	a.signal(syscall.SIGHUP)
	waitUntil(t, "A replicates to B after SIGHUP", clDeadline, func() (bool, string) {
		m := scrape(t, a)
		_, ok := m[`goreka_replication_queue_depth{namespace="default",peer="`+b.url()+`"}`]
		return ok && m[`goreka_replication_peers{namespace="default"}`] == 1, fmt.Sprint(m[`goreka_replication_peers{namespace="default"}`])
	})
	register(t, a, "ORDERS", "o1", 30, 600)
	clVisible(t, "o1 from A", time.Now(), 0, []*node{b}, clHas("ORDERS/o1", "UP"), "ORDERS")
	if !a.alive() {
		t.Fatal("SIGHUP stopped the server")
	}
	// An unreadable file keeps the peers (and says why).
	if err := os.WriteFile(file, []byte("eureka: [\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	a.signal(syscall.SIGHUP)
	waitUntil(t, "A logs the bad file", clDeadline, func() (bool, string) {
		return strings.Contains(a.logs().String(), "peer source failing"), ""
	})
	if peers(a) != 1 {
		t.Error("a bad file dropped the peers")
	}
	write("")
	a.signal(syscall.SIGHUP)
	waitUntil(t, "A drops B after SIGHUP", clDeadline, func() (bool, string) { return peers(a) == 0, fmt.Sprint(peers(a)) })
}
