package region

import "github.com/prometheus/client_golang/prometheus"

// The regions' series are read at scrape time from Status.
var (
	descFailures  = regionDesc("goreka_remote_region_fetch_failures_total", "Failed fetches of a remote region's registry (the last good copy is kept).")
	descStaleness = regionDesc("goreka_remote_region_staleness_seconds", "Seconds since the last successful fetch of a remote region (since start while none succeeded): Eureka's secondsSinceLastSuccessfulRemoteFetch.")
	descInstances = regionDesc("goreka_remote_region_instances", "Instances in the copy of a remote region's registry.")
	descApps      = regionDesc("goreka_remote_region_applications", "Applications in the copy of a remote region's registry.")
	descReady     = regionDesc("goreka_remote_region_ready", "1 once a fetch of the region succeeded: reads with ?regions= are answered 403 while any region is 0.")
	descDeltas    = regionDesc("goreka_remote_region_deltas_total", "Deltas applied to a remote region's copy, by result: ok, or mismatch (the reconcile hash differed and the full registry was fetched).", "result")
)

func regionDesc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, append([]string{"region"}, labels...), nil)
}

// Collector returns the collector of the regions' series (label region).
func (s *Set) Collector() prometheus.Collector { return collector{s} }

type collector struct{ s *Set }

func (collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descFailures, descStaleness, descInstances, descApps, descReady, descDeltas} {
		ch <- d
	}
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	for _, r := range c.s.Remotes() {
		st := r.Status()
		since := st.LastSuccess
		if since.IsZero() {
			since = r.created
		}
		ready := 0.0
		if st.Ready {
			ready = 1
		}
		ch <- prometheus.MustNewConstMetric(descFailures, prometheus.CounterValue, float64(st.Failures), st.Name)
		ch <- prometheus.MustNewConstMetric(descStaleness, prometheus.GaugeValue, r.cfg.Now().Sub(since).Seconds(), st.Name)
		ch <- prometheus.MustNewConstMetric(descInstances, prometheus.GaugeValue, float64(st.Instances), st.Name)
		ch <- prometheus.MustNewConstMetric(descApps, prometheus.GaugeValue, float64(st.Apps), st.Name)
		ch <- prometheus.MustNewConstMetric(descReady, prometheus.GaugeValue, ready, st.Name)
		ch <- prometheus.MustNewConstMetric(descDeltas, prometheus.CounterValue, float64(st.DeltaSuccesses), st.Name, "ok")
		ch <- prometheus.MustNewConstMetric(descDeltas, prometheus.CounterValue, float64(st.DeltaMismatches), st.Name, "mismatch")
	}
}
