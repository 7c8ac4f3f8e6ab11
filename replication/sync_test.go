package replication

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/goreka/goreka/registry"
	"github.com/goreka/goreka/replication/peertest"
)

func TestSyncUpCopiesPeerRegistries(t *testing.T) {
	t.Parallel()
	p1, p2 := peertest.New(t), peertest.New(t)
	now := time.UnixMilli(1_700_000_000_000)
	a := instance("ORDERS", "a", now)
	a.LeaseInfo = registry.LeaseInfo{RenewalInterval: 10 * time.Second, Duration: 40 * time.Second}
	p1.Registry().Register(a, false)
	p1.Registry().Register(instance("ORDERS", "b", now), false)
	p2.Registry().Register(instance("ORDERS", "b", now), false) // on both peers: counted once
	p2.Registry().Register(instance("USERS", "c", now), false)
	reg, rep := wired(t, Config{}, p1, p2)
	n, err := rep.SyncUp(t.Context(), 5, time.Hour)
	if err != nil || n != 3 {
		t.Fatalf("SyncUp = %d, %v; want 3", n, err)
	}
	v, ok := reg.Get("ORDERS", "a")
	if !ok || v.Duration != 40*time.Second || v.RenewalInterval != 10*time.Second {
		t.Errorf("synced lease = %+v", v)
	}
	if reg.Size() != 3 {
		t.Errorf("registry size %d", reg.Size())
	}
	// Synced instances are replications: nothing goes back to the peers.
	for _, st := range rep.Status() {
		if st.QueueDepth != 0 {
			t.Errorf("%s: %d tasks queued by the sync", st.URL, st.QueueDepth)
		}
	}
}

func TestSyncUpRetriesWhileEmpty(t *testing.T) {
	t.Parallel()
	fake := peertest.New(t)
	_, rep := wired(t, Config{}, fake)
	var slept []time.Duration
	rep.sleep = func(_ context.Context, d time.Duration) error {
		slept = append(slept, d)
		if len(slept) == 2 {
			fake.Registry().Register(instance("APP", "late", time.Now()), false)
		}
		return nil
	}
	n, err := rep.SyncUp(t.Context(), 5, 30*time.Second)
	if err != nil || n != 1 {
		t.Fatalf("SyncUp = %d, %v", n, err)
	}
	if !slices.Equal(slept, []time.Duration{30 * time.Second, 30 * time.Second}) {
		t.Errorf("slept %v", slept)
	}
	gets := 0
	for _, r := range fake.Requests() {
		if r.Method == http.MethodGet && r.Path == "/eureka/apps/" {
			gets++
		}
	}
	if gets != 3 {
		t.Errorf("%d fetches, want 3", gets)
	}
}

func TestSyncUpGivesUp(t *testing.T) {
	t.Parallel()
	fake := peertest.New(t)
	fake.RequireBasicAuth("u", "p") // every fetch 401
	_, rep := wired(t, Config{}, fake)
	sleeps := 0
	rep.sleep = func(context.Context, time.Duration) error { sleeps++; return nil }
	n, err := rep.SyncUp(t.Context(), 3, time.Second)
	if n != 0 || err == nil || sleeps != 2 {
		t.Errorf("SyncUp = %d, %v after %d sleeps", n, err, sleeps)
	}
	if n, err := rep.SyncUp(t.Context(), 0, time.Second); n != 0 || err != nil {
		t.Errorf("0 attempts: %d, %v", n, err)
	}
	if len(fake.Requests()) != 3 {
		t.Errorf("%d requests, want 3", len(fake.Requests()))
	}
}

// The start-up sync makes one attempt even when registry-sync-retries is 0
// (Eureka's would make none), and none without peers.
func TestStartupSyncAttemptsAtLeastOnce(t *testing.T) {
	t.Parallel()
	fake := peertest.New(t)
	fake.RequireBasicAuth("u", "p") // every fetch 401
	_, rep := wired(t, Config{}, fake)
	rep.sleep = func(context.Context, time.Duration) error { t.Error("slept"); return nil }
	if n := rep.StartupSync(t.Context(), 0, time.Second); n != 0 || len(fake.Requests()) != 1 {
		t.Errorf("StartupSync = %d after %d requests, want 0 after 1", n, len(fake.Requests()))
	}
	_, alone := wired(t, Config{})
	if n := alone.StartupSync(t.Context(), 5, time.Second); n != 0 {
		t.Errorf("StartupSync without peers = %d", n)
	}

	ok := peertest.New(t)
	ok.Registry().Register(instance("APP", "i-1", time.UnixMilli(1_700_000_000_000)), false)
	reg, rep := wired(t, Config{}, ok)
	if n := rep.StartupSync(t.Context(), 0, time.Second); n != 1 || reg.Size() != 1 {
		t.Errorf("StartupSync = %d, registry %d, want 1 and 1", n, reg.Size())
	}
}

func TestSelfInstance(t *testing.T) {
	t.Parallel()
	now := time.UnixMilli(1_700_000_000_000)
	in, err := SelfInfo{HostName: "peer1", IPAddr: "10.0.0.1", Port: 8761}.Instance(registry.LeaseInfo{RenewalInterval: 30 * time.Second, Duration: 90 * time.Second}, nil, now)
	if err != nil {
		t.Fatal(err)
	}
	if in.App != "EUREKA-SERVER" || in.ID() != "peer1:eureka-server:8761" || in.VIPAddress != "eureka-server" ||
		in.Status != registry.StatusUp || in.DataCenterInfo.Name != "MyOwn" || in.Port.Number != 8761 || !in.LastDirtyTimestamp.Equal(now) {
		t.Errorf("self = %+v", in)
	}
	if _, err := (SelfInfo{HostName: "peer1"}).Instance(registry.LeaseInfo{}, nil, now); err == nil {
		t.Error("no IP address accepted")
	}
}

// The self-registrar registers, heartbeats every interval, registers again
// when the peer forgets it, and cancels on shutdown; the peer then lists it
// under this server's app name with the right host, which is what makes it
// an available replica.
func TestSelfRegistrationRoundTrip(t *testing.T) {
	fake := peertest.New(t)
	fake.RequireBasicAuth("u", "p")
	synctest.Test(t, func(t *testing.T) {
		in, err := SelfInfo{HostName: "peer1", IPAddr: "10.0.0.1", Port: 8761}.Instance(registry.LeaseInfo{RenewalInterval: 30 * time.Second, Duration: 90 * time.Second}, nil, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		peer := mustPeer(t, "http://u:p@peer2:8762/eureka/")
		s := NewSelfRegistrar(Config{Logger: testLogger(t), HTTPClient: &http.Client{Transport: handlerTransport{fake.Server.Config.Handler}}}, in, []Peer{peer})
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { s.Run(ctx); close(done) }()
		synctest.Wait()
		calls := func() string {
			var out string
			for _, r := range fake.Requests() {
				out += fmt.Sprintf("%s %s|", r.Method, r.Path)
			}
			return out
		}
		if _, ok := fake.Registry().Get("EUREKA-SERVER", "peer1:eureka-server:8761"); !ok {
			t.Fatalf("not registered; calls %s", calls())
		}
		if v, _ := fake.Registry().Get("EUREKA-SERVER", "peer1:eureka-server:8761"); v.Instance.HostName != "peer1" {
			t.Error("registered without its host name: a stock peer lists it as unavailable")
		}
		time.Sleep(30 * time.Second)
		synctest.Wait()
		fake.Registry().Cancel("EUREKA-SERVER", "peer1:eureka-server:8761", false)
		time.Sleep(30 * time.Second)
		synctest.Wait()
		if _, ok := fake.Registry().Get("EUREKA-SERVER", "peer1:eureka-server:8761"); !ok {
			t.Fatal("not registered again after a 404")
		}
		cancel()
		<-done
		want := "POST /eureka/apps/EUREKA-SERVER|" +
			"PUT /eureka/apps/EUREKA-SERVER/peer1:eureka-server:8761|" +
			"PUT /eureka/apps/EUREKA-SERVER/peer1:eureka-server:8761|POST /eureka/apps/EUREKA-SERVER|" +
			"DELETE /eureka/apps/EUREKA-SERVER/peer1:eureka-server:8761|"
		if got := calls(); got != want {
			t.Errorf("calls\n got %s\nwant %s", got, want)
		}
		if q := fake.Requests()[1].RawQuery; q != fmt.Sprintf("lastDirtyTimestamp=%d&status=UP", in.LastDirtyTimestamp.UnixMilli()) {
			t.Errorf("heartbeat query %q", q)
		}
		if _, ok := fake.Registry().Get("EUREKA-SERVER", "peer1:eureka-server:8761"); ok {
			t.Error("still registered after shutdown")
		}
	})
}

// TestSyncUpReadsALongRegistry: a whole registry takes long to arrive (50 MB
// of gzip at 1M instances); the read timeout bounds each wait for bytes, as
// Java's socket read timeout, not the whole body, so the sync reads a body
// that streams for several read timeouts to its end, while a peer that
// sends no headers within the read timeout costs the sync only that timeout.
func TestSyncUpReadsALongRegistry(t *testing.T) {
	t.Parallel()
	// The body streams for 800 ms, over three read timeouts (and longer than
	// connect + 2 x read, the cap a batch had before the one read rule);
	// its pieces come every 50 ms, well within one.
	const connect, read = 100 * time.Millisecond, 250 * time.Millisecond
	fake := peertest.New(t)
	fake.Registry().Register(instance("ORDERS", "a", time.Now()), false)
	slowBody := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		fake.Server.Config.Handler.ServeHTTP(rec, r)
		w.Header().Set("Content-Type", rec.Header().Get("Content-Type"))
		w.WriteHeader(rec.Code)
		body := rec.Body.Bytes()
		piece := (len(body) + 15) / 16
		for len(body) > 0 { // 16 pieces, one every 50 ms: 800 ms for the whole body
			n := min(len(body), piece)
			w.Write(body[:n])
			w.(http.Flusher).Flush()
			body = body[n:]
			time.Sleep(50 * time.Millisecond)
		}
	}))
	t.Cleanup(slowBody.Close)
	hung := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	}))
	t.Cleanup(hung.Close)
	reg := registry.New(registry.Options{})
	rep := New(Config{Logger: testLogger(t), Seed: 1, PeerNodeReadTimeout: read, PeerNodeConnectTimeout: connect},
		reg, []Peer{mustPeer(t, hung.URL+"/eureka/"), mustPeer(t, slowBody.URL+"/eureka/")})
	start := time.Now()
	if n, err := rep.SyncUp(t.Context(), 1, time.Hour); err != nil || n != 1 {
		t.Fatalf("SyncUp from a peer whose registry takes 800 ms to arrive (read timeout %v) = %d, %v; want 1", read, n, err)
	}
	// The hung peer cost its read timeout, not the sync's whole budget.
	if d := time.Since(start); d > 30*time.Second {
		t.Fatalf("SyncUp took %v with a hung peer", d)
	}
}

// A streamed copy cut short keeps what it registered but is not done, even
// when another peer answered whole with an empty registry (it restarted):
// the sync tries again (before, the first batches counted as a copied
// registry, and a node opened on 1,024 of 3,000 instances).
func TestSyncUpRetriesACopyCutShort(t *testing.T) {
	t.Parallel()
	fake := peertest.New(t)
	for i := range 3000 {
		fake.Registry().Register(instance("ORDERS", fmt.Sprintf("i-%04d", i), time.Now()), false)
	}
	cuts := 0
	cut := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		r.Header.Del("Accept-Encoding") // a plain body, to cut it where wanted
		fake.Server.Config.Handler.ServeHTTP(rec, r)
		body := rec.Body.Bytes()
		w.Header().Set("Content-Type", rec.Header().Get("Content-Type"))
		w.WriteHeader(rec.Code)
		if r.URL.Path == "/eureka/apps/" && cuts == 0 {
			cuts++
			w.Write(body[:len(body)*2/3]) // the peer dies two thirds through its registry
			w.(http.Flusher).Flush()
			if c, _, err := w.(http.Hijacker).Hijack(); err == nil {
				c.Close()
			}
			return
		}
		w.Write(body)
	}))
	t.Cleanup(cut.Close)
	empty := peertest.New(t) // restarted: answers whole, with nothing
	reg := registry.New(registry.Options{})
	rep := New(Config{Logger: testLogger(t), Seed: 1}, reg, []Peer{mustPeer(t, empty.ServiceURL()), mustPeer(t, cut.URL+"/eureka/")})
	sleeps := 0
	rep.sleep = func(context.Context, time.Duration) error { sleeps++; return nil }
	n, err := rep.SyncUp(t.Context(), 5, time.Second)
	if err != nil || n != 3000 || reg.Size() != 3000 {
		t.Fatalf("SyncUp = %d, %v (registry %d, %d retries); want all 3000 after a retry", n, err, reg.Size(), sleeps)
	}
	if sleeps != 1 {
		t.Errorf("%d retries, want 1", sleeps)
	}
}

// The joiner sends its read timeout with the sync, and the server's
// keep-alive beats it: a third of it, at most a second (a Spring
// configuration's 200 ms read timeout was beaten by a fixed second).
func TestSyncKeepAliveBeatsTheJoinersReadTimeout(t *testing.T) {
	for _, c := range []struct {
		read time.Duration
		want time.Duration
	}{{200 * time.Millisecond, 200 * time.Millisecond / 3}, {5 * time.Second, time.Second}, {time.Millisecond, 10 * time.Millisecond}, {0, time.Second}} {
		v := syncHeaders(c.read).Get(SyncReadTimeoutHeader)
		if got := SyncKeepAlive(v); got != c.want {
			t.Errorf("read timeout %v: header %q, keep-alive %v, want %v", c.read, v, got, c.want)
		}
	}
	for _, v := range []string{"", "x", "-5", "99999999999999999999"} {
		if got := SyncKeepAlive(v); got != time.Second {
			t.Errorf("header %q: keep-alive %v, want 1s", v, got)
		}
	}
	var sync, timeout string
	fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sync, timeout = r.Header.Get(SyncHeader), r.Header.Get(SyncReadTimeoutHeader)
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"applications":{"versions__delta":"1","apps__hashcode":"","application":[]}}`))
	}))
	t.Cleanup(fake.Close)
	rep := New(Config{Logger: testLogger(t), Seed: 1, PeerNodeReadTimeout: 200 * time.Millisecond},
		registry.New(registry.Options{}), []Peer{mustPeer(t, fake.URL+"/eureka/")})
	rep.sleep = func(context.Context, time.Duration) error { return nil }
	rep.SyncUp(t.Context(), 1, time.Second)
	if sync != SyncStream || timeout != "200" {
		t.Fatalf("the sync sent %s %q and %s %q, want %q and its read timeout 200", SyncHeader, sync, SyncReadTimeoutHeader, timeout, SyncStream)
	}
}
