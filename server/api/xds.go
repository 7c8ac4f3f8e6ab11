package api

import (
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/goreka/goreka/server/api/wire"
)

// XDS is what the xDS endpoints read: the xDS server's view of this API's
// namespace (package xds, adapted by cmd/goreka, so that this package does
// not import the xDS protocol's libraries). A nil XDS is a server that
// serves no xDS.
type XDS interface {
	// Clients lists the namespace's connected xDS clients.
	Clients() []wire.XDSClient
	// Resolve returns what a client of kind ("envoy" or "grpc") in zone
	// ("" for none) is served for name, and false when name is neither an
	// application's lower-cased name nor a VIP address of the namespace
	// (as registered, case included).
	Resolve(name, kind, zone string) (wire.XDSResolution, bool)
}

// The client kinds of GET /xds/resolve?kind=.
const (
	XDSKindEnvoy = "envoy"
	XDSKindGRPC  = "grpc"
)

func (a *API) mountXDS(g gin.IRouter) {
	g.GET("/xds/clients", a.xdsClients)
	g.GET("/xds/resolve", a.xdsResolve)
}

// xdsOff is the 404 of /xds/resolve when xDS is not served.
const xdsOff = "xDS is not served here (goreka.xds.enabled=false)"

func (a *API) xdsClients(c *gin.Context) {
	if _, err := params(c); err != nil {
		answerError(c, err)
		return
	}
	out := wire.XDSClientsAnswer{Clients: []wire.XDSClient{}}
	if a.cfg.XDS != nil {
		out.Enabled = true
		out.Clients = append(out.Clients, a.cfg.XDS.Clients()...)
	}
	c.JSON(http.StatusOK, out)
}

func (a *API) xdsResolve(c *gin.Context) {
	q, err := params(c, "name", "kind", "zone")
	if err != nil {
		answerError(c, err)
		return
	}
	name, err := one(q, "name")
	if err == nil && name == "" {
		err = badParam("name", "needed: an application's name or a VIP address")
	}
	if err != nil {
		answerError(c, err)
		return
	}
	kind, err := one(q, "kind")
	if err != nil {
		answerError(c, err)
		return
	}
	switch kind = strings.ToLower(kind); kind {
	case "":
		kind = XDSKindEnvoy
	case XDSKindEnvoy, XDSKindGRPC:
	default:
		answerError(c, badParam("kind", "%q is not a client kind (envoy, grpc)", kind))
		return
	}
	zone, err := one(q, "zone")
	if err != nil {
		answerError(c, err)
		return
	}
	if a.cfg.XDS == nil {
		c.JSON(http.StatusNotFound, wire.ErrorAnswer{Error: xdsOff})
		return
	}
	// A VIP address is served as registered, an application by its
	// lower-cased name: try the name as given, then lower-cased.
	res, ok := a.cfg.XDS.Resolve(name, kind, zone)
	if lower := strings.ToLower(name); !ok && lower != name {
		res, ok = a.cfg.XDS.Resolve(lower, kind, zone)
	}
	if !ok {
		c.JSON(http.StatusNotFound, wire.ErrorAnswer{Error: "no application or VIP address " + name + " is served over xDS here", Parameter: "name"})
		return
	}
	if res.Endpoints == nil {
		res.Endpoints = []wire.XDSEndpoint{}
	}
	c.JSON(http.StatusOK, res)
}
