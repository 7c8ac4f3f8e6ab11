//go:build compat

package suite

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Relays (issue 28). A core (one server of each kind: goreka, and the stock server, which takes the
// relays' per-instance paced heartbeats) with two goreka relays in front of it, one per site. Spring
// clients: A registers at site A's relay, B at site B's, C at the core. Each calls the others through
// @LoadBalanced (GET /call/{service}), with no full-fetch fallback at the sites after their first full
// fetch; a client stopped at a relay (its cancel) disappears at the core and at the other site.

var relayChecks = []string{
	"site A calls site B and the core",
	"the core calls both sites",
	"deltas only at the sites",
	"a cancel at a relay reaches everyone",
}

func relayArgs(core int) []string {
	return []string{
		fmt.Sprintf("--goreka.relay.upstream=http://127.0.0.1:%d/eureka/", core),
		"--goreka.relay.heartbeat-interval=5s",
		"--goreka.relay.fetch-interval=1s",
	}
}

func (s *suite) runRelays(t *testing.T, clients []string, buildErr map[string]error, coreName string) []mixedResult {
	results := map[string]result{}
	out := func(msg string) []mixedResult {
		var r []mixedResult
		for _, c := range relayChecks {
			res, ok := results[c]
			if !ok {
				res = result{fail, msg}
			}
			r = append(r, mixedResult{c, res})
		}
		return r
	}
	client := ""
	for _, c := range []string{"spring-boot3", "spring-boot4"} {
		if slices.Contains(clients, c) && buildErr[c] == nil {
			client = c
			break
		}
	}
	if client == "" {
		return out("needs a built spring-boot3 or spring-boot4 agent in COMPAT_CLIENTS")
	}
	gt, err := s.target(t, "goreka")
	if err != nil {
		return out("goreka build failed: " + err.Error())
	}
	ct, err := s.target(t, coreName)
	if err != nil {
		return out(coreName + " build failed: " + err.Error())
	}
	outDir := filepath.Join(s.out, "relays-"+coreName)
	_ = os.RemoveAll(outDir)
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		t.Fatal(err)
	}
	ports := make([]int, 3)
	for i := range ports {
		if ports[i], err = freePort(); err != nil {
			t.Fatal(err)
		}
	}
	mk := func(tg *target, port int, name string, args []string) *server {
		return &server{tg: tg, port: port, log: filepath.Join(outDir, name+".log"), args: args,
			api: eurekaAPI{base: fmt.Sprintf("http://127.0.0.1:%d/eureka/", port)}}
	}
	core := mk(ct, ports[0], "core", nil)
	ra := mk(gt, ports[1], "relay-a", relayArgs(ports[0]))
	rb := mk(gt, ports[2], "relay-b", relayArgs(ports[0]))
	start := time.Now()
	all := []*server{core, ra, rb}
	var agents []*agent
	defer func() {
		var w sync.WaitGroup
		for _, a := range agents {
			w.Go(func() { _ = a.p.stop(syscall.SIGTERM, 15*time.Second); a.proxy.Close() })
		}
		for _, srv := range all {
			if srv.p != nil {
				w.Go(func() { _ = srv.p.stop(syscall.SIGTERM, 20*time.Second) })
			}
		}
		w.Wait()
		t.Logf("relays (%s core): done in %s", coreName, time.Since(start).Round(time.Second))
	}()
	startErr := make([]error, len(all))
	var w sync.WaitGroup
	for i, srv := range all {
		w.Go(func() { startErr[i] = s.startServer(srv) })
	}
	w.Wait()
	if err := errorsJoin(startErr); err != "" {
		return out("start-up: " + err)
	}
	target := func(srv *server) *url.URL { u, _ := url.Parse(fmt.Sprintf("http://127.0.0.1:%d", srv.port)); return u }
	agentsDir := filepath.Join(s.root, "compat", "agents")
	names := []string{client + "-site-a", client + "-site-b", client + "-core"}
	var agentErr []string
	for i, srv := range []*server{ra, rb, core} {
		a, err := startAgent(s.ps, agentsDir, outDir, client, names[i], target(srv), "", "compat=relay")
		if err != nil {
			agentErr = append(agentErr, err.Error())
			continue
		}
		agents = append(agents, a)
	}
	if len(agentErr) > 0 {
		return out("agents: " + strings.Join(agentErr, "; "))
	}
	a, b, c := agents[0], agents[1], agents[2]
	calls := func(from *agent, to ...*agent) func() (bool, string) {
		return func() (bool, string) {
			var last []string
			ok := true
			for _, x := range to {
				code, body := from.get("/call/" + x.app)
				last = append(last, fmt.Sprintf("%s -> %s: %d %s", from.app, x.app, code, body))
				ok = ok && code == 200 && body == "hello from "+x.id
			}
			return ok, strings.Join(last, "; ")
		}
	}
	check := func(name string, within time.Duration, cond func() (bool, string)) bool {
		if err := waitFor(within, name, cond); err != nil {
			results[name] = result{fail, err.Error()}
			return false
		}
		_, last := cond()
		results[name] = result{pass, last}
		t.Logf("relays (%s core): %s at %s", coreName, name, time.Since(start).Round(time.Second))
		return true
	}
	if !check(relayChecks[0], 180*time.Second, func() (bool, string) {
		ok1, l1 := calls(a, b, c)()
		ok2, l2 := calls(b, a)()
		return ok1 && ok2, l1 + "; " + l2
	}) {
		return out("site calls failed first")
	}
	check(relayChecks[1], 90*time.Second, calls(c, a, b))

	// Deltas only: a change at the core reaches both sites' clients by delta, none fetches the full
	// registry again (the relay's hash covers what it serves).
	before := []map[string]int{a.proxy.Snapshot(), b.proxy.Snapshot()}
	newApp := client + "-relay-late"
	if err := core.api.register(newApp, newApp+"-1", 19201); err != nil {
		return out(err.Error())
	}
	if err := waitSeen(a, newApp, 1, 60*time.Second); err != nil {
		results[relayChecks[2]] = result{fail, err.Error()}
	} else if err := waitSeen(b, newApp, 1, 60*time.Second); err != nil {
		results[relayChecks[2]] = result{fail, err.Error()}
	} else {
		time.Sleep(3 * time.Second) // a few more delta fetches
		after := []map[string]int{a.proxy.Snapshot(), b.proxy.Snapshot()}
		deltas := []int{diff(before[0], after[0], "GET apps/delta 200"), diff(before[1], after[1], "GET apps/delta 200")}
		fulls := []int{diff(before[0], after[0], "GET apps/ 200"), diff(before[1], after[1], "GET apps/ 200")}
		msg := fmt.Sprintf("site deltas %v, full fetches %v", deltas, fulls)
		if deltas[0] < 1 || deltas[1] < 1 || fulls[0]+fulls[1] > 0 {
			results[relayChecks[2]] = result{fail, msg + ": want deltas and no full fetch (a hash mismatch)"}
		} else {
			results[relayChecks[2]] = result{pass, msg}
		}
	}

	// A cancel at relay B (the client stops): gone at the core and at site A.
	if err := b.p.stop(syscall.SIGTERM, 30*time.Second); err != nil {
		return out("stopping " + b.app + ": " + err.Error())
	}
	b.proxy.Close()
	agents = slices.Delete(agents, 1, 2)
	check(relayChecks[3], 60*time.Second, func() (bool, string) {
		atCore, err := core.api.instances(b.app)
		n, last := a.seenCount(b.app)
		return err == nil && len(atCore) == 0 && n == 0, fmt.Sprintf("core %v %v; site A %s", atCore, err, last)
	})
	return out("")
}

func errorsJoin(errs []error) string {
	var out []string
	for _, e := range errs {
		if e != nil {
			out = append(out, e.Error())
		}
	}
	return strings.Join(out, "; ")
}

func renderRelays(core string, res []mixedResult) string {
	return renderChecks("relays: a "+core+" core, two goreka relays (one per site), Spring clients at each", "run", "relays", res)
}
