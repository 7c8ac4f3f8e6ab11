package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
)

// scrapeCollector reads eviction, cache and replication state at scrape
// time: these components keep their own counters, so copying them on every
// change would only add work to the hot paths.
type scrapeCollector struct{ src Sources }

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, labels, nil)
}

var (
	descRenewsLastMinute  = desc("goreka_renews_last_minute", "Renewals received in the last full minute (Eureka's Renews (last min)).")
	descRenewsThreshold   = desc("goreka_renews_threshold", "Renewals per minute below which self-preservation starts (Eureka's Renews threshold).")
	descExpectedClients   = desc("goreka_expected_clients", "Expected number of clients sending renews.")
	descSelfPresEnabled   = desc("goreka_self_preservation_enabled", "1 if eureka.server.enable-self-preservation is on.")
	descSelfPresActive    = desc("goreka_self_preservation_active", "1 while self-preservation holds: lease expiration is disabled because renewals are below the threshold.")
	descLeaseExpiration   = desc("goreka_lease_expiration_enabled", "1 if expired leases are evicted.")
	descBelowThreshold    = desc("goreka_renews_below_threshold", "1 if renewals are below the threshold (the dashboard's red banner).")
	descHeldBack          = desc("goreka_evictions_held_back", "Expired leases the last eviction run did not evict (self-preservation or eviction limit).")
	descCacheHits         = desc("goreka_cache_hits_total", "Response cache reads answered without loading, by tier.", "tier")
	descCacheMisses       = desc("goreka_cache_misses_total", "Response cache loads (payload encodings).")
	descCacheShared       = desc("goreka_cache_shared_loads_total", "Response cache reads that waited for a load already running.")
	descCacheLoadErrors   = desc("goreka_cache_load_errors_total", "Response cache loads that failed.")
	descCacheInvalidate   = desc("goreka_cache_invalidations_total", "Response cache invalidations (one per registry change).")
	descCacheRebuilds     = desc("goreka_cache_rebuilds_total", "Refresh passes over the read-only cache tier.")
	descCacheRebuiltKeys  = desc("goreka_cache_rebuilt_keys_total", "Read-only cache entries replaced by refresh passes.")
	descCacheKeys         = desc("goreka_cache_keys", "Entries in the response cache, by tier.", "tier")
	descCacheDirty        = desc("goreka_cache_dirty_keys", "Read-only cache entries waiting for a rebuild.")
	descCachePayloadAge   = desc("goreka_cache_payload_age_seconds", "Age of the oldest payload the cache can serve without loading.")
	descCacheLastRebuild  = desc("goreka_cache_last_rebuild_seconds", "Duration of the last refresh pass.")
	descReplQueue         = desc("goreka_replication_queue_depth", "Replication tasks waiting for a peer.", "peer")
	descReplLag           = desc("goreka_replication_lag_seconds", "Age of the oldest replication task waiting for a peer.", "peer")
	descReplUp            = desc("goreka_replication_peer_up", "1 if the last batch to the peer succeeded and it is not backing off.", "peer")
	descReplBatches       = desc("goreka_replication_batches_total", "Replication batches a peer accepted.", "peer")
	descReplItems         = desc("goreka_replication_items_total", "Replication items sent in accepted batches.", "peer")
	descReplFailures      = desc("goreka_replication_failures_total", "Replication failures by kind: congestion, network, rejected, bad_response, item.", "peer", "kind")
	descReplDropped       = desc("goreka_replication_dropped_total", "Replication tasks dropped (queue full or not retryable).", "peer")
	descReplExpired       = desc("goreka_replication_expired_total", "Replication tasks that expired while queued.", "peer")
	descReplCoalesced     = desc("goreka_replication_coalesced_total", "Replication tasks replaced by a newer task for the same instance.", "peer")
	descReplLastSuccessTS = desc("goreka_replication_last_success_timestamp_seconds", "Unix time of the last batch a peer accepted; 0 if none.", "peer")
)

func (sc *scrapeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{
		descRenewsLastMinute, descRenewsThreshold, descExpectedClients, descSelfPresEnabled, descSelfPresActive,
		descLeaseExpiration, descBelowThreshold, descHeldBack,
		descCacheHits, descCacheMisses, descCacheShared, descCacheLoadErrors, descCacheInvalidate, descCacheRebuilds,
		descCacheRebuiltKeys, descCacheKeys, descCacheDirty, descCachePayloadAge, descCacheLastRebuild,
		descReplQueue, descReplLag, descReplUp, descReplBatches, descReplItems, descReplFailures, descReplDropped,
		descReplExpired, descReplCoalesced, descReplLastSuccessTS,
	} {
		ch <- d
	}
}

func bit(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func (sc *scrapeCollector) Collect(ch chan<- prometheus.Metric) {
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	if f := sc.src.Eviction; f != nil {
		s := f()
		gauge(descRenewsLastMinute, float64(s.RenewsLastMinute))
		gauge(descRenewsThreshold, float64(s.Threshold))
		gauge(descExpectedClients, float64(s.ExpectedClients))
		gauge(descSelfPresEnabled, bit(s.SelfPreservationEnabled))
		gauge(descSelfPresActive, bit(!s.ActiveSince.IsZero()))
		gauge(descLeaseExpiration, bit(s.LeaseExpirationEnabled))
		gauge(descBelowThreshold, bit(s.BelowThreshold))
		gauge(descHeldBack, float64(s.HeldBack))
	}
	if f := sc.src.Cache; f != nil {
		s := f()
		counter(descCacheHits, s.ReadOnlyHits, "read_only")
		counter(descCacheHits, s.Hits-s.ReadOnlyHits, "read_write")
		counter(descCacheMisses, s.Misses)
		counter(descCacheShared, s.SharedLoads)
		counter(descCacheLoadErrors, s.LoadErrors)
		counter(descCacheInvalidate, s.Invalidations)
		counter(descCacheRebuilds, s.Rebuilds)
		counter(descCacheRebuiltKeys, s.RebuiltKeys)
		gauge(descCacheKeys, float64(s.ReadOnlyKeys), "read_only")
		gauge(descCacheKeys, float64(s.ReadWriteKeys), "read_write")
		gauge(descCacheDirty, float64(s.DirtyKeys))
		gauge(descCachePayloadAge, seconds(s.OldestPayload))
		gauge(descCacheLastRebuild, seconds(s.LastRebuild))
	}
	if f := sc.src.Replication; f != nil {
		for _, p := range f() {
			gauge(descReplQueue, float64(p.QueueDepth), p.URL)
			gauge(descReplLag, seconds(p.Lag), p.URL)
			gauge(descReplUp, bit(p.State == "up"), p.URL)
			counter(descReplBatches, p.BatchesSent, p.URL)
			counter(descReplItems, p.ItemsSent, p.URL)
			counter(descReplFailures, p.Failures.Congestion, p.URL, "congestion")
			counter(descReplFailures, p.Failures.Network, p.URL, "network")
			counter(descReplFailures, p.Failures.Rejected, p.URL, "rejected")
			counter(descReplFailures, p.Failures.BadResponse, p.URL, "bad_response")
			counter(descReplFailures, p.Failures.Items, p.URL, "item")
			counter(descReplDropped, p.Dropped, p.URL)
			counter(descReplExpired, p.Expired, p.URL)
			counter(descReplCoalesced, p.Coalesced, p.URL)
			ts := 0.0
			if !p.LastSuccess.IsZero() {
				ts = float64(p.LastSuccess.UnixNano()) / 1e9
			}
			gauge(descReplLastSuccessTS, ts, p.URL)
		}
	}
}
