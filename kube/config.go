package kube

import (
	"errors"
	"fmt"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Namespace modes of goreka.kubernetes.import.namespace-mode: where an
// imported Service's instances go.
const (
	// NamespaceModeDefault imports every Service into goreka's default
	// namespace (/eureka/).
	NamespaceModeDefault = "default"
	// NamespaceModeNamespaces imports a Service of Kubernetes namespace N
	// into goreka's namespace N (/ns/N/eureka/).
	NamespaceModeNamespaces = "namespaces"
)

// Defaults of the properties owned here (cmd/goreka/config states them in
// its table).
const (
	DefaultClusterID   = "default"
	DefaultResyncGrace = 30 * time.Second
)

// Config is goreka.kubernetes.*, both directions.
type Config struct {
	Enabled    bool   // goreka.kubernetes.enabled
	Kubeconfig string // goreka.kubernetes.kubeconfig; empty: in-cluster
	// ClusterID (goreka.kubernetes.cluster-id) marks what goreka writes
	// (LabelClusterID) and imports (MetaClusterID).
	ClusterID string
	// ResyncGrace (goreka.kubernetes.resync-grace): after the informers
	// synced, how long nothing imported is removed (restart safety).
	ResyncGrace time.Duration
	Import      ImportConfig
	Export      ExportConfig
}

// ImportConfig is goreka.kubernetes.import.*. Config and its two parts
// are the same fields as cmd/goreka/config's KubernetesConfig, which
// converts to Config: the build fails when they part.
type ImportConfig = struct {
	Enabled bool // goreka.kubernetes.import.enabled
	// Namespaces (goreka.kubernetes.import.namespaces): the Kubernetes
	// namespaces watched; empty: all the client may read.
	Namespaces []string
	// PortName (goreka.kubernetes.import.port-name): the EndpointSlice
	// port that becomes the instance's port; empty: the first.
	PortName string
	// NamespaceMode (goreka.kubernetes.import.namespace-mode):
	// NamespaceModeDefault or NamespaceModeNamespaces.
	NamespaceMode string
}

// ExportConfig is goreka.kubernetes.export.*.
type ExportConfig = struct {
	Enabled   bool   // goreka.kubernetes.export.enabled
	Namespace string // goreka.kubernetes.export.namespace: where to write
	// Endpoints (goreka.kubernetes.export.endpoints): also write a core/v1
	// Endpoints object per exported Service.
	Endpoints bool
}

// Validate reports a configuration the bridge cannot run with.
func (c Config) Validate() error {
	if !c.Enabled {
		return nil
	}
	if c.ClusterID == "" {
		return errors.New("goreka.kubernetes.cluster-id must not be empty")
	}
	if err := ValidLabelValue(c.ClusterID); err != nil {
		return fmt.Errorf("goreka.kubernetes.cluster-id %q: %v", c.ClusterID, err)
	}
	switch c.Import.NamespaceMode {
	case "", NamespaceModeDefault, NamespaceModeNamespaces:
	default:
		return fmt.Errorf("goreka.kubernetes.import.namespace-mode %q: must be %s or %s", c.Import.NamespaceMode, NamespaceModeDefault, NamespaceModeNamespaces)
	}
	return nil
}

// RESTConfig is the client configuration: the kubeconfig file when one is
// named, else the in-cluster service account.
func RESTConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig == "" {
		rc, err := rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("goreka.kubernetes.kubeconfig is empty and goreka is not in a cluster: %w", err)
		}
		return withRate(rc), nil
	}
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("goreka.kubernetes.kubeconfig %s: %w", kubeconfig, err)
	}
	return withRate(rc), nil
}

// withRate raises client-go's default client-side limit (5 requests/s,
// bursts of 10), at which a first export of 1,000 applications (three
// objects each) would take ten minutes and an OUT_OF_SERVICE would wait
// behind it; the API server's own priority and fairness still applies.
func withRate(rc *rest.Config) *rest.Config {
	rc.QPS, rc.Burst = 50, 100
	return rc
}

// NewClient builds the clientset both directions use.
func NewClient(c Config) (kubernetes.Interface, error) {
	rc, err := RESTConfig(c.Kubeconfig)
	if err != nil {
		return nil, err
	}
	rc.UserAgent = "goreka"
	return kubernetes.NewForConfig(rc)
}
