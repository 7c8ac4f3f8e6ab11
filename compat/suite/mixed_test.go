//go:build compat

package suite

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The mixed pair (issue "Peer replication"): goreka G and the stock Spring server S point at each other
// (spring-cloud-eureka.md B6, C4 variant 5). G is named localhost and lists http://127.0.0.1:S/eureka/;
// S is named 127.0.0.1 and lists http://localhost:G/eureka/ (self-exclusion compares hosts only). A Spring
// agent registers on each; each must see the other, each server's registry must list both apps, and each
// server must list the other as an available replica.

var mixedChecks = []string{
	"app on G seen via S",
	"app on S seen via G",
	"S lists G available",
	"G lists S available",
	"S gets only G's default namespace",
}

type mixedResult struct {
	check string
	result
}

// runMixedPair runs the pair with the stock target named stock ("stock" or "stock5").
func (s *suite) runMixedPair(t *testing.T, clients []string, buildErr map[string]error, stock string) []mixedResult {
	results := map[string]result{}
	out := func() []mixedResult {
		var r []mixedResult
		for _, c := range mixedChecks {
			res, ok := results[c]
			if !ok {
				res = result{fail, "not run"}
			}
			r = append(r, mixedResult{c, res})
		}
		return r
	}
	failAll := func(msg string) []mixedResult {
		for _, c := range mixedChecks {
			if _, ok := results[c]; !ok {
				results[c] = result{fail, msg}
			}
		}
		return out()
	}
	// A Spring agent on each side: Boot 3 on G and Boot 4 on S when both are there.
	var spring []string
	for _, c := range []string{"spring-boot3", "spring-boot4"} {
		if slices.Contains(clients, c) && buildErr[c] == nil {
			spring = append(spring, c)
		}
	}
	if len(spring) == 0 {
		return failAll("needs a built spring-boot3 or spring-boot4 agent in COMPAT_CLIENTS")
	}
	clientG, clientS := spring[0], spring[len(spring)-1]

	gt, err := s.target(t, "goreka")
	if err != nil {
		return failAll("goreka build failed: " + err.Error())
	}
	st, err := s.target(t, stock)
	if err != nil {
		return failAll(stock + " server build failed: " + err.Error())
	}
	outDir := filepath.Join(s.out, "mixed")
	if stock != "stock" {
		outDir += "-" + stock
	}
	_ = os.RemoveAll(outDir)
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		t.Fatal(err)
	}
	gPort, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	sPort, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	gURL := fmt.Sprintf("http://localhost:%d/eureka/", gPort)
	sURL := fmt.Sprintf("http://127.0.0.1:%d/eureka/", sPort)
	g := &server{
		tg: &target{name: "goreka", env: gt.env, argv: func(port int) []string {
			// gt.argv carries --eureka.instance.hostname=localhost (shortTimings); S replaces itself as the peer.
			argv := gt.argv(port)
			for i, a := range argv {
				if strings.HasPrefix(a, "--eureka.client.service-url.defaultZone=") {
					argv[i] = "--eureka.client.service-url.defaultZone=" + sURL
				}
			}
			// Namespace dev on G; S is a stock server and gets only the default one (issue 21).
			return append(argv, "--goreka.namespaces.allowed=dev", "--goreka.namespaces.stock-peers="+sURL)
		}},
		port: gPort, log: filepath.Join(outDir, "goreka.log"),
		api: eurekaAPI{base: fmt.Sprintf("http://127.0.0.1:%d/eureka/", gPort)},
	}
	stk := &server{
		tg: &target{name: "stock", argv: st.argv, env: func(port int) []string {
			return append([]string{"PORT=" + strconv.Itoa(port), "EUREKA_HOSTNAME=127.0.0.1", "PEER_MODE=true", "PEER_URL=" + gURL}, st.lineEnv...)
		}},
		port: sPort, log: filepath.Join(outDir, "stock.log"),
		api: eurekaAPI{base: sURL},
	}

	start := time.Now()
	// Start both servers and both agents at once: JVM start-up dominates. The agents retry until their
	// server answers.
	var wg sync.WaitGroup
	var gErr, sErr error
	wg.Go(func() { gErr = s.startServer(g) })
	wg.Go(func() { sErr = s.startServer(stk) })
	gTarget, _ := url.Parse(strings.TrimSuffix(g.api.base, "/eureka/"))
	sTarget, _ := url.Parse(strings.TrimSuffix(stk.api.base, "/eureka/"))
	agentsDir := filepath.Join(s.root, "compat", "agents")
	onG, errA := startAgent(s.ps, agentsDir, outDir, clientG, "mixed-g", gTarget, "", "compat=mixed-g")
	onS, errB := startAgent(s.ps, agentsDir, outDir, clientS, "mixed-s", sTarget, "", "compat=mixed-s")
	wg.Wait()
	defer func() {
		for _, a := range []*agent{onG, onS} {
			if a != nil {
				wg.Go(func() { _ = a.p.stop(syscall.SIGTERM, 15*time.Second); a.proxy.Close() })
			}
		}
		wg.Wait()
		for _, x := range []*server{g, stk} {
			if x.p != nil {
				wg.Go(func() { _ = x.p.stop(syscall.SIGTERM, 20*time.Second) })
			}
		}
		wg.Wait()
		t.Logf("mixed pair: done in %s", time.Since(start).Round(time.Second))
	}()
	for _, e := range []error{gErr, sErr, errA, errB} {
		if e != nil {
			t.Logf("mixed pair: %v", e)
			return failAll("start-up: " + strings.SplitN(e.Error(), "\n", 2)[0])
		}
	}
	t.Logf("mixed pair: goreka on %d, stock on %d, up in %s", gPort, sPort, time.Since(start).Round(100*time.Millisecond))
	for _, a := range []*agent{onG, onS} {
		err := waitFor(300*time.Second, a.app+" GET /health is 200", func() (bool, string) {
			if a.p.exited() {
				return true, "exited"
			}
			code, body := a.get("/health")
			return code == http.StatusOK, fmt.Sprintf("%d %s", code, body)
		})
		if err == nil && a.p.exited() {
			err = fmt.Errorf("%s exited at start-up: %v", a.app, a.p.Err())
		}
		if err != nil {
			t.Logf("mixed pair: %v\n--- %s (tail)\n%s", err, a.p.log, tail(a.p.log, 30))
			return failAll("agents did not start")
		}
	}
	t.Logf("mixed pair: agents healthy after %s", time.Since(start).Round(100*time.Millisecond))

	// lists waits until a server's full registry (JSON) lists both apps' instances UP.
	lists := func(x *server) error {
		return waitFor(60*time.Second, x.tg.name+" GET apps/ (JSON) lists "+onG.id+" and "+onS.id+" UP", func() (bool, string) {
			var got []string
			for _, a := range []*agent{onG, onS} {
				l, err := x.api.instances(a.app)
				if err != nil {
					return false, err.Error()
				}
				got = append(got, l...)
			}
			return slices.Equal(got, []string{onG.id + " UP", onS.id + " UP"}), fmt.Sprintf("%q", got)
		})
	}
	check := func(name string, steps ...func() error) {
		for _, f := range steps {
			if err := f(); err != nil {
				results[name] = result{fail, err.Error()}
				t.Logf("FAIL mixed pair / %s: %v\n--- goreka (tail)\n%s\n--- stock (tail)\n%s", name, err,
					tail(g.log, 20), tail(stk.log, 20))
				return
			}
		}
		results[name] = result{pass, fmt.Sprintf("after %s", time.Since(start).Round(time.Second))}
		t.Logf("mixed pair / %s: pass", name)
	}
	check("app on G seen via S",
		func() error { return lists(stk) },
		func() error { return waitSeen(onS, onG.app, 1, 60*time.Second) })
	check("app on S seen via G",
		func() error { return lists(g) },
		func() error { return waitSeen(onG, onS.app, 1, 60*time.Second) })
	want := "<td>available-replicas</td><td>" + gURL
	check("S lists G available", func() error {
		return waitFor(90*time.Second, "S's dashboard has "+want, func() (bool, string) {
			code, body := getText(fmt.Sprintf("http://127.0.0.1:%d/", sPort))
			if i := strings.Index(body, "<td>available-replicas</td>"); i >= 0 {
				body = body[i:min(len(body), i+200)]
			}
			return code == http.StatusOK && strings.Contains(body, want), fmt.Sprintf("%d %s", code, body)
		})
	})
	check("G lists S available", func() error {
		return waitFor(90*time.Second, "G's GET /eureka/status lists "+sURL+" in available-replicas", func() (bool, string) {
			code, b, err := g.api.do(http.MethodGet, "status", nil, "application/json")
			if err != nil {
				return false, err.Error()
			}
			var st struct {
				ApplicationStats map[string]string `json:"applicationStats"`
			}
			if err := json.Unmarshal(b, &st); err != nil {
				return false, fmt.Sprintf("%d %v: %s", code, err, b)
			}
			avail := st.ApplicationStats["available-replicas"]
			return code == http.StatusOK && slices.Contains(strings.Split(avail, ","), sURL), fmt.Sprintf("%d %v", code, st.ApplicationStats)
		})
	})
	check("S gets only G's default namespace", func() error { return mixedNamespaces(g, stk, onS) })
	return out()
}

// mixedNamespaces: an instance registered in G's namespace dev stays on G; one registered in G's default
// namespace after it reaches S; S's own agent, replicated to G, lands in G's default namespace only; G
// has no dev peer (its only peer is stock) and S never saw a /ns/ request (its dev path is a 404).
func mixedNamespaces(g, stk *server, onS *agent) error {
	gDev := eurekaAPI{base: strings.TrimSuffix(g.api.base, "eureka/") + "ns/dev/eureka/"}
	if err := gDev.register("MIXED-NS-DEV", "mixed-ns-dev-1", 9001); err != nil {
		return err
	}
	if err := g.api.register("MIXED-NS-DEFAULT", "mixed-ns-default-1", 9002); err != nil {
		return err
	}
	if err := waitFor(60*time.Second, "S lists G's default-namespace instance", func() (bool, string) {
		l, err := stk.api.instances("MIXED-NS-DEFAULT")
		return err == nil && len(l) == 1, fmt.Sprint(l, err)
	}); err != nil {
		return err
	}
	// Both were queued together; give a dev batch, if there were one, time to arrive as well.
	time.Sleep(3 * time.Second)
	if l, err := stk.api.instances("MIXED-NS-DEV"); err != nil || len(l) != 0 {
		return fmt.Errorf("S lists G's dev instance: %v %v", l, err)
	}
	if l, err := gDev.instances("MIXED-NS-DEV"); err != nil || len(l) != 1 {
		return fmt.Errorf("G's dev does not list its own instance: %v %v", l, err)
	}
	if l, err := gDev.instances(onS.app); err != nil || len(l) != 0 {
		return fmt.Errorf("G's dev lists S's agent %s: %v %v", onS.app, l, err)
	}
	sDev := eurekaAPI{base: strings.TrimSuffix(stk.api.base, "eureka/") + "ns/dev/eureka/"}
	if code, _, _ := sDev.do(http.MethodGet, "apps/", nil, "application/json"); code != http.StatusNotFound {
		return fmt.Errorf("stock S answers its /ns/dev/eureka/apps/ with %d, want 404 (it has no namespaces)", code)
	}
	code, b := getText(strings.TrimSuffix(g.api.base, "eureka/") + "metrics")
	if code != http.StatusOK || !strings.Contains(b, `goreka_replication_peers{namespace="dev"} 0`) ||
		!strings.Contains(b, `goreka_replication_peers{namespace="default"} 1`) {
		return fmt.Errorf("G's metrics: %d, want dev with 0 peers and default with 1", code)
	}
	return nil
}

func getText(u string) (int, string) {
	resp, err := httpc.Get(u)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func renderMixed(label string, res []mixedResult) string {
	return renderChecks("mixed pair: goreka G <-> "+label+" S", "pair", "mixed pair", res)
}

// renderChecks is the table of one run of checks (mixed pairs, limiters,
// remote regions): a heading, one row of pass/FAIL cells, and the first line
// of each check's detail.
func renderChecks(heading, corner, row string, res []mixedResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "## %s\n\n| %s |", heading, corner)
	for _, r := range res {
		fmt.Fprintf(&b, " %s |", r.check)
	}
	b.WriteString("\n|---|" + strings.Repeat("---|", len(res)) + "\n| " + row + " |")
	var details []string
	for _, r := range res {
		cell := "pass"
		if r.outcome != pass {
			cell = "FAIL"
		}
		fmt.Fprintf(&b, " %s |", cell)
		if r.detail != "" {
			details = append(details, fmt.Sprintf("- %s: %s", r.check, strings.SplitN(r.detail, "\n", 2)[0]))
		}
	}
	b.WriteString("\n")
	if len(details) > 0 {
		b.WriteString("\nDetails:\n" + strings.Join(details, "\n") + "\n")
	}
	return b.String()
}
