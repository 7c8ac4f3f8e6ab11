//go:build compat

package suite

import (
	"encoding/json"
	"fmt"
	"net/http"
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

// Remote regions (issue 15). Two remote regions, each served by one kind of server: west by goreka WG, east
// by the stock server WS. Two local servers name both as remote regions: goreka LG and the stock server LS
// (so a goreka's remote region is another goreka and a stock server, and a stock server's remote region is a
// goreka). LG and LS start while WG and WS are not there yet; WG and WS hold RGN-WEST and RGN-EAST, LG and LS
// hold RGN-LOCAL. A Spring client with eureka.client.fetch-remote-regions-registry=west registers on each local
// server. At the end WG goes away.

var regionChecks = []string{
	"403 before the regions answer",
	"answers equal on both kinds",
	"stock serves a goreka region",
	"Spring client sees the region",
	"region gone: last copy, reads fast",
}

// regionPaths are the reads compared between LG and LS (JSON), normalised by normRegionDoc.
var regionPaths = []string{
	"apps/?regions=west", "apps/?regions=east", "apps/?regions=west,EAST", "apps/", "apps/?regions=nowhere",
	"apps/delta?regions=west", "apps/RGN-WEST", "apps/RGN-WEST/rgn-west-1", "instances/rgn-east-1", "vips/rgn-east",
}

func regionArgs(west, east int) []string {
	return []string{
		fmt.Sprintf("--eureka.server.remote-region-urls-with-name.west=http://127.0.0.1:%d/eureka/", west),
		fmt.Sprintf("--eureka.server.remote-region-urls-with-name.east=http://127.0.0.1:%d/eureka/", east),
		"--eureka.server.remote-region-registry-fetch-interval=1",
	}
}

func (s *suite) runRegions(t *testing.T, clients []string, buildErr map[string]error, stockName string) []mixedResult {
	results := map[string]result{}
	out := func(msg string) []mixedResult {
		var r []mixedResult
		for _, c := range regionChecks {
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
	st, err := s.target(t, stockName)
	if err != nil {
		return out("stock build failed: " + err.Error())
	}
	outDir := filepath.Join(s.out, "regions")
	_ = os.RemoveAll(outDir)
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		t.Fatal(err)
	}
	ports := make([]int, 4)
	for i := range ports {
		if ports[i], err = freePort(); err != nil {
			t.Fatal(err)
		}
	}
	mk := func(tg *target, port int, name string, args []string) *server {
		return &server{tg: tg, port: port, log: filepath.Join(outDir, name+".log"), args: args,
			api: eurekaAPI{base: fmt.Sprintf("http://127.0.0.1:%d/eureka/", port)}}
	}
	wg := mk(gt, ports[0], "wg", nil)
	ws := mk(st, ports[1], "ws", nil)
	lg := mk(gt, ports[2], "lg", regionArgs(ports[0], ports[1]))
	ls := mk(st, ports[3], "ls", regionArgs(ports[0], ports[1]))
	start := time.Now()
	var all []*server
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
		t.Logf("remote regions: done in %s", time.Since(start).Round(time.Second))
	}()

	// 1. The local servers first, their regions not there yet.
	all = append(all, lg, ls)
	var startErr [2]error
	var w sync.WaitGroup
	w.Go(func() { startErr[0] = s.startServer(lg) })
	w.Go(func() { startErr[1] = s.startServer(ls) })
	w.Wait()
	if startErr[0] != nil || startErr[1] != nil {
		return out(fmt.Sprintf("start-up: %v %v", startErr[0], startErr[1]))
	}
	var early []string
	for _, l := range []*server{lg, ls} {
		c1, _, _ := l.api.do(http.MethodGet, "apps/?regions=west", nil, "application/json")
		c2, _, _ := l.api.do(http.MethodGet, "apps/delta?regions=east", nil, "application/json")
		c3, _, _ := l.api.do(http.MethodGet, "apps/", nil, "application/json")
		early = append(early, fmt.Sprintf("%s: regions %d, delta regions %d, plain %d", l.tg.name, c1, c2, c3))
		if c1 != http.StatusForbidden || c2 != http.StatusForbidden || c3 != http.StatusOK {
			results["403 before the regions answer"] = result{fail, strings.Join(early, "; ")}
		}
	}
	if _, failed := results["403 before the regions answer"]; !failed {
		results["403 before the regions answer"] = result{pass, strings.Join(early, "; ")}
	}

	// 2. The regions, with their applications; the local application; the clients.
	all = append(all, wg, ws)
	w.Go(func() { startErr[0] = s.startServer(wg) })
	w.Go(func() { startErr[1] = s.startServer(ws) })
	target := func(srv *server) *url.URL { u, _ := url.Parse(fmt.Sprintf("http://127.0.0.1:%d", srv.port)); return u }
	agentsDir := filepath.Join(s.root, "compat", "agents")
	// The Netflix client refuses to start without zones of the region it fetches (InstanceRegionChecker).
	opts := "JAVA_OPTS=-Deureka.client.fetch-remote-regions-registry=west -Deureka.client.region=local -Deureka.client.availability-zones.west=west-1"
	var agentErr []error
	for _, l := range []*server{lg, ls} {
		a, err := startAgentEnv(s.ps, agentsDir, outDir, client, client+"-rgn-"+l.tg.name, target(l), "", "compat=rgn", []string{opts})
		if err != nil {
			agentErr = append(agentErr, err)
			continue
		}
		agents = append(agents, a)
	}
	w.Wait()
	if startErr[0] != nil || startErr[1] != nil || len(agentErr) > 0 {
		return out(fmt.Sprintf("start-up: %v %v %v", startErr[0], startErr[1], agentErr))
	}
	regs := []struct {
		srv     *server
		app, id string
		port    int
	}{{wg, "rgn-west", "rgn-west-1", 19101}, {ws, "rgn-east", "rgn-east-1", 19102}, {lg, "rgn-local", "rgn-local-1", 19103}, {ls, "rgn-local", "rgn-local-1", 19103}}
	for _, r := range regs {
		if err := r.srv.api.register(r.app, r.id, r.port); err != nil {
			return out(err.Error())
		}
	}
	// Heartbeats keep the driver's instances (the eviction runs every second); a deleted instance would
	// show as the empty application Eureka keeps in a region's copy (README "What is different").
	stopBeats := make(chan struct{})
	var beats sync.WaitGroup
	beats.Go(func() {
		for {
			select {
			case <-stopBeats:
				return
			case <-time.After(3 * time.Second):
			}
			for _, r := range regs {
				_, _, _ = r.srv.api.do(http.MethodPut, "apps/"+strings.ToUpper(r.app)+"/"+r.id, nil, "")
			}
		}
	})
	defer func() { close(stopBeats); beats.Wait() }()

	// 3. Both local servers answer the same. The stock server never invalidates its cached reads when a
	// region's copy changes (they follow local changes only, or expire after 180 s): registering the local
	// instance again refreshes them on both.
	var lastDiff string
	err = waitFor(120*time.Second, "LG and LS answer the same region reads", func() (bool, string) {
		for _, l := range []*server{lg, ls} {
			_ = l.api.register("rgn-local", "rgn-local-1", 19103)
		}
		time.Sleep(2500 * time.Millisecond) // the read caches' 1 s refresh
		for _, p := range regionPaths {
			cg, bg, eg := lg.api.do(http.MethodGet, p, nil, "application/json")
			cs, bs, es := ls.api.do(http.MethodGet, p, nil, "application/json")
			if eg != nil || es != nil {
				lastDiff = fmt.Sprintf("%s: %v %v", p, eg, es)
				return false, lastDiff
			}
			ng, ns := normRegionDoc(bg), normRegionDoc(bs)
			if cg != cs || ng != ns {
				lastDiff = fmt.Sprintf("%s: goreka %d %s\nstock %d %s", p, cg, ng, cs, ns)
				return false, lastDiff
			}
		}
		// Only equal once the regions' applications are in: both could agree on an empty copy.
		_, b, _ := lg.api.do(http.MethodGet, "apps/?regions=west,east", nil, "application/json")
		return strings.Contains(string(b), "rgn-west-1") && strings.Contains(string(b), "rgn-east-1"), "regions not fetched yet"
	})
	if err != nil {
		results["answers equal on both kinds"] = result{fail, err.Error()}
	} else {
		results["answers equal on both kinds"] = result{pass, fmt.Sprintf("%d reads (JSON, timestamps and versions__delta aside)", len(regionPaths))}
	}
	_, b, _ := ls.api.do(http.MethodGet, "apps/?regions=west", nil, "application/json")
	if strings.Contains(string(b), `"rgn-west-1"`) {
		results["stock serves a goreka region"] = result{pass, "LS ?regions=west lists goreka WG's RGN-WEST"}
	} else {
		results["stock serves a goreka region"] = result{fail, "LS ?regions=west: " + string(b)}
	}

	// 4. The Spring clients: they fetch ?regions=west, see RGN-WEST and not RGN-EAST (not asked for).
	var seen []string
	clientOK := true
	for _, a := range agents {
		if err := waitSeen(a, "rgn-west", 1, 180*time.Second); err != nil {
			clientOK = false
			seen = append(seen, err.Error()+"\n"+a.proxy.Recent())
			continue
		}
		before := a.proxy.Snapshot()
		time.Sleep(5 * time.Second)
		after := a.proxy.Snapshot()
		east, _ := a.seenCount("rgn-east")
		regionFetches := diff(before, after, "GET apps/delta regions=west 200") + diff(before, after, "GET apps/ regions=west 200")
		fulls := diff(before, after, "GET apps/")
		line := fmt.Sprintf("%s: sees rgn-west, %d rgn-east, %d region fetches and %d full fetches in 5 s", a.app, east, regionFetches, fulls)
		if east != 0 || regionFetches == 0 || fulls != 0 {
			clientOK = false
			line += "\n" + a.proxy.Recent()
		}
		seen = append(seen, line)
	}
	results["Spring client sees the region"] = result{map[bool]outcome{true: pass, false: fail}[clientOK], strings.Join(seen, "; ")}

	// 5. WG goes away: LG keeps its last copy of west and answers fast; its local reads too (LS the same).
	_ = wg.p.stop(syscall.SIGKILL, 10*time.Second)
	time.Sleep(4 * time.Second)
	var gone []string
	goneOK := true
	for _, l := range []*server{lg, ls} {
		for _, p := range []string{"apps/?regions=west", "apps/", "apps/RGN-LOCAL"} {
			t0 := time.Now()
			code, b, err := l.api.do(http.MethodGet, p, nil, "application/json")
			took := time.Since(t0)
			ok := err == nil && code == http.StatusOK && took < time.Second
			if p == "apps/?regions=west" && !strings.Contains(string(b), "rgn-west-1") {
				ok = false
			}
			if !ok {
				goneOK = false
				gone = append(gone, fmt.Sprintf("%s %s: %d %v in %s", l.tg.name, p, code, err, took))
			}
		}
	}
	for _, a := range agents {
		if n, last := a.seenCount("rgn-west"); n != 1 {
			goneOK = false
			gone = append(gone, fmt.Sprintf("%s sees %d rgn-west (%s)", a.app, n, last))
		}
	}
	if goneOK {
		gone = append(gone, "both local servers serve west's last copy within 1 s, and their local reads")
	}
	results["region gone: last copy, reads fast"] = result{map[bool]outcome{true: pass, false: fail}[goneOK], strings.Join(gone, "; ")}
	return out("")
}

// normRegionDoc is a JSON answer with what legitimately differs between two servers taken out: timestamps,
// versions__delta (a count of the server's own delta builds), the agents' applications (each local server has
// its own agent); applications and instances sorted. apps__hashcode stays: both servers count one agent.
func normRegionDoc(b []byte) string {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return "RAW " + string(b)
	}
	var walk func(any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				if strings.HasSuffix(k, "Timestamp") || k == "versions__delta" {
					delete(x, k)
					continue
				}
				x[k] = walk(e)
			}
			// The agents' own applications differ by name and port between the two local servers.
			if l, ok := x["application"].([]any); ok {
				x["application"] = slices.DeleteFunc(l, func(a any) bool {
					m, _ := a.(map[string]any)
					name, _ := m["name"].(string)
					return !strings.HasPrefix(name, "RGN-")
				})
			}
			for _, k := range []string{"application", "instance"} {
				if l, ok := x[k].([]any); ok {
					sort.Slice(l, func(i, j int) bool {
						a, _ := json.Marshal(l[i])
						b, _ := json.Marshal(l[j])
						return string(a) < string(b)
					})
				}
			}
			return x
		case []any:
			for i := range x {
				x[i] = walk(x[i])
			}
			return x
		}
		return v
	}
	out, _ := json.Marshal(walk(v))
	return string(out)
}

func renderRegions(label string, res []mixedResult) string {
	return renderChecks("remote regions: goreka and "+label+" as local servers, each with a goreka region and a stock region", "run", "regions", res)
}
