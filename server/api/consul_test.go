package api

import (
	"testing"

	"github.com/goreka/goreka/server/api/wire"
)

// TestConsulBadParameters: a parameter the catalog does not know, or a
// malformed one, is a 400 naming it. The official client and Prometheus'
// Consul discovery are run against the catalog by interop/ (a module of
// its own, so that their dependencies stay out of goreka's go.mod).
func TestConsulBadParameters(t *testing.T) {
	f := newFixture(t, Config{})
	f.api.MountConsul(f.eng)
	for _, c := range []struct{ path, param string }{
		{"/v1/catalog/services?index=x", "index"},
		{"/v1/catalog/services?index=1&wait=soon", "wait"},
		{"/v1/catalog/service/orders?dc=eu", "dc"},
		{"/v1/health/service/orders?bogus=1", "bogus"},
	} {
		var e wire.ErrorAnswer
		if code := f.get(c.path, &e); code != 400 || e.Parameter != c.param {
			t.Errorf("%s: %d %+v", c.path, code, e)
		}
	}
}
