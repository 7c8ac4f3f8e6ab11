//go:build compat

package suite

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// nScenario: namespaces by path prefix with real clients (issue 21, compat/README.md).
const nScenario = "n namespaces"

// namespaceClients are the clients of scenario n: the caller needs a @LoadBalanced client.
var namespaceClients = []string{"spring-boot3", "spring-boot4"}

// runNamespaces is scenario n: its own goreka with namespaces dev and test per client (<client>-dev,
// <client>-test). Per client, <client>-na (the caller) and <client>-nb run in dev (defaultZone
// .../ns/<client>-dev/eureka/), and another <client>-nb runs in test (.../ns/<client>-test/eureka/):
// the same application name in both. Passes when each namespace
// lists its own instances only (fetch), each client's reconcile hash equals its namespace's
// apps__hashcode and its local copy holds its namespace's instances only (hash), an instance the
// driver registers in test reaches test's client by delta and never dev's (delta), every /call from
// the dev caller answers from dev's nb, never test's (@LoadBalanced), and the default namespace lists
// none of them.
func (s *suite) runNamespaces(t *testing.T, tg *target, runs []*clientRun, outDir string, buildErr map[string]error) {
	var nrs []*clientRun
	for _, r := range runs {
		switch {
		case buildErr[r.client] != nil:
		case tg.namespaceArgs == nil:
			r.results[nScenario] = result{notApplicable, "n/a: " + tg.notes[nScenario]}
		case !slices.Contains(namespaceClients, r.client):
			r.results[nScenario] = result{skip, "Spring clients only (the caller is a @LoadBalanced client)"}
		default:
			nrs = append(nrs, r)
		}
	}
	if len(nrs) == 0 {
		return
	}
	dir := filepath.Join(outDir, "namespaces")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	base := fmt.Sprintf("http://127.0.0.1:%d/", port)
	srv := &server{tg: tg, port: port, log: filepath.Join(dir, "server.log"), api: eurekaAPI{base: base + "eureka/", auth: s.auth}}
	// Each client has its own pair of namespaces (<client>-dev, <client>-test): the clients run at once,
	// and each checks that its namespace holds exactly its own instances.
	var allowed []string
	for _, r := range nrs {
		allowed = append(allowed, r.client+"-dev", r.client+"-test")
	}
	srv.args = tg.namespaceArgs(strings.Join(allowed, ","))
	if s.auth != "" && tg.authArgs != nil {
		user, pass, _ := strings.Cut(s.auth, ":")
		srv.args = append(srv.args, tg.authArgs(user, pass)...)
	}
	if err := s.startServer(srv); err != nil {
		for _, r := range nrs {
			r.results[nScenario] = result{fail, "server did not start: " + strings.SplitN(err.Error(), "\n", 2)[0]}
		}
		return
	}
	defer func() { _ = srv.p.stop(syscall.SIGTERM, 20*time.Second) }()
	target, _ := url.Parse(strings.TrimSuffix(base, "/"))
	var wg sync.WaitGroup
	for _, r := range nrs {
		wg.Go(func() {
			start := time.Now()
			d, err := s.namespaceClient(r, srv, target, dir)
			r.set(nScenario, err, d)
			if err != nil {
				t.Logf("FAIL %s / %s: %v\n--- %s (tail)\n%s", r.client, nScenario, err, srv.log, tail(srv.log, 25))
			} else {
				t.Logf("%s / %s: pass in %s %s", r.client, nScenario, time.Since(start).Round(100*time.Millisecond), d)
			}
		})
	}
	wg.Wait()
}

func (s *suite) namespaceClient(r *clientRun, srv *server, target *url.URL, dir string) (string, error) {
	agentsDir := filepath.Join(s.root, "compat", "agents")
	nsAPI := func(ns string) eurekaAPI {
		return eurekaAPI{base: strings.TrimSuffix(srv.api.base, "eureka/") + "ns/" + ns + "/eureka/", auth: srv.api.auth}
	}
	devNS, testNS := r.client+"-dev", r.client+"-test"
	dev, test := nsAPI(devNS), nsAPI(testNS)
	var started []*agent
	defer func() {
		for _, a := range started {
			_ = a.p.stop(syscall.SIGTERM, 15*time.Second)
			a.proxy.Close()
		}
	}()
	start := func(ns, app string) (*agent, error) {
		a, err := startAgentAt(s.ps, agentsDir, filepath.Join(dir, ns), r.client, app, target, "/ns/"+ns+"/eureka/", s.auth, "compat=n-"+ns, nil)
		if err != nil {
			return nil, err
		}
		started = append(started, a)
		return a, nil
	}
	for _, ns := range []string{devNS, testNS} {
		if err := os.MkdirAll(filepath.Join(dir, ns), 0o755); err != nil {
			return "", err
		}
	}
	naApp, nbApp := r.client+"-na", r.client+"-nb"
	na, err := start(devNS, naApp)
	if err != nil {
		return "", err
	}
	nbDev, err := start(devNS, nbApp)
	if err != nil {
		return "", err
	}
	nbTest, err := start(testNS, nbApp)
	if err != nil {
		return "", err
	}
	for _, a := range started {
		if err := waitFor(300*time.Second, a.app+" GET /health is 200", func() (bool, string) {
			if a.p.exited() {
				return true, "exited"
			}
			code, body := a.get("/health")
			return code == 200, fmt.Sprintf("%d %s", code, body)
		}); err != nil {
			return "", err
		}
		if a.p.exited() {
			return "", fmt.Errorf("%s exited at start-up", a.app)
		}
	}

	// Fetch: each namespace lists its own; the default one none of them.
	listed := func(api eurekaAPI, what, app string, want []string) error {
		return waitFor(60*time.Second, what+" lists "+strings.ToUpper(app)+" as "+fmt.Sprint(want), func() (bool, string) {
			got, err := api.instances(app)
			return err == nil && slices.Equal(got, want), fmt.Sprint(got, err)
		})
	}
	for _, c := range []struct {
		api       eurekaAPI
		what, app string
		want      []string
	}{
		{dev, "dev", naApp, []string{na.id + " UP"}},
		{dev, "dev", nbApp, []string{nbDev.id + " UP"}},
		{test, "test", nbApp, []string{nbTest.id + " UP"}},
		{test, "test", naApp, nil},
		{srv.api, "the default namespace", naApp, nil},
		{srv.api, "the default namespace", nbApp, nil},
	} {
		if err := listed(c.api, c.what, c.app, c.want); err != nil {
			return "", err
		}
	}
	// Each client sees its namespace only: na one nb (dev's), test's nb no na.
	if err := waitSeen(na, nbApp, 1, 60*time.Second); err != nil {
		return "", err
	}
	if err := waitSeen(nbTest, nbApp, 1, 60*time.Second); err != nil {
		return "", err
	}
	if n, last := nbTest.seenCount(naApp); n != 0 {
		return "", fmt.Errorf("%s in test sees %d of %s in dev: %s", nbTest.id, n, naApp, last)
	}
	if l, last := na.seen(nbApp); len(l) != 1 || l[0].InstanceID != nbDev.id {
		return "", fmt.Errorf("%s in dev sees %s as %s, want only %s", na.id, nbApp, last, nbDev.id)
	}

	// Hash: each client's reconcile hash is its namespace's, and its copy holds its namespace only.
	hashOK := func(a *agent, api eurekaAPI, want map[string][]string) error {
		return waitFor(60*time.Second, a.id+"'s copy and hash are its namespace's", func() (bool, string) {
			h, err := api.hash()
			if err != nil {
				return false, err.Error()
			}
			v, last := a.raw()
			return v.LocalHashCode == h && sameApps(v.Apps, want), fmt.Sprintf("server hash %s, client %s", h, last)
		})
	}
	devWant := map[string][]string{strings.ToUpper(naApp): {na.id + " UP"}, strings.ToUpper(nbApp): {nbDev.id + " UP"}}
	testWant := map[string][]string{strings.ToUpper(nbApp): {nbTest.id + " UP"}}
	if err := hashOK(na, dev, devWant); err != nil {
		return "", err
	}
	if err := hashOK(nbTest, test, testWant); err != nil {
		return "", err
	}

	// Delta: an instance registered in test reaches test's client by delta, never dev's.
	nx, nxID := r.client+"-nx", r.client+"-nx-1"
	naBefore, testBefore := na.proxy.Snapshot(), nbTest.proxy.Snapshot()
	if err := test.register(nx, nxID, 9009); err != nil {
		return "", err
	}
	testWant[strings.ToUpper(nx)] = []string{nxID + " UP"}
	if err := hashOK(nbTest, test, testWant); err != nil {
		return "", err
	}
	// Dev's caller keeps fetching deltas meanwhile and never holds nx.
	for range 3 * 4 {
		time.Sleep(250 * time.Millisecond)
		if v, last := na.raw(); !sameApps(v.Apps, devWant) {
			return "", fmt.Errorf("%s in dev after the registration in test: %s", na.id, last)
		}
	}
	naAfter, testAfter := na.proxy.Snapshot(), nbTest.proxy.Snapshot()
	deltas := []int{diff(naBefore, naAfter, "GET apps/delta 200"), diff(testBefore, testAfter, "GET apps/delta 200")}
	fulls := []int{diff(naBefore, naAfter, "GET apps/ 200"), diff(testBefore, testAfter, "GET apps/ 200")}
	if deltas[0] < 1 || deltas[1] < 1 || fulls[0]+fulls[1] > 0 {
		return "", fmt.Errorf("during the delta step: deltas (dev, test) %v, full fetches %v; want deltas and no full fetch (a hash mismatch)", deltas, fulls)
	}
	if err := test.call("DELETE", instPath(nx, nxID), 200); err != nil {
		return "", err
	}
	delete(testWant, strings.ToUpper(nx))
	if err := hashOK(nbTest, test, testWant); err != nil {
		return "", err
	}

	// @LoadBalanced: every call from dev's caller reaches dev's nb.
	const calls = 20
	for i := range calls {
		code, body := na.get("/call/" + nbApp)
		if code != 200 || strings.TrimSpace(body) != "hello from "+nbDev.id {
			return "", fmt.Errorf("call %d of %s to %s: %d %q, want hello from %s (dev), never %s (test)", i+1, na.id, nbApp, code, body, nbDev.id, nbTest.id)
		}
	}
	return fmt.Sprintf("dev %s+%s, test %s: fetch, hash and delta (%d/%d deltas, no full fetch) isolated; %d/%d calls to dev's %s",
		na.id, nbDev.id, nbTest.id, deltas[0], deltas[1], calls, calls, nbApp), nil
}

// sameApps compares a client's /raw apps with want (app -> "id STATUS", any order).
func sameApps(got, want map[string][]string) bool {
	norm := func(m map[string][]string) map[string]string {
		out := map[string]string{}
		for k, v := range m {
			if len(v) == 0 {
				continue
			}
			v = slices.Clone(v)
			sort.Strings(v)
			out[strings.ToUpper(k)] = strings.Join(v, ",")
		}
		return out
	}
	g, w := norm(got), norm(want)
	if len(g) != len(w) {
		return false
	}
	for k, v := range w {
		if g[k] != v {
			return false
		}
	}
	return true
}
