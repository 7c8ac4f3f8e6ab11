package check

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// The Grafana dashboard decodes, its panels have distinct ids and do not
// overlap, and its "Kubernetes bridge" row charts every series of the
// bridge (issue 27: imported instances, exported Services, API writes,
// sync errors, leader state).
func TestGrafanaDashboard(t *testing.T) {
	b, err := os.ReadFile("../observability/goreka-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	type grid struct{ X, Y, W, H int }
	var d struct {
		Panels []struct {
			ID      int
			Type    string
			Title   string
			GridPos grid
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	ids := map[int]bool{}
	for i, p := range d.Panels {
		if ids[p.ID] {
			t.Errorf("panel id %d twice", p.ID)
		}
		ids[p.ID] = true
		for _, q := range d.Panels[:i] {
			a, c := p.GridPos, q.GridPos
			if a.X < c.X+c.W && c.X < a.X+a.W && a.Y < c.Y+c.H && c.Y < a.Y+a.H {
				t.Errorf("panels %q and %q overlap", p.Title, q.Title)
			}
		}
	}
	var row strings.Builder
	in := false
	for _, p := range d.Panels {
		if p.Type == "row" {
			in = p.Title == "Kubernetes bridge"
			continue
		}
		if in {
			for _, q := range p.Targets {
				row.WriteString(q.Expr + "\n")
			}
		}
	}
	for _, m := range []string{"goreka_kubernetes_imported_instances", "goreka_kubernetes_exported_services",
		"goreka_kubernetes_api_writes_total", "goreka_kubernetes_sync_errors_total", "goreka_kubernetes_leader"} {
		if !strings.Contains(row.String(), m+"{") {
			t.Errorf("the Kubernetes bridge row does not chart %s; its queries:\n%s", m, row.String())
		}
	}
}
