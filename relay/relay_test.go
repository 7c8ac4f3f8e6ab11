package relay

import (
	"bytes"
	"context"
	"fmt"
	"github.com/goreka/goreka/discovery"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/goreka/goreka/cache"
	"github.com/goreka/goreka/compat"
	"github.com/goreka/goreka/document"
	"github.com/goreka/goreka/region"
	"github.com/goreka/goreka/registry"
	"github.com/goreka/goreka/registry/clocktest"
	"github.com/goreka/goreka/replication"
	"github.com/goreka/goreka/replication/peertest"
	"github.com/goreka/goreka/server"
)

// upstream is a goreka server over a registry of its own, behind a switch
// that can make it unreachable (every connection closed unanswered).
type upstream struct {
	reg      *registry.Registry
	srv      *httptest.Server
	down     atomic.Bool
	noDelta  atomic.Bool // GET apps/delta answers 403, as with eureka.server.disable-delta
	busy     atomic.Bool // every request answers 503
	mu       sync.Mutex
	requests map[string]int // "METHOD path" -> count
	renews   atomic.Int64   // client renewals applied (OnRenew, not from a peer)
	refused  atomic.Int64   // requests closed unanswered while down
}

func newUpstream(t testing.TB, clock *clocktest.Clock) *upstream {
	return newUpstreamWith(t, clock, nil)
}

// newUpstreamWith is newUpstream with a listener of the upstream's changes.
func newUpstreamWith(t testing.TB, clock *clocktest.Clock, onEvent func(registry.Event)) *upstream {
	u := &upstream{requests: map[string]int{}}
	var s *server.Server
	u.reg = registry.New(registry.Options{Now: clock.Now,
		OnRenew: func(rn registry.Renewal) {
			if !rn.FromPeer {
				u.renews.Add(1)
			}
		},
		OnEvent: func(e registry.Event) {
			s.Cache().Invalidate(e.App, e.Instance().VIPAddress, e.Instance().SecureVIPAddress)
			if onEvent != nil {
				onEvent(e)
			}
		}})
	cc := cache.DefaultConfig()
	cc.UseReadOnly = false // no cache loop runs here: every read from the readWrite tier
	s = server.New(server.Config{}, server.Deps{Registry: u.reg, Now: clock.Now, Cache: &cc})
	u.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u.down.Load() {
			u.refused.Add(1)
			if c, _, err := w.(http.Hijacker).Hijack(); err == nil {
				c.Close()
			}
			return
		}
		u.mu.Lock()
		u.requests[r.Method+" "+r.URL.Path]++
		u.mu.Unlock()
		if u.busy.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		if u.noDelta.Load() && strings.HasSuffix(r.URL.Path, "/apps/delta") {
			w.WriteHeader(http.StatusForbidden)
			return
		}
		s.ServeHTTP(w, r)
	}))
	t.Cleanup(u.srv.Close)
	return u
}

func (u *upstream) url() string { return u.srv.URL + "/eureka/" }

func (u *upstream) count(method, path string) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.requests[method+" "+path]
}

// site is a relay over its own registry.
type site struct {
	reg   *registry.Registry
	relay *Relay
}

func newSite(t testing.TB, clock *clocktest.Clock, mod func(*Config), upstreams ...string) *site {
	t.Helper()
	s := &site{}
	s.reg = registry.New(registry.Options{Now: clock.Now,
		OnEvent: func(e registry.Event) { s.relay.OnEvent(e) },
		OnRenew: func(rn registry.Renewal) { s.relay.OnRenew(rn) }})
	cfg := Config{Upstream: upstreams, ID: "relay-" + t.Name(), Now: clock.Now, HeartbeatInterval: 30 * time.Second,
		Pace: func(context.Context, time.Duration) bool { return true }}
	if mod != nil {
		mod(&cfg)
	}
	r, err := New(cfg, s.reg)
	if err != nil {
		t.Fatal(err)
	}
	s.relay = r
	return s
}

func inst(app, id string) *registry.Instance {
	return &registry.Instance{InstanceID: id, HostName: id + ".local", App: app, IPAddr: "10.0.0.1", Status: registry.StatusUp,
		VIPAddress: strings.ToLower(app), DataCenterInfo: registry.DataCenterInfo{Name: registry.DataCenterMyOwn}}
}

// unionServer serves the site's documents (the union with its upstream
// copy) from the readWrite tier; get reads one, dropping the cache first.
func (s *site) unionServer(t *testing.T, clock *clocktest.Clock) (*server.Server, func(path string) *registry.Applications) {
	cc := cache.DefaultConfig()
	cc.UseReadOnly = false
	srv := server.New(server.Config{}, server.Deps{Registry: s.reg, Now: clock.Now, Cache: &cc,
		Docs: document.New(document.Config{Registry: s.reg, Upstream: s.relay})})
	s.relay.cfg.OnCopyChange = func(region.Change) {}
	return srv, func(path string) *registry.Applications {
		t.Helper()
		srv.Cache().Invalidate("", "", "")
		req := httptest.NewRequest("GET", path, nil)
		req.Header.Set("Accept", "application/json")
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, req)
		if w.Code != 200 {
			t.Fatalf("GET %s = %d", path, w.Code)
		}
		doc, err := compat.DecodeApplications(w.Body.Bytes(), compat.JSON)
		if err != nil {
			t.Fatal(err)
		}
		return doc
	}
}

func mustSync(t *testing.T, s *site) int {
	t.Helper()
	n, err := s.relay.SyncOnce(t.Context())
	if err != nil {
		t.Fatalf("SyncOnce: %v", err)
	}
	return n
}

func TestForwardsEveryLocalChangeAsTheClient(t *testing.T) {
	clock := clocktest.New(time.Unix(1_700_000_000, 0))
	var upEvents []registry.Event
	up := newUpstreamWith(t, clock, func(e registry.Event) { upEvents = append(upEvents, e) })
	s := newSite(t, clock, nil, up.url())

	if _, err := s.reg.Register(inst("ORDERS", "o1"), false); err != nil {
		t.Fatal(err)
	}
	if n := mustSync(t, s); n != 1 {
		t.Fatalf("sent %d, want 1", n)
	}
	v, ok := up.reg.Get("ORDERS", "o1")
	if !ok || v.Instance.HostName != "o1.local" || v.Instance.Status != registry.StatusUp {
		t.Fatalf("upstream copy = %+v, %v", v.Instance, ok)
	}
	if err := s.reg.StatusUpdate("ORDERS", "o1", registry.StatusOutOfService, time.Time{}, false); err != nil {
		t.Fatal(err)
	}
	if _, err := s.reg.UpdateMetadata("ORDERS", "o1", map[string]string{"zone": "a"}); err != nil {
		t.Fatal(err)
	}
	mustSync(t, s)
	v, _ = up.reg.Get("ORDERS", "o1")
	if v.Instance.Status != registry.StatusOutOfService || v.Instance.Metadata["zone"] != "a" {
		t.Fatalf("upstream after status and metadata = %s %v", v.Instance.Status, v.Instance.Metadata)
	}
	if up.reg.StatusOverrides()["o1"] != registry.StatusOutOfService {
		t.Fatalf("upstream overrides = %v, want the relay's override", up.reg.StatusOverrides())
	}
	if err := s.reg.Cancel("ORDERS", "o1", false); err != nil {
		t.Fatal(err)
	}
	mustSync(t, s)
	if _, ok := up.reg.Get("ORDERS", "o1"); ok {
		t.Fatal("cancelled at the relay, still upstream")
	}
	for _, e := range upEvents {
		if e.FromPeer {
			t.Fatalf("upstream took %s as a peer's change: it would not replicate it", e.Kind)
		}
	}
	// Changes from the relay's own peers are forwarded by the relay that
	// took them from the client.
	if _, err := s.reg.Register(inst("ORDERS", "o2"), true); err != nil {
		t.Fatal(err)
	}
	if n := mustSync(t, s); n != 0 {
		t.Fatalf("forwarded %d peer changes", n)
	}
}

func TestAggregatedHeartbeatsToAGorekaUpstream(t *testing.T) {
	clock := clocktest.New(time.Unix(1_700_000_000, 0))
	up := newUpstream(t, clock)
	s := newSite(t, clock, nil, up.url())
	const n = 200
	for i := range n {
		s.reg.Register(inst("APP", fmt.Sprint("i", i)), false)
	}
	mustSync(t, s)
	clock.Advance(10 * time.Second)
	for i := range n {
		if err := s.reg.Renew(registry.RenewRequest{App: "APP", ID: fmt.Sprint("i", i)}); err != nil {
			t.Fatal(err)
		}
	}
	if got := s.relay.HeartbeatOnce(t.Context()); got != n {
		t.Fatalf("upstream took %d heartbeats, want %d", got, n)
	}
	if c := up.count("POST", "/eureka/goreka/renewals"); c != 2 { // the probe and one request
		t.Fatalf("%d requests to the renewals endpoint, want 2 (probe + one batch)", c)
	}
	if c := up.count("PUT", "/eureka/apps/APP/i0"); c != 0 {
		t.Fatalf("%d per-instance heartbeats to a goreka upstream", c)
	}
	if up.renews.Load() != n {
		t.Fatalf("upstream counted %d client renewals, want %d", up.renews.Load(), n)
	}
	v, _ := up.reg.Get("APP", "i7")
	if !v.LastHeartbeat.Equal(clock.Now()) {
		t.Fatalf("upstream lease renewed at %v, want %v", v.LastHeartbeat, clock.Now())
	}
	if v := gauge(t, s.relay, "goreka_relay_heartbeats_aggregated_total"); v != n {
		t.Fatalf("goreka_relay_heartbeats_aggregated_total = %v, want %d", v, n)
	}
	// An instance the upstream lost is registered again.
	up.reg.Cancel("APP", "i3", false)
	s.reg.Renew(registry.RenewRequest{App: "APP", ID: "i3"})
	if got := s.relay.HeartbeatOnce(t.Context()); got != 0 {
		t.Fatalf("took %d, want 0 (404)", got)
	}
	mustSync(t, s)
	if _, ok := up.reg.Get("APP", "i3"); !ok {
		t.Fatal("lost instance not registered again after its 404")
	}
}

func TestPacedHeartbeatsToAStockUpstream(t *testing.T) {
	clock := clocktest.New(time.Unix(1_700_000_000, 0))
	peer := peertest.New(t)
	var gaps []time.Duration
	s := newSite(t, clock, func(c *Config) {
		c.Pace = func(_ context.Context, d time.Duration) bool { gaps = append(gaps, d); return true }
	}, peer.ServiceURL())
	for i := range 5 {
		s.reg.Register(inst("APP", fmt.Sprint("i", i)), false)
	}
	mustSync(t, s)
	for i := range 5 {
		s.reg.Renew(registry.RenewRequest{App: "APP", ID: fmt.Sprint("i", i)})
	}
	if got := s.relay.HeartbeatOnce(t.Context()); got != 5 {
		t.Fatalf("stock upstream took %d heartbeats, want 5", got)
	}
	if len(gaps) != 4 || gaps[0] != 5*time.Second {
		t.Fatalf("paced with %v, want 4 gaps of 30s/6", gaps)
	}
	if s.relay.Status().Goreka {
		t.Fatal("a stock upstream taken for a goreka")
	}
	puts := 0
	for _, rq := range peer.Requests() {
		if rq.Method == http.MethodPut {
			puts++
		}
	}
	if puts != 5 {
		t.Fatalf("%d PUTs, want 5", puts)
	}
}

func TestOverflowResyncsInsteadOfDropping(t *testing.T) {
	clock := clocktest.New(time.Unix(1_700_000_000, 0))
	up := newUpstream(t, clock)
	s := newSite(t, clock, func(c *Config) { c.MaxQueue = 2 }, up.url())
	s.reg.Register(inst("APP", "old"), false)
	mustSync(t, s)
	for i := range 6 {
		s.reg.Register(inst("APP", fmt.Sprint("i", i)), false)
	}
	s.reg.Cancel("APP", "old", false) // past the bound: only the resync knows it
	mustSync(t, s)
	if up.reg.Size() != 6 {
		t.Fatalf("upstream has %d instances, want 6", up.reg.Size())
	}
	if _, ok := up.reg.Get("APP", "old"); ok {
		t.Fatal("the cancel lost in the overflow was not resynchronised")
	}
	if s.relay.m.resyncs.Load() != 1 {
		t.Fatalf("resyncs = %d", s.relay.m.resyncs.Load())
	}
}

func TestUpstreamGoneThenHealedConverges(t *testing.T) {
	clock := clocktest.New(time.Unix(1_700_000_000, 0))
	up := newUpstream(t, clock)
	s := newSite(t, clock, func(c *Config) { c.FetchInterval = 30 * time.Second }, up.url())
	up.reg.Register(inst("CORE", "c1"), false)
	s.reg.Register(inst("APP", "stays"), false)
	s.reg.Register(inst("APP", "goes"), false)
	s.reg.Register(inst("APP", "lost"), false)
	mustSync(t, s)
	if err := s.relay.FetchOnce(t.Context()); err != nil {
		t.Fatal(err)
	}

	up.down.Store(true)
	clock.Advance(90 * time.Second)
	s.reg.Cancel("APP", "goes", false)
	s.reg.Register(inst("APP", "new"), false)
	if _, err := s.relay.SyncOnce(t.Context()); err == nil {
		t.Fatal("SyncOnce succeeded against a gone upstream")
	}
	if err := s.relay.FetchOnce(t.Context()); err == nil {
		t.Fatal("FetchOnce succeeded against a gone upstream")
	}
	st := s.relay.Status()
	if !st.Stale || st.Staleness != 90*time.Second {
		t.Fatalf("status while gone = %+v, want stale for 90s", st)
	}
	if v := gauge(t, s.relay, "goreka_relay_upstream_staleness_seconds"); v != 90 {
		t.Fatalf("staleness metric = %v, want 90", v)
	}
	if rows := s.relay.DashboardRows(); !strings.HasPrefix(rows[2][1], "STALE: last fetched 1m30s ago") {
		t.Fatalf("dashboard rows while gone: %q", rows)
	}
	// Local clients and the last copy are still served.
	full := s.relay.Full(s.reg.Applications())
	if ids := idsOf(full); ids != "APP/lost APP/new APP/stays CORE/c1" {
		t.Fatalf("served while gone: %s", ids)
	}
	up.reg.Cancel("APP", "lost", false) // the upstream evicted it meanwhile

	up.down.Store(false)
	// One heartbeat interval: the heartbeats and the retried queue.
	clock.Advance(30 * time.Second)
	for _, id := range []string{"stays", "lost", "new"} {
		s.reg.Renew(registry.RenewRequest{App: "APP", ID: id})
	}
	mustSync(t, s)
	s.relay.HeartbeatOnce(t.Context())
	mustSync(t, s)
	want := "APP/lost APP/new APP/stays CORE/c1"
	if ids := idsOf(up.reg.Applications()); ids != want {
		t.Fatalf("upstream after heal: %s, want %s (no ghost, no loss)", ids, want)
	}
	if err := s.relay.FetchOnce(t.Context()); err != nil {
		t.Fatal(err)
	}
	if st := s.relay.Status(); st.Stale || st.Staleness != 0 {
		t.Fatalf("status after heal = %+v", st)
	}
	if rows := s.relay.DashboardRows(); !strings.HasPrefix(rows[2][1], "fresh") {
		t.Fatalf("dashboard rows after heal: %q", rows)
	}
}

// TestHeartbeatsKeptWhileTheUpstreamIsGone: a round no upstream answers
// sends nothing one by one (the probe failed: no per-instance storm) and
// keeps its heartbeats, so that the first round after the heal, before any
// client heartbeats again, renews what the upstream kept and re-registers
// what it lost.
func TestHeartbeatsKeptWhileTheUpstreamIsGone(t *testing.T) {
	clock := clocktest.New(time.Unix(1_700_000_000, 0))
	up := newUpstream(t, clock)
	s := newSite(t, clock, nil, up.url())
	for _, id := range []string{"kept", "lost"} {
		s.reg.Register(inst("APP", id), false)
	}
	mustSync(t, s)
	for _, id := range []string{"kept", "lost"} {
		s.reg.Renew(registry.RenewRequest{App: "APP", ID: id})
	}
	up.down.Store(true)
	if got := s.relay.HeartbeatOnce(t.Context()); got != 0 {
		t.Fatalf("a gone upstream took %d heartbeats", got)
	}
	if n := up.refused.Load(); n != 1 {
		t.Fatalf("%d requests to a gone upstream in one round, want 1 (the probe; no heartbeat one by one)", n)
	}
	up.reg.Cancel("APP", "lost", false) // evicted there meanwhile
	up.down.Store(false)
	if got := s.relay.HeartbeatOnce(t.Context()); got != 1 {
		t.Fatalf("the round after the heal took %d heartbeats, want 1 (the kept one; the lost one answered 404)", got)
	}
	mustSync(t, s)
	if ids := idsOf(up.reg.Applications()); ids != "APP/kept APP/lost" {
		t.Fatalf("upstream after the heal: %s, want APP/kept APP/lost", ids)
	}
}

// TestPeerSyncGetsOnlyLocalInstances: a relay's peer (the other relay of
// its site) syncs at start-up from GET apps. It must get the local
// registry, not the union: the relay's copy of the upstream would become
// the peer's leases, which nobody renews there, and their eviction would be
// forwarded upstream as cancels of the upstream's own instances. Clients
// still get the union.
func TestPeerSyncGetsOnlyLocalInstances(t *testing.T) {
	clock := clocktest.New(time.Unix(1_700_000_000, 0))
	up := newUpstream(t, clock)
	s := newSite(t, clock, nil, up.url())
	up.reg.Register(inst("CORE", "c1"), false)
	s.reg.Register(inst("APP", "l1"), false)
	if err := s.relay.FetchOnce(t.Context()); err != nil {
		t.Fatal(err)
	}
	cc := cache.DefaultConfig()
	cc.UseReadOnly = false
	srv := server.New(server.Config{}, server.Deps{Registry: s.reg, Now: clock.Now, Cache: &cc,
		Docs: document.New(document.Config{Registry: s.reg, Upstream: s.relay})})
	h := s.relay.Handler(srv)
	get := func(peerSync bool) string {
		t.Helper()
		req := httptest.NewRequest(http.MethodGet, "/eureka/apps/", nil)
		req.Header.Set("Accept", "application/json")
		if peerSync {
			req.Header.Set(replication.SyncHeader, replication.SyncStream) // what a goreka peer's start-up sync sends
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		apps, err := compat.DecodeApplications(bytes.TrimSpace(w.Body.Bytes()), compat.JSON)
		if err != nil || w.Code != http.StatusOK {
			t.Fatalf("GET apps/ (peer sync %v): %d %v %s", peerSync, w.Code, err, w.Body)
		}
		return idsOf(apps)
	}
	if ids := get(true); ids != "APP/l1" {
		t.Fatalf("a peer's sync got %q, want the local APP/l1 only", ids)
	}
	if ids := get(false); ids != "APP/l1 CORE/c1" {
		t.Fatalf("a client's fetch got %q, want the union", ids)
	}
}

// gauge is the value of the relay's series name (without labels).
func gauge(t *testing.T, r *Relay, name string) float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(r.Collector())
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			m := mf.GetMetric()[0]
			if m.GetGauge() != nil {
				return m.GetGauge().GetValue()
			}
			return m.GetCounter().GetValue()
		}
	}
	t.Fatalf("no series %s", name)
	return 0
}

func idsOf(apps *registry.Applications) string {
	var out []string
	for _, a := range apps.Apps {
		for _, v := range a.Instances {
			out = append(out, a.Name+"/"+v.Instance.ID())
		}
	}
	return strings.Join(out, " ")
}

func TestSelfAsUpstreamIsRefused(t *testing.T) {
	reg := registry.New(registry.Options{})
	_, err := New(Config{Upstream: []string{"http://other:8761/eureka/", "http://LOCALHOST:8761/eureka/"}, ID: "r",
		Self: discovery.Self{Port: 8761, Names: []string{"relay1.example"}}}, reg)
	if err == nil || !strings.Contains(err.Error(), "goreka.relay.upstream") || !strings.Contains(err.Error(), "itself") {
		t.Fatalf("err = %v", err)
	}
	if _, err := New(Config{Upstream: []string{"http://localhost:8762/eureka/"}, ID: "r", Self: discovery.Self{Port: 8761}}, reg); err != nil {
		t.Fatalf("another port refused: %v", err)
	}
}

// servedSite is a site whose relay and server answer HTTP, its upstream
// given by URL later (two relays upstream of each other).
type servedSite struct {
	*site
	srv *httptest.Server
	h   atomic.Value // http.Handler
}

func TestUpstreamLoopIsRefusedWithoutAStorm(t *testing.T) {
	clock := clocktest.New(time.Unix(1_700_000_000, 0))
	var a, b servedSite
	for _, x := range []*servedSite{&a, &b} {
		x.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			x.h.Load().(http.Handler).ServeHTTP(w, r)
		}))
		t.Cleanup(x.srv.Close)
	}
	mk := func(x *servedSite, id, upURL string) {
		x.site = newSite(t, clock, func(c *Config) { c.ID = id }, upURL)
		x.h.Store(x.relay.Handler(server.New(server.Config{}, server.Deps{Registry: x.reg, Now: clock.Now})))
	}
	mk(&a, "A", b.srv.URL+"/eureka/")
	mk(&b, "B", a.srv.URL+"/eureka/")

	a.reg.Register(inst("APP", "x"), false)
	mustSync(t, a.site) // A -> B (chain A)
	if _, ok := b.reg.Get("APP", "x"); !ok {
		t.Fatal("B did not take A's registration")
	}
	mustSync(t, b.site) // B -> A (chain A,B): refused by A
	if a.relay.m.loops.Load() != 1 || b.relay.m.loops.Load() != 1 {
		t.Fatalf("loops: A %d, B %d; want 1 each", a.relay.m.loops.Load(), b.relay.m.loops.Load())
	}
	// No storm: B forwards x no more, heartbeats included.
	for range 3 {
		b.reg.Renew(registry.RenewRequest{App: "APP", ID: "x"})
		b.relay.HeartbeatOnce(t.Context())
		if n := mustSync(t, b.site); n != 0 {
			t.Fatalf("B forwarded %d after the loop", n)
		}
	}
	if a.relay.m.loops.Load() != 1 {
		t.Fatalf("A refused %d requests, want 1", a.relay.m.loops.Load())
	}
	// A request naming this relay in its chain is refused.
	req := httptest.NewRequest("GET", "/eureka/apps", nil)
	req.Header.Set(ChainHeader, "Z,A")
	w := httptest.NewRecorder()
	a.h.Load().(http.Handler).ServeHTTP(w, req)
	if w.Code != http.StatusLoopDetected {
		t.Fatalf("chain holding A answered %d", w.Code)
	}
}

func TestReadReplicaProxiesWrites(t *testing.T) {
	clock := clocktest.New(time.Unix(1_700_000_000, 0))
	up := newUpstream(t, clock)
	s := newSite(t, clock, func(c *Config) { c.ReadOnly = true }, up.url())
	h := s.relay.Handler(server.New(server.Config{}, server.Deps{Registry: s.reg, Now: clock.Now}))
	v := registry.LeaseView{Instance: inst("APP", "r1")}
	do := func(method, path string, body []byte) int {
		var req *http.Request
		if body != nil {
			req = httptest.NewRequest(method, path, strings.NewReader(string(body)))
			req.Header.Set("Content-Type", "application/json")
		} else {
			req = httptest.NewRequest(method, path, nil)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w.Code
	}
	if c := do("POST", "/eureka/apps/APP", compat.AppendInstance(nil, compat.JSON, &v)); c != http.StatusNoContent {
		t.Fatalf("register through a read replica = %d", c)
	}
	if _, ok := up.reg.Get("APP", "r1"); !ok || s.reg.Size() != 0 {
		t.Fatalf("upstream has it: %v; replica holds %d leases (want 0)", ok, s.reg.Size())
	}
	if c := do("PUT", "/eureka/apps/APP/nope?status=UP", nil); c != http.StatusNotFound {
		t.Fatalf("renew of an unknown instance = %d, want the upstream's 404", c)
	}
	if c := do("DELETE", "/eureka/apps/APP/r1", nil); c != http.StatusOK {
		t.Fatalf("cancel = %d", c)
	}
	if up.reg.Size() != 0 {
		t.Fatal("cancel not proxied")
	}
}

// javaClient is what the Java client's DiscoveryClient does with deltas
// (updateDelta + getReconcileHashCode): ADDED and MODIFIED upsert, DELETED
// removes; the hash must then equal the delta's apps__hashcode.
type javaClient map[string]registry.Status

func (jc javaClient) apply(doc *registry.Applications, full bool) {
	if full {
		clear(jc)
	}
	for _, a := range doc.Apps {
		for _, v := range a.Instances {
			k := a.Name + "/" + v.Instance.ID()
			if !full && v.Instance.ActionType == registry.ActionDeleted {
				delete(jc, k)
				continue
			}
			jc[k] = v.Instance.Status
		}
	}
}

func (jc javaClient) hash() string {
	counts := map[registry.Status]int{}
	for _, s := range jc {
		counts[s]++
	}
	return registry.HashCode(counts)
}

func TestUnionReadsKeepDeltaClientsConsistent(t *testing.T) {
	clock := clocktest.New(time.Unix(1_700_000_000, 0))
	up := newUpstream(t, clock)
	s := newSite(t, clock, nil, up.url())
	srv, get := s.unionServer(t, clock)
	sync := func() {
		t.Helper()
		mustSync(t, s)
		if err := s.relay.FetchOnce(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	up.reg.Register(inst("CORE", "c1"), false)
	up.reg.Register(inst("APP", "core-app"), false)
	s.reg.Register(inst("APP", "local"), false)
	sync() // the copy now holds the relay's own echo of APP/local
	jc := javaClient{}
	full := get("/eureka/apps/")
	jc.apply(full, true)
	if ids := idsOf(full); ids != "APP/core-app APP/local CORE/c1" {
		t.Fatalf("union = %s (echo must not double)", ids)
	}
	if full.HashCode != jc.hash() {
		t.Fatalf("full hash %s, content %s", full.HashCode, jc.hash())
	}
	steps := []func(){
		func() { up.reg.Register(inst("CORE", "c2"), false) },
		func() { s.reg.StatusUpdate("APP", "local", registry.StatusOutOfService, time.Time{}, false) },
		func() { up.reg.Cancel("CORE", "c1", false) },
		func() { s.reg.Cancel("APP", "local", false) },       // the echo stays in the copy until the next fetch
		func() { s.reg.Register(inst("CORE", "c2"), false) }, // a local copy of an upstream instance wins
		func() { up.reg.StatusUpdate("APP", "core-app", registry.StatusDown, time.Time{}, false) },
	}
	for i, step := range steps {
		step()
		for _, fetch := range []bool{false, true} { // before and after the relay's own sync
			if fetch {
				sync()
			}
			d := get("/eureka/apps/delta")
			jc.apply(d, false)
			if jc.hash() != d.HashCode {
				t.Fatalf("step %d (synced %v): client hash %s, delta's %s: the client would fetch the full registry", i, fetch, jc.hash(), d.HashCode)
			}
			if f := get("/eureka/apps/"); f.HashCode != d.HashCode {
				t.Fatalf("step %d: delta hash %s, full %s", i, d.HashCode, f.HashCode)
			}
		}
	}
	if ids := idsOf(get("/eureka/apps/")); ids != "APP/core-app CORE/c2" {
		t.Fatalf("union at the end = %s", ids)
	}
	for path, want := range map[string]int{"/eureka/apps/CORE/c2": 200, "/eureka/instances/core-app": 200, "/eureka/apps/CORE/c1": 404} {
		req := httptest.NewRequest("GET", path, nil)
		req.Header.Set("Accept", "application/json")
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, req)
		if w.Code != want {
			t.Fatalf("GET %s = %d, want %d", path, w.Code, want)
		}
	}
	vip := get("/eureka/vips/core")
	if ids := idsOf(vip); ids != "CORE/c2" {
		t.Fatalf("VIP core = %s", ids)
	}
}

// A client that fetches its delta less often than the relay refreshes its
// copy, across a full fetch of the copy (the upstream refused the delta,
// as after a partition, a hash mismatch or an endpoint switch), still finds
// every change in the relay's delta and its hash right: before, the delta
// was the copy's last one, after a full fetch the whole registry without
// the removals, and every such client fetched everything.
func TestDeltasCarryTheCopysChangesAcrossFullFetches(t *testing.T) {
	clock := clocktest.New(time.Unix(1_700_000_000, 0))
	up := newUpstream(t, clock)
	s := newSite(t, clock, nil, up.url())
	_, get := s.unionServer(t, clock)
	fetch := func() {
		t.Helper()
		if err := s.relay.FetchOnce(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"c1", "c2", "c3"} {
		up.reg.Register(inst("CORE", id), false)
	}
	s.reg.Register(inst("APP", "local"), false)
	fetch()
	jc := javaClient{}
	jc.apply(get("/eureka/apps/"), true)

	up.reg.Cancel("CORE", "c1", false)
	fetch() // a delta: the copy drops c1
	up.reg.Register(inst("CORE", "c4"), false)
	up.reg.StatusUpdate("CORE", "c2", registry.StatusOutOfService, time.Time{}, false)
	up.noDelta.Store(true)
	fetch() // a full fetch: the copy gains c4, c2 changes
	up.reg.Cancel("CORE", "c3", false)
	fetch() // again a full fetch: the copy drops c3
	up.noDelta.Store(false)
	clock.Advance(time.Minute)

	d := get("/eureka/apps/delta")
	jc.apply(d, false)
	if jc.hash() != d.HashCode {
		t.Fatalf("client hash %s after the delta, the delta's %s (delta: %s): the client would fetch the full registry",
			jc.hash(), d.HashCode, idsOf(d))
	}
	want := map[string]registry.Status{"APP/local": registry.StatusUp, "CORE/c2": registry.StatusOutOfService,
		"CORE/c4": registry.StatusUp}
	if !maps.Equal(map[string]registry.Status(jc), want) {
		t.Fatalf("client holds %v, want %v", jc, want)
	}
	// Past Eureka's delta retention the copy's changes leave the delta (the
	// local registry's own queue is pruned by the eviction loop, not run here).
	clock.Advance(deltaRetention)
	if ids := idsOf(get("/eureka/apps/delta")); ids != "APP/local" {
		t.Fatalf("delta after the retention = %s, want only the local APP/local", ids)
	}
}

func TestFetchAppsKeepsOnlyThoseAtTheEdge(t *testing.T) {
	clock := clocktest.New(time.Unix(1_700_000_000, 0))
	up := newUpstream(t, clock)
	s := newSite(t, clock, func(c *Config) { c.FetchApps = []string{"billing", " Users"} }, up.url())
	for _, app := range []string{"BILLING", "USERS", "SECRET"} {
		up.reg.Register(inst(app, strings.ToLower(app)+"-1"), false)
	}
	s.reg.Register(inst("LOCAL", "l1"), false)
	if err := s.relay.FetchOnce(t.Context()); err != nil {
		t.Fatal(err)
	}
	full := s.relay.Full(s.reg.Applications())
	if ids := idsOf(full); ids != "BILLING/billing-1 LOCAL/l1 USERS/users-1" {
		t.Fatalf("served %s", ids)
	}
	if full.HashCode != "UP_3_" {
		t.Fatalf("hash %s, want UP_3_ (what is served)", full.HashCode)
	}
	if d := s.relay.Delta(s.reg.Delta()); d.HashCode != full.HashCode {
		t.Fatalf("delta hash %s, full %s", d.HashCode, full.HashCode)
	}
	if _, ok := s.relay.Application("SECRET", registry.Application{}, false); ok {
		t.Fatal("an application outside fetch-apps served")
	}
	if a, ok := s.relay.Application("BILLING", registry.Application{}, false); !ok || len(a.Instances) != 1 {
		t.Fatalf("BILLING = %+v %v", a, ok)
	}
}

// The upstream URLs are tried in order, as a client's defaultZone: the
// first that answers is used for writes, heartbeats and the copy.
func TestFailsOverToTheNextUpstream(t *testing.T) {
	clock := clocktest.New(time.Unix(1_700_000_000, 0))
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	up := newUpstream(t, clock)
	s := newSite(t, clock, nil, dead.URL+"/eureka/", up.url())
	s.reg.Register(inst("APP", "a1"), false)
	mustSync(t, s)
	if _, ok := up.reg.Get("APP", "a1"); !ok {
		t.Fatal("not registered at the second upstream")
	}
	if got := s.relay.Upstream(); got != up.url() {
		t.Fatalf("upstream in use %s, want %s", got, up.url())
	}
	s.reg.Renew(registry.RenewRequest{App: "APP", ID: "a1"})
	if n := s.relay.HeartbeatOnce(t.Context()); n != 1 {
		t.Fatalf("heartbeats taken %d", n)
	}
	if err := s.relay.FetchOnce(t.Context()); err != nil {
		t.Fatal(err)
	}
	if st := s.relay.Status(); !st.Goreka || st.Instances != 1 {
		t.Fatalf("status %+v", st)
	}
}

// A read replica proxies only writes its server's users made: the
// upstream call carries the relay's own credentials, so an anonymous write
// must be refused here (401), before it is sent.
func TestReadReplicaRefusesUnauthenticatedWrites(t *testing.T) {
	clock := clocktest.New(time.Unix(1_700_000_000, 0))
	up := newUpstream(t, clock)
	s := newSite(t, clock, func(c *Config) {
		c.ReadOnly = true
		c.Authenticate = func(r *http.Request) bool { u, p, ok := r.BasicAuth(); return ok && u == "eureka" && p == "s3cret" }
	}, up.url())
	h := s.relay.Handler(server.New(server.Config{}, server.Deps{Registry: s.reg, Now: clock.Now}))
	v := registry.LeaseView{Instance: inst("APP", "r1")}
	do := func(user string) int {
		req := httptest.NewRequest("POST", "/eureka/apps/APP", strings.NewReader(string(compat.AppendInstance(nil, compat.JSON, &v))))
		req.Header.Set("Content-Type", "application/json")
		if user != "" {
			req.SetBasicAuth(user, "s3cret")
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w.Code
	}
	if c := do(""); c != http.StatusUnauthorized {
		t.Fatalf("anonymous register through a read replica = %d, want 401", c)
	}
	if _, ok := up.reg.Get("APP", "r1"); ok {
		t.Fatal("the anonymous registration reached the upstream")
	}
	if c := do("eureka"); c != http.StatusNoContent {
		t.Fatalf("authenticated register = %d", c)
	}
	if _, ok := up.reg.Get("APP", "r1"); !ok {
		t.Fatal("the authenticated registration did not reach the upstream")
	}
}

// A read replica answers the aggregated-heartbeat endpoint 404, so that a
// relay below it sends per-instance heartbeats (which it proxies) instead
// of aggregates it would apply to its empty registry.
func TestReadReplicaRefusesAggregatedHeartbeats(t *testing.T) {
	clock := clocktest.New(time.Unix(1_700_000_000, 0))
	up := newUpstream(t, clock)
	s := newSite(t, clock, func(c *Config) { c.ReadOnly = true }, up.url())
	h := s.relay.Handler(server.New(server.Config{}, server.Deps{Registry: s.reg, Now: clock.Now}))
	req := httptest.NewRequest("POST", "/eureka/"+compat.RenewalsPath, strings.NewReader(string(compat.AppendReplicationList(nil, nil))))
	req.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	if w.Code != http.StatusNotFound {
		t.Fatalf("POST %s on a read replica = %d, want 404", compat.RenewalsPath, w.Code)
	}
}

// An upstream that answers the aggregated heartbeats with server errors
// (overloaded, in a rollout) is retried with a back-off doubling up to the
// interval, where one that does not answer at all (a partition) is tried
// every second: before, every relay asked an overloaded core every second.
func TestRetriesBackOffOnServerErrors(t *testing.T) {
	clock := clocktest.New(time.Unix(1_700_000_000, 0))
	up := newUpstream(t, clock)
	s := newSite(t, clock, nil, up.url())
	s.reg.Register(inst("APP", "a"), false)
	mustSync(t, s)
	round := func() (answered, refused bool) {
		t.Helper()
		s.reg.Renew(registry.RenewRequest{App: "APP", ID: "a"})
		_, answered = s.relay.heartbeatRound(t.Context())
		return answered, s.relay.hb.refused.Load()
	}
	if answered, refused := round(); !answered || refused {
		t.Fatalf("a healthy round: answered %v, refused %v", answered, refused)
	}
	up.busy.Store(true)
	answered, refused := round()
	if answered || !refused {
		t.Fatalf("a 503 round: answered %v, refused %v; want not answered, refused", answered, refused)
	}
	var waits []time.Duration
	backoff := time.Second
	for range 7 {
		var w time.Duration
		w, backoff = retryAfter(time.Second, backoff, 30*time.Second, refused)
		waits = append(waits, w)
	}
	want := []time.Duration{1, 2, 4, 8, 16, 30, 30}
	for i := range want {
		want[i] *= time.Second
	}
	if !slices.Equal(waits, want) {
		t.Fatalf("retries after server errors wait %v, want %v", waits, want)
	}
	up.busy.Store(false)
	up.down.Store(true) // gone: no answer at all
	answered, refused = round()
	if answered || refused {
		t.Fatalf("a round to a gone upstream: answered %v, refused %v; want neither", answered, refused)
	}
	if w, _ := retryAfter(time.Second, 16*time.Second, 30*time.Second, refused); w != time.Second {
		t.Fatalf("retry after a partition waits %v, want 1s", w)
	}
}

// After the relay switches between two nodes of one core group, their equal
// instances are not changes (each node has its own lastUpdatedTimestamp for
// an instance it got by replication), and a change between the copies is.
func TestEndpointSwitchCarriesOnlyWhatDiffers(t *testing.T) {
	clock := clocktest.New(time.Unix(1_700_000_000, 0))
	n1, n2 := newUpstream(t, clock), newUpstream(t, clock)
	for _, id := range []string{"c1", "c2", "c3"} {
		n1.reg.Register(inst("CORE", id), false)
	}
	clock.Advance(time.Second) // n2 got them by replication, a second later
	for _, id := range []string{"c1", "c2"} {
		v, _ := n1.reg.Get("CORE", id)
		n2.reg.Register(v.Instance.Clone(), true)
	}
	s := newSite(t, clock, nil, n1.url(), n2.url())
	_, get := s.unionServer(t, clock)
	if err := s.relay.FetchOnce(t.Context()); err != nil {
		t.Fatal(err)
	}
	if ids := idsOf(get("/eureka/apps/delta")); ids != "" {
		t.Fatalf("delta after the first copy = %s, want empty", ids)
	}
	n1.down.Store(true)
	if err := s.relay.FetchOnce(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := s.relay.Upstream(); got != n2.url() {
		t.Fatalf("upstream in use %s, want %s", got, n2.url())
	}
	d := get("/eureka/apps/delta")
	if ids := idsOf(d); ids != "CORE/c3" {
		t.Fatalf("delta after the switch = %s, want only CORE/c3 (which n2 lacks)", ids)
	}
	if a := d.Apps[0].Instances[0].Instance.ActionType; a != registry.ActionDeleted {
		t.Fatalf("CORE/c3 in the delta is %s, want DELETED", a)
	}
}
