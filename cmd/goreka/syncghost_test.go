package main

import (
	"fmt"
	"strings"
	"testing"
)

// cacheMetric is the sum of n's series of name in namespace ns.
func cacheMetric(t *testing.T, n *node, name, ns string) float64 {
	t.Helper()
	sum := 0.0
	for k, v := range scrape(t, n) {
		if strings.HasPrefix(k, name+"{") && strings.Contains(k, `namespace="`+ns+`"`) {
			sum += v
		}
	}
	return sum
}

// A joining node's start-up sync copies the peer's registry as it is, not
// the peer's cached document: here that document is an older revision
// still holding a cancelled instance (kept unread and dirty, served at once
// to a reader while its rebuild runs), which the sync would copy as a
// ghost. TestNamespacesReplicatePerNamespace's shape, in a namespace.
func TestJoinSyncCopiesNoGhostOfACachedDocument(t *testing.T) {
	ips := []string{"127.0.0.1", "127.0.0.1"}
	ports := []int{freePort(t, "127.0.0.1"), 0}
	ports[1] = freePort(t, "127.0.0.1")
	for ports[1] == ports[0] {
		ports[1] = freePort(t, "127.0.0.1")
	}
	nodes := clCluster(t, ips, ports, false, "--goreka.namespaces.allowed=dev")
	a, b := nodes[0], nodes[1]
	b.stop()
	nsRegister(t, a, "dev", "ORDERS", "o-1")
	nsRegister(t, a, "dev", "ORDERS", "o-2")
	nsDoc(t, a, "dev", "/apps") // read: A's cache holds the full document
	rebuilt := cacheMetric(t, a, "goreka_cache_rebuilt_keys_total", "dev")
	nsRegister(t, a, "dev", "ORDERS", "o-3")
	// Rebuilt for that reader; nobody has read the new copy.
	waitUntil(t, "A's dev document rebuilt after o-3", clDeadline, func() (bool, string) {
		r, d := cacheMetric(t, a, "goreka_cache_rebuilt_keys_total", "dev"), cacheMetric(t, a, "goreka_cache_dirty_keys", "dev")
		return r > rebuilt && d == 0, fmt.Sprint("rebuilt ", r, " dirty ", d)
	})
	must(t, "DELETE", nsBase(a, "dev")+"/apps/ORDERS/o-1", "", 200)
	// Unread, the document is kept as it was (o-1 included) and stays dirty.
	waitUntil(t, "A's dev document kept dirty", clDeadline, func() (bool, string) {
		d := cacheMetric(t, a, "goreka_cache_dirty_keys", "dev")
		return d >= 1, fmt.Sprint("dirty ", d)
	})

	b.start()
	b.waitServing()
	if d, _ := nsDoc(t, b, "dev", "/apps"); !sameKeys(d, "ORDERS/o-2", "ORDERS/o-3") {
		t.Fatalf("B copied %v, want ORDERS/o-2 and ORDERS/o-3 (o-1 was cancelled before B joined)", d)
	}
	// The setup held: A's cached document was the older revision while B
	// synced (its first reader gets that copy at once).
	if d, _ := nsDoc(t, a, "dev", "/apps"); !sameKeys(d, "ORDERS/o-1", "ORDERS/o-2", "ORDERS/o-3") {
		t.Logf("A's cached document was no longer the older revision: %v", d)
	}
}
