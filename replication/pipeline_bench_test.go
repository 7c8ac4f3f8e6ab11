package replication

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/goreka/goreka/compat"
	"github.com/goreka/goreka/registry"
	"github.com/goreka/goreka/replication/peertest"
)

// BenchmarkPipelinedBurst100k: 100,000 registrations queued for one peer
// and the time until the peer holds them all, by batches in flight. The
// peer is a peertest.Peer over loopback HTTP, applying with goreka's batch
// semantics on this process's cores (peer=in-process), or one whose work is
// done elsewhere (peer=remote, see remotePeer). encode-ms is the time the
// sender alone needs to encode the same 400 batches one after the other,
// measured just before each burst; x-encode is the burst's time over it.
// cpu-ms is the process's CPU time during the burst, cores its ratio to
// the burst's time (on a loaded machine, the share of it the process got).
//
//	go test -run '^$' -bench PipelinedBurst100k -benchtime 1x -count 3 ./replication/
func BenchmarkPipelinedBurst100k(b *testing.B) {
	const n = 100_000
	for _, peer := range []string{"in-process", "remote"} {
		for _, k := range []int{1, 2, 4, 8} {
			b.Run(fmt.Sprintf("peer=%s/in-flight=%d", peer, k), func(b *testing.B) {
				burst(b, n, k, peer == "remote")
			})
		}
	}
}

// remoteApply is how long a peer on cores of its own takes to apply a batch
// of 250 registrations (about 40 µs each, BENCHMARKS.md "After the ladder:
// convergence").
const remoteApply = 10 * time.Millisecond

// remotePeer answers every item of a batch 200 after remoteApply, without
// decoding or applying it (it counts the items by their "action" key): the
// peer's work is done elsewhere, as a second server's is, so the burst's
// time measures the pipeline, not how this machine's cores are shared.
func remotePeer(b *testing.B) (url string, received func() int) {
	var (
		mu  sync.Mutex
		got int
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		n := bytes.Count(body, []byte(`"action":`))
		time.Sleep(remoteApply)
		rs := make([]compat.ReplicationResponse, n)
		for i := range rs {
			rs[i].StatusCode = http.StatusOK
		}
		w.Header().Set("Content-Type", compat.ContentTypeJSON)
		w.Write(compat.AppendReplicationResponses(nil, rs))
		mu.Lock()
		got += n
		mu.Unlock()
	}))
	b.Cleanup(srv.Close)
	return srv.URL + "/eureka/", func() int { mu.Lock(); defer mu.Unlock(); return got }
}

// burst sends n registrations to a fresh peer with k batches in flight, and
// measures, just before, the time the sender alone needs to encode them.
func burst(b *testing.B, n, k int, remote bool) {
	items := registrations(n)
	var total, enc, cpu time.Duration
	for range b.N {
		b.StopTimer()
		var url string
		var received func() int
		if remote {
			url, received = remotePeer(b)
		} else {
			fake := peertest.New(b)
			url, received = fake.ServiceURL(), fake.Registry().Size
		}
		var rep *Replicator
		reg := registry.New(registry.Options{OnEvent: func(e registry.Event) { rep.OnEvent(e) }})
		rep = New(Config{Seed: 1, MaxBatchesInFlight: k, MaxElementsInPeerReplicationPool: 2 * n},
			reg, []Peer{mustPeer(b, url)})
		now := time.Now()
		for i := range n {
			if _, err := reg.Register(instance(fmt.Sprint("APP", i%2000), fmt.Sprint("i-", i), now), false); err != nil {
				b.Fatal(err)
			}
		}
		runtime.GC()
		enc += encodeTime(items)
		runtime.GC()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		b.StartTimer()
		start, cpu0 := time.Now(), cpuTime(b)
		go func() { rep.Run(ctx); close(done) }()
		for received() < n {
			time.Sleep(time.Millisecond)
		}
		total += time.Since(start)
		cpu += cpuTime(b) - cpu0
		b.StopTimer()
		for rep.Status()[0].ItemsSent < uint64(n) { // the last answers
			time.Sleep(time.Millisecond)
		}
		cancel()
		<-done
		if st := rep.Status()[0]; st.ItemsSent != uint64(n) || st.Resyncs != 0 || st.Dropped != 0 {
			b.Fatalf("status %+v", st)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64((enc/time.Duration(b.N)).Microseconds())/1000, "encode-ms")
	b.ReportMetric(float64(total)/float64(enc), "x-encode")
	b.ReportMetric(float64((cpu/time.Duration(b.N)).Microseconds())/1000, "cpu-ms")
	b.ReportMetric(float64(cpu)/float64(total), "cores")
}

// registrations are n Register items as the sender sends them.
func registrations(n int) []compat.ReplicationItem {
	items := make([]compat.ReplicationItem, n)
	for i := range items {
		in := instance(fmt.Sprint("APP", i%2000), fmt.Sprint("i-", i), time.Now())
		v := registry.LeaseView{Instance: in, Duration: 90 * time.Second, RenewalInterval: 30 * time.Second}
		items[i] = compat.ReplicationItem{Action: compat.ActionRegister, AppName: in.App, ID: in.InstanceID,
			Instance: &v, Status: string(in.Status)}
		setDirty(&items[i], in)
	}
	return items
}

// encodeTime is the time to encode items as batches of 250, one batch
// after the other, as the sender's client does.
func encodeTime(items []compat.ReplicationItem) time.Duration {
	start := time.Now()
	for i := 0; i < len(items); i += 250 {
		compat.AppendReplicationList(nil, items[i:min(i+250, len(items))])
	}
	return time.Since(start)
}

func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
