package kube

import (
	"slices"
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

// The series' names and labels are the (and the README's): a
// dashboard or an alert reads them by name.
func TestMetrics(t *testing.T) {
	m := NewMetrics()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(m.Collector())
	m.APIWrites.WithLabelValues("create", "services").Inc()
	m.ImportedInstances.Set(3)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, mf := range mfs {
		for _, s := range mf.GetMetric() {
			name := mf.GetName()
			for _, l := range s.GetLabel() {
				name += " " + l.GetName() + "=" + l.GetValue()
			}
			got = append(got, name)
		}
	}
	want := []string{
		"goreka_kubernetes_api_writes_total resource=services verb=create", // labels in name order
		"goreka_kubernetes_exported_services",
		"goreka_kubernetes_imported_instances",
		"goreka_kubernetes_leader",
		"goreka_kubernetes_sync_errors_total",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("series\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if n, err := testutil.GatherAndCount(reg); err != nil || n != 5 {
		t.Fatalf("%d series, %v; want 5", n, err)
	}
}

func TestDashboardRows(t *testing.T) {
	var none *Metrics
	m := NewMetrics()
	if none.DashboardRows() != nil || m.DashboardRows() != nil {
		t.Fatalf("rows with the bridge off: %v %v", none.DashboardRows(), m.DashboardRows())
	}
	m.ServeImport()
	m.ImportedInstances.Set(3)
	m.SyncErrors.Inc()
	m.APIWrites.WithLabelValues("create", "services").Add(2)
	m.APIWrites.WithLabelValues("update", "endpointslices").Inc()
	rows := m.DashboardRows()
	want := [][2]string{
		{"kubernetes import", "3 instances from EndpointSlices (lease-less, source=kubernetes)"},
		{"kubernetes API", "3 writes, 1 sync errors (goreka_kubernetes_sync_errors_total)"},
	}
	if !slices.Equal(rows, want) {
		t.Fatalf("import only:\n%v\nwant\n%v", rows, want)
	}
	m.ServeExport()
	if rows := m.DashboardRows(); len(rows) != 3 || rows[1] != [2]string{"kubernetes export", "standby: not holding the export Lease"} {
		t.Fatalf("export without the Lease: %v", rows)
	}
	m.Leader.Set(1)
	m.ExportedServices.Set(7)
	if rows := m.DashboardRows(); rows[1] != [2]string{"kubernetes export", "leader: 7 applications written as Services and EndpointSlices"} {
		t.Fatalf("export as the leader: %v", rows)
	}
	if m.Rows(false) != nil || len(m.Rows(true)()) != 3 {
		t.Fatal("Rows: a namespace's dashboard shows the process's bridge, or the process's shows none")
	}
}
