package server

import (
	"bytes"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/goreka/goreka/namespace"
	"github.com/goreka/goreka/registry"
)

// nsMap is a fixed set of namespaces for the router.
type nsMap map[string]*Server

func (m nsMap) Namespace(name string, _ bool) (*Server, error) {
	if s := m[name]; s != nil {
		return s, nil
	}
	return nil, namespace.Unknown(name)
}

// TestNamespaceRouting: /ns/{name}/ goes to the namespace's server with
// the prefix taken off; the users scoped to namespaces are refused
// elsewhere; unknown credentials get 401 before any lookup.
func TestNamespaceRouting(t *testing.T) {
	auth := AuthConfig{User: "eureka", Password: "s3cret", Users: []UserConfig{
		{Name: "dev", Password: "d", Apps: []string{"*"}, Namespaces: []string{"dev"}},
		{Name: "all", Password: "a", Apps: []string{"*"}},
	}}
	def := newOpsFixture(t, OpsConfig{Auth: auth})
	devAuth := auth
	devAuth.Namespace = "dev"
	dev := newOpsFixture(t, OpsConfig{Auth: devAuth})
	def.srv.SetNamespaces(nsMap{"dev": dev.srv})

	expect(t, def.do(t, "POST", "/ns/dev/eureka/apps/ORDERS", "dev:d", opsRegisterBody), 204, "")
	if dev.reg.Size() != 1 || def.reg.Size() != 0 {
		t.Fatalf("sizes: dev %d, default %d", dev.reg.Size(), def.reg.Size())
	}
	expect(t, def.do(t, "PUT", "/ns/dev/eureka/v2/apps/ORDERS/i-1/", "all:a", ""), 200, "")
	expect(t, def.do(t, "GET", "/ns/dev/eureka/apps/ORDERS/i-1", "eureka:s3cret", ""), 200, "-")
	// The dev user may not use the default namespace, reads included.
	expect(t, def.do(t, "GET", "/eureka/apps", "dev:d", ""), 403, "user dev may not use namespace default")
	expect(t, def.do(t, "POST", "/eureka/apps/ORDERS", "dev:d", opsRegisterBody), 403, "user dev may not use namespace default")
	if def.reg.Size() != 0 {
		t.Fatal("a refused registration reached the default registry")
	}
	// No or wrong credentials: 401, whatever the name.
	expect(t, def.do(t, "GET", "/ns/nope/eureka/apps", "", ""), 401, "")
	expect(t, def.do(t, "GET", "/ns/Bad/eureka/apps", "dev:wrong", ""), 401, "")
	expect(t, def.do(t, "GET", "/ns/nope/eureka/apps", "all:a", ""), 404, `unknown namespace "nope"`)
	if w := def.do(t, "GET", "/ns/Bad/eureka/apps", "all:a", ""); w.Code != 400 || !strings.Contains(w.Body.String(), `"Bad"`) {
		t.Fatalf("bad name: %d %q", w.Code, w.Body)
	}
	// The router's answers are counted as unmatched requests.
	body := def.do(t, "GET", "/metrics", "all:a", "").Body.String()
	for _, want := range []string{
		`goreka_http_requests_total{code="401",method="other",namespace="default",route="unmatched"} 2`,
		`goreka_http_requests_total{code="404",method="other",namespace="default",route="unmatched"} 1`,
		`goreka_http_requests_total{code="400",method="other",namespace="default",route="unmatched"} 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if w := def.do(t, "GET", "/ns/dev", "all:a", ""); w.Code != http.StatusFound || w.Header().Get("Location") != "/ns/dev/" {
		t.Fatalf("/ns/dev: %d %q", w.Code, w.Header().Get("Location"))
	}
}

// Without SetNamespaces, /ns/ is an unknown path as before.
func TestNoNamespaces(t *testing.T) {
	f := newOpsFixture(t, OpsConfig{})
	expect(t, f.do(t, "GET", "/ns/dev/eureka/apps", "", ""), 404, "404 page not found")
}

// creatingNS creates a namespace's server at its first lookup, as
// goreka.namespaces.auto-create does, and records every lookup.
type creatingNS struct {
	t       *testing.T
	auth    AuthConfig
	m       map[string]*Server
	lookups []string
}

func (c *creatingNS) Namespace(name string, create bool) (*Server, error) {
	c.lookups = append(c.lookups, name)
	if s := c.m[name]; s != nil {
		return s, nil
	}
	if !create {
		return nil, namespace.Unknown(name)
	}
	a := c.auth
	a.Namespace = name
	c.m[name] = newOpsFixture(c.t, OpsConfig{Auth: a}).srv
	return c.m[name], nil
}

// TestNamespaceScopeRefusedBeforeLookup: a user scoped to namespaces gets
// the router's 403 for any other one before the lookup, so that it cannot
// create namespaces (auto-create) and cannot tell existing names from
// unknown ones.
func TestNamespaceScopeRefusedBeforeLookup(t *testing.T) {
	auth := AuthConfig{User: "admin", Password: "a", Users: []UserConfig{
		{Name: "dev", Password: "d", Apps: []string{"*"}, Namespaces: []string{"dev"}},
	}}
	def := newOpsFixture(t, OpsConfig{Auth: auth})
	ns := &creatingNS{t: t, auth: auth, m: map[string]*Server{}}
	def.srv.SetNamespaces(ns)
	expect(t, def.do(t, "GET", "/ns/staging/eureka/apps", "admin:a", ""), 200, "-") // exists now
	ns.lookups = nil

	existing := def.do(t, "GET", "/ns/staging/eureka/apps", "dev:d", "")
	unknown := def.do(t, "POST", "/ns/x1/eureka/apps/ORDERS", "dev:d", opsRegisterBody)
	if existing.Code != 403 || unknown.Code != 403 {
		t.Fatalf("scoped user outside its namespaces: %d %q and %d %q, want 403s", existing.Code, existing.Body, unknown.Code, unknown.Body)
	}
	if want := "user dev may not use namespace staging"; existing.Body.String() != want {
		t.Errorf("existing namespace: %q, want %q", existing.Body, want)
	}
	if want := "user dev may not use namespace x1"; unknown.Body.String() != want {
		t.Errorf("unknown namespace: %q, want %q", unknown.Body, want)
	}
	if len(ns.lookups) != 0 || len(ns.m) != 1 {
		t.Fatalf("refused requests looked up %v; namespaces now %d, want 1", ns.lookups, len(ns.m))
	}
	expect(t, def.do(t, "POST", "/ns/dev/eureka/apps/ORDERS", "dev:d", opsRegisterBody), 204, "")
}

// TestNamespaceHealthAnonymous: /ns/{name}/actuator/health* needs no
// credentials, as /actuator/health* does (Kubernetes probes), and creates
// no namespace: an unknown one is a 404, a bad name a 400.
func TestNamespaceHealthAnonymous(t *testing.T) {
	auth := AuthConfig{User: "admin", Password: "a"}
	def := newOpsFixture(t, OpsConfig{Auth: auth})
	ns := &creatingNS{t: t, auth: auth, m: map[string]*Server{"default": def.srv}}
	def.srv.SetNamespaces(ns)
	expect(t, def.do(t, "GET", "/ns/dev/eureka/apps", "admin:a", ""), 200, "-") // creates dev
	expect(t, def.do(t, "GET", "/ns/dev/actuator/health", "", ""), 200, `{"status":"UP"}`)
	expect(t, def.do(t, "GET", "/ns/dev/actuator/health/liveness/", "", ""), 200, `{"status":"UP"}`)
	// newOpsFixture's namespaces are not ready until SetReady.
	expect(t, def.do(t, "GET", "/ns/dev/actuator/health/readiness", "", ""), 503, `{"status":"OUT_OF_SERVICE"}`)
	expect(t, def.do(t, "GET", "/ns/default/actuator/health", "", ""), 200, `{"status":"UP"}`)
	expect(t, def.do(t, "GET", "/ns/x1/actuator/health/readiness", "", ""), 404, `unknown namespace "x1"`)
	if w := def.do(t, "GET", "/ns/X1/actuator/health", "", ""); w.Code != 400 {
		t.Fatalf("bad name: %d %q", w.Code, w.Body)
	}
	if _, ok := ns.m["x1"]; ok || len(ns.m) != 2 {
		t.Fatalf("a health probe created a namespace: %d namespaces", len(ns.m))
	}
	// Everything else under the namespace still needs credentials.
	expect(t, def.do(t, "GET", "/ns/dev/metrics", "", ""), 401, "")
	expect(t, def.do(t, "GET", "/ns/dev/actuator/healthz", "", ""), 401, "")
}

// managerNS is server.Namespaces on a namespace.Manager, as cmd/goreka
// wires it.
type managerNS struct{ m *namespace.Manager[*Server] }

func (n managerNS) Namespace(name string, create bool) (*Server, error) {
	return n.m.Get(name, create)
}

// TestNamespaceCreateFailed: a namespace whose creation fails is a 500
// with its reason, even when the failure wraps a registry error that the
// REST mapping answers otherwise (here ErrNotFound, a 404), and it is
// logged once, with the namespace's name.
func TestNamespaceCreateFailed(t *testing.T) {
	def := newOpsFixture(t, OpsConfig{})
	var logged bytes.Buffer
	m, err := namespace.NewManager(namespace.Config[*Server]{
		Default: def.srv, AutoCreate: true, Max: 4,
		Log: slog.New(slog.NewTextHandler(&logged, nil)),
		New: func(string) (*Server, error) { return nil, fmt.Errorf("loading it: %w", registry.ErrNotFound) },
	})
	if err != nil {
		t.Fatal(err)
	}
	m.Start(t.Context(), namespace.Hooks[*Server]{})
	def.srv.SetNamespaces(managerNS{m})
	w := def.do(t, "GET", "/ns/dev/eureka/apps", "", "")
	if w.Code != http.StatusInternalServerError || !strings.HasPrefix(w.Body.String(), `namespace "dev" not created: loading it`) {
		t.Fatalf("failed creation: %d %q, want a 500 with the reason", w.Code, w.Body)
	}
	if got := logged.String(); strings.Count(got, "namespace not created") != 1 || !strings.Contains(got, "namespace=dev") {
		t.Fatalf("log: %q", got)
	}
}

// TestNamespaceStatus: the namespace package's refusals are mapped where
// namespaces are answered, anything else there is a 500; the REST error
// mapping (statusOf) is the registry's alone.
func TestNamespaceStatus(t *testing.T) {
	for err, want := range map[error]int{
		namespace.Validate("Bad"):                     http.StatusBadRequest,
		namespace.Unknown("x"):                        http.StatusNotFound,
		fmt.Errorf("wrapped: %w", namespace.ErrLimit): http.StatusForbidden,
		namespace.ErrClosed:                           http.StatusServiceUnavailable,
		namespace.ErrCreate:                           http.StatusInternalServerError,
		fmt.Errorf("other: %w", registry.ErrNotFound): http.StatusInternalServerError,
	} {
		if got := namespaceStatus(err); got != want {
			t.Errorf("namespaceStatus(%v) = %d, want %d", err, got, want)
		}
	}
	if got := statusOf(namespace.Unknown("x")); got != http.StatusInternalServerError {
		t.Errorf("statusOf(a namespace refusal) = %d: the REST mapping is the registry's (500 for anything else)", got)
	}
	if got := statusOf(registry.ErrNotFound); got != http.StatusNotFound {
		t.Errorf("statusOf(ErrNotFound) = %d", got)
	}
}
