package region

import (
	"cmp"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/goreka/goreka/compat"
	"github.com/goreka/goreka/eurekahttp"
	"github.com/goreka/goreka/registry"
	"github.com/goreka/goreka/registry/clocktest"
)

// fakeRegion is a remote region's Eureka server over a real registry.
type fakeRegion struct {
	reg       *registry.Registry
	srv       *httptest.Server
	full      atomic.Int64 // GET apps/ served
	deltas    atomic.Int64 // GET apps/delta served
	mu        sync.Mutex
	badHash   bool // answer deltas with a wrong apps__hashcode
	status    int  // answer every fetch with this status when not 0
	okStatus  int  // the status of a registry answer (0: 200)
	gotHeader http.Header
}

func newFakeRegion(t *testing.T, clk *clocktest.Clock) *fakeRegion {
	f := &fakeRegion{reg: registry.New(registry.Options{Now: clk.Now})}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		status, bad, ok := f.status, f.badHash, cmp.Or(f.okStatus, http.StatusOK)
		f.gotHeader = r.Header.Clone()
		f.mu.Unlock()
		if status != 0 {
			w.WriteHeader(status)
			return
		}
		var apps *registry.Applications
		switch r.URL.Path {
		case "/eureka/apps/":
			f.full.Add(1)
			apps = f.reg.Applications()
		case "/eureka/apps/delta":
			f.deltas.Add(1)
			apps = f.reg.Delta()
			if bad {
				apps.HashCode = "UP_999_"
			}
		default:
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(ok)
		w.Write(compat.AppendApplications(nil, compat.JSON, false, apps))
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeRegion) register(t *testing.T, app, id string, vip string) {
	t.Helper()
	in := &registry.Instance{InstanceID: id, HostName: id + ".west", App: app, IPAddr: "10.1.1.1", Status: registry.StatusUp,
		VIPAddress: vip, DataCenterInfo: registry.DataCenterInfo{Name: "MyOwn"}}
	in.Normalize()
	if _, err := f.reg.Register(in, false); err != nil {
		t.Fatal(err)
	}
}

func (f *fakeRegion) set(status int, badHash bool) {
	f.mu.Lock()
	f.status, f.badHash = status, badHash
	f.mu.Unlock()
}

func ids(apps *registry.Applications) []string {
	var out []string
	if apps == nil {
		return nil
	}
	for _, a := range apps.Apps {
		for _, v := range a.Instances {
			out = append(out, a.Name+"/"+v.Instance.ID())
		}
	}
	slices.Sort(out)
	return out
}

func newRemote(t *testing.T, f *fakeRegion, clk *clocktest.Clock, mod func(*Config)) *Remote {
	t.Helper()
	cfg := Config{Name: "west", URL: f.srv.URL + "/eureka/", Now: clk.Now, GZip: true}
	if mod != nil {
		mod(&cfg)
	}
	r, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestFullThenDeltaThenReconcile(t *testing.T) {
	clk := clocktest.New(time.Unix(1_700_000_000, 0))
	f := newFakeRegion(t, clk)
	var changes []Change
	r := newRemote(t, f, clk, func(c *Config) { c.OnChange = func(ch Change) { changes = append(changes, ch) } })
	ctx := t.Context()

	// An empty region: every fetch is a full one (isRegisteredApplicationsEmpty).
	if err := r.FetchOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if !r.Ready() || f.full.Load() != 1 {
		t.Fatalf("ready %v after first fetch, full fetches %d", r.Ready(), f.full.Load())
	}
	f.register(t, "WEB", "w1", "web")
	if err := r.FetchOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if f.full.Load() != 2 || f.deltas.Load() != 0 {
		t.Fatalf("full %d deltas %d, want 2 0 (copy was empty)", f.full.Load(), f.deltas.Load())
	}
	apps, _ := r.Copy()
	if got := ids(apps); !slices.Equal(got, []string{"WEB/w1"}) {
		t.Fatalf("copy %v", got)
	}

	// Now deltas: a new instance and a cancel arrive by delta.
	f.register(t, "API", "a1", "api")
	clk.Advance(time.Second)
	if err := r.FetchOnce(ctx); err != nil {
		t.Fatal(err)
	}
	f.reg.Cancel("WEB", "w1", false)
	clk.Advance(time.Second)
	if err := r.FetchOnce(ctx); err != nil {
		t.Fatal(err)
	}
	apps, delta := r.Copy()
	if got := ids(apps); !slices.Equal(got, []string{"API/a1"}) {
		t.Fatalf("copy after deltas %v", got)
	}
	if f.full.Load() != 2 || f.deltas.Load() != 2 || r.Status().DeltaSuccesses != 2 {
		t.Fatalf("full %d deltas %d ok %d, want 2 2 2", f.full.Load(), f.deltas.Load(), r.Status().DeltaSuccesses)
	}
	if delta == nil || len(ids(delta)) == 0 {
		t.Fatalf("last delta is empty: %v", ids(delta))
	}
	if r.Status().LastSuccess != clk.Now() {
		t.Fatalf("last success %v, want %v", r.Status().LastSuccess, clk.Now())
	}
	if len(changes) == 0 {
		t.Fatal("OnChange never called")
	}
	// Nothing new on the region: the same delta again changes nothing.
	n := len(changes)
	if err := r.FetchOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if len(changes) != n {
		t.Fatalf("OnChange called for an unchanged region: %+v", changes[n:])
	}

	// A wrong hash: the full registry is fetched again.
	f.set(0, true)
	if err := r.FetchOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if f.full.Load() != 3 || r.Status().DeltaMismatches != 1 {
		t.Fatalf("after a hash mismatch: full %d mismatches %d, want 3 1", f.full.Load(), r.Status().DeltaMismatches)
	}
	if hdr := f.gotHeader; hdr.Get("Accept") != "application/json" || hdr.Get("Accept-Encoding") != "gzip" || hdr.Get("DiscoveryIdentity-Name") != "DefaultServer" {
		t.Fatalf("request headers %v", hdr)
	}
}

func TestDisableDeltaAlwaysFull(t *testing.T) {
	clk := clocktest.New(time.Unix(1_700_000_000, 0))
	f := newFakeRegion(t, clk)
	f.register(t, "WEB", "w1", "web")
	r := newRemote(t, f, clk, func(c *Config) { c.DisableDelta = true; c.GZip = false })
	for range 3 {
		if err := r.FetchOnce(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	if f.full.Load() != 3 || f.deltas.Load() != 0 {
		t.Fatalf("full %d deltas %d, want 3 0", f.full.Load(), f.deltas.Load())
	}
	if f.gotHeader.Get("Accept-Encoding") != "" {
		t.Fatalf("Accept-Encoding %q with gzip off", f.gotHeader.Get("Accept-Encoding"))
	}
}

func TestRemoteGoneKeepsLastCopy(t *testing.T) {
	clk := clocktest.New(time.Unix(1_700_000_000, 0))
	f := newFakeRegion(t, clk)
	f.register(t, "WEB", "w1", "web")
	r := newRemote(t, f, clk, nil)
	if err := r.FetchOnce(t.Context()); err != nil {
		t.Fatal(err)
	}
	good := clk.Now()
	f.set(http.StatusInternalServerError, false)
	clk.Advance(30 * time.Second)
	if err := r.FetchOnce(t.Context()); err == nil {
		t.Fatal("fetch from a failing region succeeded")
	}
	f.srv.Close()
	clk.Advance(30 * time.Second)
	if err := r.FetchOnce(t.Context()); err == nil {
		t.Fatal("fetch from a closed region succeeded")
	}
	apps, _ := r.Copy()
	st := r.Status()
	if got := ids(apps); !slices.Equal(got, []string{"WEB/w1"}) || !st.Ready || st.Failures < 2 || st.LastSuccess != good || st.LastError == "" {
		t.Fatalf("after the region went away: copy %v status %+v", got, st)
	}
}

func TestHangingRegionIsBounded(t *testing.T) {
	srv := hangingServer(t)
	r, err := New(Config{Name: "slow", URL: srv.URL + "/eureka/", ReadTimeout: 200 * time.Millisecond, ConnectTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- r.FetchOnce(context.Background()) }()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("fetch from a hanging region succeeded")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("fetch from a hanging region not bounded by its read timeout")
	}
}

// TestReadTimeoutDoesNotBackOff: a read timeout fails the fetch, but it is
// not a fetch abandoned at its interval (Eureka's TimedSupervisorTask backs
// off only for those), so the next fetch keeps the interval.
func TestReadTimeoutDoesNotBackOff(t *testing.T) {
	srv := hangingServer(t)
	r, err := New(Config{Name: "slow", URL: srv.URL + "/eureka/", ReadTimeout: 200 * time.Millisecond, ConnectTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	err = r.FetchOnce(context.Background())
	if !errors.Is(err, eurekahttp.ErrReadTimeout) {
		t.Fatalf("fetch from a hanging region: %v, want a read timeout", err)
	}
	if d := nextDelay(r.cfg.FetchInterval, r.cfg.FetchInterval, err); d != r.cfg.FetchInterval {
		t.Fatalf("delay after %v = %v, want one interval", err, d)
	}
}

func view(app, id string, st registry.Status) registry.LeaseView {
	return registry.LeaseView{Instance: &registry.Instance{InstanceID: id, App: app, Status: st, VIPAddress: "v"}}
}

func TestMergeAsEureka(t *testing.T) {
	clk := clocktest.New(time.Unix(1_700_000_000, 0))
	west, east := newFakeRegion(t, clk), newFakeRegion(t, clk)
	west.register(t, "WEB", "w1", "web")
	west.register(t, "SECRET", "s1", "secret")
	east.register(t, "WEB", "e1", "web")
	east.register(t, "OTHER", "o1", "other")
	rw := newRemote(t, west, clk, nil)
	re := newRemote(t, east, clk, func(c *Config) { c.Name = "east" })
	for _, r := range []*Remote{rw, re} {
		if err := r.FetchOnce(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	s := NewSet([]*Remote{rw, re}, map[string][]string{"west": {"WEB"}, GlobalWhitelist: {"OTHER"}})
	local := &registry.Applications{VersionDelta: 1, Apps: []registry.Application{{Name: "WEB", Instances: []registry.LeaseView{view("WEB", "l1", registry.StatusDown)}}}}
	local.HashCode = local.ReconcileHashCode()

	full := s.Full(local, []string{"east", "west"})
	if got := ids(full); !slices.Equal(got, []string{"OTHER/o1", "WEB/l1", "WEB/w1"}) {
		t.Fatalf("Full east,west = %v (east's WEB is not in the global whitelist, west's SECRET not in west's)", got)
	}
	if full.HashCode != "DOWN_1_UP_2_" || full.HashCode != full.ReconcileHashCode() {
		t.Fatalf("Full hash %q", full.HashCode)
	}
	if got := ids(s.Full(local, []string{"west"})); !slices.Equal(got, []string{"WEB/l1", "WEB/w1"}) {
		t.Fatalf("Full west = %v", got)
	}
	if got := ids(s.Full(local, []string{"nowhere"})); !slices.Equal(got, []string{"WEB/l1"}) {
		t.Fatalf("Full nowhere = %v", got)
	}

	localDelta := &registry.Applications{VersionDelta: 7, HashCode: local.HashCode}
	d := s.Delta(localDelta, []string{"west"}, 3)
	// After a full fetch the region's last delta is its registry (Eureka
	// sets applicationsDelta to it too).
	if got := ids(d); !slices.Equal(got, []string{"WEB/w1"}) || d.VersionDelta != 3 || d.HashCode != "DOWN_1_UP_1_" {
		t.Fatalf("Delta west = %v v%d %q", got, d.VersionDelta, d.HashCode)
	}

	// Fallback: no whitelist, only applications without local instances.
	fd := s.FallbackDelta(localDelta, func(app string) bool { return app == "WEB" })
	if got := ids(fd); !slices.Equal(got, []string{"OTHER/o1", "SECRET/s1"}) || fd.HashCode != "DOWN_1_UP_2_" {
		t.Fatalf("FallbackDelta = %v %q", got, fd.HashCode)
	}
	if a, ok := s.Application("SECRET"); !ok || len(a.Instances) != 1 {
		t.Fatalf("Application SECRET fallback: %v %v", a, ok)
	}
	// The first region (by name) holding WEB is east: w1 is not found there.
	if _, ok := s.Instance("WEB", "w1"); ok {
		t.Fatal("Instance WEB/w1 found, but Eureka looks only in the first region holding WEB")
	}
	if _, ok := s.Instance("WEB", "e1"); !ok {
		t.Fatal("Instance WEB/e1 not found in east")
	}
	if _, ok := s.InstanceByID("w1"); !ok {
		t.Fatal("InstanceByID w1 not found")
	}
	vip := s.VIP(&registry.Applications{VersionDelta: -1}, "web", false)
	if got := ids(vip); !slices.Equal(got, []string{"WEB/w1"}) {
		t.Fatalf("VIP web = %v", got)
	}

	// Readiness is all regions.
	never := newRemote(t, west, clk, func(c *Config) { c.Name = "north" })
	if NewSet([]*Remote{rw, never}, nil).Ready() {
		t.Fatal("a set with a region that never answered is ready")
	}
}

func TestParseRegions(t *testing.T) {
	if got := ParseRegions("West,EAST"); !slices.Equal(got, []string{"east", "west"}) {
		t.Fatalf("ParseRegions = %v", got)
	}
}

func TestCollector(t *testing.T) {
	clk := clocktest.New(time.Unix(1_700_000_000, 0))
	f := newFakeRegion(t, clk)
	f.register(t, "WEB", "w1", "web")
	r := newRemote(t, f, clk, nil)
	s := NewSet([]*Remote{r}, nil)
	clk.Advance(7 * time.Second)
	want := func(name string, v float64) {
		t.Helper()
		reg := prometheus.NewPedanticRegistry()
		reg.MustRegister(s.Collector())
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() != name {
				continue
			}
			m := mf.GetMetric()[0]
			val := m.GetGauge().GetValue() + m.GetCounter().GetValue()
			if val != v {
				t.Fatalf("%s = %v, want %v", name, val, v)
			}
			return
		}
		t.Fatalf("%s not collected", name)
	}
	want("goreka_remote_region_staleness_seconds", 7) // since start: never fetched
	want("goreka_remote_region_ready", 0)
	if err := r.FetchOnce(t.Context()); err != nil {
		t.Fatal(err)
	}
	clk.Advance(3 * time.Second)
	want("goreka_remote_region_staleness_seconds", 3)
	want("goreka_remote_region_instances", 1)
	want("goreka_remote_region_ready", 1)
	f.set(http.StatusServiceUnavailable, false)
	_ = r.FetchOnce(t.Context())
	clk.Advance(2 * time.Second)
	want("goreka_remote_region_fetch_failures_total", 1)
	want("goreka_remote_region_staleness_seconds", 5)
}

// TestFetchBackoff: Eureka's TimedSupervisorTask doubles the delay after a
// fetch that timed out, up to 5 intervals, and resets it after one that
// completed; other failures keep it.
func TestFetchBackoff(t *testing.T) {
	const iv = 30 * time.Second
	timeout := fmt.Errorf("GET apps/: %w", context.DeadlineExceeded)
	refused := errors.New("connection refused")
	d := iv
	var got []time.Duration
	for _, err := range []error{timeout, timeout, refused, timeout, timeout, timeout, nil, timeout} {
		d = nextDelay(d, iv, err)
		got = append(got, d/time.Second)
	}
	want := []time.Duration{60, 120, 120, 150, 150, 150, 30, 60}
	if !slices.Equal(got, want) {
		t.Fatalf("delays (s) = %v, want %v", got, want)
	}
}

// TestFetchAbandonedAfterAnIntervalBacksOff: a region that accepts the
// request and trickles nothing is abandoned after one fetch interval, with
// an error the backoff counts as a timeout.
func TestFetchAbandonedAfterAnIntervalBacksOff(t *testing.T) {
	srv := hangingServer(t)
	r, err := New(Config{Name: "slow", URL: srv.URL + "/eureka/", FetchInterval: 300 * time.Millisecond,
		ReadTimeout: time.Minute, ConnectTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	err = r.FetchOnce(context.Background())
	if err == nil {
		t.Fatal("fetch from a hanging region succeeded")
	}
	if d := nextDelay(r.cfg.FetchInterval, r.cfg.FetchInterval, err); d != 2*r.cfg.FetchInterval {
		t.Fatalf("delay after %v = %v, want two intervals", err, d)
	}
}

// hangingServer accepts every request and answers none until the client
// gives up or the test ends.
func hangingServer(t *testing.T) *httptest.Server {
	block := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-block:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(block); srv.Close() })
	return srv
}

// TestURLAndStatusAsBefore: what the region client did before it went
// through eurekahttp: a user without a password is sent with an empty one
// (Basic base64("user:")), any 2xx answer with a registry is used, full and
// delta, and a URL without a host is refused naming the property.
func TestURLAndStatusAsBefore(t *testing.T) {
	clk := clocktest.New(time.Unix(1_700_000_000, 0))
	f := newFakeRegion(t, clk)
	f.register(t, "ORDERS", "o1", "orders")
	f.mu.Lock()
	f.okStatus = http.StatusNonAuthoritativeInfo
	f.mu.Unlock()
	r := newRemote(t, f, clk, func(c *Config) { c.URL = strings.Replace(c.URL, "http://", "http://admin@", 1) })
	for i := range 2 { // full, then delta
		if err := r.FetchOnce(t.Context()); err != nil {
			t.Fatalf("fetch %d answered 203: %v", i, err)
		}
	}
	if f.full.Load() != 1 || f.deltas.Load() != 1 || r.Status().DeltaSuccesses != 1 {
		t.Errorf("%d full, %d delta fetches, %d delta successes; want 1 each", f.full.Load(), f.deltas.Load(), r.Status().DeltaSuccesses)
	}
	f.mu.Lock()
	got := f.gotHeader.Get("Authorization")
	f.mu.Unlock()
	if want := "Basic " + base64.StdEncoding.EncodeToString([]byte("admin:")); got != want {
		t.Errorf("user without password: Authorization %q, want %q", got, want)
	}
	const noHost = "http://:8761/eureka/"
	_, err := New(Config{Name: "west", URL: noHost})
	if err == nil || !strings.Contains(err.Error(), "eureka.server.remote-region-urls-with-name.west") || !strings.Contains(err.Error(), noHost) {
		t.Errorf("URL without a host: %v, want an error naming the property and the URL", err)
	}
}
