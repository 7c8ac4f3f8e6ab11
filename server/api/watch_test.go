package api

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/goreka/goreka/registry"
	"github.com/goreka/goreka/registry/clocktest"
	"github.com/goreka/goreka/server/api/wire"
)

type sseEvent struct {
	id    int64
	event string
	data  string
}

// readSSE reads one event, skipping comment lines.
func readSSE(r *bufio.Reader) (sseEvent, error) {
	var ev sseEvent
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return ev, err
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case line == "":
			if ev.event != "" {
				return ev, nil
			}
		case strings.HasPrefix(line, ":"):
		case strings.HasPrefix(line, "id: "):
			ev.id, _ = strconv.ParseInt(line[4:], 10, 64)
		case strings.HasPrefix(line, "event: "):
			ev.event = line[7:]
		case strings.HasPrefix(line, "data: "):
			ev.data = line[6:]
		default:
			return ev, fmt.Errorf("unexpected line %q", line)
		}
	}
}

func decode[T any](t *testing.T, s string) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("%v in %s", err, s)
	}
	return v
}

type watcher struct {
	t    *testing.T
	resp *http.Response
	r    *bufio.Reader
}

func (f *fixture) watch(query string, header http.Header) *watcher {
	f.t.Helper()
	req, _ := http.NewRequestWithContext(f.t.Context(), "GET", f.srv.URL+Prefix+"/watch"+query, nil)
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		f.t.Fatalf("watch: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	w := &watcher{t: f.t, resp: resp, r: bufio.NewReader(resp.Body)}
	f.t.Cleanup(func() { resp.Body.Close() })
	return w
}

func (w *watcher) next() sseEvent {
	w.t.Helper()
	ev, err := readSSE(w.r)
	if err != nil {
		w.t.Fatal(err)
	}
	return ev
}

func (w *watcher) change(kind, id string, rev int64) wire.Change {
	w.t.Helper()
	ev := w.next()
	ch := decode[wire.Change](w.t, ev.data)
	if ev.event != "change" || ev.id != rev || ch.Revision != rev || ch.Kind != kind || ch.ID != id {
		w.t.Fatalf("got %s id %d %+v, want change %d %s %s", ev.event, ev.id, ch, rev, kind, id)
	}
	return ch
}

func TestWatchSnapshotThenChanges(t *testing.T) {
	f := newFixture(t, Config{})
	f.register(inst("A", "a1"))
	f.register(inst("B", "b1"))
	w := f.watch("", nil)
	ev := w.next()
	snap := decode[wire.Snapshot](t, ev.data)
	if ev.event != "snapshot" || ev.id != 2 || snap.Revision != 2 || len(snap.Instances) != 2 ||
		snap.Instances[0].ID != "a1" || snap.Instances[1].ID != "b1" {
		t.Fatalf("snapshot: %s %d %+v", ev.event, ev.id, snap)
	}
	f.register(inst("A", "a2"))                                                             // 3
	f.reg.StatusUpdate("A", "a1", registry.StatusOutOfService, time.Time{}, false)          // 4
	f.reg.StatusUpdate("A", "a1", registry.StatusOutOfService, time.Time{}, false)          // 5: changes nothing
	f.reg.Renew(registry.RenewRequest{App: "A", ID: "a2"})                                  // a heartbeat: no revision
	f.reg.Cancel("B", "b1", false)                                                          // 6
	f.reg.DeleteStatusOverride("A", "a1", registry.StatusUp, time.Time{}, false)            // 7
	if _, err := f.reg.UpdateMetadata("A", "a2", map[string]string{"k": "v"}); err != nil { // 8
		t.Fatal(err)
	}
	w.change("register", "a2", 3)
	ch := w.change("status-update", "a1", 4)
	if ch.PrevStatus != registry.StatusUp || ch.Instance.Status != registry.StatusOutOfService || ch.Instance.OverriddenStatus != registry.StatusOutOfService {
		t.Errorf("status update: %+v", ch)
	}
	ch = w.change("cancel", "b1", 6)
	if ch.Instance.Lease.Evicted == "" || ch.Instance.Lifecycle != "" {
		t.Errorf("cancel: %+v", ch.Instance)
	}
	w.change("delete-status-override", "a1", 7)
	if ch := w.change("register", "a2", 8); ch.Instance.Metadata["k"] != "v" {
		t.Errorf("metadata update: %+v", ch.Instance)
	}
}

func TestWatchResume(t *testing.T) {
	f := newFixture(t, Config{History: 3})
	for i := range 6 {
		f.register(inst("A", fmt.Sprintf("a%d", i))) // revisions 1..6
	}
	// Retained: 4, 5, 6; since=3 has everything after it.
	w := f.watch("?since=3", nil)
	w.change("register", "a3", 4)
	w.change("register", "a4", 5)
	w.change("register", "a5", 6)
	f.register(inst("A", "a6"))
	w.change("register", "a6", 7)

	// An EventSource reconnecting sends Last-Event-ID.
	w = f.watch("", http.Header{"Last-Event-ID": {"6"}})
	w.change("register", "a6", 7)
	// ... to its original URL: the header is further along and wins.
	w = f.watch("?since=4", http.Header{"Last-Event-ID": {"6"}})
	w.change("register", "a6", 7)

	// Too old (5 is retained, 4 no longer), the future (another server or
	// a restart) and 0 start with a snapshot.
	for _, q := range []string{"?since=3", "?since=99", "?since=0"} {
		w = f.watch(q, nil)
		if ev := w.next(); ev.event != "snapshot" || ev.id != 7 || len(decode[wire.Snapshot](t, ev.data).Instances) != 7 {
			t.Errorf("%s: %s %d", q, ev.event, ev.id)
		}
	}
	// Up to date: nothing until the next change.
	w = f.watch("?since=7", nil)
	f.register(inst("A", "a7"))
	w.change("register", "a7", 8)
}

// blockingWriter is a response writer whose client stops reading after
// the first write, until released: the watcher's subscription overflows.
type blockingWriter struct {
	hdr     http.Header
	mu      sync.Mutex
	buf     bytes.Buffer
	writes  int
	blocked chan struct{} // closed when a write blocks
	release chan struct{}
}

func (w *blockingWriter) Header() http.Header { return w.hdr }
func (w *blockingWriter) WriteHeader(int)     {}
func (w *blockingWriter) Flush()              {}
func (w *blockingWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	w.writes++
	n := w.writes
	w.mu.Unlock()
	if n == 2 {
		close(w.blocked)
		<-w.release
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(p)
}

func TestWatchSlowReaderIsCutOffWithResumeRevision(t *testing.T) {
	f := newFixture(t, Config{Buffer: 2})
	f.register(inst("A", "a0")) // 1
	bw := &blockingWriter{hdr: http.Header{}, blocked: make(chan struct{}), release: make(chan struct{})}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.eng.ServeHTTP(bw, httptest.NewRequest("GET", Prefix+"/watch", nil))
	}()
	// The snapshot is written; wait for the subscription to be in place
	// (the first change after it blocks the writer), then write much more
	// than the buffer holds. The registry is not slowed by the stuck
	// reader: every write returns.
	waitFor(t, func() bool { return f.reg.Revision() == 1 && bw.snapshotWritten() })
	f.register(inst("A", "a1")) // 2: the write that blocks
	<-bw.blocked
	for i := 2; i <= 10; i++ {
		f.register(inst("A", fmt.Sprintf("a%d", i))) // 3..11
	}
	close(bw.release)
	<-done

	r := bufio.NewReader(bytes.NewReader(bw.buf.Bytes()))
	var got []int64
	var resume int64
	for {
		ev, err := readSSE(r)
		if err != nil {
			break
		}
		switch ev.event {
		case "snapshot":
		case "change":
			got = append(got, ev.id)
		case "lagged":
			resume = decode[wire.Lagged](t, ev.data).Revision
			if ev.id != resume {
				t.Errorf("lagged id %d, revision %d", ev.id, resume)
			}
		}
	}
	if resume == 0 || resume >= 11 || len(got) == 0 || got[len(got)-1] != resume {
		t.Fatalf("changes %v, resume at %d", got, resume)
	}
	// Resuming from the revision the cut-off named delivers the rest.
	w := f.watch("?since="+strconv.FormatInt(resume, 10), nil)
	for rev := resume + 1; rev <= 11; rev++ {
		got = append(got, w.next().id)
	}
	for i, rev := range got {
		if rev != int64(i+2) {
			t.Fatalf("revisions %v: want 2..11 once each", got)
		}
	}
}

func (w *blockingWriter) snapshotWritten() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.writes >= 1
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached")
		}
		time.Sleep(time.Millisecond)
	}
}

// TestWatchDeliversEveryChangeOnceInOrder is the watch's property: under
// concurrent writers, a watcher that starts from a snapshot and resumes
// after every cut-off receives each change after the snapshot exactly once,
// in revision order, and snapshot + changes is the registry's final state.
func TestWatchDeliversEveryChangeOnceInOrder(t *testing.T) {
	for _, buffer := range []int{1, 4, 1024} {
		t.Run(fmt.Sprintf("buffer=%d", buffer), func(t *testing.T) { watchProperty(t, buffer) })
	}
}

func watchProperty(t *testing.T, buffer int) {
	var (
		mu       sync.Mutex
		recorded []registry.Event
	)
	f := &fixture{t: t, clock: clocktest.New(epoch)}
	f.reg = registry.New(registry.Options{Now: f.clock.Now, OnEvent: func(e registry.Event) {
		f.api.OnEvent(e)
		if e.Changed {
			mu.Lock()
			recorded = append(recorded, e)
			mu.Unlock()
		}
	}})
	f.api = New(f.reg, Config{Now: f.clock.Now, Buffer: buffer, History: 100_000})
	f.eng = gin.New()
	f.api.Mount(f.eng)
	f.srv = httptest.NewServer(f.eng)
	t.Cleanup(f.srv.Close)
	for i := range 5 {
		f.register(inst("A", fmt.Sprintf("seed%d", i)))
	}

	// Only the watcher goroutine touches these until it reports on done.
	var (
		snapRev int64
		state   map[string]registry.Status
		changes []wire.Change
		lags    int
	)
	snapCh := make(chan int64, 1)
	totalCh := make(chan int, 1) // how many changes follow the snapshot
	done := make(chan error, 1)
	go func() {
		since, total := int64(0), -1
		for {
			req, _ := http.NewRequestWithContext(t.Context(), "GET", fmt.Sprintf("%s%s/watch?since=%d", f.srv.URL, Prefix, since), nil)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				done <- err
				return
			}
			r := bufio.NewReader(resp.Body)
		stream:
			for {
				ev, err := readSSE(r)
				if err != nil {
					resp.Body.Close()
					done <- fmt.Errorf("stream ended without a cut-off: %v", err)
					return
				}
				switch ev.event {
				case "lagged":
					lags++
					since = decode[wire.Lagged](t, ev.data).Revision
					break stream
				case "snapshot":
					if state != nil {
						done <- fmt.Errorf("a snapshot on resuming at %d: the history covers it", since)
						return
					}
					s := decode[wire.Snapshot](t, ev.data)
					snapRev, state = s.Revision, map[string]registry.Status{}
					for _, in := range s.Instances {
						state[in.App+"/"+in.ID] = in.Status
					}
					snapCh <- snapRev
				case "change":
					changes = append(changes, decode[wire.Change](t, ev.data))
				}
				if total < 0 {
					select {
					case total = <-totalCh:
					default:
					}
				}
				if total >= 0 && len(changes) >= total {
					resp.Body.Close()
					done <- nil
					return
				}
			}
			resp.Body.Close()
		}
	}()

	// Half the writes race the watcher's snapshot, half follow it.
	snapped := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for i := range 300 {
				if i == 150 {
					<-snapped
				}
				app := []string{"A", "B"}[rng.IntN(2)]
				id := fmt.Sprintf("i%d", rng.IntN(10))
				switch rng.IntN(5) {
				case 0, 1:
					f.reg.Register(inst(app, id), false)
				case 2:
					f.reg.Cancel(app, id, false)
				case 3:
					f.reg.StatusUpdate(app, id, []registry.Status{registry.StatusUp, registry.StatusDown}[rng.IntN(2)], time.Time{}, false)
				case 4:
					f.reg.UpdateMetadata(app, id, map[string]string{"n": strconv.Itoa(rng.IntN(3))})
				}
			}
		})
	}
	var snap int64
	select {
	case snap = <-snapCh:
	case err := <-done:
		t.Fatal(err)
	}
	close(snapped)
	wg.Wait()
	// One more change after the count is known wakes a watcher that has
	// everything else already.
	mu.Lock()
	total := 1
	for _, e := range recorded {
		if e.Revision > snap {
			total++
		}
	}
	mu.Unlock()
	totalCh <- total
	f.register(inst("C", "last"))

	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the watcher did not receive every change")
	}
	mu.Lock()
	var want []registry.Event
	for _, e := range recorded {
		if e.Revision > snapRev {
			want = append(want, e)
		}
	}
	mu.Unlock()
	if len(changes) != len(want) {
		t.Fatalf("%d changes received, %d made after the snapshot at %d", len(changes), len(want), snapRev)
	}
	for i, e := range want {
		c := changes[i]
		if c.Revision != e.Revision || c.App != e.App || c.ID != e.ID || c.Kind != kindNames[e.Kind] {
			t.Fatalf("change %d: got %d %s %s/%s, want %d %s %s/%s", i, c.Revision, c.Kind, c.App, c.ID, e.Revision, e.Kind, e.App, e.ID)
		}
		k := c.App + "/" + c.ID
		if e.Kind.Removal() {
			delete(state, k)
		} else {
			state[k] = c.Instance.Status
		}
	}
	final := map[string]registry.Status{}
	for _, app := range f.reg.Applications().Apps {
		for _, v := range app.Instances {
			final[app.Name+"/"+v.Instance.ID()] = v.Instance.Status
		}
	}
	if fmt.Sprint(final) != fmt.Sprint(state) {
		t.Fatalf("snapshot + changes:\n%v\nregistry:\n%v", state, final)
	}
	t.Logf("snapshot at %d, %d changes, %d cut-offs resumed", snapRev, len(want), lags)
}

func TestChangesLongPoll(t *testing.T) {
	f := newFixture(t, Config{History: 2})
	f.register(inst("A", "a1"))
	f.register(inst("A", "a2"))
	f.register(inst("A", "a3"))
	var ans wire.ChangesAnswer
	f.get(Prefix+"/changes", &ans)
	if ans.Snapshot == nil || ans.Revision != 3 || ans.Snapshot.Revision != 3 || len(ans.Snapshot.Instances) != 3 || len(ans.Changes) != 0 {
		t.Fatalf("since=0: %+v", ans)
	}
	ans = wire.ChangesAnswer{}
	f.get(Prefix+"/changes?since=1", &ans)
	if ans.Snapshot != nil || ans.Revision != 3 || len(ans.Changes) != 2 || ans.Changes[0].ID != "a2" || ans.Changes[1].ID != "a3" {
		t.Fatalf("since=1: %+v", ans)
	}
	ans = wire.ChangesAnswer{}
	f.get(Prefix+"/changes?since=0&wait=0s", &ans)
	if ans.Snapshot == nil {
		t.Fatal("since=0 with wait=0s: no snapshot")
	}

	// Nothing new yet: the poll waits for the next change, made while it
	// waits (or just before it subscribed: it is then in the history).
	res := make(chan wire.ChangesAnswer)
	go func() {
		var a wire.ChangesAnswer
		f.get(Prefix+"/changes?since=3&wait=1m", &a)
		res <- a
	}()
	f.reg.StatusUpdate("A", "a1", registry.StatusUp, time.Time{}, false) // 4: changes nothing, not an answer
	f.reg.Cancel("A", "a2", false)                                       // 5
	ans = <-res
	if ans.Revision != 5 || len(ans.Changes) != 1 || ans.Changes[0].Kind != "cancel" || ans.Changes[0].Revision != 5 {
		t.Fatalf("long poll: %+v", ans)
	}
}

// TestChangesWaitTimesOut runs the long poll in a synctest bubble: the
// wait elapses on the bubble's clock, no test time passes.
func TestChangesWaitTimesOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var a *API
		reg := registry.New(registry.Options{OnEvent: func(e registry.Event) { a.OnEvent(e) }})
		a = New(reg, Config{})
		eng := gin.New()
		a.Mount(eng)
		if _, err := reg.Register(inst("A", "a1"), false); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		rec := httptest.NewRecorder()
		req := httptest.NewRequestWithContext(context.Background(), "GET", Prefix+"/changes?since=1&wait=30s", nil)
		eng.ServeHTTP(rec, req)
		if took := time.Since(start); took != 30*time.Second {
			t.Errorf("answered after %s, want the 30s wait", took)
		}
		ans := decode[wire.ChangesAnswer](t, rec.Body.String())
		if rec.Code != 200 || ans.Revision != 1 || len(ans.Changes) != 0 || ans.Snapshot != nil {
			t.Errorf("%d %+v", rec.Code, ans)
		}
	})
}
