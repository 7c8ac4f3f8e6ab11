package export

import "github.com/prometheus/client_golang/prometheus"

// Until k1's package kube is merged: the contract's names, as kube spells
// them. Replaced by kube's constants at the merge.
const (
	labelManagedBy   = "endpointslice.kubernetes.io/managed-by"
	managedBy        = "goreka.io"
	labelClusterID   = "goreka.io/cluster-id"
	annotationOwner  = "goreka.io/owner"
	labelServiceName = "kubernetes.io/service-name"
	labelSkipMirror  = "endpointslice.kubernetes.io/skip-mirror"
	sourceKey        = "goreka.source"
	sourceKubernetes = "kubernetes"
)

func owns(labels, annotations map[string]string, clusterID string) bool {
	return labels[labelManagedBy] == managedBy && labels[labelClusterID] == clusterID && annotations[annotationOwner] == clusterID
}

// metrics mirrors kube.Metrics until the merge.
type metrics struct {
	ExportedServices prometheus.Gauge
	APIWrites        *prometheus.CounterVec
	SyncErrors       prometheus.Counter
	Leader           prometheus.Gauge
}

func newMetrics() *metrics {
	return &metrics{
		ExportedServices: prometheus.NewGauge(prometheus.GaugeOpts{Name: "goreka_kubernetes_exported_services"}),
		APIWrites:        prometheus.NewCounterVec(prometheus.CounterOpts{Name: "goreka_kubernetes_api_writes_total"}, []string{"verb", "resource"}),
		SyncErrors:       prometheus.NewCounter(prometheus.CounterOpts{Name: "goreka_kubernetes_sync_errors_total"}),
		Leader:           prometheus.NewGauge(prometheus.GaugeOpts{Name: "goreka_kubernetes_leader"}),
	}
}
