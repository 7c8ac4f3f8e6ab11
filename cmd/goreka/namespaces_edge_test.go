package main

// Process-level regression tests of the namespace router's edges: scoped
// users, anonymous health probes, per-namespace metrics and the
// process-wide fetch allowance. Nodes come from harness_test.go.

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/goreka/goreka/namespace"
	"github.com/goreka/goreka/server"
)

// TestNamespaceScopedUserCreatesNothing: with auto-create on, a user
// scoped to dev is refused other namespaces with the same 403 whether they
// exist or not, and creates none; health probes of a namespace need no
// credentials and create nothing; /ns/dev/metrics holds only dev's series.
func TestNamespaceScopedUserCreatesNothing(t *testing.T) {
	n := nsNode(t, "--goreka.namespaces.allowed=dev,staging", "--goreka.namespaces.auto-create=true", "--goreka.namespaces.max=5",
		"--goreka.security.users[0].name=admin", "--goreka.security.users[0].password=a", "--goreka.security.users[0].roles=admin",
		"--goreka.security.users[1].name=dev", "--goreka.security.users[1].password=d", "--goreka.security.users[1].namespaces=dev",
		"--goreka.security.users[1].apps=*")
	n.start()
	admin, dev, anon := "http://admin:a@"+n.addr(), "http://dev:d@"+n.addr(), "http://"+n.addr()
	waitUntil(t, "serving", startWithin, func() (bool, string) {
		c, _, err := do("GET", admin+"/ns/dev/eureka/apps", "")
		return err == nil && c == 200, ""
	})
	before := n.app().ns.Names()
	for _, p := range []string{"/ns/staging/eureka/apps", "/ns/x1/eureka/apps", "/ns/x2/eureka/apps/"} {
		name := strings.Split(p, "/")[2]
		if b := must(t, "GET", dev+p, "", http.StatusForbidden); string(b) != "user dev may not use namespace "+name {
			t.Errorf("GET %s: %q", p, b)
		}
	}
	must(t, "POST", dev+"/ns/x3/eureka/apps/SECRETAPP", instanceBody("SECRETAPP", "s1", 30, 90), http.StatusForbidden)
	if got := n.app().ns.Names(); !slices.Equal(got, before) {
		t.Fatalf("refused requests changed the namespaces: %v, were %v", got, before)
	}
	// Anonymous probes: open for a namespace that exists, 404 and nothing
	// created for one that does not.
	must(t, "GET", anon+"/ns/dev"+server.ReadinessPath, "", http.StatusOK)
	must(t, "GET", anon+"/ns/dev"+server.LivenessPath, "", http.StatusOK)
	must(t, "GET", anon+"/ns/dev"+server.HealthPath, "", http.StatusOK)
	must(t, "GET", anon+"/ns/nope"+server.ReadinessPath, "", http.StatusNotFound)
	must(t, "GET", anon+"/ns/dev/eureka/apps", "", http.StatusUnauthorized)
	if got := n.app().ns.Names(); !slices.Equal(got, before) {
		t.Fatalf("a probe created a namespace: %v", got)
	}
	// dev's metrics are dev's only.
	must(t, "POST", admin+"/eureka/apps/SECRETAPP", instanceBody("SECRETAPP", "s1", 30, 90), http.StatusNoContent)
	must(t, "POST", admin+"/ns/staging/eureka/apps/STAGEAPP", instanceBody("STAGEAPP", "t1", 30, 90), http.StatusNoContent)
	must(t, "POST", dev+"/ns/dev/eureka/apps/DEVAPP", instanceBody("DEVAPP", "d1", 30, 90), http.StatusNoContent)
	b := string(must(t, "GET", dev+"/ns/dev/metrics", "", http.StatusOK))
	if !strings.Contains(b, `eureka_server_instances{application="DEVAPP",namespace="dev",status="UP"} 1`) {
		t.Errorf("/ns/dev/metrics lacks dev's instance")
	}
	for _, leak := range []string{"SECRETAPP", "STAGEAPP", `namespace="default"`, `namespace="staging"`} {
		if strings.Contains(b, leak) {
			t.Errorf("/ns/dev/metrics holds %s", leak)
		}
	}
	all := string(must(t, "GET", admin+"/metrics", "", http.StatusOK))
	for _, want := range []string{`application="SECRETAPP"`, `application="STAGEAPP"`, `application="DEVAPP"`} {
		if !strings.Contains(all, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// TestNamespaceFetchLimitProcessWide: one client's fetch allowance is
// the process's, not one per namespace: exhausted at /eureka/apps, its
// fetches of /ns/dev/eureka/apps are throttled too, and the throttles are
// counted once, at /metrics.
func TestNamespaceFetchLimitProcessWide(t *testing.T) {
	n := nsNode(t, "--goreka.namespaces.allowed=dev", "--goreka.fetch-limit.enabled=true",
		"--goreka.fetch-limit.full-per-minute=1", "--goreka.fetch-limit.burst=2")
	n.start()
	n.waitServing()
	get := func(p string) int {
		t.Helper()
		req, _ := http.NewRequest("GET", "http://"+n.addr()+p, nil)
		req.Header.Set("Accept", "application/json")
		req.Header.Set(server.IdentityNameHeader, "looper")
		req.Header.Set(server.IdentityIDHeader, "looper-1")
		resp, err := testClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for i, want := range []int{200, 200, 503} {
		if got := get("/eureka/apps"); got != want {
			t.Fatalf("fetch %d of /eureka/apps: %d, want %d", i+1, got, want)
		}
	}
	for _, p := range []string{"/ns/dev/eureka/apps", "/ns/default/eureka/apps", "/ns/dev/eureka/v2/apps/"} {
		if got := get(p); got != 503 {
			t.Errorf("%s after the allowance was used at /eureka/apps: %d, want 503", p, got)
		}
	}
	m := string(must(t, "GET", "http://"+n.addr()+"/metrics", "", http.StatusOK))
	if !strings.Contains(m, `goreka_fetch_limit_throttled_requests_total{kind="full",namespace="default"} 4`) {
		t.Errorf("throttles not counted once for the process:\n%s", grepLines(m, "goreka_fetch_limit"))
	}
	if strings.Contains(m, `goreka_fetch_limit_tracked_clients{namespace="dev"}`) {
		t.Error("the shared fetch limiter is exposed per namespace")
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestNamespaceCreationConcurrentAndClosed: concurrent first requests of
// one new name share one creation; concurrent creations of different names
// stop at goreka.namespaces.max exactly (those being created count); once
// shutdown began (close) nothing is created, with a 503.
func TestNamespaceCreationConcurrentAndClosed(t *testing.T) {
	n := nsNode(t, "--goreka.namespaces.auto-create=true", "--goreka.namespaces.max=4")
	n.start()
	n.waitServing()
	ns := n.app().ns
	var wg sync.WaitGroup
	srvs := make([]*stack, 8)
	for i := range srvs {
		wg.Go(func() {
			s, err := ns.Get("same", true)
			if err != nil {
				t.Errorf("Namespace(same): %v", err)
			}
			srvs[i] = s
		})
	}
	wg.Wait()
	for _, s := range srvs {
		if s == nil || s != srvs[0] {
			t.Fatalf("concurrent first requests got different servers")
		}
	}
	var created, refused atomic.Int32
	for i := range 8 {
		wg.Go(func() {
			_, err := ns.Get(fmt.Sprintf("n%d", i), true)
			switch {
			case err == nil:
				created.Add(1)
			case errors.Is(err, namespace.ErrLimit):
				refused.Add(1)
			default:
				t.Errorf("Namespace(n%d): %v", i, err)
			}
		})
	}
	wg.Wait()
	if created.Load() != 3 || refused.Load() != 5 || len(ns.Names()) != 5 {
		t.Fatalf("created %d, refused %d, namespaces %v; want 3, 5 and default+4", created.Load(), refused.Load(), ns.Names())
	}
	for _, name := range ns.Names()[1:] {
		must(t, "GET", nsBase(n, name)+"/apps", "", http.StatusOK) // each one runs and opens
	}
	ns.Close()
	if _, err := ns.Get("same", true); err != nil {
		t.Fatalf("an existing namespace after close: %v", err)
	}
	before := ns.Names()
	// At max too: shutting down is the answer that counts.
	_, err := ns.Get("late", true)
	if !errors.Is(err, namespace.ErrClosed) || !slices.Equal(ns.Names(), before) {
		t.Fatalf("creation after close: %v, namespaces %v", err, ns.Names())
	}
}
