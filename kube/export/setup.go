package export

import (
	"cmp"
	"log/slog"
	"os"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/goreka/goreka/kube"
	"github.com/goreka/goreka/registry"
)

// serviceAccountNamespace is where a pod's namespace is mounted.
const serviceAccountNamespace = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// FromConfig builds the exporter of goreka.kubernetes.export.* for reg
// (goreka's default namespace): nil when the bridge or the export is off.
// The namespace written to is Export.Namespace, else the pod's own (in a
// cluster), else "default"; identity names this node in the Lease.
func FromConfig(c kube.Config, reg *registry.Registry, identity string, m *kube.Metrics, log *slog.Logger, now func() time.Time) (*Exporter, error) {
	if !c.Enabled || !c.Export.Enabled {
		return nil, nil
	}
	rc, err := kube.RESTConfig(c.Kubeconfig)
	if err != nil {
		return nil, err
	}
	rc.UserAgent = "goreka-export"
	// core/v1 Endpoints is deprecated on the API server, which says so on
	// every write; goreka writes it on purpose (export.endpoints).
	rc.WarningHandler = rest.NoWarnings{}
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	ns := c.Export.Namespace
	if ns == "" && c.Kubeconfig == "" {
		if b, err := os.ReadFile(serviceAccountNamespace); err == nil {
			ns = strings.TrimSpace(string(b))
		}
	}
	return New(Config{
		Client: client, Namespace: cmp.Or(ns, "default"), ClusterID: c.ClusterID, Endpoints: c.Export.Endpoints,
		Grace: c.ResyncGrace, Identity: identity, Metrics: m, Logger: log, Now: now,
	}, reg), nil
}
