package replication

import "github.com/prometheus/client_golang/prometheus"

// The peers' queues and counters are read at scrape time, from Status: the
// senders keep their own counters, and copying them into Prometheus series
// on every batch would only add work to replication. The collector lives
// here, next to the state it reads, so that the HTTP layer that serves
// /metrics needs no import of this package.
var (
	descQueue         = peerDesc("goreka_replication_queue_depth", "Replication tasks waiting for a peer.")
	descQueueCap      = peerDesc("goreka_replication_queue_capacity", "Bound of a peer's replication queue (max-elements-in-peer-replication-pool); beyond it, the oldest task's instance is marked for a resync.")
	descInFlight      = peerDesc("goreka_replication_batches_in_flight", "Replication batches sent to a peer and not answered yet (at most goreka.replication.max-batches-in-flight).")
	descLag           = peerDesc("goreka_replication_lag_seconds", "Age of the oldest replication task waiting for a peer.")
	descUp            = peerDesc("goreka_replication_peer_up", "1 if the last batch to the peer succeeded and it is not backing off.")
	descAvailable     = peerDesc("goreka_replication_peer_available", "1 if the last batch or idle probe sent to the peer succeeded: the status page's available-replicas.")
	descBatches       = peerDesc("goreka_replication_batches_total", "Replication batches a peer accepted.")
	descItems         = peerDesc("goreka_replication_items_total", "Replication items sent in accepted batches.")
	descFailures      = peerDesc("goreka_replication_failures_total", "Replication failures by kind: congestion, network, rejected, bad_response, item.", "kind")
	descDropped       = peerDesc("goreka_replication_dropped_total", "Replication tasks dropped: queue full with the resync marks at their bound (registry size plus the queue's), or a batch not retryable.")
	descResyncPending = peerDesc("goreka_replication_resync_pending", "Instances marked for a resync of their current state because their tasks overflowed the queue.")
	descResyncs       = peerDesc("goreka_replication_resyncs_total", "Instances marked for a resync after a queue overflow.")
	descResynced      = peerDesc("goreka_replication_resynced_total", "Resyncs of an instance's current state taken into a batch.")
	descExpired       = peerDesc("goreka_replication_expired_total", "Replication tasks that expired while queued.")
	descCoalesced     = peerDesc("goreka_replication_coalesced_total", "Replication tasks folded into the same instance's last pending task of the same action (repeated heartbeats, registers, cancels).")
	descLastSuccessTS = peerDesc("goreka_replication_last_success_timestamp_seconds", "Unix time of the last batch a peer accepted; 0 if none.")

	descPeers       = prometheus.NewDesc("goreka_replication_peers", "Peers this server replicates to.", nil, nil)
	descPeerChanges = prometheus.NewDesc("goreka_replication_peer_changes_total", "Peers added to or removed from the peer set while running.", []string{"change"}, nil)
)

func peerDesc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, append([]string{"peer"}, labels...), nil)
}

// collector exposes a Status func as per-peer series, and the peer count.
type collector struct {
	status   func() []PeerStatus
	capacity int                            // queue bound; 0: not reported
	changes  func() (added, removed uint64) // nil: no change counters
}

// NewCollector returns a Prometheus collector of the per-peer replication
// series (label peer, the scrubbed URL) and the peer count, calling status
// once per scrape.
func NewCollector(status func() []PeerStatus) prometheus.Collector {
	return collector{status: status}
}

// Collector returns the collector of r's peers, with the counters of peer
// set changes.
func (r *Replicator) Collector() prometheus.Collector {
	return collector{status: r.Status, changes: r.PeerChanges, capacity: r.cfg.MaxElementsInPeerReplicationPool}
}

func (collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descQueue, descLag, descUp, descBatches, descItems, descFailures,
		descDropped, descResyncPending, descResyncs, descResynced, descExpired, descCoalesced, descLastSuccessTS, descPeers, descPeerChanges, descQueueCap, descAvailable, descInFlight} {
		ch <- d
	}
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	peers := c.status()
	gauge(descPeers, float64(len(peers)))
	if c.changes != nil {
		added, removed := c.changes()
		counter(descPeerChanges, added, "added")
		counter(descPeerChanges, removed, "removed")
	}
	for _, p := range peers {
		up := 0.0
		if p.State == "up" {
			up = 1
		}
		gauge(descQueue, float64(p.QueueDepth), p.URL)
		if c.capacity > 0 {
			gauge(descQueueCap, float64(c.capacity), p.URL)
		}
		gauge(descInFlight, float64(p.InFlight), p.URL)
		gauge(descLag, p.Lag.Seconds(), p.URL)
		gauge(descUp, up, p.URL)
		avail := 0.0
		if p.Available {
			avail = 1
		}
		gauge(descAvailable, avail, p.URL)
		counter(descBatches, p.BatchesSent, p.URL)
		counter(descItems, p.ItemsSent, p.URL)
		counter(descFailures, p.Failures.Congestion, p.URL, "congestion")
		counter(descFailures, p.Failures.Network, p.URL, "network")
		counter(descFailures, p.Failures.Rejected, p.URL, "rejected")
		counter(descFailures, p.Failures.BadResponse, p.URL, "bad_response")
		counter(descFailures, p.Failures.Items, p.URL, "item")
		counter(descDropped, p.Dropped, p.URL)
		gauge(descResyncPending, float64(p.ResyncPending), p.URL)
		counter(descResyncs, p.Resyncs, p.URL)
		counter(descResynced, p.Resynced, p.URL)
		counter(descExpired, p.Expired, p.URL)
		counter(descCoalesced, p.Coalesced, p.URL)
		ts := 0.0
		if !p.LastSuccess.IsZero() {
			ts = float64(p.LastSuccess.UnixNano()) / 1e9
		}
		gauge(descLastSuccessTS, ts, p.URL)
	}
}
