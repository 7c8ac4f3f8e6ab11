package replication

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/goreka/goreka/registry"
)

// TestCollector checks the per-peer series, names, help texts and labels
// included (dashboards and alerts use them), and that values follow their
// source from one scrape to the next.
func TestCollector(t *testing.T) {
	const peer = "http://peer1:8761/eureka/"
	peers := []PeerStatus{{URL: peer, State: "failing", QueueDepth: 42, InFlight: 3, Lag: 2 * time.Second,
		BatchesSent: 9, ItemsSent: 90, Dropped: 1, Expired: 2, Coalesced: 5, ResyncPending: 7, Resyncs: 11, Resynced: 4, LastSuccess: time.Unix(1_700_000_000, 500_000_000),
		Failures: Failures{Congestion: 1, Network: 4, Rejected: 2, BadResponse: 3, Items: 6}}}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(NewCollector(func() []PeerStatus { return peers }))

	type series struct {
		name, help string
		typ        dto.MetricType
		kind       string // the kind label, failures only
		v          float64
	}
	gauge, counter := dto.MetricType_GAUGE, dto.MetricType_COUNTER
	check := func(want []series) {
		t.Helper()
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		byName := map[string]*dto.MetricFamily{}
		for _, mf := range mfs {
			byName[mf.GetName()] = mf
		}
	next:
		for _, w := range want {
			mf := byName[w.name]
			if mf == nil {
				t.Errorf("%s: no such family", w.name)
				continue
			}
			if mf.GetHelp() != w.help || mf.GetType() != w.typ {
				t.Errorf("%s: help %q type %v, want %q %v", w.name, mf.GetHelp(), mf.GetType(), w.help, w.typ)
			}
			for _, m := range mf.GetMetric() {
				labels := map[string]string{}
				for _, lp := range m.GetLabel() {
					labels[lp.GetName()] = lp.GetValue()
				}
				if labels["peer"] != peer || labels["kind"] != w.kind || len(labels) != 1+min(len(w.kind), 1) {
					continue
				}
				got := m.GetGauge().GetValue() + m.GetCounter().GetValue()
				if got != w.v {
					t.Errorf("%s{kind=%q} = %v, want %v", w.name, w.kind, got, w.v)
				}
				continue next
			}
			t.Errorf("%s{peer=%q,kind=%q}: no such series in %v", w.name, peer, w.kind, mf.GetMetric())
		}
	}
	const inFlightHelp = "Replication batches sent to a peer and not answered yet (at most goreka.replication.max-batches-in-flight)."
	const failHelp = "Replication failures by kind: congestion, network, rejected, bad_response, item."
	check([]series{
		{"goreka_replication_queue_depth", "Replication tasks waiting for a peer.", gauge, "", 42},
		{"goreka_replication_lag_seconds", "Age of the oldest replication task waiting for a peer.", gauge, "", 2},
		{"goreka_replication_batches_in_flight", inFlightHelp, gauge, "", 3},
		{"goreka_replication_peer_up", "1 if the last batch to the peer succeeded and it is not backing off.", gauge, "", 0},
		{"goreka_replication_batches_total", "Replication batches a peer accepted.", counter, "", 9},
		{"goreka_replication_items_total", "Replication items sent in accepted batches.", counter, "", 90},
		{"goreka_replication_failures_total", failHelp, counter, "congestion", 1},
		{"goreka_replication_failures_total", failHelp, counter, "network", 4},
		{"goreka_replication_failures_total", failHelp, counter, "rejected", 2},
		{"goreka_replication_failures_total", failHelp, counter, "bad_response", 3},
		{"goreka_replication_failures_total", failHelp, counter, "item", 6},
		{"goreka_replication_dropped_total", "Replication tasks dropped: queue full with the resync marks at their bound (registry size plus the queue's), or a batch not retryable.", counter, "", 1},
		{"goreka_replication_resync_pending", "Instances marked for a resync of their current state because their tasks overflowed the queue.", gauge, "", 7},
		{"goreka_replication_resyncs_total", "Instances marked for a resync after a queue overflow.", counter, "", 11},
		{"goreka_replication_resynced_total", "Resyncs of an instance's current state taken into a batch.", counter, "", 4},
		{"goreka_replication_expired_total", "Replication tasks that expired while queued.", counter, "", 2},
		{"goreka_replication_coalesced_total", "Replication tasks folded into the same instance's last pending task of the same action (repeated heartbeats, registers, cancels).", counter, "", 5},
		{"goreka_replication_last_success_timestamp_seconds", "Unix time of the last batch a peer accepted; 0 if none.", gauge, "", 1_700_000_000.5},
	})

	peers[0].QueueDepth, peers[0].State, peers[0].LastSuccess, peers[0].InFlight = 0, "up", time.Time{}, 0
	check([]series{
		{"goreka_replication_batches_in_flight", inFlightHelp, gauge, "", 0},
		{"goreka_replication_queue_depth", "Replication tasks waiting for a peer.", gauge, "", 0},
		{"goreka_replication_peer_up", "1 if the last batch to the peer succeeded and it is not backing off.", gauge, "", 1},
		{"goreka_replication_last_success_timestamp_seconds", "Unix time of the last batch a peer accepted; 0 if none.", gauge, "", 0},
	})
}

// TestReplicatorCollector reads a real Replicator's peers: one series set
// per peer, labelled with its scrubbed URL.
func TestReplicatorCollector(t *testing.T) {
	p, err := ParsePeer("http://user:secret@peer1:8761/eureka/")
	if err != nil {
		t.Fatal(err)
	}
	r := New(Default(), registry.New(registry.Options{}), []Peer{p})
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(r.Collector())
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "goreka_replication_queue_depth" {
			continue
		}
		if len(mf.GetMetric()) != 1 || mf.GetMetric()[0].GetLabel()[0].GetValue() != r.Status()[0].URL {
			t.Fatalf("queue depth series %v, want one for %q", mf.GetMetric(), r.Status()[0].URL)
		}
		return
	}
	t.Fatal("no goreka_replication_queue_depth family")
}
