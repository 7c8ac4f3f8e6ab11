package interop

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/goreka/goreka/registry"
	"github.com/goreka/goreka/registry/clocktest"
	"github.com/goreka/goreka/server/api"
)

func init() { gin.SetMode(gin.ReleaseMode) }

var epoch = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

type fixture struct {
	t     *testing.T
	clock *clocktest.Clock
	reg   *registry.Registry
	api   *api.API
	eng   *gin.Engine
	srv   *httptest.Server
}

// newFixture is a registry wired to the read API exactly as cmd/goreka
// wires it (OnEvent), served over HTTP; the same fixture as server/api's
// own tests, through the packages' exported API.
func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{t: t, clock: clocktest.New(epoch)}
	f.reg = registry.New(registry.Options{Now: f.clock.Now, OnEvent: func(e registry.Event) { f.api.OnEvent(e) }})
	f.api = api.New(f.reg, api.Config{Now: f.clock.Now})
	f.eng = gin.New()
	f.api.Mount(f.eng)
	f.srv = httptest.NewServer(f.eng)
	t.Cleanup(f.srv.Close)
	return f
}

func inst(app, id string) *registry.Instance {
	return &registry.Instance{InstanceID: id, App: app, HostName: id + ".local", IPAddr: "10.0.0.1",
		Port: registry.Port{Number: 8080, Enabled: true}, SecurePort: registry.Port{Number: 8443},
		VIPAddress: strings.ToLower(app), SecureVIPAddress: strings.ToLower(app) + "-secure",
		DataCenterInfo: registry.DataCenterInfo{Name: registry.DataCenterMyOwn}, Metadata: map[string]string{}}
}

func (f *fixture) register(in *registry.Instance) {
	f.t.Helper()
	if _, err := f.reg.Register(in, false); err != nil {
		f.t.Fatal(err)
	}
}
