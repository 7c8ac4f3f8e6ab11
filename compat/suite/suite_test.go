//go:build compat

package suite

import (
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/goreka/goreka/internal/proctest"
)

// target is a server under test.
type target struct {
	name string
	// label names the server in the tables (versions of a stock line).
	label string
	// env of a stock line's build and runs (STOCK_LINE=5), nil for the 4.3.0 line and goreka.
	lineEnv []string
	// argv returns the command that runs the server in the foreground on 127.0.0.1:port.
	argv func(port int) []string
	env  func(port int) []string
	// authArgs, when set, are extra arguments that make the server require user:pass (scenario h).
	// Hook: goreka's basic auth arrives later; fill this in then.
	authArgs func(user, pass string) []string
	// snapshotArgs, when set, are extra arguments that make the server keep its registry in the file path
	// across a restart (scenario w); nil: the scenario does not apply (notes[w] says why).
	snapshotArgs func(path string) []string
	// usersArgs, when set, are extra arguments that configure per-application users (scenario p);
	// nil: the scenario does not apply (notes[p] says why).
	usersArgs func(users []appUser) []string
	// probeArgs, when set, are extra arguments that make the server probe its instances' health checks in
	// periodic mode (scenario q); nil: the scenario does not apply (notes[q] says why).
	probeArgs func() []string
	// namespaceArgs, when set, are extra arguments that make the server serve the namespaces listed
	// (comma-separated) at /ns/{name}/eureka/ (scenario n); nil: the scenario does not apply.
	namespaceArgs func(allowed string) []string
	// notes are shown in the table where this server legitimately differs (never a weakened check).
	notes map[string]string
	// clientLimits are steps one client cannot do on this server only (client -> step -> why).
	clientLimits map[string]map[string]limitation
}

// stock404 is why the Netflix Java client cannot recover from a lost lease on the stock server.
const stock404 = "the stock server answers a heartbeat for an unknown lease 404 with Spring's error JSON body " +
	"(Content-Type: application/json, {\"timestamp\":...,\"status\":404,\"error\":\"Not Found\",...}); the Netflix Java " +
	"client (AbstractJersey3EurekaHttpClient.sendHeartBeat) reads any non-HTML 404 body as an InstanceInfo, that fails, " +
	"the heartbeat counts as failed and it never re-registers. Eureka's Jersey resource, and goreka, answer that 404 " +
	"with no body, on which the client re-registers at once (compat/agents/netflix-java/README.md)"

// shortTimings are the server settings of spring-cloud-eureka.md C3, as Spring-style flags.
var shortTimings = []string{
	"--eureka.server.eviction-interval-timer-in-ms=1000",
	"--eureka.server.enable-self-preservation=false",
	"--eureka.server.response-cache-update-interval-ms=1000",
	"--eureka.instance.hostname=localhost",
}

type suite struct {
	root, out string
	ps        *procs
	auth      string             // COMPAT_AUTH user:pass, or ""
	targets   map[string]*target // built targets by name
	targetMu  sync.Mutex         // guards targets: the relays' runs ask for them at once
}

func TestCompat(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	out := os.Getenv("COMPAT_OUT")
	if out == "" {
		out = filepath.Join(root, "compat", "suite", "out")
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	// Basic auth in defaultZone (scenario h) is on by default: every client talks to a target that can
	// require credentials with user:pass@ in its URL. COMPAT_AUTH=off runs without.
	auth := os.Getenv("COMPAT_AUTH")
	switch auth {
	case "":
		auth = "compat:compat-secret"
	case "off":
		auth = ""
	}
	s := &suite{root: root, out: out, ps: &procs{}, auth: auth, targets: map[string]*target{}}
	t.Cleanup(s.ps.killAll)
	// go test -timeout and Ctrl-C end the binary without cleanups: kill the process groups first.
	if dl, ok := t.Deadline(); ok {
		watchdog := time.AfterFunc(time.Until(dl)-30*time.Second, func() {
			fmt.Fprintln(os.Stderr, "compat: test deadline close, killing every started process")
			s.ps.killAll()
		})
		t.Cleanup(func() { watchdog.Stop() })
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		if _, ok := <-sigs; ok {
			s.ps.killAll()
			os.Exit(1)
		}
	}()
	t.Cleanup(func() { signal.Stop(sigs); close(sigs) })

	// Two stock references: SCN 4.3.0 (eureka 2.0.4, "stock") and the newest line SCN 5.0.x (eureka 2.0.6,
	// "stock5"); "both" is the references and goreka.
	targetNames := map[string][]string{"goreka": {"goreka"}, "stock": {"stock"}, "stock5": {"stock5"},
		"stocks": {"stock", "stock5"}, "both": {"stock", "stock5", "goreka"},
		"none": nil} // only the runs asked for by COMPAT_MIXED, COMPAT_RATELIMIT, COMPAT_REGIONS
	tn := os.Getenv("COMPAT_TARGET")
	if tn == "" {
		tn = "both" // CI proves the suite against the reference too
	}
	names, ok := targetNames[tn]
	if !ok {
		t.Fatalf("COMPAT_TARGET=%q: want goreka, stock, stock5, stocks, both or none", tn)
	}

	clients, err := s.clientList()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("clients: %s; targets: %s; logs under %s", strings.Join(clients, ", "), strings.Join(names, ", "), out)

	buildErr := s.buildAgents(t, clients)
	var md strings.Builder
	md.WriteString("# goreka real-client compatibility results\n\n")
	// failures names every failed scenario with its detail: CI keeps only the output's tail, where the
	// tables above are already cut off.
	var failures []string
	fail1 := func(where string, r result) {
		if r.outcome == fail {
			failures = append(failures, where+": "+r.detail)
		}
	}
	mixed := tn == "both" || os.Getenv("COMPAT_MIXED") == "1"
	for _, name := range names {
		runs, notes := s.runTarget(t, name, clients, buildErr)
		table := renderTable(name, clients, runs, notes)
		fmt.Println(table)
		md.WriteString(table + "\n")
		for _, r := range runs {
			for _, sc := range slices.Sorted(maps.Keys(r.results)) {
				fail1(name+" / "+r.client+" / "+sc, r.results[sc])
			}
		}
	}
	if mixed {
		// One mixed pair per stock reference.
		for _, stock := range []string{"stock", "stock5"} {
			res := s.runMixedPair(t, clients, buildErr, stock)
			label := stock
			if st := s.targets[stock]; st != nil {
				label = st.label
			}
			table := renderMixed(label, res)
			fmt.Println(table)
			md.WriteString(table + "\n")
			for _, r := range res {
				fail1("mixed pair with "+stock+" / "+r.check, r.result)
			}
		}
	}
	if slices.Contains(names, "goreka") || os.Getenv("COMPAT_RATELIMIT") == "1" {
		for _, lc := range []limitCase{rateLimitCase, fetchLimitCase} {
			res := s.runRateLimit(t, clients, buildErr, lc)
			table := renderRateLimit(lc, res)
			fmt.Println(table)
			md.WriteString(table + "\n")
			for _, r := range res {
				fail1(lc.name+" / "+r.check, r.result)
			}
		}
	}
	if mixed || os.Getenv("COMPAT_REGIONS") == "1" {
		res := s.runRegions(t, clients, buildErr, "stock")
		label := "stock"
		if st := s.targets["stock"]; st != nil {
			label = st.label
		}
		table := renderRegions(label, res)
		fmt.Println(table)
		md.WriteString(table + "\n")
		for _, r := range res {
			fail1("regions / "+r.check, r.result)
		}
	}
	if mixed || os.Getenv("COMPAT_RELAYS") == "1" {
		// The two cores at once (their own ports and processes): the run costs the longer one.
		cores := []string{"goreka", "stock"}
		for _, core := range cores {
			s.target(t, core) // built before, one after the other; a failed build fails its run
		}
		runs := make([][]mixedResult, len(cores))
		var wg sync.WaitGroup
		for i, core := range cores {
			wg.Go(func() { runs[i] = s.runRelays(t, clients, buildErr, core) })
		}
		wg.Wait()
		for i, core := range cores {
			res := runs[i]
			table := renderRelays(core, res)
			fmt.Println(table)
			md.WriteString(table + "\n")
			for _, r := range res {
				fail1("relays with a "+core+" core / "+r.check, r.result)
			}
		}
	}
	if err := os.WriteFile(filepath.Join(out, "results.md"), []byte(md.String()), 0o644); err != nil {
		t.Error(err)
	}
	if len(failures) > 0 {
		t.Errorf("%d scenario(s) failed (tables above and %s):\n%s", len(failures),
			filepath.Join(out, "results.md"), strings.Join(failures, "\n"))
	}
}

// clientList is COMPAT_CLIENTS, or every compat/agents/* directory that has a build.sh.
func (s *suite) clientList() ([]string, error) {
	if v := os.Getenv("COMPAT_CLIENTS"); v != "" {
		var out []string
		for c := range strings.SplitSeq(v, ",") {
			if c = strings.TrimSpace(c); c != "" {
				out = append(out, c)
			}
		}
		return out, nil
	}
	m, err := filepath.Glob(filepath.Join(s.root, "compat", "agents", "*", "build.sh"))
	if err != nil {
		return nil, err
	}
	var out []string
	for _, p := range m {
		out = append(out, filepath.Base(filepath.Dir(p)))
	}
	slices.Sort(out)
	if len(out) == 0 {
		return nil, fmt.Errorf("no compat/agents/*/build.sh found")
	}
	return out, nil
}

// buildAgents runs every build.sh once, one after the other (2 shared cores). A failed build fails
// every scenario of that client.
func (s *suite) buildAgents(t *testing.T, clients []string) map[string]error {
	errs := map[string]error{}
	for _, c := range clients {
		start := time.Now()
		script := filepath.Join(s.root, "compat", "agents", c, "build.sh")
		err := runBuild(script, filepath.Join(s.out, "build-"+c+".log"), 15*time.Minute)
		if err != nil {
			t.Logf("build %s FAILED after %s: %v", c, time.Since(start).Round(time.Second), err)
			errs[c] = err
			continue
		}
		t.Logf("build %s: ok in %s", c, time.Since(start).Round(time.Second))
	}
	return errs
}

func (s *suite) target(t *testing.T, name string) (*target, error) {
	s.targetMu.Lock()
	defer s.targetMu.Unlock()
	if tg := s.targets[name]; tg != nil {
		return tg, nil
	}
	tg, err := s.buildTarget(t, name)
	if err == nil {
		s.targets[name] = tg
	}
	return tg, err
}

func (s *suite) buildTarget(t *testing.T, name string) (*target, error) {
	switch name {
	case "stock", "stock5":
		dir := filepath.Join(s.root, "compat", "stock-server")
		label := "stock Spring Eureka (SCN 4.3.0, eureka 2.0.4, Boot 3.5.7)"
		var lineEnv []string
		if name == "stock5" {
			label = "stock Spring Eureka (SCN 5.0.3, eureka 2.0.6, Boot 4.0.7)"
			lineEnv = []string{"STOCK_LINE=5"}
		}
		start := time.Now()
		if err := runBuild(filepath.Join(dir, "build.sh"), filepath.Join(s.out, "build-"+name+"-server.log"), 15*time.Minute, lineEnv...); err != nil {
			return nil, err
		}
		t.Logf("build %s server: ok in %s", name, time.Since(start).Round(time.Second))
		return &target{
			name:    name,
			label:   label,
			lineEnv: lineEnv,
			argv:    func(port int) []string { return []string{"bash", filepath.Join(dir, "run.sh")} },
			env: func(port int) []string {
				return append([]string{"PORT=" + strconv.Itoa(port), "EUREKA_HOSTNAME=localhost"}, lineEnv...)
			},
			notes: map[string]string{
				"h basic auth": "the stock server has no Spring Security in this build",
				pScenario:      "the stock server has no per-application authorization",
				wScenario:      "Eureka keeps its registry in memory only",
				qScenario:      "Eureka does not probe",
				nScenario:      "Eureka has one registry; /ns/{name}/eureka/ is a 404",
			},
			clientLimits: map[string]map[string]limitation{
				"netflix-java": {"c back": {naOnStock, stock404}, "f re-register": {naOnStock, stock404}},
			},
		}, nil
	case "goreka":
		start := time.Now()
		bin, err := proctest.Build(filepath.Join(s.out, "bin"))
		if err != nil {
			return nil, err
		}
		t.Logf("build goreka: ok in %s", time.Since(start).Round(time.Second))
		extra := strings.Fields(os.Getenv("COMPAT_GOREKA_ARGS"))
		return &target{
			name:  "goreka",
			label: "goreka",
			argv: func(port int) []string {
				// Standalone like the stock server: its only service URL is itself. goreka compares host and
				// port to exclude itself, so the default http://localhost:8761/eureka/ would make whatever runs
				// on 8761 of this shared machine a peer (it did: the restart synced our instances back from it).
				self := fmt.Sprintf("--eureka.client.service-url.defaultZone=http://localhost:%d/eureka/", port)
				return append(append([]string{bin, "--server.port=" + strconv.Itoa(port), self}, shortTimings...), extra...)
			},
			env: func(int) []string { return nil },
			authArgs: func(u, p string) []string {
				return []string{"--spring.security.user.name=" + u, "--spring.security.user.password=" + p}
			},
			snapshotArgs: func(path string) []string {
				return []string{"--goreka.snapshot.path=" + path, "--goreka.snapshot.interval=1s"}
			},
			usersArgs: func(users []appUser) []string {
				var args []string
				for i, u := range users {
					p := fmt.Sprintf("--goreka.security.users[%d].", i)
					args = append(args, p+"name="+u.name, p+"password="+u.pass, p+"apps="+u.apps)
				}
				return args
			},
			probeArgs: func() []string { return probeTimings },
			namespaceArgs: func(allowed string) []string {
				return []string{"--goreka.namespaces.allowed=" + allowed}
			},
		}, nil
	}
	return nil, fmt.Errorf("unknown target %q", name)
}

// server is the running server under test; it keeps its port across restarts so the proxies stay valid.
type server struct {
	tg   *target
	port int
	p    *proc
	log  string
	api  eurekaAPI
	args []string
}

func (s *suite) startServer(srv *server) error {
	argv := append(srv.tg.argv(srv.port), srv.args...)
	p, err := s.ps.start("server-"+srv.tg.name, srv.log, s.root, srv.tg.env(srv.port), argv...)
	if err != nil {
		return err
	}
	srv.p = p
	err = waitFor(180*time.Second, srv.tg.name+" server answers GET apps/", func() (bool, string) {
		if p.exited() {
			return true, ""
		}
		code, _, err := srv.api.do(http.MethodGet, "apps/", nil, "application/json")
		if err != nil {
			return false, err.Error()
		}
		return code == http.StatusOK, strconv.Itoa(code)
	})
	if err == nil && p.exited() {
		err = fmt.Errorf("%s server exited at start-up: %v", srv.tg.name, p.Err())
	}
	if err != nil {
		return fmt.Errorf("%w\n--- %s (tail)\n%s", err, srv.log, tail(srv.log, 40))
	}
	return nil
}

// runTarget runs every scenario of every client against one server.
func (s *suite) runTarget(t *testing.T, name string, clients []string, buildErr map[string]error) ([]*clientRun, map[string]string) {
	runs := make([]*clientRun, len(clients))
	for i, c := range clients {
		runs[i] = &clientRun{client: c, results: map[string]result{}}
	}
	failAll := func(r *clientRun, msg string) {
		for _, sc := range scenarioNames {
			if _, done := r.results[sc]; !done {
				r.results[sc] = result{fail, msg}
			}
		}
	}
	tg, err := s.target(t, name)
	if err != nil {
		t.Logf("target %s: %v", name, err)
		for _, r := range runs {
			failAll(r, "server build failed")
		}
		return runs, nil
	}
	outDir := filepath.Join(s.out, name)
	_ = os.RemoveAll(outDir)
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		t.Fatal(err)
	}
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	user, pass, useAuth := strings.Cut(s.auth, ":")
	useAuth = useAuth && tg.authArgs != nil
	srv := &server{tg: tg, port: port, log: filepath.Join(outDir, "server.log"),
		api: eurekaAPI{base: fmt.Sprintf("http://127.0.0.1:%d/eureka/", port)}}
	auth := ""
	if useAuth {
		srv.args = tg.authArgs(user, pass)
		srv.api.auth = s.auth
		auth = s.auth
	}
	// (q) health probes: its own server and agents, in parallel with everything below.
	waitProbe := s.startProbeScenario(t, tg, clients, outDir, auth, useAuth, buildErr)
	defer func() {
		res := waitProbe()
		for i, c := range clients {
			if r, ok := res[c]; ok {
				runs[i].results[qScenario] = r
			}
		}
	}()
	start := time.Now()
	if err := s.startServer(srv); err != nil {
		t.Logf("target %s: %v", name, err)
		for _, r := range runs {
			failAll(r, "server did not start")
		}
		return runs, tg.notes
	}
	t.Logf("%s server up on %d in %s", name, port, time.Since(start).Round(100*time.Millisecond))
	target, _ := url.Parse(fmt.Sprintf("http://127.0.0.1:%d", port))

	// Phase 1: start every agent of every client at once (JVM start-up dominates), then run a-e and g.
	var wg sync.WaitGroup
	for _, r := range runs {
		if err := buildErr[r.client]; err != nil {
			failAll(r, "agent build failed")
			continue
		}
		r.api = srv.api
		r.limits = map[string]limitation{}
		maps.Copy(r.limits, clientLimits[r.client])
		maps.Copy(r.limits, tg.clientLimits[r.client])
		wg.Go(func() {
			defer func() {
				if p := recover(); p != nil {
					failAll(r, fmt.Sprint("panic: ", p))
				}
			}()
			s.runClient(t, r, outDir, target, auth, srv)
		})
	}
	wg.Wait()

	// Phase 2 (f): restart the server once for everybody; its registry starts empty.
	live := []*clientRun{}
	for _, r := range runs {
		if r.a != nil && !r.a.p.exited() {
			live = append(live, r)
		} else if _, done := r.results["f server restart"]; !done {
			r.results["f server restart"] = result{fail, "agent a not running"}
		}
	}
	before := map[*clientRun]map[string]int{}
	for _, r := range live {
		before[r] = r.a.proxy.Snapshot()
	}
	t.Logf("%s: restarting the server", name)
	_ = srv.p.stop(syscall.SIGTERM, 20*time.Second)
	time.Sleep(2 * time.Second) // let every client see the server gone
	if err := s.startServer(srv); err != nil {
		for _, r := range live {
			r.results["f server restart"] = result{fail, "server did not restart: " + err.Error()}
		}
	} else {
		for _, r := range live {
			wg.Go(func() {
				d, err := r.restartCheck(before[r])
				r.set("f server restart", err, d)
				if res := r.results["f server restart"]; res.outcome == known {
					t.Logf("%s / f server restart: known limitation: %s", r.client, res.detail)
				} else if err != nil {
					s.dumpLogs(t, r, srv, "f server restart", err)
				}
			})
		}
		wg.Wait()
	}

	// (h) basic auth in defaultZone: only when COMPAT_AUTH is set and the server can require it.
	for _, r := range runs {
		if _, done := r.results["h basic auth"]; done {
			continue
		}
		switch {
		case !useAuth && s.auth == "":
			r.results["h basic auth"] = result{skip, "COMPAT_AUTH=off"}
		case !useAuth:
			r.results["h basic auth"] = result{skip, "this server cannot require credentials; clients ran without them"}
		case r.a == nil || r.a.p.exited():
			r.results["h basic auth"] = result{fail, "agent a not running"}
		default:
			d, err := r.authCheck()
			r.set("h basic auth", err, d)
		}
	}

	// Stop the agents gracefully, then the server.
	for _, r := range runs {
		for _, a := range r.agents() {
			wg.Go(func() {
				_ = a.p.stop(syscall.SIGTERM, 15*time.Second)
				a.proxy.Close()
			})
		}
	}
	wg.Wait()
	_ = srv.p.stop(syscall.SIGTERM, 20*time.Second)

	// (w) warm restart: its own server (with the snapshot) and agents, so that f above keeps its empty registry.
	s.runWarmRestart(t, tg, runs, outDir, auth, useAuth, buildErr)
	// (p) per-application authorization: its own server with goreka.security.users and agents.
	s.runPerApp(t, tg, runs, outDir, buildErr)
	// (n) namespaces: its own server with two namespaces and agents in each.
	s.runNamespaces(t, tg, runs, outDir, buildErr)
	t.Logf("%s: done in %s", name, time.Since(start).Round(time.Second))
	return runs, tg.notes
}

// runClient starts three agents of one client kind and runs scenarios a, g, b, c, d, e in that order.
func (s *suite) runClient(t *testing.T, r *clientRun, outDir string, target *url.URL, auth string, srv *server) {
	agentsDir := filepath.Join(s.root, "compat", "agents")
	var err error
	for _, spec := range []struct {
		dst  **agent
		role string
	}{{&r.a, "a"}, {&r.b, "b"}, {&r.c, "c"}} {
		*spec.dst, err = startAgent(s.ps, agentsDir, outDir, r.client, r.client+"-"+spec.role, target, auth, "compat="+spec.role+",zone=z1")
		if err != nil {
			r.set("a register+heartbeat", fmt.Errorf("starting agent: %w", err), "")
			return
		}
	}
	start := time.Now()
	for _, a := range r.agents() {
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
			r.set("a register+heartbeat", err, "")
			s.dumpLogs(t, r, srv, "start-up", err)
			for _, sc := range scenarioNames {
				if _, done := r.results[sc]; !done {
					r.results[sc] = result{fail, "agents did not start"}
				}
			}
			return
		}
	}
	t.Logf("%s: agents healthy after %s", r.client, time.Since(start).Round(100*time.Millisecond))
	for _, sc := range []struct {
		name string
		run  func() (string, error)
	}{
		{"a register+heartbeat", r.scenarioRegister},
		{"g metadata", r.scenarioMetadata},
		{"b delta", r.scenarioDelta},
		{"c status override", r.scenarioOverride},
		{"d SIGTERM cancel", r.scenarioSigterm},
		{"e kill -9 evict", r.scenarioKill},
	} {
		scStart := time.Now()
		d, err := sc.run()
		r.set(sc.name, err, d)
		if res := r.results[sc.name]; res.outcome == known {
			t.Logf("%s / %s: known limitation: %s", r.client, sc.name, res.detail)
		} else if err != nil {
			s.dumpLogs(t, r, srv, sc.name, err)
		} else {
			t.Logf("%s / %s: pass in %s %s", r.client, sc.name, time.Since(scStart).Round(100*time.Millisecond), d)
		}
	}
}

// dumpLogs prints the tails of the logs that matter for a failure.
func (s *suite) dumpLogs(t *testing.T, r *clientRun, srv *server, scenario string, err error) {
	var b strings.Builder
	fmt.Fprintf(&b, "FAIL %s / %s: %v\n", r.client, scenario, err)
	fmt.Fprintf(&b, "--- %s (tail)\n%s\n", srv.log, tail(srv.log, 25))
	for _, a := range r.agents() {
		fmt.Fprintf(&b, "--- %s (tail)\n%s\n", a.p.log, tail(a.p.log, 25))
		fmt.Fprintf(&b, "--- requests of %s through its proxy (last 30)\n%s\n", a.app, a.proxy.Recent())
	}
	t.Log(b.String())
}

// renderTable renders client x scenario as a markdown table, then the details.
func renderTable(target string, clients []string, runs []*clientRun, notes map[string]string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "## target: %s\n\n| client |", target)
	for _, sc := range scenarioNames {
		fmt.Fprintf(&b, " %s |", sc)
	}
	b.WriteString("\n|---|" + strings.Repeat("---|", len(scenarioNames)) + "\n")
	var details []string
	for i, c := range clients {
		fmt.Fprintf(&b, "| %s |", c)
		for _, sc := range scenarioNames {
			res, ok := runs[i].results[sc]
			cell := "fail"
			switch {
			case !ok:
				cell, res = "FAIL", result{fail, "not run"}
			case res.outcome == pass:
				cell = "pass"
			case res.outcome == skip:
				cell = "skip"
			case res.outcome == notApplicable:
				cell = "n/a"
			case res.outcome == known:
				cell = strings.SplitN(res.detail, ":", 2)[0]
			default:
				cell = "FAIL"
			}
			if notes[sc] != "" {
				cell += " *"
			}
			fmt.Fprintf(&b, " %s |", cell)
			if res.detail != "" {
				d := res.detail
				if res.outcome == fail {
					d = strings.SplitN(d, "\n", 2)[0]
				}
				details = append(details, fmt.Sprintf("- %s / %s: %s", c, sc, d))
			}
		}
		b.WriteString("\n")
	}
	if len(notes) > 0 {
		b.WriteString("\nNotes (* where this server legitimately differs):\n")
		for _, sc := range scenarioNames {
			if n := notes[sc]; n != "" {
				fmt.Fprintf(&b, "- %s: %s\n", sc, n)
			}
		}
	}
	if len(details) > 0 {
		b.WriteString("\nDetails:\n" + strings.Join(details, "\n") + "\n")
	}
	return b.String()
}
