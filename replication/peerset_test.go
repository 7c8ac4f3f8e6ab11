package replication

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/goreka/goreka/compat"
	"github.com/goreka/goreka/registry"
	"github.com/goreka/goreka/replication/peertest"
	"github.com/prometheus/client_golang/prometheus"
)

// hostTransport serves each host's requests in memory with its handler, so
// that a synctest bubble can hold several fake peers.
type hostTransport map[string]http.Handler

func (t hostTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	h := t[req.URL.Hostname()]
	if h == nil {
		return nil, fmt.Errorf("dial tcp %s: connection refused", req.URL.Host)
	}
	return handlerTransport{h}.RoundTrip(req)
}

// stallable wraps a handler; while stalled, batch requests block until the
// caller gives up (its context is cancelled).
type stallable struct {
	h  http.Handler
	mu sync.Mutex
	on bool
}

func (s *stallable) stall(on bool) { s.mu.Lock(); s.on = on; s.mu.Unlock() }

func (s *stallable) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	on := s.on
	s.mu.Unlock()
	if on {
		<-r.Context().Done()
		return
	}
	s.h.ServeHTTP(w, r)
}

// senders counts the running sender goroutines of every Replicator in the
// process. Tests using it are not parallel (parallel tests start only after
// the sequential ones), so the count is theirs.
func senders() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return strings.Count(string(buf[:n]), "replication.(*Replicator).runPeer(")
		}
		buf = make([]byte, 2*len(buf))
	}
}

// syncBuffer is a log sink safe for concurrent writers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

func hasInstance(p *peertest.Peer, id string) bool {
	_, ok := p.Registry().Get("APP", id)
	return ok
}

// The peer set changes under a running Replicator: a new peer gets a queue,
// a sender and the changes from then on (and, through the 404 answer to a
// heartbeat, the instances registered before it joined); a removed peer's
// sender stops, even in the middle of a batch, and its queue is freed; the
// peer that stays keeps its queue, counters and sender and never waits for
// the others.
func TestSetPeersWhileRunning(t *testing.T) {
	fa, fb, fc := peertest.New(t), peertest.New(t), peertest.New(t)
	sb := &stallable{h: fb.Server.Config.Handler}
	tr := hostTransport{"peer-a": fa.Server.Config.Handler, "peer-b": sb, "peer-c": fc.Server.Config.Handler}
	synctest.Test(t, func(t *testing.T) {
		logs := &syncBuffer{}
		var rep *Replicator
		reg := registry.New(registry.Options{OnEvent: func(e registry.Event) { rep.OnEvent(e) },
			OnRenew: func(rn registry.Renewal) { rep.OnRenew(rn) }})
		pa, pb, pc := mustPeer(t, "http://peer-a/eureka/"), mustPeer(t, "http://peer-b/eureka/"), mustPeer(t, "http://peer-c/eureka/")
		rep = New(Config{Seed: 1, MaxTimeForReplication: time.Hour, HTTPClient: &http.Client{Transport: tr},
			Logger: slog.New(slog.NewTextHandler(logs, nil))}, reg, []Peer{pa, pb})
		before := senders()
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { rep.Run(ctx); close(done) }()
		synctest.Wait()
		if n := senders() - before; n != 2 {
			t.Fatalf("%d senders for 2 peers", n)
		}

		reg.Register(instance("APP", "x1", time.Now()), false)
		time.Sleep(time.Second)
		synctest.Wait()
		if !hasInstance(fa, "x1") || !hasInstance(fb, "x1") {
			t.Fatal("x1 not replicated to a and b")
		}

		// b stalls with a batch in flight and more queued; a is unaffected.
		sb.stall(true)
		reg.Register(instance("APP", "x2", time.Now()), false)
		time.Sleep(time.Second)
		synctest.Wait()
		reg.Register(instance("APP", "x3", time.Now()), false)
		synctest.Wait()
		if !hasInstance(fa, "x2") || hasInstance(fb, "x2") {
			t.Fatal("a waits for b, or b was not stalled")
		}
		stA := rep.Status()[0]

		added, removed := rep.SetPeers([]Peer{pa, pc, pc})
		if len(added) != 1 || added[0].URL != pc.URL || len(removed) != 1 || removed[0].URL != pb.URL {
			t.Fatalf("added %v removed %v", added, removed)
		}
		synctest.Wait()
		if n := senders() - before; n != 2 {
			t.Fatalf("%d senders after replacing b by c", n)
		}
		st := rep.Status()
		if len(st) != 2 || st[0].URL != pa.URL || st[1].URL != pc.URL {
			t.Fatalf("status peers %+v", st)
		}
		if st[0].BatchesSent != stA.BatchesSent || st[0].QueueDepth != stA.QueueDepth {
			t.Errorf("a's state changed by the peer change: %+v, was %+v", st[0], stA)
		}
		if st[1].QueueDepth != 0 {
			t.Errorf("c starts with %d queued tasks, want the changes from now on only", st[1].QueueDepth)
		}

		// A heartbeat c does not know is answered 404 and re-registered,
		// with no other change in between (the new queue has seen every
		// revision up to its start).
		sb.stall(false)
		nb := len(fb.Batches())
		if err := reg.Renew(registry.RenewRequest{App: "APP", ID: "x1"}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		time.Sleep(time.Second)
		synctest.Wait()
		if !hasInstance(fc, "x1") {
			t.Error("x1 did not reach the new peer through heartbeat, 404, register")
		}

		// Changes from now on reach a and c, none reaches b.
		reg.Register(instance("APP", "x4", time.Now()), false)
		time.Sleep(time.Second)
		synctest.Wait()
		if !hasInstance(fa, "x4") || !hasInstance(fc, "x4") {
			t.Error("x4 not replicated to a and c")
		}
		if hasInstance(fc, "x2") || hasInstance(fc, "x3") {
			t.Error("c got a change from before it joined")
		}
		if len(fb.Batches()) != nb {
			t.Error("a removed peer was still sent batches")
		}

		if a, r := rep.PeerChanges(); a != 1 || r != 1 {
			t.Errorf("changes added %d removed %d", a, r)
		}
		// Setting the same set again changes nothing and logs nothing.
		if a, r := rep.SetPeers([]Peer{pa, pc}); len(a)+len(r) != 0 {
			t.Errorf("same set: added %v removed %v", a, r)
		}
		out := logs.String()
		if strings.Count(out, `msg="peer added"`) != 1 || strings.Count(out, `msg="peer removed"`) != 1 ||
			!strings.Contains(out, `msg="peer removed" component=replication peer=http://peer-b/eureka/`) {
			t.Errorf("logs:\n%s", out)
		}

		// Removing every peer stops every sender.
		rep.SetPeers(nil)
		synctest.Wait()
		if n := senders() - before; n != 0 {
			t.Errorf("%d senders left with no peers", n)
		}
		cancel()
		<-done
	})
}

// A removed peer's queue is freed at once and takes no more tasks, also
// before Run; peers added before Run get their sender when it starts.
func TestSetPeersFreesQueue(t *testing.T) {
	fa := peertest.New(t)
	synctest.Test(t, func(t *testing.T) {
		reg := registry.New(registry.Options{})
		pa, pb := mustPeer(t, "http://peer-a/eureka/"), mustPeer(t, "http://peer-b/eureka/")
		rep := New(Config{Seed: 1, Logger: testLogger(t), HTTPClient: &http.Client{Transport: hostTransport{"peer-a": fa.Server.Config.Handler}}},
			reg, []Peer{pa})
		rep.SetPeers([]Peer{pa, pb})
		for i := range 100 {
			rep.OnEvent(registry.Event{Kind: registry.EventCancel, App: "APP", ID: fmt.Sprint("i-", i)})
		}
		b := rep.list()[1]
		rep.SetPeers([]Peer{pa})
		b.mu.Lock()
		n, gone, q := b.q.len(), b.gone, b.q
		b.mu.Unlock()
		if n != 0 || !gone || len(q.last) != 0 {
			t.Fatalf("removed peer keeps %d tasks", n)
		}
		rep.OnEvent(registry.Event{Kind: registry.EventCancel, App: "APP", ID: "late"})
		b.enqueue(&task{item: compat.ReplicationItem{Action: compat.ActionHeartbeat, AppName: "APP", ID: "x"}, expires: time.Now().Add(time.Hour)})
		if b.q.len() != 0 {
			t.Fatal("a removed peer took a task")
		}
		before := senders()
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { rep.Run(ctx); close(done) }()
		synctest.Wait()
		if n := senders() - before; n != 1 {
			t.Fatalf("%d senders for one peer", n)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if len(fa.Items()) != 101 {
			t.Errorf("a got %d items", len(fa.Items()))
		}
		cancel()
		<-done
		if n := senders() - before; n != 0 {
			t.Errorf("%d senders after Run returned", n)
		}
	})
}

// The collector reports the peer count and the changes.
func TestPeerSetMetrics(t *testing.T) {
	t.Parallel()
	r := New(Default(), registry.New(registry.Options{}), []Peer{mustPeer(t, "http://a/eureka/")})
	r.SetPeers([]Peer{mustPeer(t, "http://b/eureka/"), mustPeer(t, "http://c/eureka/")})
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(r.Collector())
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			k := mf.GetName()
			for _, l := range m.GetLabel() {
				k += "{" + l.GetName() + "=" + l.GetValue() + "}"
			}
			if mf.GetName() == "goreka_replication_peers" || mf.GetName() == "goreka_replication_queue_capacity" {
				got[k] = m.GetGauge().GetValue()
			} else if mf.GetName() == "goreka_replication_peer_changes_total" {
				got[k] = m.GetCounter().GetValue()
			}
		}
	}
	want := map[string]float64{"goreka_replication_peers": 2, "goreka_replication_queue_capacity{peer=http://c/eureka/}": 10000,
		"goreka_replication_peer_changes_total{change=added}": 2, "goreka_replication_peer_changes_total{change=removed}": 1}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
}

// Self-registration follows the peer set: a new peer is registered with at
// once, a removed one gets the cancel, and no loop is left behind.
func TestSelfRegistrarSetPeers(t *testing.T) {
	fa, fb := peertest.New(t), peertest.New(t)
	tr := hostTransport{"peer-a": fa.Server.Config.Handler, "peer-b": fb.Server.Config.Handler}
	synctest.Test(t, func(t *testing.T) {
		in, err := SelfInfo{HostName: "me", IPAddr: "10.0.0.1", Port: 8761}.Instance(registry.LeaseInfo{}, nil, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		pa, pb := mustPeer(t, "http://peer-a/eureka/"), mustPeer(t, "http://peer-b/eureka/")
		s := NewSelfRegistrar(Config{Logger: testLogger(t), HTTPClient: &http.Client{Transport: tr}}, in, nil)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { s.Run(ctx); close(done) }()
		registered := func(p *peertest.Peer) bool {
			_, ok := p.Registry().Get("EUREKA-SERVER", "me:eureka-server:8761")
			return ok
		}
		s.SetPeers([]Peer{pa})
		synctest.Wait()
		if !registered(fa) || registered(fb) {
			t.Fatal("not registered with a alone")
		}
		s.SetPeers([]Peer{pa, pb})
		synctest.Wait()
		if !registered(fa) || !registered(fb) {
			t.Fatal("not registered with the added peer b")
		}
		na := len(fa.Requests())
		s.SetPeers([]Peer{pb})
		synctest.Wait()
		if registered(fa) || !registered(fb) {
			t.Fatal("registration with the removed peer a not cancelled")
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		if n := len(fa.Requests()); n != na+1 {
			t.Errorf("removed peer a got %d requests after removal, want the cancel only", n-na)
		}
		cancel()
		<-done
		if registered(fb) {
			t.Error("still registered with b after shutdown")
		}
	})
}

// Replicas come from replication health, never from host names: with no
// traffic, idle probes (empty batches) find the peer that answers, the one
// that answers 503 and the one that cannot be reached; a local registration
// whose host name matches a failing peer changes nothing.
func TestReplicasFromHealth(t *testing.T) {
	fa, fb := peertest.New(t), peertest.New(t)
	fb.SetBatchStatus(http.StatusServiceUnavailable)
	tr := hostTransport{"peer-a": fa.Server.Config.Handler, "peer-b": fb.Server.Config.Handler}
	synctest.Test(t, func(t *testing.T) {
		reg := registry.New(registry.Options{})
		b := instance("EUREKA-SERVER", "peer-b:eureka-server:8761", time.Now())
		b.HostName = "peer-b"
		reg.Register(b, true)
		peers := []Peer{mustPeer(t, "http://peer-a/eureka/"), mustPeer(t, "http://peer-b/eureka/"), mustPeer(t, "http://peer-c/eureka/")}
		rep := New(Config{Seed: 1, Logger: testLogger(t), HTTPClient: &http.Client{Transport: tr}}, reg, peers)
		if _, avail, _ := rep.Replicas(); len(avail) != 0 {
			t.Fatalf("available before any contact: %q", avail)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { rep.Run(ctx); close(done) }()
		time.Sleep(29 * time.Second)
		synctest.Wait()
		if n := len(fa.Batches()); n != 0 {
			t.Fatalf("probed before the interval: %d", n)
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		regd, avail, unavail := rep.Replicas()
		if len(regd) != 3 || !slices.Equal(avail, []string{"http://peer-a/eureka/"}) ||
			!slices.Equal(unavail, []string{"http://peer-b/eureka/", "http://peer-c/eureka/"}) {
			t.Fatalf("registered %q available %q unavailable %q", regd, avail, unavail)
		}
		if b := fa.Batches(); len(b) != 1 || len(b[0]) != 0 {
			t.Errorf("probe batches %v", b)
		}
		if st := rep.Status()[0]; st.BatchesSent != 0 {
			t.Errorf("a probe counted as a batch: %+v", st)
		}
		// b recovers: its next probe (after the back-off) makes it available.
		fb.SetBatchStatus(0)
		time.Sleep(time.Minute)
		synctest.Wait()
		if _, avail, _ := rep.Replicas(); !slices.Equal(avail, []string{"http://peer-a/eureka/", "http://peer-b/eureka/"}) {
			t.Errorf("after b recovered: available %q", avail)
		}
		// a steady flow of batches needs no probes.
		np := len(fa.Batches())
		for i := range 10 {
			rep.OnEvent(registry.Event{Kind: registry.EventCancel, App: "APP", ID: fmt.Sprint("i-", i)})
			time.Sleep(10 * time.Second)
		}
		synctest.Wait()
		for _, b := range fa.Batches()[np:] {
			if len(b) == 0 {
				t.Error("probe sent while batches flow")
			}
		}
		cancel()
		<-done
	})
}
