package apiclient_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"net/url"

	"github.com/gin-gonic/gin"

	"github.com/goreka/goreka/apiclient"
	"github.com/goreka/goreka/registry"
	"github.com/goreka/goreka/server/api"
	"github.com/goreka/goreka/server/api/wire"
)

// exampleServer serves the read API of a registry holding ORDERS o1 and o2
// (what a running goreka at http://host:8761 serves).
func exampleServer() (*httptest.Server, *registry.Registry) {
	gin.SetMode(gin.ReleaseMode)
	var a *api.API
	reg := registry.New(registry.Options{OnEvent: func(e registry.Event) { a.OnEvent(e) }})
	a = api.New(reg, api.Config{})
	eng := gin.New()
	a.Mount(eng)
	for _, id := range []string{"o1", "o2"} {
		in := &registry.Instance{InstanceID: id, App: "ORDERS", HostName: id + ".local", IPAddr: "10.0.0.1",
			Port: registry.Port{Number: 8080, Enabled: true}, DataCenterInfo: registry.DataCenterInfo{Name: registry.DataCenterMyOwn}}
		if _, err := reg.Register(in, false); err != nil {
			panic(err)
		}
	}
	return httptest.NewServer(eng), reg
}

func Example() {
	srv, reg := exampleServer()
	defer srv.Close()
	ctx := context.Background()

	// The service URL a Eureka client is configured with works as it is.
	c, err := apiclient.New(srv.URL+"/eureka/", apiclient.WithCredentials("viewer", "secret"))
	if err != nil {
		panic(err)
	}

	// Every page of a query.
	page, err := c.Instances(ctx, url.Values{"app": {"orders"}, "status": {"UP"}})
	if err != nil {
		panic(err)
	}
	for _, in := range page.Instances {
		fmt.Println(in.App, in.ID, in.HostName, in.Status)
	}

	// The changes after that revision, as they happen.
	if err := reg.Cancel("ORDERS", "o2", false); err != nil {
		panic(err)
	}
	for ev, err := range c.Watch(ctx, page.Revision) {
		if err != nil {
			panic(err)
		}
		if ev.Type == wire.EventChange {
			fmt.Println(ev.Change.Revision, ev.Change.Kind, ev.Change.App, ev.Change.ID)
			break // closes the stream
		}
	}
	// Output:
	// ORDERS o1 o1.local UP
	// ORDERS o2 o2.local UP
	// 3 cancel ORDERS o2
}
