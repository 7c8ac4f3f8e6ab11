package eviction

import "github.com/prometheus/client_golang/prometheus"

// The self-preservation state is read at scrape time, from Status: the
// Evictor and the registry keep their own counters, and copying them into
// gauges on every change would only add work to the heartbeat path. The
// collector lives here, next to the state it reads, so that the HTTP layer
// that serves /metrics needs no import of this package.
var (
	descRenewsLastMinute = prometheus.NewDesc("goreka_renews_last_minute", "Renewals received in the last full minute (Eureka's Renews (last min)).", nil, nil)
	descRenewsThreshold  = prometheus.NewDesc("goreka_renews_threshold", "Renewals per minute below which self-preservation starts (Eureka's Renews threshold).", nil, nil)
	descExpectedClients  = prometheus.NewDesc("goreka_expected_clients", "Expected number of clients sending renews.", nil, nil)
	descSelfPresEnabled  = prometheus.NewDesc("goreka_self_preservation_enabled", "1 if eureka.server.enable-self-preservation is on.", nil, nil)
	descSelfPresActive   = prometheus.NewDesc("goreka_self_preservation_active", "1 while self-preservation holds: lease expiration is disabled because renewals are below the threshold.", nil, nil)
	descLeaseExpiration  = prometheus.NewDesc("goreka_lease_expiration_enabled", "1 if expired leases are evicted.", nil, nil)
	descBelowThreshold   = prometheus.NewDesc("goreka_renews_below_threshold", "1 if renewals are below the threshold (the dashboard's red banner).", nil, nil)
	descHeldBack         = prometheus.NewDesc("goreka_evictions_held_back", "Expired leases the last eviction run did not evict (self-preservation or eviction limit).", nil, nil)
)

// collector exposes a Status func as gauges.
type collector struct{ status func() Status }

// NewCollector returns a Prometheus collector of the self-preservation
// gauges, calling status once per scrape.
func NewCollector(status func() Status) prometheus.Collector { return collector{status} }

// Collector returns the collector of e's self-preservation state.
func (e *Evictor) Collector() prometheus.Collector { return NewCollector(e.Status) }

func (collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descRenewsLastMinute, descRenewsThreshold, descExpectedClients,
		descSelfPresEnabled, descSelfPresActive, descLeaseExpiration, descBelowThreshold, descHeldBack} {
		ch <- d
	}
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	gauge := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v)
	}
	s := c.status()
	gauge(descRenewsLastMinute, float64(s.RenewsLastMinute))
	gauge(descRenewsThreshold, float64(s.Threshold))
	gauge(descExpectedClients, float64(s.ExpectedClients))
	gauge(descSelfPresEnabled, bit(s.SelfPreservationEnabled))
	gauge(descSelfPresActive, bit(!s.ActiveSince.IsZero()))
	gauge(descLeaseExpiration, bit(s.LeaseExpirationEnabled))
	gauge(descBelowThreshold, bit(s.BelowThreshold))
	gauge(descHeldBack, float64(s.HeldBack))
}

func bit(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
