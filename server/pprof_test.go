package server

import (
	"encoding/base64"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/goreka/goreka/registry"
)

func pprofGet(t *testing.T, srv *Server, method, target, userinfo string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(method, target, strings.NewReader(""))
	if userinfo != "" {
		req.Header.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(userinfo)))
	}
	w := httptest.NewRecorder()
	srv.ServeHTTP(w, req)
	return w
}

// The profiles of /debug/pprof/ are off unless goreka.debug.pprof-enabled
// (Config.PProf) turns them on; then they are served, the index and each
// kind, with or without the trailing slash.
func TestPprofOffByDefaultOnWhenSet(t *testing.T) {
	off := New(Config{}, Deps{Registry: registry.New(registry.Options{})})
	for _, p := range []string{"/debug/pprof/", "/debug/pprof", "/debug/pprof/heap", "/debug/pprof/cmdline"} {
		if w := pprofGet(t, off, "GET", p, ""); w.Code != 404 {
			t.Errorf("pprof off: GET %s = %d, want 404", p, w.Code)
		}
	}
	on := New(Config{PProf: true}, Deps{Registry: registry.New(registry.Options{})})
	for _, tc := range []struct{ path, want string }{
		{"/debug/pprof/", "Types of profiles available"},
		{"/debug/pprof", "Types of profiles available"},
		{"/debug/pprof/goroutine?debug=1", "goroutine profile: total"},
		{"/debug/pprof/heap?debug=1", "heap profile:"},
		{"/debug/pprof/cmdline", "server.test"},
		{"/debug/pprof/symbol", "num_symbols:"},
	} {
		w := pprofGet(t, on, "GET", tc.path, "")
		if w.Code != 200 || !strings.Contains(w.Body.String(), tc.want) {
			t.Errorf("pprof on: GET %s = %d %.120q, want 200 with %q", tc.path, w.Code, w.Body.String(), tc.want)
		}
	}
	if w := pprofGet(t, on, "GET", "/debug/pprof/nosuch", ""); w.Code != 404 {
		t.Errorf("pprof on: an unknown profile = %d, want 404", w.Code)
	}
}

// With authentication on, only an admin may read the profiles (they show
// the process's memory and command line): the full user and the admin
// role; every other user, the read-only one included, gets 403; no
// credentials 401.
func TestPprofIsForAdmins(t *testing.T) {
	srv := New(Config{PProf: true}, Deps{Registry: registry.New(registry.Options{})})
	srv.EnableOps(OpsConfig{Auth: AuthConfig{User: "eureka", Password: "s3cret", ReadOnlyUser: "viewer", ReadOnlyPassword: "look",
		Users: []UserConfig{
			{Name: "ops", Password: "ops-pw", Roles: []string{RoleAdmin}},
			{Name: "peer", Password: "peer-pw", Roles: []string{RolePeer}},
			{Name: "orders", Password: "o-pw", Apps: []string{"*"}},
		}}})
	for _, tc := range []struct {
		user string
		want int
	}{
		{"", 401}, {"eureka:s3cret", 200}, {"ops:ops-pw", 200},
		{"viewer:look", 403}, {"peer:peer-pw", 403}, {"orders:o-pw", 403},
	} {
		for _, m := range []string{"GET /debug/pprof/", "GET /debug/pprof/heap", "POST /debug/pprof/symbol"} {
			method, path, _ := strings.Cut(m, " ")
			if w := pprofGet(t, srv, method, path, tc.user); w.Code != tc.want {
				t.Errorf("%s as %q = %d, want %d", m, tc.user, w.Code, tc.want)
			}
		}
	}
}
