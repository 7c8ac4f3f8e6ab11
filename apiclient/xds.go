package apiclient

import (
	"context"
	"net/url"

	"github.com/goreka/goreka/server/api/wire"
)

// XDSClients lists the xDS clients (Envoys, proxyless gRPC clients)
// connected to the server for the client's namespace, with their last
// ACKed versions (GET /goreka/api/v1/xds/clients). Enabled is false when
// the server serves no xDS.
func (c *Client) XDSClients(ctx context.Context) (wire.XDSClientsAnswer, error) {
	var a wire.XDSClientsAnswer
	err := c.getJSON(ctx, c.hc, wire.Prefix+"/xds/clients", &a)
	return a, err
}

// XDSResolve returns what an xDS client of kind ("envoy" or "grpc"; ""
// is envoy) whose node declares zone ("" for none) is served for name,
// an application's name or a VIP address: its cluster and endpoints
// with health, weight, locality and priority (GET
// /goreka/api/v1/xds/resolve). A name not served, or a server without
// xDS, is a *StatusError of 404.
func (c *Client) XDSResolve(ctx context.Context, name, kind, zone string) (wire.XDSResolution, error) {
	q := url.Values{"name": {name}}
	if kind != "" {
		q.Set("kind", kind)
	}
	if zone != "" {
		q.Set("zone", zone)
	}
	var r wire.XDSResolution
	err := c.getJSON(ctx, c.hc, wire.Prefix+"/xds/resolve?"+q.Encode(), &r)
	return r, err
}
