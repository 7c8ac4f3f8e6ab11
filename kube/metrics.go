package kube

import (
	"fmt"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

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

	// importing and exporting are set by the importer and the exporter
	// they are given to (ServeImport, ServeExport): the dashboard shows a
	// row per direction that runs.
	importing, exporting atomic.Bool
}

// ServeImport marks the set as an importer's (importer.New calls it).
func (m *Metrics) ServeImport() { m.importing.Store(true) }

// ServeExport marks the set as an exporter's (export.New calls it).
func (m *Metrics) ServeExport() { m.exporting.Store(true) }

// DashboardRows are the dashboard's General Info rows of the bridge: one per
// direction that runs (none when the bridge is off or m is nil), read from
// the same series as /metrics, so the page and the scrape never disagree.
func (m *Metrics) DashboardRows() [][2]string {
	if m == nil {
		return nil
	}
	var rows [][2]string
	if m.importing.Load() {
		rows = append(rows, [2]string{"kubernetes import", fmt.Sprintf("%d instances from EndpointSlices (lease-less, source=kubernetes)", int64(value(m.ImportedInstances)))})
	}
	if m.exporting.Load() {
		// Not "another node holds it": with the API server away nobody may.
		role := "standby: not holding the export Lease"
		if value(m.Leader) == 1 {
			role = fmt.Sprintf("leader: %d applications written as Services and EndpointSlices", int64(value(m.ExportedServices)))
		}
		rows = append(rows, [2]string{"kubernetes export", role})
	}
	if len(rows) > 0 {
		var writes float64
		ch := make(chan prometheus.Metric, 16)
		go func() { m.APIWrites.Collect(ch); close(ch) }()
		for x := range ch {
			writes += value(x)
		}
		rows = append(rows, [2]string{"kubernetes API", fmt.Sprintf("%d writes, %d sync errors (goreka_kubernetes_sync_errors_total)", int64(writes), int64(value(m.SyncErrors)))})
	}
	return rows
}

// Rows is DashboardRows for the process's own dashboard (the default
// namespace's: the bridge is the process's, not a namespace's) and nil for
// the others.
func (m *Metrics) Rows(process bool) func() [][2]string {
	if !process {
		return nil
	}
	return m.DashboardRows
}

// value reads a gauge's or a counter's current value.
func value(x prometheus.Metric) float64 {
	var d dto.Metric
	if x.Write(&d) != nil {
		return 0
	}
	if d.Gauge != nil {
		return d.Gauge.GetValue()
	}
	return d.Counter.GetValue()
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
