package main

// Process-level tests of namespaces (/ns/{name}/eureka/..., the
// goreka.namespaces.* properties): isolation of fetch, delta and hash,
// limits, unknown and bad names, per-namespace snapshots, and two goreka
// peers replicating per namespace. Nodes come from harness_test.go.

import (
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goreka/goreka/compat"
)

// nsNode is a standalone in-process server with extra arguments.
func nsNode(t *testing.T, extra ...string) *node {
	t.Helper()
	port := freePort(t, "127.0.0.1")
	return inProcessNode(t, "N", "127.0.0.1", port, standaloneArgs("127.0.0.1", port, extra...)...)
}

// nsBase is the Eureka root of namespace ns on n ("" for the default one).
func nsBase(n *node, ns string) string {
	if ns == "" {
		return n.base()
	}
	return "http://" + n.addr() + "/ns/" + ns + "/eureka"
}

// nsDoc is GET path of namespace ns decoded: "APP/id" -> status, and the
// document's apps__hashcode.
func nsDoc(t *testing.T, n *node, ns, path string) (map[string]string, string) {
	t.Helper()
	body := must(t, "GET", nsBase(n, ns)+path, "", http.StatusOK)
	doc, err := compat.DecodeApplications(body, compat.JSON)
	if err != nil {
		t.Fatalf("GET %s%s: %v: %s", nsBase(n, ns), path, err, body)
	}
	out := map[string]string{}
	for _, a := range doc.Apps {
		for _, v := range a.Instances {
			out[a.Name+"/"+v.Instance.ID()] = string(v.Instance.Status)
		}
	}
	return out, doc.HashCode
}

func nsRegister(t *testing.T, n *node, ns, app, id string) {
	t.Helper()
	must(t, "POST", nsBase(n, ns)+"/apps/"+app, instanceBody(app, id, 30, 90), http.StatusNoContent)
}

func sameKeys(m map[string]string, want ...string) bool {
	if len(m) != len(want) {
		return false
	}
	for _, k := range want {
		if _, ok := m[k]; !ok {
			return false
		}
	}
	return true
}

func TestNamespacesIsolated(t *testing.T) {
	n := nsNode(t, "--goreka.namespaces.allowed=dev,test")
	n.start()
	n.waitServing()
	nsRegister(t, n, "", "ORDERS", "o-default")
	nsRegister(t, n, "dev", "ORDERS", "o-dev")
	nsRegister(t, n, "test", "ORDERS", "o-test-1")
	nsRegister(t, n, "test", "BILLING", "b-test-2")
	// The trailing-slash and /v2 forms clients use work under a prefix too.
	must(t, "PUT", "http://"+n.addr()+"/ns/dev/eureka/v2/apps/ORDERS/o-dev/", "", http.StatusOK)

	want := map[string][]string{
		"":     {"ORDERS/o-default"},
		"dev":  {"ORDERS/o-dev"},
		"test": {"ORDERS/o-test-1", "BILLING/b-test-2"},
	}
	hashes := map[string]string{"": "UP_1_", "dev": "UP_1_", "test": "UP_2_"}
	for ns, ids := range want {
		// The response cache rebuilds right after a change, not within it.
		waitUntil(t, fmt.Sprintf("namespace %q serves its own instances", ns), startWithin, func() (bool, string) {
			full, hash := nsDoc(t, n, ns, "/apps")
			delta, dhash := nsDoc(t, n, ns, "/apps/delta")
			return sameKeys(full, ids...) && hash == hashes[ns] && sameKeys(delta, ids...) && dhash == hashes[ns],
				fmt.Sprintf("full %v hash %s, delta %v hash %s; want %v hash %s", full, hash, delta, dhash, ids, hashes[ns])
		})
		// Application and instance reads see the namespace only.
		for _, other := range []string{"o-default", "o-dev", "o-test-1"} {
			code, _, _ := do("GET", nsBase(n, ns)+"/apps/ORDERS/"+other, "")
			if mine := strings.Contains(strings.Join(ids, ","), other); (code == http.StatusOK) != mine {
				t.Errorf("namespace %q: GET apps/ORDERS/%s = %d", ns, other, code)
			}
		}
	}
	// /ns/default/ is the default namespace.
	if d, _ := nsDoc(t, n, "default", "/apps"); !sameKeys(d, "ORDERS/o-default") {
		t.Errorf("/ns/default/eureka/apps = %v", d)
	}
	if dev, ok := n.app().ns.Lookup("dev"); !ok || dev.reg.Size() != 1 || n.app().reg.Size() != 1 {
		t.Errorf("registries: default %d, dev %d", n.app().reg.Size(), dev.reg.Size())
	}
	// Writes address their namespace only: dev has no o-test-1.
	must(t, "PUT", nsBase(n, "dev")+"/apps/ORDERS/o-test-1", "", http.StatusNotFound)
	must(t, "DELETE", nsBase(n, "dev")+"/apps/ORDERS/o-test-1", "", http.StatusNotFound)
	must(t, "DELETE", nsBase(n, "test")+"/apps/ORDERS/o-test-1", "", http.StatusOK)
	waitUntil(t, "test loses o-test-1, dev keeps o-dev", startWithin, func() (bool, string) {
		d, _ := nsDoc(t, n, "dev", "/apps")
		e, _ := nsDoc(t, n, "test", "/apps")
		return sameKeys(d, "ORDERS/o-dev") && sameKeys(e, "BILLING/b-test-2"), fmt.Sprint(d, e)
	})

	// Unknown and bad names; the registry is unchanged by either.
	body := must(t, "GET", nsBase(n, "staging")+"/apps", "", http.StatusNotFound)
	if !strings.Contains(string(body), `"staging"`) || !strings.Contains(string(body), "goreka.namespaces.auto-create") {
		t.Errorf("404 for an unknown namespace says %q", body)
	}
	must(t, "POST", nsBase(n, "staging")+"/apps/ORDERS", instanceBody("ORDERS", "x", 30, 90), http.StatusNotFound)
	body = must(t, "GET", "http://"+n.addr()+"/ns/Dev/eureka/apps", "", http.StatusBadRequest)
	if !strings.Contains(string(body), `"Dev"`) || !strings.Contains(string(body), "lower-case") {
		t.Errorf("400 for a bad name says %q", body)
	}
	if names := n.app().ns.Names(); strings.Join(names, ",") != "default,dev,test" {
		t.Errorf("namespaces after unknown and bad requests: %v", names)
	}

	// Metrics carry the namespace.
	m := scrape(t, n)
	for _, k := range []string{
		`goreka_registrations_total{namespace="default",replication="false"}`,
		`goreka_registrations_total{namespace="dev",replication="false"}`,
		`eureka_server_instances{application="ORDERS",namespace="dev",status="UP"}`,
		`goreka_http_requests_total{code="200",method="PUT",namespace="dev",route="/eureka/apps/:app/:id"}`,
	} {
		if m[k] != 1 {
			t.Errorf("metric %s = %v, want 1", k, m[k])
		}
	}
	if m[`goreka_registrations_total{namespace="test",replication="false"}`] != 2 {
		t.Errorf("test registrations = %v", m[`goreka_registrations_total{namespace="test",replication="false"}`])
	}
}

func TestNamespacesAutoCreateLimits(t *testing.T) {
	n := nsNode(t, "--goreka.namespaces.auto-create=true", "--goreka.namespaces.max=2", "--goreka.namespaces.max-instances=2")
	n.start()
	n.waitServing()
	nsRegister(t, n, "a", "APP", "a-1")
	nsRegister(t, n, "a", "APP", "a-2")
	nsRegister(t, n, "b", "APP", "b-1")
	// A third namespace: refused, not created.
	body := must(t, "POST", nsBase(n, "c")+"/apps/APP", instanceBody("APP", "c-1", 30, 90), http.StatusForbidden)
	if !strings.Contains(string(body), `"c"`) || !strings.Contains(string(body), "goreka.namespaces.max") {
		t.Errorf("403 for one namespace too many says %q", body)
	}
	must(t, "GET", nsBase(n, "c")+"/apps", "", http.StatusForbidden)
	// A third instance in a: refused, a unchanged; a re-registration passes.
	body = must(t, "POST", nsBase(n, "a")+"/apps/APP", instanceBody("APP", "a-3", 30, 90), http.StatusForbidden)
	if !strings.Contains(string(body), "goreka.namespaces.max-instances") {
		t.Errorf("403 for one instance too many says %q", body)
	}
	nsRegister(t, n, "a", "APP", "a-2")
	waitUntil(t, "namespace a lists its two instances", startWithin, func() (bool, string) {
		d, _ := nsDoc(t, n, "a", "/apps")
		return sameKeys(d, "APP/a-1", "APP/a-2"), fmt.Sprint(d)
	})
	// The default namespace is not limited by max-instances.
	for i := range 3 {
		nsRegister(t, n, "", "APP", fmt.Sprintf("d-%d", i))
	}
	if names := n.app().ns.Names(); strings.Join(names, ",") != "default,a,b" {
		t.Errorf("namespaces: %v", names)
	}
}

func TestNamespacesSnapshotWarmRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "registry.snapshot")
	n := nsNode(t, "--goreka.snapshot.path="+path, "--goreka.snapshot.interval=1h",
		"--goreka.namespaces.allowed=dev", "--goreka.namespaces.auto-create=true")
	n.start()
	n.waitServing()
	nsRegister(t, n, "", "APP", "default-1")
	nsRegister(t, n, "dev", "APP", "dev-1")
	nsRegister(t, n, "qa", "APP", "qa-1") // auto-created
	n.stop()
	// The same arguments: the snapshots are the only source of the state.
	n.start()
	n.waitServing()
	// The first read of each namespace after the restart: nothing but
	// the snapshot can have filled it.
	for ns, id := range map[string]string{"": "APP/default-1", "dev": "APP/dev-1", "qa": "APP/qa-1"} {
		if d, _ := nsDoc(t, n, ns, "/apps"); !sameKeys(d, id) {
			t.Errorf("namespace %q after restart: %v, want %s", ns, d, id)
		}
	}
}

// Two goreka peers replicate each namespace into the same namespace, and
// a restarted peer copies every namespace at start-up.
func TestNamespacesReplicatePerNamespace(t *testing.T) {
	ips := []string{"127.0.0.1", "127.0.0.1"}
	ports := []int{freePort(t, "127.0.0.1"), 0}
	ports[1] = freePort(t, "127.0.0.1")
	for ports[1] == ports[0] {
		ports[1] = freePort(t, "127.0.0.1")
	}
	nodes := clCluster(t, ips, ports, false, "--goreka.namespaces.allowed=dev,test", "--goreka.namespaces.auto-create=true")
	a, b := nodes[0], nodes[1]
	nsRegister(t, a, "dev", "ORDERS", "o-dev")
	nsRegister(t, a, "test", "ORDERS", "o-test")
	for ns, id := range map[string]string{"dev": "ORDERS/o-dev", "test": "ORDERS/o-test"} {
		waitUntil(t, "B has "+id+" in "+ns, clDeadline, func() (bool, string) {
			d, _ := nsDoc(t, b, ns, "/apps")
			return sameKeys(d, id), fmt.Sprint(d)
		})
	}
	if ids, _ := appInstances(b, "ORDERS"); len(ids) != 0 {
		t.Errorf("B's default namespace got namespaced instances: %v", ids)
	}
	// A namespace auto-created on A by a client is auto-created on B by
	// A's replication.
	nsRegister(t, a, "qa", "ORDERS", "o-qa")
	waitUntil(t, "B has ORDERS/o-qa in the auto-created qa", clDeadline, func() (bool, string) {
		code, body, err := do("GET", nsBase(b, "qa")+"/apps/ORDERS", "")
		return code == http.StatusOK && strings.Contains(string(body), "o-qa"), fmt.Sprint(code, err, string(body))
	})
	// Heartbeats and cancels go to the same namespace.
	must(t, "DELETE", nsBase(a, "dev")+"/apps/ORDERS/o-dev", "", http.StatusOK)
	waitUntil(t, "B's dev loses o-dev", clDeadline, func() (bool, string) {
		d, _ := nsDoc(t, b, "dev", "/apps")
		return len(d) == 0, fmt.Sprint(d)
	})

	// Start-up sync per namespace.
	b.stop()
	nsRegister(t, a, "dev", "ORDERS", "o-dev-2")
	b.start()
	b.waitServing()
	waitUntil(t, "restarted B copied dev and test", clDeadline, func() (bool, string) {
		d, _ := nsDoc(t, b, "dev", "/apps")
		e, _ := nsDoc(t, b, "test", "/apps")
		return sameKeys(d, "ORDERS/o-dev-2") && sameKeys(e, "ORDERS/o-test"), fmt.Sprint(d, e)
	})
	if len(b.logs().grep("start-up sync with peers done")) < 2 {
		t.Errorf("restarted B logged no start-up sync of its namespaces")
	}
}

// goreka ctl -namespace works on one namespace: reads through the tool
// API under /ns/{name}/, writes through its Eureka API; an unknown one
// fails with the server's reason.
func TestCtlNamespace(t *testing.T) {
	n := ctlNode(t, "ctlns", "--goreka.namespaces.allowed=dev")
	nsRegister(t, n, "dev", "ORDERS", "o-dev")
	nsRegister(t, n, "", "BILLING", "b-default")
	srv := "-server=http://" + n.addr()
	code, out, stderr := ctlRun(t, nil, srv, "-namespace=dev", "instances")
	if code != 0 || !strings.Contains(out, "o-dev") || strings.Contains(out, "b-default") {
		t.Fatalf("instances in dev: %d %q %q", code, out, stderr)
	}
	code, out, _ = ctlRun(t, []string{"GOREKA_NAMESPACE=default"}, srv, "instances")
	if code != 0 || strings.Contains(out, "o-dev") || !strings.Contains(out, "b-default") {
		t.Fatalf("instances in default: %d %q", code, out)
	}
	// A namespace's service URL names it too.
	if code, out, _ = ctlRun(t, nil, "-server=http://"+n.addr()+"/ns/dev/eureka/", "apps"); code != 0 || !strings.Contains(out, "ORDERS") || strings.Contains(out, "BILLING") {
		t.Fatalf("apps via the dev service URL: %d %q", code, out)
	}
	if code, _, stderr = ctlRun(t, nil, srv, "--namespace=dev", "cancel", "ORDERS", "o-dev"); code != 0 {
		t.Fatalf("cancel in dev: %d %q", code, stderr)
	}
	if dev, _ := n.app().ns.Lookup("dev"); dev.reg.Size() != 0 || n.app().reg.Size() != 1 {
		t.Fatalf("after the cancel: dev %d, default %d", dev.reg.Size(), n.app().reg.Size())
	}
	if code, _, stderr = ctlRun(t, nil, srv, "-namespace=qa", "apps"); code == 0 || !strings.Contains(stderr, `"qa"`) {
		t.Fatalf("unknown namespace: %d %q", code, stderr)
	}
	if code, _, stderr = ctlRun(t, nil, srv, "-namespace=QA", "apps"); code != exitUsage || !strings.Contains(stderr, "lower-case") {
		t.Fatalf("bad namespace: %d %q", code, stderr)
	}
}

// The dashboard of each namespace shows its own instances, links within
// its prefix, and the selector lists every namespace.
func TestNamespaceDashboard(t *testing.T) {
	n := nsNode(t, "--goreka.namespaces.allowed=dev,test")
	n.start()
	n.waitServing()
	nsRegister(t, n, "dev", "ORDERS-DEV", "o-dev")
	nsRegister(t, n, "", "BILLING", "b-default")
	root := "http://" + n.addr()
	page := string(must(t, "GET", root+"/ns/dev/", "", http.StatusOK))
	for _, want := range []string{"ORDERS-DEV", `href="/ns/dev/lastn"`, `href="/ns/test/"`, `href="/"`, `aria-current="page">dev<`} {
		if !strings.Contains(page, want) {
			t.Errorf("dev's dashboard lacks %q", want)
		}
	}
	if strings.Contains(page, "BILLING") {
		t.Error("dev's dashboard lists the default namespace's BILLING")
	}
	page = string(must(t, "GET", root+"/", "", http.StatusOK))
	if !strings.Contains(page, "BILLING") || strings.Contains(page, "ORDERS-DEV") || !strings.Contains(page, `href="/ns/dev/"`) {
		t.Error("the default dashboard shows the wrong namespace or no selector")
	}
	must(t, "GET", root+"/ns/dev/lastn", "", http.StatusOK)
	api := string(must(t, "GET", root+"/ns/dev/goreka/api/dashboard", "", http.StatusOK))
	if !strings.Contains(api, "ORDERS-DEV") || strings.Contains(api, "BILLING") {
		t.Errorf("dev's live data: %s", api)
	}
	// The selector as a query parameter.
	req, _ := http.NewRequest("GET", root+"/?namespace=test", nil)
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != "/ns/test/" {
		t.Errorf("/?namespace=test: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	must(t, "GET", root+"/?namespace=nope", "", http.StatusNotFound)
}

// GET /ns/{name}/eureka/status lists the namespace's own replicas: a stock
// peer (goreka.namespaces.stock-peers) is a replica of the default
// namespace only.
func TestNamespaceStatusListsItsReplicas(t *testing.T) {
	n := nsNode(t, "--goreka.namespaces.allowed=dev",
		"--eureka.client.service-url.defaultZone=http://127.0.0.2:1/eureka/,http://127.0.0.3:1/eureka/",
		"--goreka.namespaces.stock-peers=127.0.0.3:1")
	n.start()
	n.waitServing()
	status := func(base string) string {
		code, body, err := do("GET", base+"/status", "")
		if err != nil || code != http.StatusOK {
			t.Fatalf("GET %s/status: %d %v", base, code, err)
		}
		return string(body)
	}
	def, dev := status(nsBase(n, "")), status(nsBase(n, "dev"))
	if !strings.Contains(def, "127.0.0.2") || !strings.Contains(def, "127.0.0.3") {
		t.Errorf("default namespace's status does not list both peers:\n%s", def)
	}
	if !strings.Contains(dev, "127.0.0.2") || strings.Contains(dev, "127.0.0.3") {
		t.Errorf("dev's status lists the stock peer or misses the goreka one:\n%s", dev)
	}
}
