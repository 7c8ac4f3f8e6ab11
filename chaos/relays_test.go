//go:build chaos

package chaos

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/goreka/goreka/apiclient"
	"github.com/goreka/goreka/internal/proctest"
	"github.com/goreka/goreka/server/api/wire"
)

// Timings of the relay run (RELIABILITY.md "Relay faults"): a lease of
// three relay heartbeat intervals, as Eureka's defaults are (90 s and
// 30 s), so that one late round does not expire a lease. The
// clients renew every second, the relays send their heartbeats upstream
// every relayBeat and refresh their copy of the core every relayFetch.
const (
	relayBeat  = 6 * time.Second  // goreka.relay.heartbeat-interval
	relayFetch = time.Second      // goreka.relay.fetch-interval
	relayLease = 18 * time.Second // the clients' leaseInfo.durationInSecs
)

var relayTiming = timing{renew: time.Second, lease: relayLease, evict: time.Second, cache: time.Second, fetch: 2 * time.Second, thresholdUpdate: 5 * time.Second}

// ownApp is the application of the instances the checker registers and
// cancels itself (the fleets' clients never cancel).
const ownApp = "CHAOS-APP-OWN"

// ownClient is one instance the checker keeps alive like a client: it
// registers at the first server of its zone that answers, heartbeats every
// renew interval (registering again on a 404) and cancels when told.
type ownClient struct {
	id   string
	zone []string // Eureka service URLs, preferred first
	hc   *http.Client
	stop chan struct{}
	done chan struct{}
}

func (o *ownClient) key() string { return ownApp + "/" + o.id }

func (o *ownClient) do(method, path, body string) (int, error) {
	var last error
	for _, u := range o.zone {
		var rd io.Reader
		if body != "" {
			rd = strings.NewReader(body)
		}
		req, _ := http.NewRequest(method, u+path, rd)
		req.Header.Set("Accept", "application/json")
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := o.hc.Do(req)
		if err != nil {
			last = err
			continue
		}
		resp.Body.Close()
		if resp.StatusCode >= 500 {
			last = fmt.Errorf("%s %s: %d", method, u+path, resp.StatusCode)
			continue
		}
		return resp.StatusCode, nil
	}
	return 0, last
}

func (o *ownClient) register() error {
	body := fmt.Sprintf(`{"instance":{"instanceId":%q,"hostName":%q,"app":%q,"ipAddr":%q,"status":"UP",
"port":{"$":8080,"@enabled":"true"},"vipAddress":"chaos-app-own",
"leaseInfo":{"renewalIntervalInSecs":%d,"durationInSecs":%d},
"dataCenterInfo":{"@class":"com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo","name":"MyOwn"}}}`,
		o.id, hostAddr, ownApp, hostAddr, int(relayTiming.renew.Seconds()), int(relayLease.Seconds()))
	code, err := o.do(http.MethodPost, "apps/"+ownApp, body)
	if err == nil && code != http.StatusNoContent && code != http.StatusOK {
		err = fmt.Errorf("register %s: %d", o.id, code)
	}
	return err
}

// startOwn registers id in zone and keeps it alive.
func startOwn(id string, zone ...string) (*ownClient, error) {
	o := &ownClient{id: id, zone: zone, hc: &http.Client{Timeout: 2 * time.Second}, stop: make(chan struct{}), done: make(chan struct{})}
	if err := o.register(); err != nil {
		return nil, err
	}
	go func() {
		defer close(o.done)
		tick := time.NewTicker(relayTiming.renew)
		defer tick.Stop()
		for {
			select {
			case <-o.stop:
				return
			case <-tick.C:
				if code, err := o.do(http.MethodPut, "apps/"+ownApp+"/"+o.id+"?status=UP", ""); err == nil && code == http.StatusNotFound {
					_ = o.register()
				}
			}
		}
	}()
	return o, nil
}

// cancel stops the heartbeats and cancels the lease (DELETE), as a client
// shutting down does.
func (o *ownClient) cancel() error {
	o.halt()
	code, err := o.do(http.MethodDelete, "apps/"+ownApp+"/"+o.id, "")
	if err == nil && code != http.StatusOK {
		err = fmt.Errorf("cancel %s: %d", o.id, code)
	}
	return err
}

func (o *ownClient) halt() {
	select {
	case <-o.stop:
	default:
		close(o.stop)
	}
	<-o.done
}

// removals records every cancel and eviction a core node makes, from its
// watch (GET /goreka/api/v1/watch), by app/id.
type removals struct {
	mu    sync.Mutex
	byKey map[string][]string // app/id -> "evict at 12.3s" ...
	total int
}

func (rm *removals) snapshot() (map[string][]string, int) {
	rm.mu.Lock()
	defer rm.mu.Unlock()
	out := make(map[string][]string, len(rm.byKey))
	for k, v := range rm.byKey {
		out[k] = slices.Clone(v)
	}
	return out, rm.total
}

// watchRemovals follows nd's watch until ctx ends, resuming after a break.
func (r *run) watchRemovals(ctx context.Context, nd *node, rm *removals) {
	c, err := apiclient.New(nd.url())
	if err != nil {
		r.violate("watch %s: %v", nd.short, err)
		return
	}
	var since int64
	for ctx.Err() == nil {
		for ev, err := range c.Watch(ctx, since) {
			if err != nil {
				var se *apiclient.StreamError
				if errors.As(err, &se) {
					since = se.Revision
				}
				break
			}
			since = ev.ID
			ch := ev.Change
			if ch == nil || (ch.Kind != wire.KindCancel && ch.Kind != wire.KindEvict) {
				continue
			}
			k := strings.ToUpper(ch.App) + "/" + ch.ID
			rm.mu.Lock()
			rm.byKey[k] = append(rm.byKey[k], fmt.Sprintf("%s at %s", ch.Kind, r.since()))
			rm.total++
			rm.mu.Unlock()
		}
		select {
		case <-ctx.Done():
		case <-time.After(500 * time.Millisecond): // reconnect pace, not an assertion
		}
	}
}

// siteOf is the site of a fleet client or own instance key: "a", "b" or
// "c" (the core's own clients).
func siteOf(k string) string {
	_, id, _ := strings.Cut(k, "/")
	return id[:1]
}

// relayFleet is one fleet process: its short name (the first letter is its
// site), the namespace it runs in, and its zone of servers, preferred first.
type relayFleet struct {
	short, ns string
	zone      []string
}

// TestChaosRelays runs a goreka core pair, two sites of two relays each
// (the relays of a site are peers), fleets of clients at each site whose
// defaultZone lists both relays of their site, and core clients; each in
// its own network namespace. Fault 1: site A is partitioned from everything
// else for longer than a lease; its clients keep renewing, fetching and
// discovering each other and the last copy of the core, registrations and
// cancels at site A work, and the core expires site A's leases once each
// (self-preservation is off at the core: README "Relays and multi-level
// registries"); after the heal, the core and all four relays hold exactly
// the same instances within one relay heartbeat interval: nothing cancelled
// during the partition anywhere, everything registered during it
// everywhere. Fault 2: kill -9 of one relay of site B: its clients fail
// over to the other relay and the core removes none of site B's instances.
func TestChaosRelays(t *testing.T) {
	if err := checkTools(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	// Its own prefix and subnet: TestChaos's cleanup never removes this
	// run's namespaces, nor this one's TestChaos's.
	useNet("gkr-", "10.199.2")
	t.Cleanup(func() { useNet("gkc-", "10.199.0") })
	logDir := os.Getenv("CHAOS_OUT")
	if logDir == "" {
		logDir = filepath.Join(t.TempDir(), "chaos")
	}
	logDir = filepath.Join(logDir, "relays")
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin, err := proctest.Build(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	coreNames, relayNames := []string{"n1", "n2"}, []string{"a1", "a2", "b1", "b2"}
	nw, err := newNetwork([]string{"n1", "n2", "a1", "a2", "b1", "b2", "ca", "cb", "cc"})
	if err != nil {
		t.Fatal(err)
	}
	cleanupOnSignal(t)

	r := &run{t: t, start: time.Now(), net: nw, tm: relayTiming, check: &http.Client{Timeout: 3 * time.Second},
		stopped: map[string]time.Time{}, exempt: map[string]bool{}, stats: map[string]fleetStats{}}
	url := func(s string) string { return fmt.Sprintf("http://%s:%d/eureka/", nw.m(s).addr, nodePort) }
	byName := map[string]*node{}
	mk := func(s string, peers []string, extra ...string) *node {
		nd := &node{short: s, addr: nw.m(s).addr, ns: nw.m(s).name, bin: bin, logPath: filepath.Join(logDir, s+".log"),
			peers: peers, tm: relayTiming, extra: append([]string{"--eureka.server.enable-self-preservation=false",
				"--eureka.server.use-read-only-response-cache=false"}, extra...)}
		byName[s] = nd
		r.nodes = append(r.nodes, nd)
		return nd
	}
	for _, s := range coreNames {
		mk(s, []string{url("n1"), url("n2")})
	}
	for _, s := range relayNames {
		site := s[:1]
		up := url("n1") + "," + url("n2")
		if s[1] == '2' {
			up = url("n2") + "," + url("n1")
		}
		mk(s, []string{url(site + "1"), url(site + "2")}, "--goreka.relay.upstream="+up, "--goreka.relay.id="+s,
			fmt.Sprintf("--goreka.relay.heartbeat-interval=%s", relayBeat), fmt.Sprintf("--goreka.relay.fetch-interval=%s", relayFetch))
	}
	t.Cleanup(func() {
		for _, nd := range r.nodes {
			if nd.up() || nd.paused() {
				_ = nd.signal(syscall.SIGKILL)
			}
		}
	})
	// Start-up in waves, so that the relays started last sync from a peer
	// whose union already holds the core's clients: the cores, the core's
	// clients, the first relay of each site (with its copy of the core),
	// then the second relays, then the sites' clients.
	startNodes := func(names ...string) {
		for _, s := range names {
			if err := byName[s].start(); err != nil {
				t.Fatal(err)
			}
		}
		for _, s := range names {
			if err := byName[s].waitHealthy(r.check, 30*time.Second); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Five fleets of 20: at each site one prefers the first relay, one the
	// second; the core's clients prefer n1.
	const perFleet, apps = 20, 5
	fleets := []relayFleet{
		{"ax", "ca", []string{url("a1"), url("a2")}}, {"ay", "ca", []string{url("a2"), url("a1")}},
		{"bx", "cb", []string{url("b1"), url("b2")}}, {"by", "cb", []string{url("b2"), url("b1")}},
		{"cx", "cc", []string{url("n1"), url("n2")}},
	}
	env := []string{"CHAOS_RENEW=" + relayTiming.renew.String(), "CHAOS_LEASE=" + relayLease.String(), "CHAOS_FETCH=" + relayTiming.fetch.String()}
	zp := map[string]*zoneProc{}
	startFleets := func(shorts ...string) {
		for i, f := range fleets {
			if slices.Contains(shorts, f.short) {
				p, err := r.startZone(nw.m(f.ns), f.short, f.zone, perFleet, apps, uint64(i)+1, logDir, env)
				if err != nil {
					t.Fatal(err)
				}
				zp[f.short] = p
				r.zones = append(r.zones, p)
			}
		}
	}
	t.Cleanup(func() {
		for _, p := range r.zones {
			fmt.Fprintln(p.in, "quit")
			select {
			case <-p.done:
			case <-time.After(15 * time.Second):
				_ = p.cmd.Process.Kill()
			}
		}
	})
	var shorts []string
	for _, f := range fleets {
		shorts = append(shorts, f.short)
	}
	live := map[string]bool{} // what every server must hold once converged
	for _, k := range allClients(shorts, perFleet, apps) {
		live[k] = true
	}
	own := map[string]*ownClient{}
	addOwn := func(id string, zone ...string) {
		o, err := startOwn(id, zone...)
		if err != nil {
			r.violate("own client %s: %v", id, err)
			return
		}
		own[id] = o
		live[o.key()] = true
	}
	t.Cleanup(func() {
		for _, o := range own {
			o.halt()
		}
	})

	var report []string
	logf := func(format string, args ...any) {
		s := fmt.Sprintf("%7s  %s", r.since(), fmt.Sprintf(format, args...))
		report = append(report, s)
		t.Log(s)
	}

	// diff compares what a server serves with want: "" when equal. A read
	// that fails (a slow answer on a loaded machine) is tried twice more
	// before it counts: what is checked is what the servers hold.
	diff := func(nd *node, want map[string]bool) string {
		got, err := r.registry(nd)
		for try := 0; err != nil && try < 2; try++ {
			time.Sleep(200 * time.Millisecond) // the retry's pace, not an assertion
			got, err = r.registry(nd)
		}
		if err != nil {
			return nd.short + ": " + err.Error()
		}
		var missing, extra []string
		for k := range want {
			if !got[k] {
				missing = append(missing, k)
			}
		}
		for k := range got {
			if !want[k] {
				extra = append(extra, k)
			}
		}
		if len(missing)+len(extra) == 0 {
			return ""
		}
		sort.Strings(missing)
		sort.Strings(extra)
		return fmt.Sprintf("%s misses %d %v, holds %d more %v", nd.short, len(missing), head(missing), len(extra), head(extra))
	}
	// until polls cond every poll until it holds or the bound passes; it
	// returns how long it took, or the bound and the last difference.
	until := func(bound, poll time.Duration, cond func() string) (time.Duration, string) {
		start := time.Now()
		for {
			last := cond()
			if last == "" {
				return time.Since(start), ""
			}
			if time.Since(start) > bound {
				return time.Since(start), last
			}
			time.Sleep(poll)
		}
	}
	all := func(names []string, want func() map[string]bool) func() string {
		return func() string {
			w := want()
			for _, s := range names {
				if d := diff(byName[s], w); d != "" {
					return d
				}
			}
			return ""
		}
	}
	only := func(prefix string) func() map[string]bool {
		return func() map[string]bool {
			w := map[string]bool{}
			for k := range live {
				if _, id, _ := strings.Cut(k, "/"); strings.HasPrefix(id, prefix) {
					w[k] = true
				}
			}
			return w
		}
	}
	startNodes("n1", "n2")
	ctx, stopWatch := context.WithCancel(context.Background())
	var watchers sync.WaitGroup
	rms := map[string]*removals{}
	for _, s := range coreNames {
		rm := &removals{byKey: map[string][]string{}}
		rms[s] = rm
		watchers.Go(func() { r.watchRemovals(ctx, byName[s], rm) })
	}
	defer func() { stopWatch(); watchers.Wait() }()
	startFleets("cx")
	if d, last := until(30*time.Second, 500*time.Millisecond, all(coreNames, only("cx-"))); last != "" {
		t.Fatalf("start-up: the core's clients not on the core within %s: %s", d.Round(100*time.Millisecond), last)
	}
	startNodes("a1", "b1")
	if d, last := until(30*time.Second, 500*time.Millisecond, all([]string{"a1", "b1"}, only("cx-"))); last != "" {
		t.Fatalf("start-up: the core's clients not in the first relays' copies within %s: %s", d.Round(100*time.Millisecond), last)
	}
	startNodes("a2", "b2")
	startFleets("ax", "ay", "bx", "by")
	addOwn("a-cancelled", url("a1"), url("a2"))
	addOwn("b-cancelled", url("b1"), url("b2"))
	addOwn("c-cancelled", url("n1"), url("n2"))

	everyone := append(slices.Clone(coreNames), relayNames...)
	liveSet := func() map[string]bool { return maps.Clone(live) }
	if d, last := until(60*time.Second, 500*time.Millisecond, all(everyone, liveSet)); last != "" {
		t.Fatalf("start-up: not converged within %s: %s", d.Round(100*time.Millisecond), last)
	} else {
		logf("start-up: %d instances on the 2 core nodes and the 4 relays after %s", len(live), d.Round(100*time.Millisecond))
	}

	// fulls is each fleet's count of full fetches, for the report: a relay's
	// delta whose hash does not match makes its clients fetch everything.
	fulls := func() string {
		r.mu.Lock()
		defer r.mu.Unlock()
		var b []string
		for _, f := range fleets {
			b = append(b, fmt.Sprintf("%s %d", f.short, r.stats[f.short].Fulls))
		}
		return strings.Join(b, ", ")
	}

	// Fault 1: site A (its relays and its clients' namespace) cut off from
	// the core, site B and the core's clients, both ways.
	siteA := []string{"a1", "a2", "ca"}
	rest := []string{"n1", "n2", "b1", "b2", "cb", "cc"}
	beforeA := map[string]fleetStats{}
	r.mu.Lock()
	for _, s := range []string{"ax", "ay"} {
		beforeA[s] = r.stats[s]
	}
	r.mu.Unlock()
	lastCopy := maps.Clone(live) // what site A last saw of the others
	for _, s := range siteA {
		if err := nw.isolate(s, rest...); err != nil {
			t.Fatal(err)
		}
	}
	partAt := time.Now()
	logf("partition: {a1, a2, ca} | {n1, n2, b1, b2, cb, cc}")

	// Changes on both sides during the partition.
	if err := own["a-cancelled"].cancel(); err != nil {
		r.violate("partition: a cancel at site A: %v", err)
	}
	delete(live, own["a-cancelled"].key())
	addOwn("a-registered", url("a2"), url("a1"))
	for _, s := range []string{"b", "c"} {
		if err := own[s+"-cancelled"].cancel(); err != nil {
			r.violate("partition: a cancel at site %s: %v", s, err)
		}
		delete(live, own[s+"-cancelled"].key())
	}
	addOwn("b-registered", url("b2"), url("b1"))
	addOwn("c-registered", url("n2"), url("n1"))
	// Two of site A's clients stop without a cancel (their relay evicts
	// them) and two new ones start.
	zpA := zp["ax"]
	zpA.mu.Lock()
	fmt.Fprintln(zpA.in, "churn 2")
	select {
	case ch := <-zpA.churn:
		for _, k := range ch[0] {
			delete(live, k)
		}
		for _, k := range ch[1] {
			live[k] = true
		}
		logf("partition: at site A %d clients stopped without cancel, %d new ones started; %s cancelled, %s registered (and the same at site B and the core)",
			len(ch[0]), len(ch[1]), own["a-cancelled"].key(), own["a-registered"].key())
	case <-time.After(10 * time.Second):
		r.violate("partition: fleet ax did not answer a churn")
	}
	zpA.mu.Unlock()

	// During the partition site A serves its own clients and the last copy
	// of everything else; the others serve everything but site A, whose
	// leases expire at the core (self-preservation off there).
	isA := func(k string) bool { return siteOf(k) == "a" }
	atA := func() map[string]bool {
		w := map[string]bool{}
		for k := range live {
			if isA(k) {
				w[k] = true
			}
		}
		for k := range lastCopy {
			if !isA(k) {
				w[k] = true
			}
		}
		return w
	}
	elsewhere := func() map[string]bool {
		w := map[string]bool{}
		for k := range live {
			if !isA(k) {
				w[k] = true
			}
		}
		return w
	}
	partBound := 2*relayLease + relayTiming.evict + relayBeat + 10*time.Second
	d, last := until(partBound, 500*time.Millisecond, func() string {
		if d := all([]string{"a1", "a2"}, atA)(); d != "" {
			return "site A: " + d
		}
		return all([]string{"n1", "n2", "b1", "b2"}, elsewhere)()
	})
	if last != "" {
		r.violate("partition: not as documented after %s: %s", d.Round(100*time.Millisecond), last)
	} else {
		logf("partition: after %s site A serves its %d live instances and the last copy of the %d others; the core and site B hold the %d instances outside site A (site A's leases expired at the core)",
			d.Round(100*time.Millisecond), len(live)-len(elsewhere()), len(lastCopy)-countA(lastCopy), len(elsewhere()))
	}
	// Longer than a lease counted Eureka's way, whatever the poll took.
	if held := time.Since(partAt); held < 2*relayLease+2*time.Second {
		time.Sleep(2*relayLease + 2*time.Second - held) // the fault's duration, not an assertion
	}
	for _, s := range []string{"a1", "a2"} {
		st, ok := r.metric(byName[s], "goreka_relay_upstream_staleness_seconds")
		if !ok || st < relayLease.Seconds() {
			r.violate("partition: %s staleness %.1f s after %s of partition (answered %v)", s, st, time.Since(partAt).Round(time.Second), ok)
		} else {
			logf("partition: %s goreka_relay_upstream_staleness_seconds %.1f", s, st)
		}
	}
	r.mu.Lock()
	for _, s := range []string{"ax", "ay"} {
		b, a := beforeA[s], r.stats[s]
		logf("partition: fleet %s at site A: %d renews ok, %d renew ticks failed, %d deltas, %d full fetches, %d fetches failed, max consecutive full %d",
			s, a.RenewOK-b.RenewOK, a.RenewFailed-b.RenewFailed, a.Deltas-b.Deltas, a.Fulls-b.Fulls, a.FetchFailed-b.FetchFailed, a.MaxConsecFull)
		if a.RenewFailed != b.RenewFailed || a.FetchFailed != b.FetchFailed || a.Deltas <= b.Deltas {
			r.violate("partition: fleet %s at site A could not renew or fetch: %d renew ticks, %d fetches failed, %d deltas", s, a.RenewFailed-b.RenewFailed, a.FetchFailed-b.FetchFailed, a.Deltas-b.Deltas)
		}
	}
	r.mu.Unlock()
	partHeld := time.Since(partAt)
	logf("partition: full fetches so far (each client's first fetch is one): %s", fulls())
	// From here on no client starts, so none has a reason to fetch the
	// full registry: a relay's delta carries every change of its copy,
	// across its own full fetches after the heal (relay/recent.go).
	fullsBefore := map[string]int64{}
	r.mu.Lock()
	for _, f := range fleets {
		fullsBefore[f.short] = r.stats[f.short].Fulls
	}
	r.mu.Unlock()

	// Heal: every server holds exactly the live instances within one relay
	// heartbeat interval.
	// Convergence is counted from the start of the heal (its nft flushes
	// take a while: an upper bound).
	healAt := time.Now()
	if err := nw.heal(); err != nil {
		t.Fatal(err)
	}
	logf("heal after %s of partition (lease %s; removing the rules took %s)", partHeld.Round(100*time.Millisecond), relayLease, time.Since(healAt).Round(100*time.Millisecond))
	_, last = until(relayBeat+20*time.Second, 200*time.Millisecond, all(everyone, liveSet))
	d = time.Since(healAt)
	switch {
	case last != "":
		r.violate("heal: not converged within %s: %s", d.Round(100*time.Millisecond), last)
	case d > relayBeat:
		r.violate("heal: converged after %s, more than one relay heartbeat interval (%s)", d.Round(100*time.Millisecond), relayBeat)
	default:
		logf("heal: the 2 core nodes and the 4 relays hold exactly the %d live instances %s after the heal began (bound: one relay heartbeat interval, %s)", len(live), d.Round(100*time.Millisecond), relayBeat)
	}
	if d, last := until(2*relayFetch+5*time.Second, 500*time.Millisecond, func() string {
		for _, s := range []string{"a1", "a2"} {
			if st, ok := r.metric(byName[s], "goreka_relay_upstream_staleness_seconds"); !ok || st > 2*relayFetch.Seconds() {
				return fmt.Sprintf("%s staleness %.1f s", s, st)
			}
		}
		return ""
	}); last != "" {
		r.violate("heal: staleness still up after %s: %s", d.Round(100*time.Millisecond), last)
	}
	// At the core each of site A's instances was removed at most once
	// (its lease expired), none of the others but the ones cancelled.
	checkRemovals := func(when string, allowed func(k string, n int) bool) {
		for _, s := range coreNames {
			got, _ := rms[s].snapshot()
			for k, evs := range got {
				if !allowed(k, len(evs)) {
					r.violate("%s: core %s removed %s %d times: %s", when, s, k, len(evs), strings.Join(evs, ", "))
				}
			}
		}
	}
	deliberate := map[string]bool{}
	for _, s := range []string{"a", "b", "c"} {
		deliberate[own[s+"-cancelled"].key()] = true
	}
	checkRemovals("partition", func(k string, n int) bool { return n <= 1 && (isA(k) || deliberate[k]) })
	for _, s := range coreNames {
		_, n := rms[s].snapshot()
		logf("partition and heal: core %s removed %d instances (site A's leases expired once each, and the deliberate cancels)", s, n)
	}

	// Fault 2: kill -9 relay b1, which fleet bx prefers.
	evictions := map[string]float64{}
	removed := map[string]int{}
	for _, s := range coreNames {
		evictions[s], _ = r.metric(byName[s], "goreka_evictions_total")
		_, removed[s] = rms[s].snapshot()
	}
	r.mu.Lock()
	beforeB := r.stats["bx"]
	r.mu.Unlock()
	logf("heal: full fetches so far: %s", fulls())
	_ = byName["b1"].signal(syscall.SIGKILL)
	logf("kill -9 b1")
	// A lease nobody renews upstream is gone from the core after twice its
	// duration (Eureka's way) and an eviction run: watch longer than that.
	window := 2*relayLease + relayTiming.evict + relayBeat
	deadline := time.Now().Add(window)
	misses := 0
	for time.Now().Before(deadline) {
		if d := all([]string{"n1", "n2", "b2", "a1"}, liveSet)(); d != "" {
			misses++
			if misses == 1 {
				r.violate("kill -9 b1: after %s: %s", time.Since(deadline.Add(-window)).Round(100*time.Millisecond), d)
			}
		}
		time.Sleep(500 * time.Millisecond) // the poll's pace; the window is the bound
	}
	for _, s := range coreNames {
		ev, _ := r.metric(byName[s], "goreka_evictions_total")
		_, n := rms[s].snapshot()
		if ev != evictions[s] || n != removed[s] {
			r.violate("kill -9 b1: core %s evicted %.0f and removed %d instances in %s", s, ev-evictions[s], n-removed[s], window)
		}
	}
	r.mu.Lock()
	afterB := r.stats["bx"]
	r.mu.Unlock()
	logf("kill -9 b1: for %s every live instance stayed on n1, n2, b2 and a1 (%d polls missed); the core evicted nothing; fleet bx: %d failovers, %d renew ticks failed, %d fetches failed",
		window, misses, afterB.Failovers-beforeB.Failovers, afterB.RenewFailed-beforeB.RenewFailed, afterB.FetchFailed-beforeB.FetchFailed)
	if afterB.Failovers-beforeB.Failovers < perFleet || afterB.RenewFailed != beforeB.RenewFailed {
		r.violate("kill -9 b1: fleet bx failed over %d times (want at least %d), %d renew ticks failed", afterB.Failovers-beforeB.Failovers, perFleet, afterB.RenewFailed-beforeB.RenewFailed)
	}
	checkRemovals("whole run", func(k string, n int) bool { return n <= 1 && (isA(k) || deliberate[k]) })

	for _, f := range fleets {
		r.mu.Lock()
		n := r.stats[f.short].Fulls - fullsBefore[f.short]
		r.mu.Unlock()
		if n > 0 {
			r.violate("fleet %s fetched the full registry %d times after the partition's end (a hash its deltas did not reconcile)", f.short, n)
		}
	}
	r.mu.Lock()
	for _, f := range fleets {
		s := r.stats[f.short]
		logf("fleet %s: registers %d, re-registers after 404 %d, renews ok %d, renew ticks failed %d, failovers %d, deltas %d, full fetches %d, max consecutive full %d (bound %d)",
			f.short, s.Registers, s.Reregisters, s.RenewOK, s.RenewFailed, s.Failovers, s.Deltas, s.Fulls, s.MaxConsecFull, maxConsecFull)
	}
	violations := slices.Clone(r.violations)
	r.mu.Unlock()
	for _, s := range []string{"a1", "a2", "b2"} {
		m, _ := r.metrics(byName[s], "goreka_relay_reregistrations_total", "goreka_relay_heartbeats_aggregated_total", "goreka_relay_upstream_failures_total")
		logf("relay %s: heartbeats aggregated %.0f, re-registrations %.0f, upstream failures %.0f", s, m["goreka_relay_heartbeats_aggregated_total"], m["goreka_relay_reregistrations_total"], m["goreka_relay_upstream_failures_total"])
	}
	logf("violations: %d", len(violations))
	for _, v := range violations {
		logf("  %s  %s", v.at, v.what)
	}
	_ = os.WriteFile(filepath.Join(logDir, "report.txt"), []byte(strings.Join(report, "\n")+"\n"), 0o644)
	if len(violations) > 0 {
		t.Fatalf("%d violations (logs in %s)", len(violations), logDir)
	}
}

func countA(set map[string]bool) int {
	n := 0
	for k := range set {
		if siteOf(k) == "a" {
			n++
		}
	}
	return n
}

// head is at most the first five of s.
func head(s []string) []string { return s[:min(len(s), 5)] }
