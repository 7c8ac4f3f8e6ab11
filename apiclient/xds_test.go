package apiclient

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/goreka/goreka/registry"
	"github.com/goreka/goreka/server/api"
	"github.com/goreka/goreka/server/api/wire"
)

type fixedXDS struct{}

func (fixedXDS) Clients() []wire.XDSClient {
	return []wire.XDSClient{{Node: "n1", Kind: "grpc", Namespace: "default", Zone: "z1", Acked: map[string]string{"lds": "3"}}}
}

func (fixedXDS) Resolve(name, kind, zone string) (wire.XDSResolution, bool) {
	if name != "echo" {
		return wire.XDSResolution{}, false
	}
	return wire.XDSResolution{Name: name, Kind: kind, Zone: zone, Cluster: "echo", Listener: "echo",
		Endpoints: []wire.XDSEndpoint{{Address: "127.0.0.1", Port: 9000, Health: "HEALTHY", Weight: 1, Zone: zone, Priority: 0}}}, true
}

// The client reads the xDS endpoints of the read API as the server writes
// them, and a name not served is a 404.
func TestXDS(t *testing.T) {
	serve := func(x api.XDS) *Client {
		a := api.New(registry.New(registry.Options{}), api.Config{XDS: x})
		eng := gin.New()
		a.Mount(eng)
		srv := httptest.NewServer(eng)
		t.Cleanup(srv.Close)
		return mustNew(t, srv.URL)
	}
	c := serve(fixedXDS{})
	ctx := t.Context()
	cs, err := c.XDSClients(ctx)
	if err != nil || !cs.Enabled || len(cs.Clients) != 1 || cs.Clients[0].Acked["lds"] != "3" {
		t.Errorf("XDSClients: %v %+v", err, cs)
	}
	r, err := c.XDSResolve(ctx, "Echo", "grpc", "z1")
	if err != nil || r.Kind != "grpc" || r.Zone != "z1" || r.Listener != "echo" || len(r.Endpoints) != 1 || r.Endpoints[0].Port != 9000 {
		t.Errorf("XDSResolve: %v %+v", err, r)
	}
	var se *StatusError
	if _, err := c.XDSResolve(ctx, "nothing", "", ""); !errors.As(err, &se) || se.StatusCode != http.StatusNotFound || se.Parameter != "name" {
		t.Errorf("unknown name: %v, want a 404 naming name", err)
	}
	if _, err := c.XDSResolve(ctx, "echo", "istio", ""); !errors.As(err, &se) || se.StatusCode != http.StatusBadRequest || se.Parameter != "kind" {
		t.Errorf("bad kind: %v, want a 400 naming kind", err)
	}

	off := serve(nil)
	if cs, err := off.XDSClients(ctx); err != nil || cs.Enabled {
		t.Errorf("xDS off: %v %+v", err, cs)
	}
	if _, err := off.XDSResolve(ctx, "echo", "", ""); !errors.As(err, &se) || se.StatusCode != http.StatusNotFound {
		t.Errorf("xDS off resolve: %v, want 404", err)
	}
}
