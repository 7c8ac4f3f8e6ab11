package kube

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the bridge's series, one set per process, shared by both
// directions: the importer sets ImportedInstances and counts SyncErrors,
// the exporter sets ExportedServices and Leader and counts APIWrites (and
// SyncErrors). Register Collector once.
type Metrics struct {
	ImportedInstances prometheus.Gauge
	ExportedServices  prometheus.Gauge
	APIWrites         *prometheus.CounterVec // labels verb (create, update, delete), resource (services, endpointslices, endpoints)
	SyncErrors        prometheus.Counter
	Leader            prometheus.Gauge
}

// NewMetrics returns a fresh, unregistered set.
func NewMetrics() *Metrics {
	return &Metrics{
		ImportedInstances: prometheus.NewGauge(prometheus.GaugeOpts{Name: "goreka_kubernetes_imported_instances",
			Help: "Instances imported from Kubernetes EndpointSlices (goreka.kubernetes.import), in all goreka namespaces."}),
		ExportedServices: prometheus.NewGauge(prometheus.GaugeOpts{Name: "goreka_kubernetes_exported_services",
			Help: "Eureka applications written to Kubernetes as Services (goreka.kubernetes.export)."}),
		APIWrites: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "goreka_kubernetes_api_writes_total",
			Help: "Writes goreka made to the Kubernetes API server, by verb and resource."}, []string{"verb", "resource"}),
		SyncErrors: prometheus.NewCounter(prometheus.CounterOpts{Name: "goreka_kubernetes_sync_errors_total",
			Help: "Failed Kubernetes API calls and refused objects (name collisions, invalid slices) of the bridge."}),
		Leader: prometheus.NewGauge(prometheus.GaugeOpts{Name: "goreka_kubernetes_leader",
			Help: "1 while this node holds the export Lease (the one node of a peer group that writes to Kubernetes)."}),
	}
}

// Collector is the set as one prometheus.Collector.
func (m *Metrics) Collector() prometheus.Collector { return collector{m} }

type collector struct{ m *Metrics }

func (c collector) cs() []prometheus.Collector {
	return []prometheus.Collector{c.m.ImportedInstances, c.m.ExportedServices, c.m.APIWrites, c.m.SyncErrors, c.m.Leader}
}

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	for _, x := range c.cs() {
		x.Describe(ch)
	}
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	for _, x := range c.cs() {
		x.Collect(ch)
	}
}
