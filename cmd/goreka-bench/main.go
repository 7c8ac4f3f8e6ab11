// Command goreka-bench drives any Eureka server over HTTP and reports
// throughput, latency percentiles and errors per phase. It registers a
// synthetic fleet (cmd/goreka-bench/fleet), waits until the full registry
// shows all of it, optionally warms the server up (a JVM's JIT), then runs
// the phases, each for a fixed duration at a fixed concurrency:
//
//	renew        heartbeats (PUT /apps/{app}/{id}) over the whole fleet
//	heartbeat    the fleet's heartbeats alone, open-loop: one per instance
//	             every --mix-interval (as clients send them)
//	full         GET /apps/ as Spring clients ask: Accept JSON, gzip
//	delta        GET /apps/delta, gzip JSON
//	burst        registrations of new instances (cancelled afterwards)
//	mix          a fleet's traffic: one renew and one delta per instance
//	             every --mix-interval, one full fetch per instance every
//	             --mix-full-every, sent open-loop at those rates
//	propagation  register one instance, poll /apps/delta until it shows
//	             (at every --visible-at server: a relay tier's other readers)
//	converge     register --converge-instances on --target, poll --peer's
//	             full registry until all are there
//
// With --server-pid it also reads the server's resident memory and CPU from
// /proc. Every loop is bounded by --duration and --max-requests.
//
//	goreka-bench --target=http://127.0.0.1:8761/eureka/ --instances=10000 --apps=200 \
//	  --duration=10s --concurrency=32 --phases=renew,full,delta,burst,mix --json out.json
//	goreka-bench wait --target=URL --since-ns=$(date +%s%N)   # start-up time
//	goreka-bench report --goreka=a.json --java=b.json --baseline=c.json
package main

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/goreka/goreka/cmd/goreka-bench/fleet"
	"github.com/goreka/goreka/compat"
)

func main() {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "wait":
			os.Exit(waitCmd(os.Args[2:]))
		case "report":
			os.Exit(reportCmd(os.Args[2:]))
		case "ladder":
			os.Exit(ladderCmd(os.Args[2:]))
		}
	}
	os.Exit(runCmd(os.Args[1:]))
}

// Result is the JSON document of one run against one server.
type Result struct {
	Label       string                  `json:"label"`
	Target      string                  `json:"target"`
	Instances   int                     `json:"instances"`
	Apps        int                     `json:"apps"`
	Concurrency int                     `json:"concurrency"`
	Duration    string                  `json:"duration"`
	Rounds      int                     `json:"rounds"`
	GOMAXPROCS  int                     `json:"client_gomaxprocs"`
	Load        *PhaseResult            `json:"load,omitempty"`
	SettleSec   float64                 `json:"settle_seconds,omitempty"`
	FullBytes   int                     `json:"full_gzip_bytes,omitempty"`
	FullRaw     int                     `json:"full_json_bytes,omitempty"`
	DeltaBytes  int                     `json:"delta_gzip_bytes,omitempty"`
	RSSLoaded   int64                   `json:"rss_loaded_bytes,omitempty"`
	RSSEnd      int64                   `json:"rss_end_bytes,omitempty"`
	StartupSec  float64                 `json:"startup_seconds,omitempty"`
	Phases      map[string]*PhaseResult `json:"phases"`
	Propagation []float64               `json:"propagation_seconds,omitempty"`
	// PropagationLoaded is the propagation-loaded phase: right after loading,
	// when the delta holds the whole fleet (run it first, without warm-up).
	PropagationLoaded []float64 `json:"propagation_loaded_seconds,omitempty"`
	ConvergeSec       float64   `json:"converge_seconds,omitempty"`
	ConvergeN         int       `json:"converge_instances,omitempty"`
	Notes             []string  `json:"notes,omitempty"`
}

type config struct {
	target, peer, label, phases, jsonOut, prefix string
	n, apps, conc, convergeN, propSamples        int
	dur, warmup, mixInterval, mixFullEvery       time.Duration
	settleTimeout, propTimeout, convTimeout      time.Duration
	maxReq                                       int64
	pid                                          int
	startup                                      float64
	skipLoad                                     bool
	rounds                                       int
	servers                                      []server
	jsonDir                                      string
	propServers                                  string
	visibleAt                                    string
}

// server is one server under test; with several, the phases interleave.
type server struct {
	label, url string
	pid        int
	startup    float64
}

// serverFlag parses repeated --server label=URL[,pid=N][,startup=S].
type serverFlag struct{ list *[]server }

func (f serverFlag) String() string { return "" }

func (f serverFlag) Set(v string) error {
	label, rest, ok := strings.Cut(v, "=")
	if !ok || label == "" {
		return fmt.Errorf("want label=URL[,pid=N][,startup=S], got %q", v)
	}
	parts := strings.Split(rest, ",")
	s := server{label: label, url: parts[0]}
	for _, p := range parts[1:] {
		k, val, _ := strings.Cut(p, "=")
		var err error
		switch k {
		case "pid":
			s.pid, err = strconv.Atoi(val)
		case "startup":
			s.startup, err = strconv.ParseFloat(val, 64)
		default:
			err = fmt.Errorf("unknown key %q", k)
		}
		if err != nil {
			return fmt.Errorf("--server %s: %v", v, err)
		}
	}
	*f.list = append(*f.list, s)
	return nil
}

func runCmd(args []string) int {
	fs := flag.NewFlagSet("goreka-bench", flag.ExitOnError)
	var c config
	fs.StringVar(&c.target, "target", "http://127.0.0.1:8761/eureka/", "service URL of the server under test")
	fs.StringVar(&c.peer, "peer", "", "service URL of a second node peered with --target (converge phase)")
	fs.StringVar(&c.label, "label", "", "name of the server in the output")
	fs.StringVar(&c.phases, "phases", "renew,full,delta,burst,mix", "comma-separated: renew,heartbeat,full,delta,burst,mix,propagation,propagation-loaded,converge")
	fs.StringVar(&c.jsonOut, "json", "", "write the result as JSON to this file")
	fs.StringVar(&c.prefix, "prefix", "bench", "instance name prefix of the fleet")
	fs.IntVar(&c.n, "instances", 10000, "instances to register (1 to 1000000)")
	fs.IntVar(&c.apps, "apps", 200, "applications the instances are spread over")
	fs.IntVar(&c.conc, "concurrency", 32, "concurrent clients (keep-alive connections) per phase")
	fs.IntVar(&c.convergeN, "converge-instances", 0, "registrations for the converge phase (default --instances)")
	fs.IntVar(&c.propSamples, "propagation-samples", 3, "propagation measurements")
	fs.DurationVar(&c.dur, "duration", 10*time.Second, "duration of each phase")
	fs.DurationVar(&c.warmup, "warmup", 0, "unmeasured renew/full/delta traffic before the phases (JIT warm-up)")
	fs.DurationVar(&c.mixInterval, "mix-interval", 30*time.Second, "mix: each instance renews and fetches a delta once per interval")
	fs.DurationVar(&c.mixFullEvery, "mix-full-every", 10*time.Minute, "mix: each instance fetches the full registry once per this")
	fs.DurationVar(&c.settleTimeout, "settle-timeout", 90*time.Second, "longest wait for the fleet to show in the full registry")
	fs.DurationVar(&c.propTimeout, "propagation-timeout", 75*time.Second, "longest wait for one propagation sample")
	fs.DurationVar(&c.convTimeout, "converge-timeout", 120*time.Second, "longest wait for convergence")
	fs.Int64Var(&c.maxReq, "max-requests", 5_000_000, "cap on requests per phase")
	fs.IntVar(&c.pid, "server-pid", 0, "pid of the server process: read its RSS and CPU from /proc")
	fs.Float64Var(&c.startup, "startup-seconds", 0, "start-up time measured by the runner (goreka-bench wait), recorded in the JSON")
	fs.BoolVar(&c.skipLoad, "skip-load", false, "do not register the fleet (already registered)")
	fs.IntVar(&c.rounds, "rounds", 1, "run each phase this many times per server (each for --duration), interleaving the servers, and keep the median round")
	fs.Var(serverFlag{&c.servers}, "server", "label=URL[,pid=N][,startup=S]: a server under test (repeatable; replaces --target); the phases interleave the servers, round by round")
	fs.StringVar(&c.propServers, "propagation-servers", "", "comma-separated labels the propagation phase measures (default: every server)")
	fs.StringVar(&c.visibleAt, "visible-at", "", "propagation: comma-separated service URLs whose deltas must all show the instance registered at --target (default --target)")
	fs.StringVar(&c.jsonDir, "json-dir", "", "with several --server: write LABEL.json here")
	fs.Parse(args)
	if c.n < 1 || c.n > 1_000_000 || c.apps < 1 || c.conc < 1 || c.rounds < 1 {
		fmt.Fprintln(os.Stderr, "goreka-bench: --instances must be 1..1000000, --apps and --concurrency >= 1")
		return 2
	}
	if len(c.servers) == 0 {
		if c.label == "" {
			c.label = c.target
		}
		c.servers = []server{{label: c.label, url: c.target, pid: c.pid, startup: c.startup}}
	}
	for i := range c.servers {
		if !strings.HasSuffix(c.servers[i].url, "/") {
			c.servers[i].url += "/"
		}
	}
	if c.peer != "" && !strings.HasSuffix(c.peer, "/") {
		c.peer += "/"
	}
	if c.convergeN == 0 {
		c.convergeN = c.n
	}
	results, err := run(context.Background(), c)
	for _, res := range results {
		printResult(os.Stdout, res)
		out := c.jsonOut
		if len(c.servers) > 1 || c.jsonDir != "" {
			out = ""
			if c.jsonDir != "" {
				out = filepath.Join(c.jsonDir, res.Label+".json")
			}
		}
		if out != "" {
			b, _ := json.MarshalIndent(res, "", "  ")
			if werr := os.WriteFile(out, append(b, '\n'), 0o644); werr != nil {
				fmt.Fprintln(os.Stderr, "goreka-bench:", werr)
				return 1
			}
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "goreka-bench:", err)
		return 1
	}
	return 0
}

func run(ctx context.Context, c config) ([]*Result, error) {
	cl := newClient(c.conc + 64)
	phases := strings.Split(c.phases, ",")
	needFleet := false
	for _, p := range phases {
		switch p {
		case "renew", "heartbeat", "full", "delta", "burst", "mix", "propagation", "propagation-loaded", "":
			needFleet = needFleet || p != ""
		case "converge":
		default:
			return nil, fmt.Errorf("unknown phase %q", p)
		}
	}
	f := fleet.Fleet{Prefix: c.prefix, N: c.n, Apps: c.apps}
	var results []*Result
	var cfgs []config
	for _, srv := range c.servers {
		cs := c
		cs.target, cs.pid, cs.label = srv.url, srv.pid, srv.label
		res := &Result{Label: srv.label, Target: srv.url, Instances: c.n, Apps: c.apps, Concurrency: c.conc,
			Duration: c.dur.String(), Rounds: c.rounds, GOMAXPROCS: runtime.GOMAXPROCS(0), StartupSec: srv.startup, Phases: map[string]*PhaseResult{}}
		results, cfgs = append(results, res), append(cfgs, cs)
		if cs.pid > 0 || needFleet {
			if err := prepare(ctx, cl, cs, f, res); err != nil {
				return results, fmt.Errorf("%s: %w", srv.label, err)
			}
		}
	}
	runtime.GC() // the load tool's own garbage out of the way of the servers
	for i, cs := range cfgs {
		results[i].RSSLoaded = procRSS(cs.pid)
	}
	for _, p := range phases {
		switch p {
		case "":
		case "propagation", "propagation-loaded":
			for i, cs := range cfgs {
				if c.propServers != "" && !slices.Contains(strings.Split(c.propServers, ","), cs.label) {
					continue
				}
				for k := range c.propSamples {
					d, err := propagation(ctx, cl, cs, k)
					if err != nil {
						return results, fmt.Errorf("%s: %w", cs.label, err)
					}
					logf("%s: propagation sample %d: %.3fs", cs.label, k+1, d.Seconds())
					if p == "propagation-loaded" {
						results[i].PropagationLoaded = append(results[i].PropagationLoaded, d.Seconds())
					} else {
						results[i].Propagation = append(results[i].Propagation, d.Seconds())
					}
				}
			}
		case "converge":
			for i, cs := range cfgs {
				d, err := converge(ctx, cl, cs)
				if err != nil {
					return results, fmt.Errorf("%s: %w", cs.label, err)
				}
				results[i].ConvergeSec, results[i].ConvergeN = d.Seconds(), c.convergeN
			}
		default:
			// Round r runs the phase on every server in turn before round r+1, so
			// a burst of noise on a shared machine hits one round, not one server.
			rounds := make([][]*PhaseResult, len(cfgs))
			for r := range c.rounds {
				for i, cs := range cfgs {
					logf("%s: phase %s round %d/%d: %s at concurrency %d", cs.label, p, r+1, c.rounds, c.dur, c.conc)
					rounds[i] = append(rounds[i], measured(cs.pid, func() *PhaseResult { return phase(ctx, cl, cs, f, p, c.dur) }))
					time.Sleep(200 * time.Millisecond) // let the server's background work of one phase settle
				}
			}
			for i := range cfgs {
				results[i].Phases[p] = median(rounds[i], p)
			}
		}
	}
	for i, cs := range cfgs {
		results[i].RSSEnd = procRSS(cs.pid)
	}
	return results, nil
}

// median keeps the median round: by renew p99 for the mix, by throughput
// otherwise. Every round's figure stays in RoundValues.
func median(rs []*PhaseResult, phase string) *PhaseResult {
	key := func(p *PhaseResult) float64 {
		if phase == "mix" {
			if q := p.Parts["renew"]; q != nil {
				return q.P99ms
			}
		}
		return p.RPS
	}
	s := slices.Clone(rs)
	slices.SortFunc(s, func(a, b *PhaseResult) int { return cmp.Compare(key(a), key(b)) })
	m := s[len(s)/2]
	for _, p := range rs {
		m.RoundValues = append(m.RoundValues, key(p))
	}
	return m
}

// prepare registers the fleet on one server, waits until its full registry
// shows it all, and warms the server up.
func prepare(ctx context.Context, cl *client, c config, f fleet.Fleet, res *Result) error {
	if !c.skipLoad {
		logf("%s: registering %d instances in %d applications on %s", c.label, c.n, c.apps, c.target)
		res.Load = measured(c.pid, func() *PhaseResult {
			return closedLoop(ctx, c.conc, 10*time.Minute, int64(c.n), func(ctx context.Context, i int) error {
				return cl.register(ctx, c.target, f, i)
			})
		})
		if res.Load.Errors > 0 {
			return fmt.Errorf("registration: %d errors, first: %s", res.Load.Errors, res.Load.FirstError)
		}
	}
	t0 := time.Now()
	full, raw, err := settle(ctx, cl, c.target, c.prefix, c.n, c.settleTimeout)
	if err != nil {
		return err
	}
	res.SettleSec = time.Since(t0).Seconds()
	res.FullBytes, res.FullRaw = full, raw
	if _, d, _, err := cl.fetch(ctx, c.target+"apps/delta", false); err == nil {
		res.DeltaBytes = d
	}
	logf("%s: fleet visible in the full registry after %.1fs (full fetch %d bytes gzip, %d bytes JSON)", c.label, res.SettleSec, full, raw)
	if c.warmup > 0 {
		logf("%s: warm-up for %s", c.label, c.warmup)
		for _, p := range []string{"renew", "full", "delta"} {
			phase(ctx, cl, c, f, p, c.warmup/3)
		}
	}
	return nil
}

// measured runs f and adds the CPU used by the load tool and the server.
func measured(pid int, f func() *PhaseResult) *PhaseResult {
	m := startCPU(pid)
	r := f()
	r.ClientCPU, r.ServerCPU = m.stop()
	return r
}

func phase(ctx context.Context, cl *client, c config, f fleet.Fleet, name string, d time.Duration) *PhaseResult {
	switch name {
	case "renew":
		return closedLoop(ctx, c.conc, d, c.maxReq, func(ctx context.Context, i int) error {
			return cl.renew(ctx, c.target, f, i%f.N)
		})
	case "full", "delta":
		u := c.target + "apps/"
		if name == "delta" {
			u += "delta"
		}
		return closedLoop(ctx, c.conc, d, c.maxReq, func(ctx context.Context, i int) error {
			return cl.get(ctx, u)
		})
	case "burst":
		b := fleet.Fleet{Prefix: c.prefix + "burst", N: c.n, Apps: c.apps}
		r := closedLoop(ctx, c.conc, d, int64(c.n), func(ctx context.Context, i int) error {
			return cl.register(ctx, c.target, b, i)
		})
		// Cancel what was registered (not measured), so later phases see the fleet alone.
		closedLoop(ctx, c.conc, 5*time.Minute, r.Requests, func(ctx context.Context, i int) error {
			return cl.cancel(ctx, c.target, b, i)
		})
		return r
	case "heartbeat":
		return openLoop(ctx, max(c.conc, 64), d, c.maxReq, []stream{
			{name: "renew", rate: float64(f.N) / c.mixInterval.Seconds(), f: func(ctx context.Context, i int) error {
				return cl.renew(ctx, c.target, f, i%f.N)
			}},
		})
	case "mix":
		per := c.mixInterval.Seconds()
		return openLoop(ctx, max(c.conc, 64), d, c.maxReq, []stream{
			{name: "renew", rate: float64(f.N) / per, f: func(ctx context.Context, i int) error {
				return cl.renew(ctx, c.target, f, i%f.N)
			}},
			{name: "delta", rate: float64(f.N) / per, f: func(ctx context.Context, i int) error {
				return cl.get(ctx, c.target+"apps/delta")
			}},
			{name: "full", rate: float64(f.N) / c.mixFullEvery.Seconds(), f: func(ctx context.Context, i int) error {
				return cl.get(ctx, c.target+"apps/")
			}},
		})
	}
	panic("unknown phase " + name)
}

// settle polls the full registry until it lists n instances of the fleet,
// and returns the gzip and JSON sizes of that response.
func settle(ctx context.Context, cl *client, target, prefix string, n int, timeout time.Duration) (gz, raw int, err error) {
	needle := []byte(`"instanceId":"` + prefix + `-host-`)
	deadline := time.Now().Add(timeout)
	seen := 0
	for time.Now().Before(deadline) {
		body, size, _, err := cl.fetch(ctx, target+"apps/", true)
		if err == nil {
			if seen = bytes.Count(body, needle); seen >= n {
				if len(body) > 256<<20 {
					// 1M instances: a GiB of JSON; the count is the check.
					return size, len(body), nil
				}
				apps, err := compat.DecodeApplications(body, compat.JSON)
				if err != nil {
					return 0, 0, fmt.Errorf("decoding the full registry: %w", err)
				}
				total := 0
				for _, a := range apps.Apps {
					total += len(a.Instances)
				}
				if total < n {
					return 0, 0, fmt.Errorf("full registry decodes to %d instances, want >= %d", total, n)
				}
				return size, len(body), nil
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	return 0, 0, fmt.Errorf("after %s the full registry shows %d of %d instances", timeout, seen, n)
}

// propagation registers one new instance and polls /apps/delta every 20 ms
// until it appears; it returns the time from the register call to the first
// delta that lists it. The probe is cancelled afterwards.
func propagation(ctx context.Context, cl *client, c config, k int) (time.Duration, error) {
	p := fleet.Fleet{Prefix: fmt.Sprintf("%sprobe%d", c.prefix, time.Now().UnixNano()%1_000_000), N: k + 1, Apps: 1}
	needle := []byte(`"instanceId":"` + p.ID(k) + `"`)
	readers := []string{c.target}
	if c.visibleAt != "" {
		readers = nil
		for _, u := range strings.Split(c.visibleAt, ",") {
			readers = append(readers, strings.TrimSuffix(u, "/")+"/")
		}
	}
	// Each reader's delta before the registration, which cannot list the
	// probe: its ETag is not inspected after t0 (a 100k delta right after
	// loading is 110 MB to inflate, and inspecting it delayed the next poll).
	before := make([]string, len(readers))
	for i, u := range readers {
		if _, tag, _, err := cl.fetchTagged(ctx, u+"apps/delta"); err == nil {
			before[i] = tag
		}
	}
	t0 := time.Now()
	if err := cl.register(ctx, c.target, p, k); err != nil {
		return 0, fmt.Errorf("propagation probe: %w", err)
	}
	defer cl.cancel(ctx, c.target, p, k)
	// The sample is the time until every reader shows it.
	ds := make([]time.Duration, len(readers))
	errs := make([]error, len(readers))
	var wg sync.WaitGroup
	for i, u := range readers {
		wg.Go(func() { ds[i], errs[i] = visible(ctx, cl, c, u, needle, t0, before[i]) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return 0, err
	}
	if len(readers) > 1 {
		logf("propagation: visible at %s after %v", strings.Join(readers, " "), ds)
	}
	return slices.Max(ds), nil
}

// visible polls u's delta every 20 ms until it shows needle, and returns
// the time from t0 to the first response that does. A delta right after
// loading holds the whole fleet (110 MB of JSON at 100k instances, 50 MB of
// gzip at 1M): a response is inflated and searched only when its ETag is
// new (seen starts as the ETag before t0), and beside the polling (at most
// two at once), so that the time the probe spends searching one response
// does not delay the next poll; the sample is the earliest response that
// lists needle, by when its headers arrived.
func visible(ctx context.Context, cl *client, c config, u string, needle []byte, t0 time.Time, seen string) (time.Duration, error) {
	type result struct {
		at    time.Time
		found bool
		err   error
		took  time.Duration
	}
	results := make(chan result, 64)
	slots := make(chan struct{}, 2)
	pending, inspected := 0, 0
	var longest time.Duration
	var first time.Time // earliest response found to list needle
	var ferr error
	take := func(r result) {
		pending--
		inspected++
		longest = max(longest, r.took)
		if r.err != nil && ferr == nil {
			ferr = r.err
		}
		if r.found && (first.IsZero() || r.at.Before(first)) {
			first = r.at
		}
	}
	for time.Since(t0) < c.propTimeout && first.IsZero() && ferr == nil {
		gz, tag, at, err := cl.fetchTagged(ctx, u+"apps/delta")
		if err == nil && (tag == "" || tag != seen) {
			seen = tag
			select {
			case slots <- struct{}{}:
			case r := <-results: // both inspections busy: wait for one
				take(r)
				slots <- struct{}{}
			}
			pending++
			go func() {
				defer func() { <-slots }()
				start := time.Now()
				found, small, err := containsGzip(gz, needle)
				if err != nil {
					err = fmt.Errorf("inflating the delta of %s: %w", u, err)
				} else if found && small != nil { // validate what a client would decode, when it is not huge
					if _, derr := compat.DecodeApplications(small, compat.JSON); derr != nil {
						err = fmt.Errorf("decoding the delta of %s: %w", u, derr)
					}
				}
				results <- result{at: at, found: found, err: err, took: time.Since(start)}
			}()
		}
		for drained := false; !drained; {
			select {
			case r := <-results:
				take(r)
			default:
				drained = true
			}
		}
		if first.IsZero() && ferr == nil {
			time.Sleep(20 * time.Millisecond)
		}
		if time.Since(t0) >= c.propTimeout {
			for pending > 0 { // an inspection under way may still find it
				take(<-results)
			}
		}
	}
	for pending > 0 { // an earlier response may list it too
		take(<-results)
	}
	if ferr != nil {
		return 0, ferr
	}
	if first.IsZero() {
		return 0, fmt.Errorf("propagation: instance not in %sapps/delta after %s", u, c.propTimeout)
	}
	logf("propagation: %s listed the probe after %v; %d responses inspected, the longest in %v", u, first.Sub(t0).Round(time.Millisecond), inspected, longest.Round(time.Millisecond))
	return first.Sub(t0), nil
}

// fetchTagged GETs u as gzip JSON and returns the body as sent, the ETag and
// when the response headers arrived.
func (cl *client) fetchTagged(ctx context.Context, u string) ([]byte, string, time.Time, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, "", time.Time{}, err
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Accept-Encoding", "gzip")
	resp, err := cl.hc.Do(req)
	if err != nil {
		return nil, "", time.Time{}, err
	}
	at := time.Now()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, "", at, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, "", at, fmt.Errorf("GET %s: status %d", u, resp.StatusCode)
	}
	if resp.Header.Get("Content-Encoding") != "gzip" {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		zw.Write(b)
		zw.Close()
		b = buf.Bytes()
	}
	return b, resp.Header.Get("Etag"), at, nil
}

// containsGzip inflates gz as a stream and reports whether it contains
// needle; the inflated bytes are returned too when under 64 MiB.
func containsGzip(gz, needle []byte) (found bool, small []byte, err error) {
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return false, nil, err
	}
	const keep = 64 << 20
	var all []byte
	keepAll := true
	buf := make([]byte, 1<<20)
	tail := 0 // bytes of the previous chunk kept at buf's start, for needles across chunks
	for {
		n, rerr := io.ReadFull(zr, buf[tail:])
		chunk := buf[:tail+n]
		if keepAll {
			if len(all)+n <= keep {
				all = append(all, buf[tail:tail+n]...)
			} else {
				keepAll, all = false, nil
			}
		}
		found = found || bytes.Contains(chunk, needle)
		if rerr == io.EOF || rerr == io.ErrUnexpectedEOF {
			if !keepAll {
				all = nil
			}
			return found, all, nil
		}
		if rerr != nil {
			return false, nil, rerr
		}
		tail = min(len(needle)-1, len(chunk))
		copy(buf, chunk[len(chunk)-tail:])
	}
}

// converge registers c.convergeN instances on the target and polls the peer's
// full registry until all are listed; it returns the time from the first
// registration to the poll that saw them all.
func converge(ctx context.Context, cl *client, c config) (time.Duration, error) {
	if c.peer == "" {
		return 0, errors.New("converge needs --peer")
	}
	f := fleet.Fleet{Prefix: c.prefix + "conv", N: c.convergeN, Apps: c.apps}
	needle := []byte(`"instanceId":"` + f.Prefix + `-host-`)
	logf("converge: registering %d on %s, polling %s", f.N, c.target, c.peer)
	t0 := time.Now()
	r := closedLoop(ctx, c.conc, 5*time.Minute, int64(f.N), func(ctx context.Context, i int) error {
		return cl.register(ctx, c.target, f, i)
	})
	if r.Errors > 0 {
		return 0, fmt.Errorf("converge registration: %d errors, first: %s", r.Errors, r.FirstError)
	}
	logf("converge: registered in %.2fs", time.Since(t0).Seconds())
	seen := 0
	for time.Since(t0) < c.convTimeout {
		body, _, _, err := cl.fetch(ctx, c.peer+"apps/", true)
		if err == nil {
			if seen = bytes.Count(body, needle); seen >= f.N {
				return time.Since(t0), nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return 0, fmt.Errorf("converge: %d of %d visible on the peer after %s", seen, f.N, c.convTimeout)
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "goreka-bench: "+format+"\n", args...)
}

// client sends Eureka requests the way a Spring client does, over
// keep-alive connections.
type client struct{ hc *http.Client }

func newClient(conns int) *client {
	tr := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        conns,
		MaxIdleConnsPerHost: conns,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true, // we ask for gzip ourselves and do not pay to inflate load traffic
	}
	return &client{hc: &http.Client{Transport: tr, Timeout: 30 * time.Second}}
}

func (cl *client) do(ctx context.Context, method, u string, body []byte, want ...int) error {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := cl.hc.Do(req)
	if err != nil {
		return err
	}
	drain(resp)
	for _, w := range want {
		if resp.StatusCode == w {
			return nil
		}
	}
	return fmt.Errorf("%s %s: status %d", method, u, resp.StatusCode)
}

func (cl *client) register(ctx context.Context, target string, f fleet.Fleet, i int) error {
	return cl.do(ctx, http.MethodPost, target+"apps/"+f.App(i), f.RegisterBody(i), http.StatusNoContent, http.StatusOK)
}

func (cl *client) renew(ctx context.Context, target string, f fleet.Fleet, i int) error {
	return cl.do(ctx, http.MethodPut, target+f.RenewPath(i), nil, http.StatusOK)
}

func (cl *client) cancel(ctx context.Context, target string, f fleet.Fleet, i int) error {
	return cl.do(ctx, http.MethodDelete, target+"apps/"+f.App(i)+"/"+f.ID(i), nil, http.StatusOK)
}

// get is a registry fetch as Spring clients send it; the body is read, not
// inflated.
func (cl *client) get(ctx context.Context, u string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Accept-Encoding", "gzip")
	resp, err := cl.hc.Do(req)
	if err != nil {
		return err
	}
	drain(resp)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: status %d", u, resp.StatusCode)
	}
	return nil
}

// fetch GETs u as get does and returns the body (inflated when inflate is
// true and the server sent gzip) and the size on the wire.
func (cl *client) fetch(ctx context.Context, u string, inflate bool) (body []byte, wire int, gz bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, 0, false, err
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Accept-Encoding", "gzip")
	resp, err := cl.hc.Do(req)
	if err != nil {
		return nil, 0, false, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, 0, false, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, 0, false, fmt.Errorf("GET %s: status %d", u, resp.StatusCode)
	}
	gz = resp.Header.Get("Content-Encoding") == "gzip"
	if !gz || !inflate {
		return b, len(b), gz, nil
	}
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, 0, gz, err
	}
	raw, err := io.ReadAll(zr)
	return raw, len(b), gz, err
}

// waitCmd polls GET /apps until it answers 200 and prints the seconds since
// --since-ns (the runner's exec time, date +%s%N) or since its own start.
func waitCmd(args []string) int {
	fs := flag.NewFlagSet("goreka-bench wait", flag.ExitOnError)
	target := fs.String("target", "http://127.0.0.1:8761/eureka/", "service URL")
	since := fs.Int64("since-ns", 0, "Unix nanoseconds to measure from (default: now)")
	timeout := fs.Duration("timeout", 3*time.Minute, "give up after this")
	fs.Parse(args)
	t0 := time.Now()
	if *since > 0 {
		t0 = time.Unix(0, *since)
	}
	u := strings.TrimSuffix(*target, "/") + "/apps"
	cl := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(*timeout)
	for time.Now().Before(deadline) {
		req, _ := http.NewRequest(http.MethodGet, u, nil)
		// No Accept header (XML, as curl asks): a JSON probe would put the empty
		// registry into a Java server's 30 s readOnly cache before the fleet loads.
		if resp, err := cl.Do(req); err == nil {
			drain(resp)
			if resp.StatusCode == http.StatusOK {
				fmt.Printf("%.3f\n", time.Since(t0).Seconds())
				return 0
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	fmt.Fprintf(os.Stderr, "goreka-bench wait: %s not serving after %s\n", u, *timeout)
	return 1
}
