//go:build chaos

package chaos

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Soak timings: Eureka's defaults (renew 30 s, lease 90 s, eviction every
// 60 s, response cache 30 s, threshold update 15 min), so that 30 000
// instances cost what they cost in production.
var soakTiming = timing{
	renew: 30 * time.Second, lease: 90 * time.Second, evict: 60 * time.Second,
	cache: 30 * time.Second, fetch: 30 * time.Second, thresholdUpdate: 15 * time.Minute,
}

// sample is one reading of one node's process.
type sample struct {
	at         time.Duration
	rss, heap  float64 // bytes
	goroutines float64
	fds        float64
}

// TestChaosSoak is `make chaos-soak` (not in CI): 3 nodes, CHAOS_SOAK_INSTANCES
// (default 30 000) simulated clients with Eureka's timings, replication
// between the nodes, and light chaos every CHAOS_SOAK_FAULT_EVERY (default
// 5 min: one of partition, one-way drop, loss with a slow link, pause, link
// down, each 20-30 s, then 1 % of each zone's clients replaced), for
// CHAOS_SOAK (e.g. 1h). No kill -9: each node's memory series stays one
// process. Every 30 s each node's RSS and open file descriptors (/proc) and
// goroutines and live heap (/actuator/prometheus) are written to
// soak.csv; after the warm-up (the first quarter) they must stay flat:
// the last sample within 25 % + 32 MiB (RSS), 25 % + 16 MiB (heap) and
// 50 % + 50 (goroutines, fds) of the first sample after the warm-up.
func TestChaosSoak(t *testing.T) {
	total, err := time.ParseDuration(os.Getenv("CHAOS_SOAK"))
	if err != nil || total <= 0 {
		t.Skip("set CHAOS_SOAK (e.g. CHAOS_SOAK=1h make chaos-soak)")
	}
	instances := envInt("CHAOS_SOAK_INSTANCES", 30000)
	fetchers := envInt("CHAOS_SOAK_FETCHERS", 20)
	faultEvery := 5 * time.Minute
	if v := os.Getenv("CHAOS_SOAK_FAULT_EVERY"); v != "" {
		if faultEvery, err = time.ParseDuration(v); err != nil {
			t.Fatalf("CHAOS_SOAK_FAULT_EVERY=%q: %v", v, err)
		}
	}
	perZone, apps := instances/3, 300
	seed := uint64(envInt("CHAOS_SEED", 1))
	useNet("gks-", "10.199.1") // apart from TestChaos's network
	tm := soakTiming
	r, logDir := newRun(t, setup{seed: seed, tm: tm, perZone: perZone, apps: apps, fleetEnv: []string{
		"CHAOS_RENEW=" + tm.renew.String(), "CHAOS_LEASE=" + tm.lease.String(), "CHAOS_FETCH=" + tm.fetch.String(),
		"CHAOS_FETCHERS=" + strconv.Itoa(fetchers),
	}})
	r.bound, r.poll = 3*time.Minute, 5*time.Second
	zoneNames := []string{"c1", "c2", "c3"}
	live := allClients(zoneNames, perZone, apps)

	stopMon, monDone := make(chan struct{}), make(chan struct{})
	go r.monitor(stopMon, monDone)
	csv, err := os.Create(filepath.Join(logDir, "soak.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer csv.Close()
	fmt.Fprintln(csv, "seconds,node,rss_bytes,heap_bytes,goroutines,fds")
	samples := map[string][]sample{}
	stopSample, sampleDone := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(sampleDone)
		tick := time.NewTicker(30 * time.Second)
		defer tick.Stop()
		for {
			for _, nd := range r.nodes {
				if s, ok := r.sample(nd); ok {
					r.mu.Lock()
					samples[nd.short] = append(samples[nd.short], s)
					r.mu.Unlock()
					fmt.Fprintf(csv, "%.0f,%s,%.0f,%.0f,%.0f,%.0f\n", s.at.Seconds(), nd.short, s.rss, s.heap, s.goroutines, s.fds)
				}
			}
			select {
			case <-stopSample:
				return
			case <-tick.C:
			}
		}
	}()

	r.converge("start-up", live)
	end := r.start.Add(total)
	faults := r.soakFaults()
	for k := 0; time.Until(end) > faultEvery/2; k++ {
		time.Sleep(min(faultEvery, time.Until(end)))
		if time.Until(end) < min(2*time.Minute, faultEvery) {
			break
		}
		f := faults[k%len(faults)]
		f.run(r)
		r.healAll()
		for _, zp := range r.zones {
			stopped, started := r.churn(zp, perZone/100)
			live = slices.DeleteFunc(live, func(id string) bool { return slices.Contains(stopped, id) })
			live = append(live, started...)
		}
		r.converge(fmt.Sprintf("soak fault %d %s", k+1, f.name), live)
	}
	time.Sleep(time.Until(end))
	r.converge("end", live)
	close(stopSample)
	<-sampleDone
	close(stopMon)
	<-monDone

	// Replaced clients stopped more than their bound ago must be gone unless
	// self-preservation holds them.
	r.mu.Lock()
	stopped := make(map[string]time.Time, len(r.stopped))
	for k, v := range r.stopped {
		stopped[k] = v
	}
	r.mu.Unlock()
	sp := r.selfPreservation()
	lingering := 0
	for _, nd := range r.nodes {
		reg, err := r.registry(nd)
		if err != nil {
			r.violate("%s registry at the end: %v", nd.short, err)
			continue
		}
		for id, at := range stopped {
			if reg[id] && time.Since(at) > tm.goneBound() {
				lingering++
			}
		}
	}
	if lingering > 0 && !sp {
		r.violate("%d replaced clients still listed past %s with self-preservation off", lingering, tm.goneBound())
	}

	var b strings.Builder
	fmt.Fprintf(&b, "soak: %s run (asked %s), 3 nodes, %d instances (%d per zone, %d apps, %d fetching clients per zone), fault every %s\n",
		r.since(), total, 3*perZone, perZone, apps, fetchers, faultEvery)
	fmt.Fprintf(&b, "faults:\n  %s\n", strings.Join(r.faults, "\n  "))
	fmt.Fprintf(&b, "convergence (bound %s):\n  %s\n", r.bound, strings.Join(r.convergence, "\n  "))
	fmt.Fprintf(&b, "replaced clients past %s still listed at the end: %d (self-preservation %v)\n", tm.goneBound(), lingering, sp)
	fmt.Fprintf(&b, "health: slowest answer %s (bound %s); replication queue max %v; RSS max %.0f MiB\n",
		r.healthMax.Round(time.Millisecond), healthBound, r.queueMax, r.rssMax/(1<<20))
	for _, z := range zoneNames {
		s := r.stats[z]
		fmt.Fprintf(&b, "zone %s: registers %d, re-registers %d, renews ok %d, renew ticks failed %d, failovers %d, deltas %d, full fetches %d, max consecutive full %d\n",
			z, s.Registers, s.Reregisters, s.RenewOK, s.RenewFailed, s.Failovers, s.Deltas, s.Fulls, s.MaxConsecFull)
	}
	warm := total / 4
	fmt.Fprintf(&b, "per node, first sample after the warm-up (%s) -> last, and least-squares slope after the warm-up:\n", warm)
	for _, nd := range r.nodes {
		ss := samples[nd.short]
		i := slices.IndexFunc(ss, func(s sample) bool { return s.at >= warm })
		if i < 0 || len(ss)-i < 2 {
			r.violate("%s: too few samples after the warm-up", nd.short)
			continue
		}
		first, last, after := ss[i], ss[len(ss)-1], ss[i:]
		fmt.Fprintf(&b, "  %s (%d samples, %d starts): RSS %.1f -> %.1f MiB (%+.1f MiB/h), heap %.1f -> %.1f MiB (%+.1f MiB/h), goroutines %.0f -> %.0f (%+.1f/h), fds %.0f -> %.0f (%+.1f/h); RSS start of run %.1f MiB\n",
			nd.short, len(ss), nd.starts,
			first.rss/(1<<20), last.rss/(1<<20), slope(after, func(s sample) float64 { return s.rss })/(1<<20),
			first.heap/(1<<20), last.heap/(1<<20), slope(after, func(s sample) float64 { return s.heap })/(1<<20),
			first.goroutines, last.goroutines, slope(after, func(s sample) float64 { return s.goroutines }),
			first.fds, last.fds, slope(after, func(s sample) float64 { return s.fds }), ss[0].rss/(1<<20))
		for _, c := range []struct {
			what        string
			from, to    float64
			rel, absMax float64
		}{
			{"RSS", first.rss, last.rss, 1.25, 32 << 20},
			{"heap", first.heap, last.heap, 1.25, 16 << 20},
			{"goroutines", first.goroutines, last.goroutines, 1.5, 50},
			{"fds", first.fds, last.fds, 1.5, 50},
		} {
			if c.to > c.from*c.rel+c.absMax {
				r.violate("%s %s grew from %.0f to %.0f after the warm-up (bound ×%.2f + %.0f)", nd.short, c.what, c.from, c.to, c.rel, c.absMax)
			}
		}
	}
	fmt.Fprintf(&b, "violations: %d\n", len(r.violations))
	for _, v := range r.violations {
		fmt.Fprintf(&b, "  %s  %s\n", v.at, v.what)
	}
	t.Log("\n" + b.String())
	_ = os.WriteFile(filepath.Join(logDir, "soak-report.txt"), []byte(b.String()), 0o644)
	if len(r.violations) > 0 {
		t.Fatalf("%d violations (logs and soak.csv in %s)", len(r.violations), logDir)
	}
}

// slope is the least-squares slope of f over the samples, per hour.
func slope(ss []sample, f func(sample) float64) float64 {
	var n, sx, sy, sxx, sxy float64
	for _, s := range ss {
		x, y := s.at.Hours(), f(s)
		n, sx, sy, sxx, sxy = n+1, sx+x, sy+y, sxx+x*x, sxy+x*y
	}
	d := n*sxx - sx*sx
	if d == 0 {
		return math.NaN()
	}
	return (n*sxy - sx*sy) / d
}

// sample reads a node's RSS and open descriptors from /proc (the test runs
// as root in the same PID namespace) and its goroutines and live heap from
// its metrics. A paused or stopped node is skipped.
func (r *run) sample(nd *node) (sample, bool) {
	nd.mu.Lock()
	p := nd.p
	nd.mu.Unlock()
	if p == nil || p.Paused() {
		return sample{}, false
	}
	pid := p.Pid()
	s := sample{at: time.Since(r.start)}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return sample{}, false
	}
	for line := range strings.SplitSeq(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			s.rss = kb * 1024
		}
	}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return sample{}, false
	}
	s.fds = float64(len(fds))
	var ok1, ok2 bool
	s.goroutines, ok1 = r.metric(nd, "go_goroutines")
	s.heap, ok2 = r.metric(nd, "go_memstats_heap_alloc_bytes")
	return s, ok1 && ok2
}

// churn replaces k clients of a zone: they stop without cancel and k new
// ones register.
func (r *run) churn(zp *zoneProc, k int) (stopped, started []string) {
	zp.mu.Lock()
	defer zp.mu.Unlock()
	fmt.Fprintf(zp.in, "churn %d\n", k)
	select {
	case ch := <-zp.churn:
		now := time.Now()
		r.mu.Lock()
		for _, id := range ch[0] {
			r.stopped[id] = now
		}
		r.mu.Unlock()
		r.fault("zone %s: %d clients replaced (stopped without cancel, new ids registered)", zp.short, len(ch[0]))
		return ch[0], ch[1]
	case <-time.After(10 * time.Second):
		r.violate("zone %s: fleet did not answer a churn", zp.short)
		return nil, nil
	}
}

// soakFaults is the light chaos of the soak, in a seeded order; each lasts
// 20-30 s, well under a lease (90 s), and healAll heals it.
func (r *run) soakFaults() []step {
	nodes := []string{"n1", "n2", "n3"}
	steps := []step{
		{"minority partition", func(r *run) {
			i := r.rng.IntN(3)
			var others []string
			for j, n := range nodes {
				if j != i {
					others = append(others, n, zoneOf(n))
				}
			}
			if err := r.net.isolate(nodes[i], others...); err != nil {
				r.violate("%v", err)
			}
			r.fault("partition {%s,%s} | rest for 30s", nodes[i], zoneOf(nodes[i]))
			hold(30 * time.Second)
		}},
		{"one-way drop", func(r *run) {
			a := r.pick(nodes...)
			b := r.pick(slices.DeleteFunc(slices.Clone(nodes), func(s string) bool { return s == a })...)
			if err := r.net.dropOneWay(a, b); err != nil {
				r.violate("%v", err)
			}
			r.fault("drop %s -> %s (one way) for 30s", a, b)
			hold(30 * time.Second)
		}},
		{"loss and slow link", func(r *run) {
			a := r.pick(nodes...)
			b := r.pick(slices.DeleteFunc(slices.Clone(nodes), func(s string) bool { return s == a })...)
			if err := r.net.loss(a, 10); err != nil {
				r.violate("%v", err)
			}
			how, err := r.net.delay(b, 200*time.Millisecond)
			if err != nil {
				r.violate("%v", err)
			}
			r.fault("10%% loss on %s, %s on %s, for 30s", a, how, b)
			hold(30 * time.Second)
		}},
		{"pause", func(r *run) {
			s := r.pick(nodes...)
			r.setExempt(s, true)
			_ = r.node(s).signal(syscall.SIGSTOP)
			r.fault("SIGSTOP %s for 20s", s)
			hold(20 * time.Second)
			_ = r.node(s).signal(syscall.SIGCONT)
			_ = r.node(s).waitHealthy(r.check, 30*time.Second)
			r.setExempt(s, false)
		}},
		{"link down", func(r *run) {
			s := r.pick(nodes...)
			r.setExempt(s, true)
			if err := r.net.link(s, false); err != nil {
				r.violate("%v", err)
			}
			r.fault("link down %s for 20s", s)
			hold(20 * time.Second)
		}},
	}
	r.rng.Shuffle(len(steps), func(i, j int) { steps[i], steps[j] = steps[j], steps[i] })
	return steps
}

func zoneOf(nodeShort string) string { return "c" + strings.TrimPrefix(nodeShort, "n") }
