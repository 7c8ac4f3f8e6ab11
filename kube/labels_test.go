package kube

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestOwnership(t *testing.T) {
	mine := map[string]string{LabelManagedBy: ManagedBy, LabelClusterID: "a"}
	ann := map[string]string{AnnotationOwner: "a"}
	switch {
	case !ManagedByGoreka(mine), !OwnedBy(mine, "a"), !Owns(mine, ann, "a"):
		t.Error("goreka's own object not recognised")
	case OwnedBy(mine, "b"), Owns(mine, ann, "b"):
		t.Error("another cluster id's object taken for ours")
	case Owns(mine, nil, "a"):
		t.Error("an object without the owner annotation may be changed")
	case ManagedByGoreka(map[string]string{LabelManagedBy: "endpointslice-controller.k8s.io"}):
		t.Error("the EndpointSlice controller's slice taken for goreka's")
	}
	if !Imported(map[string]string{MetaSource: SourceKubernetes}) || Imported(map[string]string{"zone": "a"}) {
		t.Error("Imported")
	}
}

func TestValidate(t *testing.T) {
	ok := Config{Enabled: true, ClusterID: "eu-1", Import: ImportConfig{NamespaceMode: NamespaceModeNamespaces}}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []Config{
		{Enabled: true},
		{Enabled: true, ClusterID: "a/b"},
		{Enabled: true, ClusterID: "a", Import: ImportConfig{NamespaceMode: "all"}},
	} {
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "goreka.kubernetes.") {
			t.Errorf("%+v: %v, want an error naming the property", c, err)
		}
	}
	if err := (Config{}).Validate(); err != nil {
		t.Errorf("disabled: %v", err)
	}
}

func TestMetrics(t *testing.T) {
	m := NewMetrics()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(m.Collector())
	m.APIWrites.WithLabelValues("create", "services").Inc()
	m.ImportedInstances.Set(3)
	n, err := testutil.GatherAndCount(reg)
	if err != nil || n != 5 {
		t.Fatalf("%d series, %v; want 5", n, err)
	}
}
