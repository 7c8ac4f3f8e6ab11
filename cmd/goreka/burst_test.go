package main

import (
	"fmt"
	"maps"
	"testing"
	"time"
)

// TestClusterBurstBeyondTheQueueConverges: a burst of changes on A many
// times larger than A's replication queue for B (a restart storm against
// max-elements-in-peer-replication-pool) must still leave B holding exactly
// what A holds, with no client heartbeating to repair it (Eureka's queue
// drops the oldest tasks; the peer learns of a lost registration only from
// a heartbeat's 404, and of a lost cancel never).
func TestClusterBurstBeyondTheQueueConverges(t *testing.T) {
	if testing.Short() {
		t.Skip("starts goreka processes")
	}
	t.Parallel()
	p1, p2 := freePort(t, "127.0.0.1"), freePort(t, "127.0.0.1")
	for p2 == p1 {
		p2 = freePort(t, "127.0.0.1")
	}
	const pool, n = 50, 2000
	nodes := clCluster(t, []string{"127.0.0.1", "127.0.0.1"}, []int{p1, p2}, true,
		fmt.Sprintf("--eureka.server.max-elements-in-peer-replication-pool=%d", pool))
	a, b := nodes[0], nodes[1]
	ids := fltIDs("burst", n)
	var l fltLoad
	start := time.Now()
	l.run(ids, 16, fltRegister(a), 204)
	var cancelled []string
	for i := 0; i < n; i += 10 {
		cancelled = append(cancelled, ids[i])
	}
	l.run(cancelled, 16, func(id string) (int, error) {
		code, _, err := do("DELETE", a.base()+"/apps/"+fltApp+"/"+id, "")
		return code, err
	}, 200)
	if len(l.errors) > 0 {
		t.Fatalf("burst requests failed: %v", l.errors[:min(len(l.errors), 5)])
	}
	t.Logf("measured: %d registrations and %d cancels on A in %v", n, len(cancelled), time.Since(start).Round(time.Millisecond))
	want, _ := appInstances(a, fltApp)
	if len(want) != n-len(cancelled) {
		t.Fatalf("A holds %d instances, want %d", len(want), n-len(cancelled))
	}
	waitUntil(t, "B holds exactly what A holds", 2*clDeadline, func() (bool, string) {
		got, code := appInstances(b, fltApp)
		return maps.Equal(got, want), fmt.Sprintf("status %d, B holds %d of A's %d", code, len(got), len(want))
	})
	t.Logf("measured: B equal to A %v after the burst began", time.Since(start).Round(time.Millisecond))
	m := scrape(t, a)
	peer := b.url()
	resyncs, dropped := m[`goreka_replication_resyncs_total{namespace="default",peer="`+peer+`"}`], m[`goreka_replication_dropped_total{namespace="default",peer="`+peer+`"}`]
	t.Logf("measured: A's queue for B (bound %d): %v instances resynced, %v tasks dropped", pool, resyncs, dropped)
	if resyncs == 0 {
		t.Errorf("the burst never overflowed A's queue of %d: the test proves nothing", pool)
	}
	if dropped != 0 {
		t.Errorf("A dropped %v tasks for B", dropped)
	}
}
