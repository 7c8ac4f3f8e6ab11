package health

import "github.com/prometheus/client_golang/prometheus"

// The monitor's state is read at scrape time: the lifecycle counts come
// from one registry scan per scrape (about a millisecond per 100k leases).
var (
	descLifecycle   = prometheus.NewDesc("goreka_instances_lifecycle", "Registered instances by lifecycle state (up, suspect: missed heartbeats; held: expired, kept; gone: removed in the last 15 min).", []string{"state"}, nil)
	descProbes      = prometheus.NewDesc("goreka_health_probes_total", "Health probes by result.", []string{"result"}, nil)
	descGuard       = prometheus.NewDesc("goreka_health_probe_guard_active", "1 while the probe guard holds: too many probes fail, goreka is not acting on them (the alert).", nil, nil)
	descFailing     = prometheus.NewDesc("goreka_health_probe_failing_ratio", "Failing share of the probes of the guard's window.", nil, nil)
	descEvicted     = prometheus.NewDesc("goreka_health_evictions_total", "Held leases evicted on probe evidence.", nil, nil)
	descDown        = prometheus.NewDesc("goreka_health_down_instances", "Instances served as DOWN by probe now.", nil, nil)
	descReports     = prometheus.NewDesc("goreka_health_reports_total", "Caller reports by outcome (accepted, rate-limited, coalesced).", []string{"outcome"}, nil)
	descGuardTrips  = prometheus.NewDesc("goreka_health_probe_guard_trips_total", "Times the probe guard tripped.", nil, nil)
	descProbeEnable = prometheus.NewDesc("goreka_health_probe_enabled", "1 if goreka.health.probe.enabled is on.", nil, nil)
)

type collector struct{ m *Monitor }

// Collector returns the Prometheus collector of m's state and of the
// instance lifecycle.
func (m *Monitor) Collector() prometheus.Collector { return collector{m} }

func (collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descLifecycle, descProbes, descGuard, descFailing, descEvicted, descDown,
		descReports, descGuardTrips, descProbeEnable} {
		ch <- d
	}
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	g := func(d *prometheus.Desc, t prometheus.ValueType, v float64, l ...string) {
		ch <- prometheus.MustNewConstMetric(d, t, v, l...)
	}
	lc := c.m.Lifecycle(0)
	for _, s := range States {
		g(descLifecycle, prometheus.GaugeValue, float64(lc.Counts[s]), string(s))
	}
	st := c.m.Status()
	for o := Healthy; o <= NotAllowed; o++ {
		g(descProbes, prometheus.CounterValue, float64(st.Counters.Probes[o]), o.String())
	}
	g(descGuard, prometheus.GaugeValue, bit(st.GuardActive))
	g(descFailing, prometheus.GaugeValue, st.FailingRatio)
	g(descEvicted, prometheus.CounterValue, float64(st.Counters.EvictedByProbe))
	g(descDown, prometheus.GaugeValue, float64(st.DownNow))
	g(descReports, prometheus.CounterValue, float64(st.Counters.Reports), "accepted")
	g(descReports, prometheus.CounterValue, float64(st.Counters.ReportsLimited), "rate-limited")
	g(descReports, prometheus.CounterValue, float64(st.Counters.ReportsCoalesced), "coalesced")
	g(descGuardTrips, prometheus.CounterValue, float64(st.Counters.GuardTrips))
	g(descProbeEnable, prometheus.GaugeValue, bit(st.Enabled))
}

func bit(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
