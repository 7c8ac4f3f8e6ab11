//go:build compat

package suite

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"testing"
)

// The rate limiter under real clients (issue 15): goreka runs with eureka.server.rate-limiter-enabled and
// small buckets (burst 5, 50 fetches/s, 5 full fetches/s). A loop of full fetches with no client identity,
// about 25/s, must be throttled, while a Spring agent (and the Netflix Java agent when built) keep fetching
// their deltas: none of their fetches is refused, and they see an app registered during the load.

var rateLimitChecks = []string{
	"loop is throttled",
	"clients' fetches never refused",
	"clients see a new app under load",
}

// limitCase is one run of the limiter scenario: the server's arguments, its output directory and how the loop
// fetches. The rate limiter's loop sends no identity; the per-client fetch limit's loop comes from another
// address (127.0.0.2), as a misbehaving client on another host would, so that only it is over its allowance.
type limitCase struct {
	name, dir string
	args      []string
	loop      func(e eurekaAPI) (int, error)
}

var rateLimitCase = limitCase{name: "rate limiter", dir: "ratelimit", args: rateLimitArgs,
	loop: func(e eurekaAPI) (int, error) {
		code, _, err := e.do(http.MethodGet, "apps/", nil, "application/json")
		return code, err
	}}

// The per-client fetch limit under real clients (issue 20): goreka with goreka.fetch-limit.enabled, 6 full
// fetches a minute per client after a burst of 5 and 600 deltas a minute (the Spring agents fetch a delta every
// second and share 127.0.0.1, since they send no DiscoveryIdentity-Id); the global rate limiter is off.
var fetchLimitCase = limitCase{name: "fetch limit", dir: "fetchlimit", args: []string{
	"--goreka.fetch-limit.enabled=true",
	"--goreka.fetch-limit.full-per-minute=6",
	"--goreka.fetch-limit.delta-per-minute=600",
	"--goreka.fetch-limit.burst=5",
}, loop: func(e eurekaAPI) (int, error) {
	req, err := http.NewRequest(http.MethodGet, e.base+"apps/", nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := fromOtherHost.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}}

// fromOtherHost connects from 127.0.0.2: another client address for the server on 127.0.0.1.
var fromOtherHost = &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
	DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}).DialContext}}

var rateLimitArgs = []string{
	"--eureka.server.rate-limiter-enabled=true",
	"--eureka.server.rate-limiter-burst-size=5",
	"--eureka.server.rate-limiter-registry-fetch-average-rate=50",
	"--eureka.server.rate-limiter-full-fetch-average-rate=5",
}

func (s *suite) runRateLimit(t *testing.T, clients []string, buildErr map[string]error, lc limitCase) []mixedResult {
	results := map[string]result{}
	out := func(msg string) []mixedResult {
		var r []mixedResult
		for _, c := range rateLimitChecks {
			res, ok := results[c]
			if !ok {
				res = result{fail, msg}
			}
			r = append(r, mixedResult{c, res})
		}
		return r
	}
	var kinds []string
	for _, c := range []string{"spring-boot3", "spring-boot4", "netflix-java"} {
		if slices.Contains(clients, c) && buildErr[c] == nil {
			kinds = append(kinds, c)
		}
	}
	if !slices.ContainsFunc(kinds, func(c string) bool { return strings.HasPrefix(c, "spring-boot") }) {
		return out("needs a built spring-boot3 or spring-boot4 agent in COMPAT_CLIENTS")
	}
	gt, err := s.target(t, "goreka")
	if err != nil {
		return out("goreka build failed: " + err.Error())
	}
	outDir := filepath.Join(s.out, lc.dir)
	_ = os.RemoveAll(outDir)
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		t.Fatal(err)
	}
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	g := &server{tg: gt, port: port, log: filepath.Join(outDir, "goreka.log"), args: lc.args,
		api: eurekaAPI{base: fmt.Sprintf("http://127.0.0.1:%d/eureka/", port)}}
	start := time.Now()
	var wg sync.WaitGroup
	var gErr error
	wg.Go(func() { gErr = s.startServer(g) })
	target, _ := url.Parse(fmt.Sprintf("http://127.0.0.1:%d", port))
	agentsDir := filepath.Join(s.root, "compat", "agents")
	var agents []*agent
	var startErrs []error
	for _, c := range kinds {
		a, err := startAgent(s.ps, agentsDir, outDir, c, c+"-rl", target, "", "compat=rl")
		if err != nil {
			startErrs = append(startErrs, err)
			continue
		}
		agents = append(agents, a)
	}
	wg.Wait()
	defer func() {
		for _, a := range agents {
			wg.Go(func() { _ = a.p.stop(syscall.SIGTERM, 15*time.Second); a.proxy.Close() })
		}
		wg.Wait()
		if g.p != nil {
			_ = g.p.stop(syscall.SIGTERM, 20*time.Second)
		}
		t.Logf("%s: done in %s", lc.name, time.Since(start).Round(time.Second))
	}()
	if gErr != nil || len(startErrs) > 0 {
		return out(fmt.Sprintf("start-up: %v %v", gErr, startErrs))
	}
	for _, a := range agents {
		if err := waitFor(300*time.Second, a.app+" is UP on the server", func() (bool, string) {
			l, err := g.api.instances(a.app)
			if err != nil {
				return false, err.Error()
			}
			return slices.Equal(l, []string{a.id + " UP"}), fmt.Sprintf("%q", l)
		}); err != nil {
			t.Logf("%s: %v\n--- %s (tail)\n%s", lc.name, err, a.p.log, tail(a.p.log, 30))
			return out("agents did not start")
		}
	}
	// Registered is not fetched: a client whose first full fetch found an empty registry full-fetches
	// again at every refresh until it holds one, and under the loop those full fetches are refused by
	// design. The loop starts once every client holds the registry (it sees itself).
	for _, a := range agents {
		if err := waitSeen(a, a.app, 1, 60*time.Second); err != nil {
			return out("agents did not fetch the registry: " + err.Error())
		}
	}
	before := map[*agent]map[string]int{}
	for _, a := range agents {
		before[a] = a.proxy.Snapshot()
	}

	// The loop: full fetches for 15 s (lc.loop says as whom).
	codes := map[int]int{}
	var mu sync.Mutex
	stop := time.Now().Add(15 * time.Second)
	var loop sync.WaitGroup
	loop.Go(func() {
		for time.Now().Before(stop) {
			code, err := lc.loop(g.api)
			if err == nil {
				mu.Lock()
				codes[code]++
				mu.Unlock()
			}
			time.Sleep(40 * time.Millisecond)
		}
	})
	time.Sleep(3 * time.Second)
	seenErr := g.api.register("rl-new", "rl-new-1", 18999)
	if seenErr == nil {
		for _, a := range agents {
			if seenErr = waitSeen(a, "rl-new", 1, 10*time.Second); seenErr != nil {
				break
			}
		}
	}
	loop.Wait()

	mu.Lock()
	throttled, admitted := codes[http.StatusServiceUnavailable], codes[http.StatusOK]
	mu.Unlock()
	if throttled > 0 && admitted > 0 && throttled+admitted == sumValues(codes) {
		results["loop is throttled"] = result{pass, fmt.Sprintf("%d x 503, %d x 200", throttled, admitted)}
	} else {
		results["loop is throttled"] = result{fail, fmt.Sprintf("loop answers %v", codes)}
	}
	var refused []string
	var fetches int
	for _, a := range agents {
		after := a.proxy.Snapshot()
		for _, op := range []string{"GET apps/", "GET apps/delta"} {
			fetches += diff(before[a], after, op)
			if n := diff(before[a], after, fmt.Sprintf("%s %d", op, http.StatusServiceUnavailable)); n > 0 {
				refused = append(refused, fmt.Sprintf("%s: %d x %s 503", a.app, n, op))
			}
		}
	}
	switch {
	case len(refused) > 0:
		results["clients' fetches never refused"] = result{fail, strings.Join(refused, "; ")}
	case fetches == 0:
		results["clients' fetches never refused"] = result{fail, "the agents fetched nothing during the load"}
	default:
		results["clients' fetches never refused"] = result{pass, fmt.Sprintf("%d fetches by %s", fetches, strings.Join(kinds, ", "))}
	}
	if seenErr != nil {
		results["clients see a new app under load"] = result{fail, seenErr.Error()}
	} else {
		results["clients see a new app under load"] = result{pass, ""}
	}
	return out("")
}

func sumValues(m map[int]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func renderRateLimit(lc limitCase, res []mixedResult) string {
	return renderChecks(fmt.Sprintf("%s: goreka with %s, one client in a loop of full fetches, real clients fetching", lc.name, strings.Join(lc.args, " ")), "run", "goreka", res)
}
