package server

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/goreka/goreka/server/api/wire"
)

type fakeXDSClients []wire.XDSClient

func (f fakeXDSClients) Clients() []wire.XDSClient { return f }

// The xDS section lists the connected clients, sorted by node id, with
// their last ACKed versions; it is hidden when xDS is off and says so
// when no client is connected.
func TestDashboardXDSClients(t *testing.T) {
	reg := fixedRegistry(t)
	off := get(t, newDashServer(t, reg, "/", fixedData()), "/").Body.String()
	if strings.Contains(off, "xDS clients") {
		t.Error("xDS section shown with xDS off")
	}

	d := fixedData()
	d.XDS = true
	empty := get(t, newDashServer(t, reg, "/", d), "/").Body.String()
	mustContain(t, empty, "<h1>xDS clients</h1>", `<table id="xdsClients" class="table table-striped">`,
		`<tr><td colspan="8">No xDS clients connected</td></tr>`)

	d.XDSClients = []wire.XDSClient{
		{Node: "web-7f9c", Kind: "grpc", Namespace: "default", Zone: "z2", Acked: map[string]string{"lds": "12", "rds": "12", "cds": "12", "eds": "13"},
			UserAgent: "gRPC Java 1.85.1", Since: "2026-11-30T21:09:38Z",
			LastNACK: &wire.XDSNACK{Type: "eds", Rejected: "13", Detail: "duplicate endpoint", At: "2026-11-30T21:14:30Z"}},
		{Node: "edge-envoy", Kind: "envoy", Namespace: "default", Zone: "z1", Acked: map[string]string{"eds": "13", "cds": "12"},
			UserAgent: "envoy 1.40.0", Delta: true, Since: "2026-11-30T21:14:28Z"},
		{Node: evilMeta, Kind: "envoy", Namespace: "default", Acked: map[string]string{}},
	}
	s := newDashServer(t, reg, "/", d)
	page := get(t, s, "/").Body.String()
	mustContain(t, page,
		`<thead><tr><th>Node</th><th>Kind</th><th>Namespace</th><th>Zone</th><th>Last ACKed version</th><th>Connected</th><th>User agent</th><th>Last NACK</th></tr></thead>`,
		`<tr><td>edge-envoy</td><td>envoy</td><td>default</td><td>z1</td><td>cds=12 eds=13</td><td>2026-11-30 21:14:28 UTC (10s ago)</td><td>envoy 1.40.0 (delta)</td><td></td></tr>`,
		`<tr><td>web-7f9c</td><td>grpc</td><td>default</td><td>z2</td><td>cds=12 eds=13 lds=12 rds=12</td><td>2026-11-30 21:09:38 UTC (5m ago)</td><td>gRPC Java 1.85.1</td><td>eds 13 at 2026-11-30 21:14:30 UTC: duplicate endpoint</td></tr>`)
	if strings.Contains(page, "<script>window") || strings.Contains(page, "No xDS clients connected") {
		t.Error("a node id's markup reached the page unescaped, or the empty row is shown beside clients")
	}
	if a, b := strings.Index(page, "<td>edge-envoy</td>"), strings.Index(page, "<td>web-7f9c</td>"); a < 0 || b < a {
		t.Errorf("xDS clients out of order: edge-envoy at %d, web-7f9c at %d", a, b)
	}

	var live struct {
		XDSClients []xdsClientRow `json:"xdsClients"`
	}
	if err := json.Unmarshal(get(t, s, dashboardAPIPath).Body.Bytes(), &live); err != nil {
		t.Fatal(err)
	}
	if len(live.XDSClients) != 3 || live.XDSClients[1] != (xdsClientRow{Node: "edge-envoy", Kind: "envoy", Namespace: "default", Zone: "z1", Acked: "cds=12 eds=13",
		Since: "2026-11-30 21:14:28 UTC (10s ago)", Agent: "envoy 1.40.0 (delta)"}) {
		t.Errorf("live xdsClients %+v", live.XDSClients)
	}
	for _, tc := range []struct {
		data DashboardData
		want string
	}{{fixedData(), `"xdsClients":null`}, {DashboardData{XDS: true, Now: dashNow}, `"xdsClients":[]`}} {
		if body := get(t, newDashServer(t, reg, "/", tc.data), dashboardAPIPath).Body.String(); !strings.Contains(body, tc.want) {
			t.Errorf("live data lacks %s (the refresh tells off from none connected)", tc.want)
		}
	}
}

// DashboardState reads the clients from its XDS at every view.
func TestDashboardStateXDS(t *testing.T) {
	d := &DashboardState{
		Status:   &ProcessStatus{Started: dashNow.Add(-time.Hour), Self: selfInstance(), Replicas: fakeReplication{}, Now: func() time.Time { return dashNow }},
		Eviction: fakeEviction{}, Replication: fakeReplication{}, Health: fakeHealth{},
	}
	if data := d.DashboardData(); data.XDS || data.XDSClients != nil {
		t.Errorf("no XDS: %v %+v", data.XDS, data.XDSClients)
	}
	d.XDS = fakeXDSClients{{Node: "n1", Kind: "envoy", Namespace: "default"}}
	if data := d.DashboardData(); !data.XDS || len(data.XDSClients) != 1 || data.XDSClients[0].Node != "n1" {
		t.Errorf("with XDS: %v %+v", data.XDS, data.XDSClients)
	}
}
