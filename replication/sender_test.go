package replication

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/goreka/goreka/compat"
	"github.com/goreka/goreka/eurekahttp"
	"github.com/goreka/goreka/registry"
	"github.com/goreka/goreka/registry/clocktest"
	"github.com/goreka/goreka/replication/peertest"
)

func TestBackoffDoublesCapsAndJitters(t *testing.T) {
	t.Parallel()
	rnd := rand.New(rand.NewPCG(1, 2))
	base, limit := time.Second, 30*time.Second
	for attempt, want := range []time.Duration{0, 1, 2, 4, 8, 16, 30, 30, 30} {
		if attempt == 0 {
			continue
		}
		want *= time.Second
		seen := map[time.Duration]bool{}
		for range 200 {
			d := backoff(base, limit, attempt, rnd)
			if d < want/2 || d > want {
				t.Fatalf("attempt %d: %v outside [%v, %v]", attempt, d, want/2, want)
			}
			seen[d] = true
		}
		if len(seen) < 10 {
			t.Errorf("attempt %d: only %d distinct delays, no jitter", attempt, len(seen))
		}
	}
	// A seeded source gives the same delays.
	a, b := rand.New(rand.NewPCG(7, 0)), rand.New(rand.NewPCG(7, 0))
	if backoff(base, limit, 3, a) != backoff(base, limit, 3, b) {
		t.Error("same seed, different delay")
	}
}

func TestClassify(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err  error
		want failure
	}{
		{&StatusError{Code: 503}, failCongestion},
		{&StatusError{Code: 500}, failRejected},
		{fmt.Errorf("x: %w", context.DeadlineExceeded), failCongestion},
		{fmt.Errorf("x: %w", eurekahttp.ErrReadTimeout), failCongestion},
		{fmt.Errorf("%w: junk", errBadResponse), failBadResponse},
		{errors.New("connection refused"), failNetwork},
	}
	for _, tc := range tests {
		if got := classify(tc.err); got != tc.want {
			t.Errorf("classify(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

func send(t *testing.T, rep *Replicator) (time.Duration, error) {
	t.Helper()
	return rep.sendOnce(t.Context(), rep.list()[0])
}

// A heartbeat the peer does not know is answered 404; the sender then
// registers the local copy with that peer.
func TestHeartbeat404SendsRegister(t *testing.T) {
	t.Parallel()
	fake := peertest.New(t)
	clk := clocktest.New(time.UnixMilli(1_700_000_000_000))
	reg, rep := wired(t, Config{Now: clk.Now}, fake)
	in, _ := reg.Register(instance("APP", "a", clk.Now()), false)
	rep.list()[0].q.take(10, clk.Now()) // forget the register: the peer never got it
	reg.Renew(registry.RenewRequest{App: "APP", ID: "a"})
	if _, err := send(t, rep); err != nil {
		t.Fatal(err)
	}
	if _, ok := fake.Registry().Get("APP", "a"); ok {
		t.Fatal("peer knows the instance before the register")
	}
	if _, err := send(t, rep); err != nil {
		t.Fatal(err)
	}
	v, ok := fake.Registry().Get("APP", "a")
	if !ok || v.Instance.LastDirtyTimestamp.UnixMilli() != in.LastDirtyTimestamp.UnixMilli() {
		t.Fatalf("peer copy = %+v, %v", v, ok)
	}
	items := fake.Items()
	if len(items) != 2 || items[0].Action != compat.ActionHeartbeat || items[1].Action != compat.ActionRegister {
		t.Errorf("items = %+v", items)
	}
	st := rep.Status()[0]
	if st.BatchesSent != 2 || st.ItemsSent != 2 || st.Failures.Items != 1 || st.State != "up" {
		t.Errorf("status = %+v", st)
	}
	// Peer calls carry JSON, gzip, our user agent and a server's identity.
	h := fake.Requests()[0].Header
	if h.Get("Content-Type") != "application/json" || h.Get("Accept") != "application/json" ||
		h.Get("Accept-Encoding") != "gzip" || !strings.HasPrefix(h.Get("User-Agent"), "goreka-replication/") ||
		h.Get("DiscoveryIdentity-Name") != "DefaultServer" {
		t.Errorf("headers = %v", h)
	}
}

// The peer holds a newer copy: it answers 409 with it and this server adopts
// it (status and override) without replicating it again.
func TestHeartbeat409AdoptsPeerCopy(t *testing.T) {
	t.Parallel()
	fake := peertest.New(t)
	clk := clocktest.New(time.UnixMilli(1_700_000_000_000))
	reg, rep := wired(t, Config{Now: clk.Now}, fake)
	reg.Register(instance("APP", "a", clk.Now()), false)
	newer := instance("APP", "a", clk.Now().Add(time.Minute))
	newer.Status = registry.StatusDown
	newer.Metadata = map[string]string{"v": "2"}
	fake.Registry().Register(newer, true)
	rep.list()[0].q.take(10, clk.Now())
	reg.Renew(registry.RenewRequest{App: "APP", ID: "a"})
	if _, err := send(t, rep); err != nil {
		t.Fatal(err)
	}
	v, _ := reg.Get("APP", "a")
	if v.Instance.Status != registry.StatusDown || v.Instance.Metadata["v"] != "2" ||
		!v.Instance.LastDirtyTimestamp.Equal(clk.Now().Add(time.Minute)) {
		t.Errorf("local copy after 409 = %+v", v.Instance)
	}
	if d := rep.Status()[0].QueueDepth; d != 0 {
		t.Errorf("adopting queued %d tasks (re-replication)", d)
	}
}

// A peer's 409 is about the lease the heartbeat was sent for: when this
// server cancelled the instance (or changed it) while the heartbeat was on
// its way, adopting the peer's older view would undo that, so it is not.
func TestHeartbeat409NotAdoptedAfterALocalChange(t *testing.T) {
	t.Parallel()
	fake := peertest.New(t)
	clk := clocktest.New(time.UnixMilli(1_700_000_000_000))
	reg, rep := wired(t, Config{Now: clk.Now}, fake)
	reg.Register(instance("APP", "a", clk.Now()), false)
	newer := instance("APP", "a", clk.Now().Add(time.Minute))
	newer.Status = registry.StatusDown
	fake.Registry().Register(newer, true)
	rep.list()[0].q.take(10, clk.Now())
	reg.Renew(registry.RenewRequest{App: "APP", ID: "a"})
	// The local cancel happens after the heartbeat was queued; its own task
	// is dropped here so that only the heartbeat's answer matters.
	if err := reg.Cancel("APP", "a", false); err != nil {
		t.Fatal(err)
	}
	p := rep.list()[0]
	p.mu.Lock()
	hb := p.q.head
	p.q = newQueue(100)
	p.q.push(hb)
	p.mu.Unlock()
	if _, err := send(t, rep); err != nil {
		t.Fatal(err)
	}
	if v, ok := reg.Get("APP", "a"); ok {
		t.Fatalf("cancelled instance brought back by a 409: %+v", v.Instance)
	}
}

// The peer's newer copy carries an override that differs from ours: ours is
// replaced before the copy is adopted (syncInstancesIfTimestampDiffers), so
// the adopted status follows the peer's override.
func TestHeartbeat409AdoptsPeerOverride(t *testing.T) {
	t.Parallel()
	fake := peertest.New(t)
	clk := clocktest.New(time.UnixMilli(1_700_000_000_000))
	reg, rep := wired(t, Config{Now: clk.Now}, fake)
	reg.Register(instance("APP", "a", clk.Now()), false)
	if err := reg.StatusUpdate("APP", "a", registry.StatusOutOfService, time.Time{}, false); err != nil {
		t.Fatal(err)
	}
	newer := instance("APP", "a", clk.Now().Add(time.Minute))
	newer.OverriddenStatus = registry.StatusUp
	fake.Registry().Register(newer, true)
	rep.list()[0].q.take(10, clk.Now())
	reg.Renew(registry.RenewRequest{App: "APP", ID: "a"})
	if _, err := send(t, rep); err != nil {
		t.Fatal(err)
	}
	v, _ := reg.Get("APP", "a")
	if v.Instance.Status != registry.StatusUp || v.Instance.OverriddenStatus != registry.StatusUp {
		t.Errorf("local copy after 409: status %s, overriddenStatus %s; want UP, UP", v.Instance.Status, v.Instance.OverriddenStatus)
	}
	if got := reg.StatusOverrides()["a"]; got != registry.StatusUp {
		t.Errorf("local override after 409 = %q, want UP", got)
	}
}

func TestHeartbeat409IgnoredWithoutTimestampSync(t *testing.T) {
	t.Parallel()
	fake := peertest.New(t)
	clk := clocktest.New(time.UnixMilli(1_700_000_000_000))
	// sync-when-timestamp-differs=false is the registry's policy: Adopt
	// refuses peers' copies.
	var rep *Replicator
	reg := registry.New(registry.Options{Now: clk.Now, IgnoreDirtyTimestamps: true,
		OnEvent: func(e registry.Event) { rep.OnEvent(e) }, OnRenew: func(rn registry.Renewal) { rep.OnRenew(rn) }})
	rep = New(Config{Now: clk.Now, Logger: testLogger(t), Seed: 1}, reg, []Peer{mustPeer(t, fake.ServiceURL())})
	reg.Register(instance("APP", "a", clk.Now()), false)
	newer := instance("APP", "a", clk.Now().Add(time.Minute))
	newer.Status = registry.StatusDown
	fake.Registry().Register(newer, true)
	rep.list()[0].q.take(10, clk.Now())
	reg.Renew(registry.RenewRequest{App: "APP", ID: "a"})
	send(t, rep)
	if v, _ := reg.Get("APP", "a"); v.Instance.Status != registry.StatusUp {
		t.Errorf("adopted the peer's copy: %s", v.Instance.Status)
	}
}

func TestBatchFailures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		setup     func(*peertest.Peer)
		retry     bool
		state     string
		failures  Failures
		depth     int
		dropped   uint64
		minBackof time.Duration
	}{
		{"503 backs off and keeps the batch", func(p *peertest.Peer) { p.SetBatchStatus(http.StatusServiceUnavailable) },
			true, "backing off", Failures{Congestion: 1}, 2, 0, 500 * time.Millisecond},
		{"500 drops the batch", func(p *peertest.Peer) { p.SetBatchStatus(http.StatusInternalServerError) },
			false, "failing", Failures{Rejected: 1}, 0, 2, 0},
		{"garbage drops the batch", func(p *peertest.Peer) { p.SetGarbage(true) },
			false, "failing", Failures{BadResponse: 1}, 0, 2, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fake := peertest.New(t)
			tc.setup(fake)
			clk := clocktest.New(time.UnixMilli(1_700_000_000_000))
			reg, rep := wired(t, Config{Now: clk.Now}, fake)
			reg.Register(instance("APP", "a", clk.Now()), false)
			reg.Register(instance("APP", "b", clk.Now()), false)
			d, err := send(t, rep)
			if err == nil {
				t.Fatal("no error")
			}
			if (d > 0) != tc.retry || d < tc.minBackof {
				t.Errorf("backoff = %v", d)
			}
			st := rep.Status()[0]
			if st.State != tc.state || st.Failures != tc.failures || st.QueueDepth != tc.depth || st.Dropped != tc.dropped || st.LastError == "" {
				t.Errorf("status = %+v", st)
			}
			// The peer recovers: what was kept goes through, state is up.
			fake.SetBatchStatus(0)
			fake.SetGarbage(false)
			clk.Advance(10 * time.Second)
			if tc.retry {
				if _, err := send(t, rep); err != nil {
					t.Fatal(err)
				}
				if fake.Registry().Size() != 2 {
					t.Errorf("peer has %d instances after retry", fake.Registry().Size())
				}
			}
			reg.Renew(registry.RenewRequest{App: "APP", ID: "a"})
			send(t, rep)
			if st := rep.Status()[0]; st.State != "up" || !st.LastSuccess.Equal(clk.Now()) {
				t.Errorf("after recovery: %+v", st)
			}
		})
	}
}

type lyingClient struct{ n int }

func (c *lyingClient) sendBatch(_ context.Context, _ *Peer, items []compat.ReplicationItem) ([]compat.ReplicationResponse, error) {
	return make([]compat.ReplicationResponse, len(items)+c.n), nil
}
func (c *lyingClient) fetchApps(context.Context, *Peer) (*registry.Applications, error) {
	return nil, errors.New("unused")
}

func TestWrongLengthResponseDropsBatch(t *testing.T) {
	t.Parallel()
	clk := clocktest.New(time.Unix(1000, 0))
	reg := registry.New(registry.Options{Now: clk.Now})
	rep := newReplicator(Config{Now: clk.Now, Logger: testLogger(t)}, reg, []Peer{mustPeer(t, "http://x/eureka/")}, &lyingClient{n: 1}, nil)
	rep.OnEvent(registry.Event{Kind: registry.EventCancel, App: "APP", ID: "a"})
	if _, err := send(t, rep); !errors.Is(err, errBadResponse) {
		t.Fatalf("err = %v", err)
	}
	if st := rep.Status()[0]; st.Failures.BadResponse != 1 || st.Dropped != 1 || st.BatchesSent != 0 {
		t.Errorf("status = %+v", st)
	}
}

func TestTasksExpire(t *testing.T) {
	t.Parallel()
	fake := peertest.New(t)
	clk := clocktest.New(time.UnixMilli(1_700_000_000_000))
	reg, rep := wired(t, Config{Now: clk.Now, MaxTimeForReplication: 10 * time.Second}, fake)
	in := instance("APP", "a", clk.Now())
	in.LeaseInfo.RenewalInterval = 5 * time.Second
	reg.Register(in, false) // expires after 5 s (renewal interval)
	clk.Advance(4 * time.Second)
	reg.Cancel("APP", "a", false) // expires after 10 s
	clk.Advance(2 * time.Second)
	if st := rep.Status()[0]; st.Lag != 6*time.Second {
		t.Errorf("lag = %v, want 6s", st.Lag)
	}
	send(t, rep)
	items := fake.Items()
	if len(items) != 1 || items[0].Action != compat.ActionCancel {
		t.Errorf("sent %+v, want the cancel only", items)
	}
	if st := rep.Status()[0]; st.Expired != 1 {
		t.Errorf("expired = %d", st.Expired)
	}
}

func TestBasicAuthAndCompression(t *testing.T) {
	t.Parallel()
	fake := peertest.New(t)
	fake.RequireBasicAuth("admin", "pw")
	clk := clocktest.New(time.UnixMilli(1_700_000_000_000))
	reg := registry.New(registry.Options{Now: clk.Now})
	u := strings.Replace(fake.ServiceURL(), "http://", "http://admin:pw@", 1)
	rep := New(Config{Now: clk.Now, EnableReplicatedRequestCompression: true, Logger: testLogger(t)}, reg, []Peer{mustPeer(t, u)})
	rep.OnEvent(registry.Event{Kind: registry.EventCancel, App: "APP", ID: "a"})
	if _, err := send(t, rep); err != nil {
		t.Fatal(err)
	}
	h := fake.Requests()[0].Header
	if h.Get("Content-Encoding") != "gzip" || len(fake.Items()) != 1 {
		t.Errorf("headers %v items %d", h, len(fake.Items()))
	}
	if strings.Contains(rep.Status()[0].URL, "pw") {
		t.Error("status shows the password")
	}
}

// Batching by size and age, through the real HTTP client over an in-memory
// transport, on synctest's fake clock.
func TestBatchingBySizeAndAge(t *testing.T) {
	fake := peertest.New(t)
	synctest.Test(t, func(t *testing.T) {
		reg := registry.New(registry.Options{})
		rep := New(Config{Logger: testLogger(t), Seed: 1, HTTPClient: &http.Client{Transport: handlerTransport{fake.Server.Config.Handler}}},
			reg, []Peer{mustPeer(t, "http://peer1:8761/eureka/")})
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { rep.Run(ctx); close(done) }()
		ev := func(i int) {
			rep.OnEvent(registry.Event{Kind: registry.EventCancel, App: "APP", ID: fmt.Sprint("i-", i)})
		}
		for i := range 10 {
			ev(i)
		}
		time.Sleep(499 * time.Millisecond)
		synctest.Wait()
		if n := len(fake.Batches()); n != 0 {
			t.Fatalf("sent %d batches before 500 ms", n)
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		if b := fake.Batches(); len(b) != 1 || len(b[0]) != 10 {
			t.Fatalf("after 500 ms: %d batches", len(b))
		}
		for i := 10; i < 610; i++ {
			ev(i)
		}
		synctest.Wait()
		b := fake.Batches()
		if len(b) != 3 || len(b[1]) != 250 || len(b[2]) != 250 {
			t.Fatalf("full batches not sent at once: %d batches", len(b))
		}
		time.Sleep(500 * time.Millisecond)
		synctest.Wait()
		b = fake.Batches()
		if len(b) != 4 || len(b[3]) != 100 {
			t.Fatalf("remainder: %d batches", len(b))
		}
		cancel()
		<-done
	})
}

// A 503 storm: the sender backs off with growing delays and no request is
// sent while it waits; when the peer recovers, everything kept is sent.
func TestBackoffInRunLoop(t *testing.T) {
	fake := peertest.New(t)
	fake.SetBatchStatus(http.StatusServiceUnavailable)
	synctest.Test(t, func(t *testing.T) {
		reg := registry.New(registry.Options{})
		rep := New(Config{Logger: testLogger(t), Seed: 1, MaxTimeForReplication: time.Hour,
			HTTPClient: &http.Client{Transport: handlerTransport{fake.Server.Config.Handler}}},
			reg, []Peer{mustPeer(t, "http://peer1:8761/eureka/")})
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { rep.Run(ctx); close(done) }()
		rep.OnEvent(registry.Event{Kind: registry.EventCancel, App: "APP", ID: "a"})
		time.Sleep(500 * time.Millisecond)
		synctest.Wait()
		var sent []time.Duration
		start := time.Now()
		for range 120 {
			n := len(fake.Batches())
			time.Sleep(time.Second)
			synctest.Wait()
			if len(fake.Batches()) != n {
				sent = append(sent, time.Since(start))
			}
		}
		if len(sent) < 4 || len(sent) > 10 {
			t.Fatalf("retries at %v", sent)
		}
		for i := 1; i < len(sent); i++ {
			if gap := sent[i] - sent[i-1]; gap > 31*time.Second {
				t.Errorf("gap %v above the cap", gap)
			}
		}
		if st := rep.Status()[0]; st.State != "backing off" || st.QueueDepth != 1 {
			t.Errorf("status = %+v", st)
		}
		fake.SetBatchStatus(0)
		time.Sleep(31 * time.Second)
		synctest.Wait()
		if st := rep.Status()[0]; st.State != "up" || st.QueueDepth != 0 || st.BatchesSent != 1 {
			t.Errorf("after recovery = %+v", st)
		}
		cancel()
		<-done
	})
}

func TestFlushSendsEverythingNow(t *testing.T) {
	t.Parallel()
	fake := peertest.New(t)
	clk := clocktest.New(time.UnixMilli(1_700_000_000_000))
	_, rep := wired(t, Config{Now: clk.Now}, fake)
	for i := range 600 {
		rep.OnEvent(registry.Event{Kind: registry.EventCancel, App: "APP", ID: fmt.Sprint("i-", i)})
	}
	if err := rep.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	if n := len(fake.Items()); n != 600 || len(fake.Batches()) != 3 {
		t.Errorf("flushed %d items in %d batches", n, len(fake.Batches()))
	}
	fake.SetBatchStatus(http.StatusServiceUnavailable)
	rep.OnEvent(registry.Event{Kind: registry.EventCancel, App: "APP", ID: "z"})
	if err := rep.Flush(t.Context()); err == nil {
		t.Error("flush to a failing peer returned nil")
	}
}
