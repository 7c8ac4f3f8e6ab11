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
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Scenario p (issue "Health with evidence", deliver 3): a server started with periodic health probes, a
// caller <client>-qa and a target <client>-qb of one client. The target's actuator health
// (/actuator/health, the healthCheckUrl Spring registers) is switched DOWN through the agent's
// POST /health-switch/DOWN while its Eureka client keeps heartbeating UP: the server's probes must serve
// it DOWN, with the reason on the dashboard, and the caller's @LoadBalanced client must stop routing to
// it; switched UP again, it must be served UP and routed to again. It runs on its own server and agents,
// in parallel with the other scenarios of the target (its agents start with phase 1's), so that the
// probes touch no other scenario's instances.

const qScenario = "q probe DOWN"

// healthSwitchClients are the agents that can switch their health check DOWN (POST /health-switch/{UP,DOWN},
// compat/README.md). The other agents' health URLs answer 200 whatever happens: p does not apply to them.
var healthSwitchClients = map[string]bool{"spring-boot3": true, "spring-boot4": true}

// probeTimings make the probes quick enough for a test: every instance every second with a little jitter.
// The default hysteresis stays (3 failures to DOWN, 2 successes to UP). max-failing-percent is raised
// because the fleet is tiny: two targets switched DOWN at once among four instances are half the probes,
// which the guard (meant for fleets, where that share means the registry's own network is at fault)
// could judge either way.
var probeTimings = []string{
	"--goreka.health.probe.enabled=true",
	"--goreka.health.probe.mode=periodic",
	"--goreka.health.probe.interval=1s",
	"--goreka.health.probe.jitter=200ms",
	"--goreka.health.probe.timeout=1s",
	"--goreka.health.probe.max-failing-percent=90",
}

// startProbeScenario runs scenario q for every client in the background and returns a function that
// waits for it and returns the results by client (merged by the caller: r.results belongs to phase 1's
// goroutines until then).
func (s *suite) startProbeScenario(t *testing.T, tg *target, clients []string, outDir, auth string, useAuth bool,
	buildErr map[string]error) func() map[string]result {
	out := map[string]result{}
	var todo []string
	for _, c := range clients {
		switch {
		case buildErr[c] != nil:
			out[c] = result{fail, "agent build failed"}
		case tg.probeArgs == nil:
			out[c] = result{notApplicable, "n/a: " + tg.notes[qScenario]}
		case !healthSwitchClients[c]:
			out[c] = result{skip, "no health switch in this agent (only the Spring agents flip an actuator HealthIndicator)"}
		default:
			todo = append(todo, c)
		}
	}
	if len(todo) == 0 {
		return func() map[string]result { return out }
	}
	var mu sync.Mutex
	done := make(chan struct{})
	go func() {
		defer close(done)
		res := s.runProbe(t, tg, todo, outDir, auth, useAuth)
		mu.Lock()
		defer mu.Unlock()
		for c, r := range res {
			out[c] = r
		}
	}()
	return func() map[string]result {
		<-done
		mu.Lock()
		defer mu.Unlock()
		return out
	}
}

// probeRun is one client in scenario q.
type probeRun struct {
	client         string
	caller, callee *agent
	res            result
}

func (p *probeRun) agents() []*agent {
	var out []*agent
	for _, a := range []*agent{p.caller, p.callee} {
		if a != nil {
			out = append(out, a)
		}
	}
	return out
}

func (s *suite) runProbe(t *testing.T, tg *target, clients []string, outDir, auth string, useAuth bool) map[string]result {
	out := map[string]result{}
	failAll := func(msg string) map[string]result {
		for _, c := range clients {
			out[c] = result{fail, msg}
		}
		return out
	}
	dir := filepath.Join(outDir, "probe")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return failAll(err.Error())
	}
	port, err := freePort()
	if err != nil {
		return failAll(err.Error())
	}
	srv := &server{tg: tg, port: port, log: filepath.Join(dir, "server.log"),
		api: eurekaAPI{base: fmt.Sprintf("http://127.0.0.1:%d/eureka/", port)}}
	if useAuth {
		user, pass, _ := strings.Cut(s.auth, ":")
		srv.args = tg.authArgs(user, pass)
		srv.api.auth = s.auth
	}
	srv.args = append(srv.args, tg.probeArgs()...)
	if err := s.startServer(srv); err != nil {
		t.Logf("%s / %s: %v", tg.name, qScenario, err)
		return failAll("server did not start: " + strings.SplitN(err.Error(), "\n", 2)[0])
	}
	defer func() { _ = srv.p.stop(syscall.SIGTERM, 20*time.Second) }()
	t.Logf("%s / %s: server with %s up on %d", tg.name, qScenario, strings.Join(tg.probeArgs(), " "), port)
	target, _ := url.Parse(fmt.Sprintf("http://127.0.0.1:%d", port))
	agentsDir := filepath.Join(s.root, "compat", "agents")

	var prs []*probeRun
	for _, c := range clients {
		pr := &probeRun{client: c}
		prs = append(prs, pr)
		var err error
		if pr.caller, err = startAgent(s.ps, agentsDir, dir, c, c+"-qa", target, auth, "compat=qa,zone=z1"); err == nil {
			pr.callee, err = startAgent(s.ps, agentsDir, dir, c, c+"-qb", target, auth, "compat=qb,zone=z1")
		}
		if err != nil {
			pr.res = result{fail, "starting agent: " + err.Error()}
		}
	}
	var wg sync.WaitGroup
	for _, pr := range prs {
		if pr.res.outcome == fail {
			continue
		}
		wg.Go(func() {
			d, err := pr.run(srv)
			if err != nil {
				pr.res = result{fail, err.Error()}
				s.dumpProbe(t, pr, srv, err)
			} else {
				pr.res = result{pass, d}
				t.Logf("%s / %s: pass %s", pr.client, qScenario, d)
			}
		})
	}
	wg.Wait()
	for _, pr := range prs {
		out[pr.client] = pr.res
		for _, a := range pr.agents() {
			wg.Go(func() {
				_ = a.p.stop(syscall.SIGTERM, 15*time.Second)
				a.proxy.Close()
			})
		}
	}
	wg.Wait()
	return out
}

// post sends POST path to the agent and returns the status and body.
func (a *agent) post(path string) (int, string) {
	resp, err := agentHTTP.Post(fmt.Sprintf("http://127.0.0.1:%d%s", a.port, path), "text/plain", nil)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(b))
}

// lifecycleRow is one row of the dashboard's lifecycle section (GET /goreka/api/dashboard).
type lifecycleRow struct {
	App       string `json:"app"`
	ID        string `json:"instanceId"`
	State     string `json:"state"`
	Status    string `json:"status"`
	LastProbe string `json:"lastProbe"`
	Note      string `json:"note"`
}

// lifecycleOf returns the dashboard's lifecycle row of id (ok false if it has none).
func lifecycleOf(api eurekaAPI, id string) (lifecycleRow, bool, string) {
	dash := eurekaAPI{base: strings.TrimSuffix(api.base, "eureka/") + "goreka/api/", auth: api.auth}
	code, b, err := dash.do(http.MethodGet, "dashboard", nil, "application/json")
	if err != nil {
		return lifecycleRow{}, false, err.Error()
	}
	if code != http.StatusOK {
		return lifecycleRow{}, false, fmt.Sprintf("GET /goreka/api/dashboard: %d", code)
	}
	var body struct {
		Rows []lifecycleRow `json:"lifecycleInstances"`
	}
	if err := json.Unmarshal(b, &body); err != nil {
		return lifecycleRow{}, false, "GET /goreka/api/dashboard: " + err.Error()
	}
	for _, r := range body.Rows {
		if r.ID == id {
			return r, true, fmt.Sprintf("%+v", r)
		}
	}
	return lifecycleRow{}, false, fmt.Sprintf("no lifecycle row for %s among %d", id, len(body.Rows))
}

// run is scenario q for one client: ready, probed healthy, switched DOWN -> served DOWN and not routed to,
// switched UP -> served UP and routed to.
func (p *probeRun) run(srv *server) (string, error) {
	w := &warmRun{caller: p.caller, callee: p.callee}
	if err := w.ready(srv.api); err != nil {
		return "", err
	}
	if !w.hasCall {
		return "", fmt.Errorf("no /call in %s: scenario q needs a load-balanced caller", p.caller.app)
	}
	pb, pa := p.callee, p.caller
	r := &clientRun{api: srv.api}
	// The server probes pb and finds it healthy before anything changes (cause, then effect).
	err := waitFor(30*time.Second, "the dashboard shows a healthy probe of "+pb.id, func() (bool, string) {
		row, ok, last := lifecycleOf(srv.api, pb.id)
		return ok && strings.Contains(row.LastProbe, "HTTP 200") && row.Status == "UP", last
	})
	if err != nil {
		return "", err
	}
	// DOWN: the actuator says so, the Eureka client does not (it keeps heartbeating UP).
	if code, body := pb.post("/health-switch/DOWN"); code != http.StatusOK || body != "DOWN" {
		return "", fmt.Errorf("POST /health-switch/DOWN on %s: %d %q", pb.app, code, body)
	}
	if code, body := pb.get("/actuator/health"); code != http.StatusServiceUnavailable || !strings.Contains(body, `"DOWN"`) {
		return "", fmt.Errorf("GET /actuator/health on %s after the switch: %d %q, want 503 DOWN", pb.app, code, body)
	}
	before := pb.proxy.Snapshot()
	switched := time.Now()
	if err := r.listed(pb.app, []string{pb.id + " DOWN"}, 30*time.Second); err != nil {
		return "", err
	}
	servedDown := time.Since(switched)
	if err := waitSeen(pa, pb.app, 0, 20*time.Second); err != nil {
		return "", err
	}
	unseen := time.Since(switched)
	if code, body := pa.get("/call/" + pb.app); code != http.StatusServiceUnavailable {
		return "", fmt.Errorf("GET /call/%s on %s while served DOWN: %d %q, want 503 (no instance)", pb.app, pa.app, code, body)
	}
	var reason string
	err = waitFor(5*time.Second, "the dashboard shows why "+pb.id+" is DOWN", func() (bool, string) {
		row, ok, last := lifecycleOf(srv.api, pb.id)
		reason = row.Note
		return ok && strings.HasPrefix(row.Note, "DOWN by probe: 3 failures, HTTP 503"), last
	})
	if err != nil {
		return "", err
	}
	// UP again.
	if code, body := pb.post("/health-switch/UP"); code != http.StatusOK || body != "UP" {
		return "", fmt.Errorf("POST /health-switch/UP on %s: %d %q", pb.app, code, body)
	}
	healed := time.Now()
	if err := r.listed(pb.app, []string{pb.id + " UP"}, 30*time.Second); err != nil {
		return "", err
	}
	servedUp := time.Since(healed)
	want := "hello from " + pb.id
	err = waitFor(20*time.Second, "GET /call/"+pb.app+" on "+pa.app+" answers again", func() (bool, string) {
		code, body := pa.get("/call/" + pb.app)
		return code == http.StatusOK && body == want, fmt.Sprintf("%d %q", code, body)
	})
	if err != nil {
		return "", err
	}
	routed := time.Since(healed)
	after := pb.proxy.Snapshot()
	if n := diff(before, after, "PUT renew 404"); n > 0 {
		return "", fmt.Errorf("%d heartbeats of %s answered 404 while DOWN by probe (lease lost); recent:\n%s", n, pb.app, pb.proxy.Recent())
	}
	if n := diff(before, after, "PUT renew 200"); n < 3 {
		return "", fmt.Errorf("%d heartbeats of %s answered 200 while DOWN by probe, want >= 3 (1 s interval)", n, pb.app)
	}
	return fmt.Sprintf("served DOWN %.1fs after the switch (%q), unseen by the caller after %.1fs, /call 503; "+
		"served UP %.1fs after the switch back, routed after %.1fs; %d heartbeats 200, %d register meanwhile",
		servedDown.Seconds(), reason, unseen.Seconds(), servedUp.Seconds(), routed.Seconds(),
		diff(before, after, "PUT renew 200"), diff(before, after, "POST register")), nil
}

func (s *suite) dumpProbe(t *testing.T, p *probeRun, srv *server, err error) {
	var b strings.Builder
	fmt.Fprintf(&b, "FAIL %s / %s: %v\n", p.client, qScenario, err)
	fmt.Fprintf(&b, "--- %s (tail)\n%s\n", srv.log, tail(srv.log, 30))
	for _, a := range p.agents() {
		fmt.Fprintf(&b, "--- %s (tail)\n%s\n", a.p.log, tail(a.p.log, 25))
		fmt.Fprintf(&b, "--- requests of %s through its proxy (last 30)\n%s\n", a.app, a.proxy.Recent())
	}
	t.Log(b.String())
}
