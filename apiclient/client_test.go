package apiclient

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/goreka/goreka/registry"
	"github.com/goreka/goreka/registry/clocktest"
	"github.com/goreka/goreka/server/api"
	"github.com/goreka/goreka/server/api/wire"
)

func init() { gin.SetMode(gin.ReleaseMode) }

// goreka is a registry with the read API mounted as the server mounts it,
// served over HTTP, optionally behind basic auth.
type goreka struct {
	t   *testing.T
	reg *registry.Registry
	srv *httptest.Server
}

func newGoreka(t *testing.T, user, pass string) *goreka {
	t.Helper()
	g := &goreka{t: t}
	clock := clocktest.New(time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC))
	var a *api.API
	g.reg = registry.New(registry.Options{Now: clock.Now, OnEvent: func(e registry.Event) { a.OnEvent(e) }})
	a = api.New(g.reg, api.Config{Now: clock.Now})
	eng := gin.New()
	if user != "" {
		eng.Use(gin.BasicAuth(gin.Accounts{user: pass}))
	}
	a.Mount(eng)
	g.srv = httptest.NewServer(eng)
	t.Cleanup(g.srv.Close)
	return g
}

func (g *goreka) register(app, id string) {
	g.t.Helper()
	in := &registry.Instance{InstanceID: id, App: app, HostName: id + ".local", IPAddr: "10.0.0.1",
		Port: registry.Port{Number: 8080, Enabled: true}, Metadata: map[string]string{},
		DataCenterInfo: registry.DataCenterInfo{Name: registry.DataCenterMyOwn}}
	if _, err := g.reg.Register(in, false); err != nil {
		g.t.Fatal(err)
	}
}

func mustNew(t *testing.T, raw string, opts ...Option) *Client {
	t.Helper()
	c, err := New(raw, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestNewURL(t *testing.T) {
	for _, tc := range []struct {
		raw, ns, want, user string
	}{
		{"http://h:8761", "", "http://h:8761", ""},
		{"h:8761", "", "http://h:8761", ""},
		{"http://h:8761/eureka/", "", "http://h:8761", ""},
		{"https://h/base/eureka", "", "https://h/base", ""},
		{"http://h:8761/ns/dev/eureka/", "", "http://h:8761/ns/dev", ""},
		{"http://h:8761/eureka/", "dev", "http://h:8761/ns/dev", ""},
		{"http://h:8761/", DefaultNamespace, "http://h:8761", ""},
		{"http://u:p@h:8761/eureka/?x=1#f", "", "http://h:8761", "u"},
	} {
		c := mustNew(t, tc.raw, WithNamespace(tc.ns), WithCredentials("flag", "x"))
		if c.URL() != tc.want {
			t.Errorf("New(%q, ns %q).URL() = %q, want %q", tc.raw, tc.ns, c.URL(), tc.want)
		}
		if want := cmpOr(tc.user, "flag"); c.user != want {
			t.Errorf("New(%q): user %q, want %q (the URL's wins)", tc.raw, c.user, want)
		}
	}
	for _, raw := range []string{"ftp://h", "http://", "http://%zz"} {
		if _, err := New(raw); err == nil || !strings.Contains(err.Error(), "not an http(s) URL") {
			t.Errorf("New(%q): %v, want not an http(s) URL", raw, err)
		}
	}
	for _, ns := range []string{"QA", "-a", strings.Repeat("a", 64), "a_b"} {
		if _, err := New("http://h", WithNamespace(ns)); err == nil {
			t.Errorf("namespace %q accepted", ns)
		}
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// Instances follows the continue tokens to the last page; Pages yields
// them one by one.
func TestInstancesReadsEveryPage(t *testing.T) {
	g := newGoreka(t, "", "")
	for i := range 5 {
		g.register("ORDERS", fmt.Sprintf("o%d", i))
	}
	g.register("BILLING", "b1")
	c := mustNew(t, g.srv.URL+"/eureka/")
	ctx := t.Context()

	all, err := c.Instances(ctx, url.Values{"app": {"orders"}, "limit": {"2"}})
	if err != nil || len(all.Instances) != 5 || all.Continue != "" || all.Revision != 6 {
		t.Fatalf("Instances: %v, %d instances, continue %q, revision %d", err, len(all.Instances), all.Continue, all.Revision)
	}
	for i, in := range all.Instances {
		if want := fmt.Sprintf("o%d", i); in.ID != want || in.App != "ORDERS" {
			t.Errorf("instance %d: %s/%s, want ORDERS/%s", i, in.App, in.ID, want)
		}
	}
	pages := 0
	for p, err := range c.Pages(ctx, url.Values{"limit": {"2"}}) {
		if err != nil {
			t.Fatal(err)
		}
		pages++
		if pages == 2 {
			break // a consumer may stop early
		}
		_ = p
	}
	if pages != 2 {
		t.Errorf("pages %d", pages)
	}
	none, err := c.Instances(ctx, url.Values{"app": {"nothing"}})
	if err != nil || none.Instances == nil || len(none.Instances) != 0 {
		t.Errorf("no match: %v %#v", err, none)
	}

	apps, err := c.Apps(ctx)
	if err != nil || len(apps.Apps) != 2 || apps.Apps[1].Name != "ORDERS" || apps.Apps[1].Statuses[registry.StatusUp] != 5 {
		t.Errorf("Apps: %v %+v", err, apps)
	}
}

// A refused parameter, missing credentials and a server that does not
// answer are typed errors.
func TestErrors(t *testing.T) {
	g := newGoreka(t, "admin", "pw")
	ctx := t.Context()

	_, err := mustNew(t, g.srv.URL).Apps(ctx)
	var se *StatusError
	if !errors.As(err, &se) || se.StatusCode != http.StatusUnauthorized || se.Method != "GET" || se.URL != g.srv.URL+"/goreka/api/v1/apps" {
		t.Fatalf("no credentials: %v", err)
	}
	c := mustNew(t, g.srv.URL, WithCredentials("admin", "pw"))
	_, err = c.Instances(ctx, url.Values{"lifecycle": {"asleep"}})
	if !errors.As(err, &se) || se.StatusCode != http.StatusBadRequest || se.Parameter != "lifecycle" ||
		!strings.Contains(err.Error(), `HTTP 400: lifecycle: "asleep" is not a lifecycle`) {
		t.Fatalf("bad parameter: %v", err)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	_, err = mustNew(t, addr).Apps(ctx)
	var ue *UnreachableError
	if !errors.As(err, &ue) || ue.Timeout() || ue.Server != "http://"+addr || !strings.Contains(err.Error(), "unreachable") {
		t.Fatalf("nothing listening: %v", err)
	}

	// The HTTP client's timeout is a timeout.
	stall := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	defer stall.Close()
	_, err = mustNew(t, stall.URL, WithHTTPClient(&http.Client{Timeout: 50 * time.Millisecond})).Apps(ctx)
	if !errors.As(err, &ue) || !ue.Timeout() {
		t.Fatalf("no answer: %v, want a timeout", err)
	}
	// A body that is not the API's is an error too.
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "<html>") }))
	defer other.Close()
	if _, err = mustNew(t, other.URL).Apps(ctx); err == nil || !strings.Contains(err.Error(), "not the answer of a goreka") {
		t.Fatalf("not goreka: %v", err)
	}
}

// The Eureka operations go to Eureka's paths with the app upper-cased.
func TestWrites(t *testing.T) {
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Method+" "+r.URL.RequestURI())
		mu.Unlock()
		if r.URL.Path == "/ns/dev/eureka/status" {
			fmt.Fprint(w, `{"generalStats":{"server-uptime":"00:01"},"applicationStats":{"registered-replicas":""}}`)
			return
		}
		if strings.HasSuffix(r.URL.Path, "/gone") {
			w.WriteHeader(http.StatusNotFound)
		}
	}))
	defer srv.Close()
	c := mustNew(t, srv.URL+"/eureka/", WithNamespace("dev"))
	ctx := t.Context()
	if err := c.Override(ctx, "orders", "o 1", registry.StatusOutOfService); err != nil {
		t.Fatal(err)
	}
	if err := c.RemoveOverride(ctx, "orders", "o1"); err != nil {
		t.Fatal(err)
	}
	if err := c.Cancel(ctx, "orders", "o1"); err != nil {
		t.Fatal(err)
	}
	var se *StatusError
	if err := c.Cancel(ctx, "orders", "gone"); !errors.As(err, &se) || se.StatusCode != 404 || se.Message != "" {
		t.Fatalf("cancel of an unknown instance: %v", err)
	}
	st, err := c.Status(ctx)
	if err != nil || st.General["server-uptime"] != "00:01" {
		t.Fatalf("Status: %v %+v", err, st)
	}
	want := []string{"PUT /ns/dev/eureka/apps/ORDERS/o%201/status?value=OUT_OF_SERVICE", "DELETE /ns/dev/eureka/apps/ORDERS/o1/status",
		"DELETE /ns/dev/eureka/apps/ORDERS/o1", "DELETE /ns/dev/eureka/apps/ORDERS/gone", "GET /ns/dev/eureka/status"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("requests:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// The long poll answers the changes after since, or a snapshot for 0.
func TestChanges(t *testing.T) {
	g := newGoreka(t, "", "")
	g.register("ORDERS", "o1")
	c := mustNew(t, g.srv.URL, WithHTTPClient(&http.Client{Timeout: time.Nanosecond})) // the poll ignores it
	ctx := t.Context()
	a, err := c.Changes(ctx, 0, 0)
	if err != nil || a.Snapshot == nil || len(a.Snapshot.Instances) != 1 || a.Revision != 1 {
		t.Fatalf("since 0: %v %+v", err, a)
	}
	g.register("ORDERS", "o2")
	a, err = c.Changes(ctx, 1, time.Minute)
	if err != nil || a.Snapshot != nil || len(a.Changes) != 1 || a.Changes[0].ID != "o2" || a.Changes[0].Kind != wire.KindRegister {
		t.Fatalf("since 1: %v %+v", err, a)
	}
}
