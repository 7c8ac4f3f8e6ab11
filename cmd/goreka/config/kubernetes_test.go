package config

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestKubernetesDefaults(t *testing.T) {
	k := mustLoad(t, nil, nil, nil).Goreka.Kubernetes
	if k.Enabled || k.Kubeconfig != "" || k.ClusterID != "default" || k.ResyncGrace != 30*time.Second ||
		k.Import.Enabled || len(k.Import.Namespaces) != 0 || k.Import.PortName != "" || k.Import.NamespaceMode != "default" ||
		k.Export.Enabled || k.Export.Namespace != "" || !k.Export.Endpoints {
		t.Errorf("defaults %+v", k)
	}
}

func TestKubernetesProperties(t *testing.T) {
	k := mustLoad(t, []string{"--goreka.kubernetes.enabled=true", "--goreka.kubernetes.cluster-id=eu_1.a",
		"--goreka.kubernetes.import.namespaces=default,shop", "--goreka.kubernetes.import.namespace-mode=namespaces",
		"--goreka.kubernetes.export.namespace=bridge"},
		[]string{"GOREKA_KUBERNETES_RESYNCGRACE=5s", "GOREKA_KUBERNETES_IMPORT_PORTNAME=http"}, nil).Goreka.Kubernetes
	if !k.Enabled || k.ClusterID != "eu_1.a" || k.ResyncGrace != 5*time.Second || !slices.Equal(k.Import.Namespaces, []string{"default", "shop"}) ||
		k.Import.NamespaceMode != "namespaces" || k.Import.PortName != "http" || k.Export.Namespace != "bridge" {
		t.Errorf("%+v", k)
	}
}

// A bad value is a start-up error naming the property.
func TestKubernetesBadValues(t *testing.T) {
	for _, arg := range []string{
		"--goreka.kubernetes.cluster-id=",
		"--goreka.kubernetes.cluster-id=eu/1",
		"--goreka.kubernetes.cluster-id=-eu",
		"--goreka.kubernetes.cluster-id=" + strings.Repeat("a", 64),
		"--goreka.kubernetes.import.namespaces=Shop",
		"--goreka.kubernetes.import.namespace-mode=all",
		"--goreka.kubernetes.export.namespace=a,b",
		"--goreka.kubernetes.resync-grace=soon",
		"--goreka.kubernetes.enabled=maybe",
	} {
		_, err := load([]string{arg}, nil, setup(t, nil), fakeHost)
		name := strings.TrimPrefix(strings.SplitN(arg, "=", 2)[0], "--")
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: %v, want an error naming %s", arg, err, name)
		}
	}
}
