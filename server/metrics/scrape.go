package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
)

// scrapeCollector reads the response cache's state and the registry's
// instance counts at scrape time: both keep their own counters, so copying them on every change would only
// add work to the hot paths. The eviction and replication collectors live in
// their own packages (Evictor.Collector, Replicator.Collector) and are added
// with MustRegister, so that this package, imported by server, imports
// neither.
type scrapeCollector struct{ src Sources }

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, labels, nil)
}

var (
	descCacheHits        = desc("goreka_cache_hits_total", "Response cache reads answered without loading, by tier.", "tier")
	descCacheMisses      = desc("goreka_cache_misses_total", "Response cache loads (payload encodings).")
	descCacheShared      = desc("goreka_cache_shared_loads_total", "Response cache reads that waited for a load already running.")
	descCacheLoadErrors  = desc("goreka_cache_load_errors_total", "Response cache loads that failed.")
	descCacheInvalidate  = desc("goreka_cache_invalidations_total", "Response cache invalidations (one per registry change).")
	descCacheRebuilds    = desc("goreka_cache_rebuilds_total", "Refresh passes over the read-only cache tier.")
	descCacheRebuiltKeys = desc("goreka_cache_rebuilt_keys_total", "Read-only cache entries replaced by refresh passes.")
	descCacheUnread      = desc("goreka_cache_unread_dropped_total", "Read-only cache entries a refresh pass removed instead of rebuilding, because nothing had read them since they were built.")
	descCacheKeys        = desc("goreka_cache_keys", "Entries in the response cache, by tier.", "tier")
	descCacheDirty       = desc("goreka_cache_dirty_keys", "Read-only cache entries waiting for a rebuild.")
	descCachePayloadAge  = desc("goreka_cache_payload_age_seconds", "Age of the oldest payload the cache can serve without loading.")
	descInstances        = desc("eureka_server_instances", "Registered instances by application and status (Spring Cloud Netflix's eureka.server.instances).", "application", "status")
	descCacheLastRebuild = desc("goreka_cache_last_rebuild_seconds", "Duration of the last refresh pass.")
)

func (sc *scrapeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{
		descCacheHits, descCacheMisses, descCacheShared, descCacheLoadErrors, descCacheInvalidate, descCacheRebuilds,
		descCacheRebuiltKeys, descCacheUnread, descCacheKeys, descCacheDirty, descCachePayloadAge, descCacheLastRebuild,
		descInstances,
	} {
		ch <- d
	}
}

func (sc *scrapeCollector) Collect(ch chan<- prometheus.Metric) {
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	if f := sc.src.Instances; f != nil {
		for _, c := range f() {
			gauge(descInstances, float64(c.Count), c.App, string(c.Status))
		}
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
		counter(descCacheUnread, s.UnreadDropped)
		gauge(descCacheKeys, float64(s.ReadOnlyKeys), "read_only")
		gauge(descCacheKeys, float64(s.ReadWriteKeys), "read_write")
		gauge(descCacheDirty, float64(s.DirtyKeys))
		gauge(descCachePayloadAge, seconds(s.OldestPayload))
		gauge(descCacheLastRebuild, seconds(s.LastRebuild))
	}
}
