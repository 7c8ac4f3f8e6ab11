package xds

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/protobuf/encoding/protojson"
)

func post(t *testing.T, s *Server, path, body string) *httptest.ResponseRecorder {
	t.Helper()
	w := httptest.NewRecorder()
	s.Handler().ServeHTTP(w, httptest.NewRequest(http.MethodPost, path, strings.NewReader(body)))
	return w
}

func TestREST(t *testing.T) {
	f := newFixture(t, Config{})
	f.register(inst("ORDERS", "o1", "10.0.0.1"), inst("USERS", "u1", "10.0.0.2"))
	f.sync()
	rev := strconv.FormatInt(f.reg.Revision(), 10)

	w := post(t, f.s, "/v3/discovery:clusters", `{"node": {"id": "envoy-rest", "user_agent_name": "envoy"}}`)
	if w.Code != 200 || w.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("clusters: %d %s", w.Code, w.Body)
	}
	var resp discovery.DiscoveryResponse
	if err := protojson.Unmarshal(w.Body.Bytes(), &resp); err != nil {
		t.Fatal(err)
	}
	if resp.GetVersionInfo() != rev || len(resp.GetResources()) != 2 {
		t.Errorf("clusters at %q with %d resources, want revision %s with 2", resp.GetVersionInfo(), len(resp.GetResources()), rev)
	}
	// The current version: nothing new.
	if w := post(t, f.s, "/v3/discovery:clusters", `{"node": {"id": "envoy-rest"}, "version_info": "`+rev+`"}`); w.Code != http.StatusNotModified {
		t.Errorf("clusters at the current version: %d, want 304", w.Code)
	}
	w = post(t, f.s, "/v3/discovery:endpoints", `{"node": {"id": "envoy-rest"}, "resource_names": ["orders"]}`)
	resp.Reset()
	if err := protojson.Unmarshal(w.Body.Bytes(), &resp); err != nil || len(resp.GetResources()) != 1 {
		t.Fatalf("endpoints of orders: %d %s", w.Code, w.Body)
	}
	// gRPC clients get listeners; Envoy nodes none.
	w = post(t, f.s, "/v3/discovery:listeners", `{"node": {"id": "g", "user_agent_name": "gRPC Go"}, "resource_names": ["users"]}`)
	resp.Reset()
	if err := protojson.Unmarshal(w.Body.Bytes(), &resp); err != nil || len(resp.GetResources()) != 1 {
		t.Fatalf("gRPC listener users: %d %s", w.Code, w.Body)
	}
	w = post(t, f.s, "/v3/discovery:listeners", `{"node": {"id": "e"}}`)
	resp.Reset()
	if err := protojson.Unmarshal(w.Body.Bytes(), &resp); err != nil || len(resp.GetResources()) != 0 {
		t.Fatalf("Envoy listeners: %d %s", w.Code, w.Body)
	}

	for _, tc := range []struct {
		path, body string
		code       int
		msg        string
	}{
		{"/v3/discovery:clusters", `{"node": `, 400, "not a JSON envoy.service.discovery.v3.DiscoveryRequest"},
		{"/v3/discovery:clusters", `{"nodes": {}}`, 400, "not a JSON"},
		{"/v3/discovery:secrets", `{}`, 400, "unknown discovery path"},
		{"/v3/discovery:clusters", `{"type_url": "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment"}`, 400, "which serves type.googleapis.com/envoy.config.cluster.v3.Cluster"},
		{"/v3/discovery:clusters", `{"node": {"id": "e", "metadata": {"goreka.namespace": "nope"}}}`, 404, `namespace "nope"`},
	} {
		w := post(t, f.s, tc.path, tc.body)
		if w.Code != tc.code || !strings.Contains(w.Body.String(), tc.msg) {
			t.Errorf("POST %s %s: %d %q, want %d with %q", tc.path, tc.body, w.Code, w.Body, tc.code, tc.msg)
		}
	}
	w = httptest.NewRecorder()
	f.s.Handler().ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/v3/discovery:clusters", nil))
	if w.Code != http.StatusMethodNotAllowed {
		t.Errorf("GET: %d, want 405", w.Code)
	}
	var nilS *Server
	if nilS.Handler() != nil {
		t.Error("a nil server has a handler")
	}
}
