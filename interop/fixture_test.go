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
	"github.com/goreka/goreka/xds"
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

// newConsulFixture is a fixture with the Consul catalog mounted and three
// instances registered: ORDERS o1 (metadata zone=a), ORDERS o2 (DOWN) and
// BILLING b1.
func newConsulFixture(t *testing.T) *fixture {
	t.Helper()
	f := newFixture(t)
	f.api.MountConsul(f.eng)
	o1 := inst("ORDERS", "o1")
	o1.Metadata = map[string]string{"zone": "a"}
	f.register(o1)
	o2 := inst("ORDERS", "o2")
	o2.Status = registry.StatusDown
	f.register(o2)
	f.register(inst("BILLING", "b1"))
	return f
}

// startXDS is an empty registry attached (as "default") to an xDS server
// with zone priority and held leases as UNHEALTHY, listening on a free
// loopback port until the test ends.
func startXDS(t *testing.T) (*registry.Registry, *xds.Server) {
	t.Helper()
	reg := registry.New(registry.Options{})
	srv := xds.New(xds.Config{ZonePriority: true, HeldAsUnhealthy: true})
	srv.Attach("default", reg)
	if err := srv.Start(t.Context(), "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return reg, srv
}

// checkOutOfServiceTimes checks the times after an instance (backend) was
// set OUT_OF_SERVICE: the EDS push within 1 s (pushed), and the xDS
// consumer's picks without it within 5 s end to end (took), where the
// consumer's calls are called unit.
func checkOutOfServiceTimes(t *testing.T, consumer, backend, unit string, pushed, took time.Duration) {
	t.Helper()
	t.Logf("OUT_OF_SERVICE: pushed %v, out of %s's picks %v after the status update", pushed, consumer, took)
	if pushed > time.Second {
		t.Errorf("the EDS push took %v after OUT_OF_SERVICE, want within 1 s", pushed)
	}
	if took > 5*time.Second {
		t.Errorf("%s still got %s %v after OUT_OF_SERVICE, want within 5 s end to end", backend, unit, took)
	}
}
