//go:build compat

package suite

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// Scenario w (issue "Warm restart"): the server runs with a registry snapshot, two agents of one client
// (caller <client>-wa, target <client>-wb) see each other, and the server is stopped with SIGTERM and
// started again on the same port with the same flags. A poller GETs apps/ (JSON) straight from the server
// every 75 ms from before the stop until well after the start; every 200 must list both instances UP,
// the first 200 after the start included. Meanwhile each agent's /seen count of the other must stay >= 1,
// and /call works after the restart. It runs on its own server and agents, after every other scenario, so
// the restart of scenario f keeps its empty registry.

const wScenario = "w warm restart"

// Poller phases: before the SIGTERM, between the SIGTERM and the new process's start, after it.
const (
	phaseBefore int32 = iota
	phaseStopping
	phaseAfter
)

var phaseNames = []string{"before", "stopping", "after"}

// downPause is how long the server stays down: every client's heartbeat and fetch (1 s) hit the closed port.
const downPause = 2 * time.Second

// appsSample is one GET apps/ of the poller.
type appsSample struct {
	at    time.Time // request start
	phase int32     // phase at request start
	code  int       // 0: no HTTP answer (connection refused, reset, timeout)
	err   string
	apps  map[string][]string // APP -> sorted "id STATUS", for a 200 that parsed
	body  string              // first bytes of a 200 that did not parse
}

// appsPoller GETs apps/ (JSON) every interval until stopped.
type appsPoller struct {
	api      eurekaAPI
	interval time.Duration
	phase    atomic.Int32
	mu       sync.Mutex
	samples  []appsSample
	stop     chan struct{}
	done     chan struct{}
}

func startAppsPoller(api eurekaAPI, interval time.Duration) *appsPoller {
	p := &appsPoller{api: api, interval: interval, stop: make(chan struct{}), done: make(chan struct{})}
	// Its own client: no keep-alive connection of other callers, a short timeout (the server answers from
	// pre-encoded bytes; a request that hangs across the restart must not hide the first answer after it).
	hc := &http.Client{Timeout: 2 * time.Second}
	go func() {
		defer close(p.done)
		for {
			next := time.Now().Add(p.interval)
			s := p.get(hc)
			p.mu.Lock()
			p.samples = append(p.samples, s)
			p.mu.Unlock()
			select {
			case <-p.stop:
				return
			case <-time.After(time.Until(next)):
			}
		}
	}()
	return p
}

func (p *appsPoller) get(hc *http.Client) appsSample {
	s := appsSample{at: time.Now(), phase: p.phase.Load()}
	req, err := http.NewRequest(http.MethodGet, p.api.base+"apps/", nil)
	if err != nil {
		s.err = err.Error()
		return s
	}
	req.Header.Set("Accept", "application/json")
	if u, pw, ok := strings.Cut(p.api.auth, ":"); ok {
		req.SetBasicAuth(u, pw)
	}
	resp, err := hc.Do(req)
	if err != nil {
		s.err = err.Error()
		return s
	}
	defer resp.Body.Close()
	s.code = resp.StatusCode
	var body struct {
		Applications struct {
			Application []struct {
				Name     string         `json:"name"`
				Instance []wireInstance `json:"instance"`
			} `json:"application"`
		} `json:"applications"`
	}
	var raw json.RawMessage
	if err := json.NewDecoder(resp.Body).Decode(&raw); err != nil {
		s.err = "reading the body: " + err.Error()
		return s
	}
	if s.code != http.StatusOK {
		return s
	}
	if err := json.Unmarshal(raw, &body); err != nil {
		s.err = "parsing the body: " + err.Error()
		s.body = string(raw[:min(len(raw), 300)])
		return s
	}
	s.apps = map[string][]string{}
	for _, a := range body.Applications.Application {
		var list []string
		for _, in := range a.Instance {
			list = append(list, in.InstanceID+" "+in.Status)
		}
		slices.Sort(list)
		s.apps[strings.ToUpper(a.Name)] = list
	}
	return s
}

// finish stops the poller and returns every sample.
func (p *appsPoller) finish() []appsSample {
	close(p.stop)
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.samples)
}

// first200 returns the first 200 of phase ph, if any.
func (p *appsPoller) first200(ph int32) (appsSample, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, s := range p.samples {
		if s.phase == ph && s.code == http.StatusOK {
			return s, true
		}
	}
	return appsSample{}, false
}

// seenWatch polls from's /seen/<to>/count until stopped.
type seenWatch struct {
	from, to *agent
	stop     chan struct{}
	done     chan struct{}
	phase    *atomic.Int32
	// results, per poller phase
	readings   [3]int
	unreadable [3]int
	min        [3]int
	lastErr    string
	zero       []string // first readings below 1: "phase +t: value"
}

func startSeenWatch(from, to *agent, phase *atomic.Int32, t0 time.Time) *seenWatch {
	w := &seenWatch{from: from, to: to, stop: make(chan struct{}), done: make(chan struct{}), phase: phase}
	w.min = [3]int{-1, -1, -1}
	go func() {
		defer close(w.done)
		for {
			ph := w.phase.Load()
			start := time.Now()
			n, last := from.seenCount(to.app)
			switch {
			case n < 0:
				w.unreadable[ph]++
				w.lastErr = last
			default:
				w.readings[ph]++
				if w.min[ph] < 0 || n < w.min[ph] {
					w.min[ph] = n
				}
				if n < 1 && len(w.zero) < 5 {
					w.zero = append(w.zero, fmt.Sprintf("%s +%.2fs: %d", phaseNames[ph], start.Sub(t0).Seconds(), n))
				}
			}
			select {
			case <-w.stop:
				return
			case <-time.After(150 * time.Millisecond):
			}
		}
	}()
	return w
}

func (w *seenWatch) finish() { close(w.stop); <-w.done }

// check: readable values before and after the restart, never below 1.
func (w *seenWatch) check() error {
	what := fmt.Sprintf("%s /seen/%s/count", w.from.app, w.to.app)
	if len(w.zero) > 0 {
		return fmt.Errorf("%s dropped below 1: %s", what, strings.Join(w.zero, ", "))
	}
	for _, ph := range []int32{phaseBefore, phaseAfter} {
		if w.readings[ph] == 0 {
			return fmt.Errorf("%s: no readable value %s the restart (%d unreadable, last: %s)", what, phaseNames[ph], w.unreadable[ph], w.lastErr)
		}
	}
	return nil
}

func (w *seenWatch) summary() string {
	total, unreadable, lo := 0, 0, -1
	for i := range 3 {
		total += w.readings[i]
		unreadable += w.unreadable[i]
		if m := w.min[i]; m >= 0 && (lo < 0 || m < lo) {
			lo = m
		}
	}
	s := fmt.Sprintf("%s->%s min %d over %d readings", strings.TrimPrefix(w.from.app, w.from.client+"-"),
		strings.TrimPrefix(w.to.app, w.to.client+"-"), lo, total)
	if unreadable > 0 {
		s += fmt.Sprintf(" (%d unreadable)", unreadable)
	}
	return s
}

// warmRun is one client in scenario w.
type warmRun struct {
	r              *clientRun
	caller, callee *agent
	hasCall        bool
	lease          time.Duration
	watches        []*seenWatch
	err            error // set when the client is out of the scenario
}

func (w *warmRun) fail(err error) {
	if w.err == nil {
		w.err = err
	}
}

// runWarmRestart runs scenario w for every client on its own server (started with the target's
// snapshotArgs) and its own two agents per client.
func (s *suite) runWarmRestart(t *testing.T, tg *target, runs []*clientRun, outDir, auth string, useAuth bool, buildErr map[string]error) {
	if tg.snapshotArgs == nil {
		for _, r := range runs {
			if buildErr[r.client] == nil {
				r.results[wScenario] = result{notApplicable, "n/a: " + tg.notes[wScenario]}
			}
		}
		return
	}
	dir := filepath.Join(outDir, "warm")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	snap := filepath.Join(dir, "registry.snapshot")
	_ = os.Remove(snap) // never start from an earlier run's registry
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	srv := &server{tg: tg, port: port, log: filepath.Join(dir, "server.log"),
		api: eurekaAPI{base: fmt.Sprintf("http://127.0.0.1:%d/eureka/", port)}}
	if useAuth {
		user, pass, _ := strings.Cut(s.auth, ":")
		srv.args = tg.authArgs(user, pass)
		srv.api.auth = s.auth
	}
	srv.args = append(srv.args, tg.snapshotArgs(snap)...)

	var wrs []*warmRun
	for _, r := range runs {
		if buildErr[r.client] == nil {
			wrs = append(wrs, &warmRun{r: r})
		}
	}
	failAll := func(msg string) {
		for _, w := range wrs {
			w.r.results[wScenario] = result{fail, msg}
		}
	}
	if len(wrs) == 0 {
		return
	}
	start := time.Now()
	if err := s.startServer(srv); err != nil {
		t.Logf("%s / %s: %v", tg.name, wScenario, err)
		failAll("server did not start: " + strings.SplitN(err.Error(), "\n", 2)[0])
		return
	}
	defer func() { _ = srv.p.stop(syscall.SIGTERM, 20*time.Second) }()
	t.Logf("%s / %s: server with %s up on %d", tg.name, wScenario, strings.Join(tg.snapshotArgs(snap), " "), port)
	target, _ := url.Parse(fmt.Sprintf("http://127.0.0.1:%d", port))
	agentsDir := filepath.Join(s.root, "compat", "agents")

	// 1. Two agents per client, all at once; each pair registered, seeing each other, /call working.
	var wg sync.WaitGroup
	for _, w := range wrs {
		var err error
		if w.caller, err = startAgent(s.ps, agentsDir, dir, w.r.client, w.r.client+"-wa", target, auth, "compat=wa,zone=z1"); err != nil {
			w.fail(fmt.Errorf("starting agent: %w", err))
			continue
		}
		if w.callee, err = startAgent(s.ps, agentsDir, dir, w.r.client, w.r.client+"-wb", target, auth, "compat=wb,zone=z1"); err != nil {
			w.fail(fmt.Errorf("starting agent: %w", err))
			continue
		}
	}
	defer func() {
		for _, w := range wrs {
			for _, a := range w.agents() {
				wg.Go(func() {
					_ = a.p.stop(syscall.SIGTERM, 15*time.Second)
					a.proxy.Close()
				})
			}
		}
		wg.Wait()
	}()
	for _, w := range wrs {
		if w.err != nil {
			continue
		}
		wg.Go(func() { w.fail(w.ready(srv.api)) })
	}
	wg.Wait()
	var live []*warmRun
	post := 10 * time.Second // after the first 200: > 3 lease durations, so restored leases must be renewed
	for _, w := range wrs {
		if w.err != nil {
			w.r.set(wScenario, fmt.Errorf("before the restart: %w", w.err), "")
			s.dumpWarm(t, w, srv, w.err)
			continue
		}
		live = append(live, w)
		post = max(post, 3*w.lease+time.Second)
	}
	if len(live) == 0 {
		return
	}
	t.Logf("%s / %s: %d client(s) ready after %s", tg.name, wScenario, len(live), time.Since(start).Round(100*time.Millisecond))

	// 2. Poll apps/ and every /seen count, restart the server, keep polling.
	poller := startAppsPoller(srv.api, 75*time.Millisecond)
	t0 := time.Now()
	for _, w := range live {
		w.watches = []*seenWatch{
			startSeenWatch(w.caller, w.callee, &poller.phase, t0),
			startSeenWatch(w.callee, w.caller, &poller.phase, t0),
		}
	}
	time.Sleep(3 * time.Second)
	before := map[*warmRun]map[string]int{}
	for _, w := range live {
		before[w] = w.caller.proxy.Snapshot()
	}
	poller.phase.Store(phaseStopping)
	sigterm := time.Now()
	stopErr := srv.p.stop(syscall.SIGTERM, 20*time.Second)
	exited := time.Now()
	exitErr := srv.p.Err()
	time.Sleep(downPause)
	restartErr := s.restartUnderPoller(srv, poller)
	var firstAfter appsSample
	if restartErr == nil {
		firstAfter, _ = poller.first200(phaseAfter)
		time.Sleep(post)
	}
	samples := poller.finish()
	for _, w := range live {
		for _, sw := range w.watches {
			sw.finish()
		}
	}

	// 3. Judge. The numbers are the same for every client; the contents are per client.
	var n200 [3]int
	noAnswer, other := 0, map[int]int{}
	for _, sm := range samples {
		switch {
		case sm.code == http.StatusOK:
			n200[sm.phase]++
		case sm.code == 0:
			noAnswer++
		default:
			other[sm.code]++
		}
	}
	snapInfo := snapshotSummary(snap)
	down := "no 200 after the restart"
	if restartErr == nil {
		down = fmt.Sprintf("%.2fs from SIGTERM to the first 200 (exit %.3fs after it, new process started %.1fs after the exit)",
			firstAfter.at.Sub(sigterm).Seconds(), exited.Sub(sigterm).Seconds(), downPause.Seconds())
	}
	numbers := fmt.Sprintf("GET apps/ every 75 ms: %d x 200 before the SIGTERM, %d while stopping, %d after the restart; "+
		"%d without an answer, other codes %v; %s; snapshot after the stop: %s", n200[phaseBefore], n200[phaseStopping],
		n200[phaseAfter], noAnswer, other, down, snapInfo)
	t.Logf("%s / %s: %s", tg.name, wScenario, numbers)
	for _, w := range live {
		d, err := w.judge(samples, firstAfter, t0, stopErr, exitErr, restartErr, before[w], numbers)
		w.r.set(wScenario, err, d)
		if err != nil {
			s.dumpWarm(t, w, srv, err)
		} else {
			t.Logf("%s / %s: pass %s", w.r.client, wScenario, d)
		}
	}
}

func (w *warmRun) agents() []*agent {
	var out []*agent
	for _, a := range []*agent{w.caller, w.callee} {
		if a != nil {
			out = append(out, a)
		}
	}
	return out
}

// ready waits until both agents are healthy and listed UP, see each other, and the caller's /call reaches
// the callee.
func (w *warmRun) ready(api eurekaAPI) error {
	for _, a := range w.agents() {
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
			return err
		}
	}
	rr := &clientRun{api: api}
	for _, a := range w.agents() {
		if err := rr.listed(a.app, []string{a.id + " UP"}, 30*time.Second); err != nil {
			return err
		}
	}
	if err := waitSeen(w.caller, w.callee.app, 1, 30*time.Second); err != nil {
		return err
	}
	if err := waitSeen(w.callee, w.caller.app, 1, 30*time.Second); err != nil {
		return err
	}
	lease, err := api.leaseDuration(w.caller.app, w.caller.id)
	if err != nil {
		return err
	}
	w.lease = lease
	want := "hello from " + w.callee.id
	return waitFor(15*time.Second, "GET /call/"+w.callee.app+" on "+w.caller.app, func() (bool, string) {
		code, body := w.caller.get("/call/" + w.callee.app)
		if code == http.StatusNotFound {
			w.hasCall = false
			return true, ""
		}
		w.hasCall = true
		return code == http.StatusOK && body == want, fmt.Sprintf("%d %q", code, body)
	})
}

// restartUnderPoller starts the server again and waits until the poller has a 200 from the new process.
// It does not use startServer: its own readiness probe could take the first 200 the poller must judge.
func (s *suite) restartUnderPoller(srv *server, poller *appsPoller) error {
	argv := append(srv.tg.argv(srv.port), srv.args...)
	poller.phase.Store(phaseAfter)
	p, err := s.ps.start("server-"+srv.tg.name, srv.log, s.root, srv.tg.env(srv.port), argv...)
	if err != nil {
		return err
	}
	srv.p = p
	err = waitFor(180*time.Second, "a 200 to GET apps/ after the restart", func() (bool, string) {
		if p.exited() {
			return true, "exited"
		}
		_, ok := poller.first200(phaseAfter)
		return ok, "none yet"
	})
	if err == nil && p.exited() {
		err = fmt.Errorf("server exited after the restart: %v", p.Err())
	}
	if err != nil {
		return fmt.Errorf("%w\n--- %s (tail)\n%s", err, srv.log, tail(srv.log, 40))
	}
	return nil
}

// judge applies the checks of scenario w to one client.
func (w *warmRun) judge(samples []appsSample, firstAfter appsSample, t0 time.Time, stopErr, exitErr, restartErr error,
	before map[string]int, numbers string) (string, error) {
	switch {
	case stopErr != nil:
		return "", fmt.Errorf("server not stopped gracefully: %v", stopErr)
	case exitErr != nil:
		return "", fmt.Errorf("server exit on SIGTERM: %v, want exit 0 (README: graceful shutdown exits 0)", exitErr)
	case restartErr != nil:
		return "", restartErr
	}
	wa, wb := strings.ToUpper(w.caller.app), strings.ToUpper(w.callee.app)
	wantA, wantB := []string{w.caller.id + " UP"}, []string{w.callee.id + " UP"}
	show := func(sm appsSample) string {
		if sm.apps == nil {
			return fmt.Sprintf("unparsable (%s): %s", sm.err, sm.body)
		}
		return fmt.Sprintf("%s %q, %s %q (%d apps)", wa, sm.apps[wa], wb, sm.apps[wb], len(sm.apps))
	}
	var bad []string
	nBad := 0
	var n200 [3]int
	for _, sm := range samples {
		if sm.code != http.StatusOK {
			continue
		}
		n200[sm.phase]++
		if sm.apps != nil && slices.Equal(sm.apps[wa], wantA) && slices.Equal(sm.apps[wb], wantB) {
			continue
		}
		nBad++
		if len(bad) < 3 {
			bad = append(bad, fmt.Sprintf("%s +%.2fs: %s", phaseNames[sm.phase], sm.at.Sub(t0).Seconds(), show(sm)))
		}
	}
	if n200[phaseBefore] == 0 || n200[phaseAfter] == 0 {
		return "", fmt.Errorf("too few 200s to judge: %d before, %d after the restart; %s", n200[phaseBefore], n200[phaseAfter], numbers)
	}
	if !(firstAfter.apps != nil && slices.Equal(firstAfter.apps[wa], wantA) && slices.Equal(firstAfter.apps[wb], wantB)) {
		return "", fmt.Errorf("the first 200 after the restart does not list both instances UP: %s; %d of %d 200s were "+
			"empty or partial; %s", show(firstAfter), nBad, n200[0]+n200[1]+n200[2], numbers)
	}
	if nBad > 0 {
		return "", fmt.Errorf("%d of %d 200s to GET apps/ did not list %s and %s UP (a gap): %s; %s", nBad,
			n200[0]+n200[1]+n200[2], wantA, wantB, strings.Join(bad, "; "), numbers)
	}
	var seen []string
	for _, sw := range w.watches {
		if err := sw.check(); err != nil {
			return "", fmt.Errorf("%w; %s", err, numbers)
		}
		seen = append(seen, sw.summary())
	}
	call := "no /call in this agent"
	if w.hasCall {
		want := "hello from " + w.callee.id
		if code, body := w.caller.get("/call/" + w.callee.app); code != http.StatusOK || body != want {
			return "", fmt.Errorf("GET /call/%s on %s after the restart: %d %q, want 200 %q", w.callee.app, w.caller.app, code, body, want)
		}
		call = "/call ok after the restart"
	}
	after := w.caller.proxy.Snapshot()
	return fmt.Sprintf("first 200 after the restart lists %s; seen %s; %s; caller after the restart: %d renew 200, "+
		"%d renew 404, %d register; %s", show(firstAfter), strings.Join(seen, ", "), call,
		diff(before, after, "PUT renew 200"), diff(before, after, "PUT renew 404"), diff(before, after, "POST register"), numbers), nil
}

// snapshotSummary reads count and written of the snapshot file for the report (never a check: the format
// is goreka's business, docs/SNAPSHOT.md).
func snapshotSummary(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "no file"
		}
		return err.Error()
	}
	var head struct {
		Written string `json:"written"`
		Count   int    `json:"count"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return fmt.Sprintf("%d bytes, unreadable: %v", len(b), err)
	}
	return fmt.Sprintf("%d instances, written %s", head.Count, head.Written)
}

func (s *suite) dumpWarm(t *testing.T, w *warmRun, srv *server, err error) {
	var b strings.Builder
	fmt.Fprintf(&b, "FAIL %s / %s: %v\n", w.r.client, wScenario, err)
	fmt.Fprintf(&b, "--- %s (tail)\n%s\n", srv.log, tail(srv.log, 30))
	for _, a := range w.agents() {
		fmt.Fprintf(&b, "--- %s (tail)\n%s\n", a.p.log, tail(a.p.log, 25))
		fmt.Fprintf(&b, "--- requests of %s through its proxy (last 30)\n%s\n", a.app, a.proxy.Recent())
	}
	t.Log(b.String())
}
