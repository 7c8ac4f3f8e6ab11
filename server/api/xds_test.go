package api

import (
	"net/http"
	"reflect"
	"testing"

	"github.com/goreka/goreka/server/api/wire"
)

// fakeXDS is an xDS view with fixed clients and one name, recording the
// resolve calls it got.
type fakeXDS struct {
	clients []wire.XDSClient
	calls   [][3]string
}

func (x *fakeXDS) Clients() []wire.XDSClient { return x.clients }

func (x *fakeXDS) Resolve(name, kind, zone string) (wire.XDSResolution, bool) {
	x.calls = append(x.calls, [3]string{name, kind, zone})
	if name != "orders" && name != "Orders-V2" {
		return wire.XDSResolution{}, false
	}
	return wire.XDSResolution{Name: name, Kind: kind, Zone: zone, Cluster: "orders", Revision: 7,
		Endpoints: []wire.XDSEndpoint{{HostName: "o1.local", Address: "10.0.0.1", Port: 8080, Health: "HEALTHY", Weight: 90, Zone: "z1", LocalityWeight: 90}}}, true
}

func TestXDSClients(t *testing.T) {
	off := newFixture(t, Config{})
	var a wire.XDSClientsAnswer
	if code := off.get("/goreka/api/v1/xds/clients", &a); code != http.StatusOK || a.Enabled || a.Clients == nil || len(a.Clients) != 0 {
		t.Errorf("xDS off: %d %+v, want 200, enabled false, clients []", code, a)
	}

	x := &fakeXDS{clients: []wire.XDSClient{{Node: "envoy-1", Kind: "envoy", Namespace: "default", Zone: "z1", Acked: map[string]string{"cds": "7", "eds": "7"}}}}
	on := newFixture(t, Config{XDS: x})
	a = wire.XDSClientsAnswer{}
	if code := on.get("/goreka/api/v1/xds/clients", &a); code != http.StatusOK || !a.Enabled || !reflect.DeepEqual(a.Clients, x.clients) {
		t.Errorf("xDS on: %d %+v, want 200 and %+v", code, a, x.clients)
	}
	var e wire.ErrorAnswer
	if code := on.get("/goreka/api/v1/xds/clients?kind=grpc", &e); code != http.StatusBadRequest || e.Parameter != "kind" {
		t.Errorf("unknown parameter: %d %+v, want 400 naming kind", code, e)
	}
}

func TestXDSResolve(t *testing.T) {
	x := &fakeXDS{}
	f := newFixture(t, Config{XDS: x})
	var r wire.XDSResolution
	if code := f.get("/goreka/api/v1/xds/resolve?name=ORDERS&kind=grpc&zone=z1", &r); code != http.StatusOK {
		t.Fatalf("resolve: %d", code)
	}
	if r.Cluster != "orders" || r.Kind != "grpc" || len(r.Endpoints) != 1 || r.Endpoints[0].Weight != 90 {
		t.Errorf("resolve: %+v", r)
	}
	if code := f.get("/goreka/api/v1/xds/resolve?name=orders", &r); code != http.StatusOK || r.Kind != "envoy" {
		t.Errorf("resolve without kind: %d %+v, want envoy's", code, r)
	}
	if code := f.get("/goreka/api/v1/xds/resolve?name=Orders-V2", &r); code != http.StatusOK || r.Name != "Orders-V2" {
		t.Errorf("resolve of a VIP address with capitals: %d %+v", code, r)
	}
	want := [][3]string{{"ORDERS", "grpc", "z1"}, {"orders", "grpc", "z1"}, {"orders", "envoy", ""}, {"Orders-V2", "envoy", ""}}
	if !reflect.DeepEqual(x.calls, want) {
		t.Errorf("resolve calls %v, want %v (the name as given, then lower-cased; envoy by default)", x.calls, want)
	}

	for _, tc := range []struct {
		query string
		code  int
		param string
	}{
		{"", http.StatusBadRequest, "name"},
		{"name=orders&kind=istio", http.StatusBadRequest, "kind"},
		{"name=orders&name=billing", http.StatusBadRequest, "name"},
		{"name=orders&zone=a&zone=b", http.StatusBadRequest, "zone"},
		{"name=orders&cluster=x", http.StatusBadRequest, "cluster"},
		{"name=billing", http.StatusNotFound, "name"},
	} {
		var e wire.ErrorAnswer
		if code := f.get("/goreka/api/v1/xds/resolve?"+tc.query, &e); code != tc.code || e.Parameter != tc.param || e.Error == "" {
			t.Errorf("?%s: %d %+v, want %d naming %q", tc.query, code, e, tc.code, tc.param)
		}
	}
	if len(x.calls) != len(want)+1 {
		t.Errorf("bad requests reached the xDS view: %v", x.calls[len(want):])
	}

	off := newFixture(t, Config{})
	var e wire.ErrorAnswer
	if code := off.get("/goreka/api/v1/xds/resolve?name=orders", &e); code != http.StatusNotFound || e.Error != xdsOff {
		t.Errorf("xDS off: %d %+v, want 404 %q", code, e, xdsOff)
	}
}
