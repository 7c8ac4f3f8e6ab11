package eurekahttp

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/goreka/goreka/compat"
	"github.com/goreka/goreka/internal/proctest"
	"github.com/goreka/goreka/registry"
)

// registryBody is a JSON full registry of n instances.
func registryBody(n int) []byte {
	app := registry.Application{Name: "ORDERS"}
	for i := range n {
		in := &registry.Instance{InstanceID: fmt.Sprintf("o%d", i), App: "ORDERS", HostName: "h", Status: registry.StatusUp}
		app.Instances = append(app.Instances, registry.LeaseView{Instance: in})
	}
	apps := &registry.Applications{VersionDelta: 1, Apps: []registry.Application{app}}
	apps.HashCode = apps.ReconcileHashCode()
	return compat.AppendApplications(nil, compat.JSON, false, apps)
}

// streaming answers with body in pieces, waiting gap between them; stallAt
// >= 0 stops sending after that many pieces until the client gives up.
func streaming(t *testing.T, body []byte, pieces int, gap time.Duration, stallAt int, gz bool) *httptest.Server {
	t.Helper()
	if gz {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		zw.Write(body)
		zw.Close()
		body = buf.Bytes()
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", compat.ContentTypeJSON)
		if gz {
			w.Header().Set("Content-Encoding", "gzip")
		}
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		size := (len(body) + pieces - 1) / pieces
		for i := 0; len(body) > 0; i++ {
			if i == stallAt {
				<-r.Context().Done()
				return
			}
			n := min(len(body), size)
			w.Write(body[:n])
			w.(http.Flusher).Flush()
			body = body[n:]
			time.Sleep(gap)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func endpoint(t *testing.T, srv *httptest.Server) Endpoint {
	t.Helper()
	return mustParseURL(t, srv.URL+"/eureka")
}

// mustParseURL is ParseURL(u), failing the test on an error.
func mustParseURL(t *testing.T, u string) Endpoint {
	t.Helper()
	ep, err := ParseURL(u)
	if err != nil {
		t.Fatal(err)
	}
	return ep
}

// TestReadTimeoutIsPerRead: the read timeout bounds each wait for bytes
// (Java's socket read timeout), the headers' and every read of the body's,
// and not the whole call: a body that keeps streaming for several read
// timeouts is read to its end, a stalled one fails after one read timeout,
// plain or gzip.
func TestReadTimeoutIsPerRead(t *testing.T) {
	t.Parallel()
	const read = 250 * time.Millisecond
	body := registryBody(200)
	hung := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	t.Cleanup(hung.Close)
	tests := []struct {
		name string
		srv  *httptest.Server
		ok   bool
	}{
		// 16 pieces 50 ms apart: 800 ms, over three read timeouts.
		{"streaming body", streaming(t, body, 16, 50*time.Millisecond, -1, false), true},
		{"streaming gzip body", streaming(t, body, 16, 50*time.Millisecond, -1, true), true},
		{"no headers", hung, false},
		{"stalled body", streaming(t, body, 16, 10*time.Millisecond, 4, false), false},
		{"stalled gzip body", streaming(t, body, 16, 10*time.Millisecond, 4, true), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := New(Config{ReadTimeout: read, AcceptGzip: true})
			start := time.Now()
			apps, err := c.GetApplications(t.Context(), endpoint(t, tc.srv), Full)
			took := time.Since(start)
			if tc.ok {
				if err != nil || len(apps.Apps) != 1 || len(apps.Apps[0].Instances) != 200 {
					t.Fatalf("GetApplications = %v, %v; want the whole registry", apps, err)
				}
				return
			}
			if !errors.Is(err, ErrReadTimeout) {
				t.Fatalf("err = %v, want ErrReadTimeout", err)
			}
			var ne net.Error
			if !errors.As(err, &ne) || !ne.Timeout() || errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("err %v: a net.Error timeout that is not a context deadline, want", err)
			}
			if took > 10*time.Second {
				t.Errorf("gave up after %v with a read timeout of %v", took, read)
			}
		})
	}
}

// TestContextBoundsTheCall: a deadline of the caller ends a call that the
// read timeout would let run, as context.DeadlineExceeded.
func TestContextBoundsTheCall(t *testing.T) {
	t.Parallel()
	srv := streaming(t, registryBody(50), 20, 50*time.Millisecond, -1, false)
	c := New(Config{ReadTimeout: time.Minute})
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	if _, err := c.GetApplications(ctx, endpoint(t, srv), Full); !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrReadTimeout) {
		t.Fatalf("err = %v, want context.DeadlineExceeded", err)
	}
}

// recorder answers every call with status and body and keeps the requests.
type recorder struct {
	mu     sync.Mutex
	reqs   []*http.Request
	bodies [][]byte
	status int
	body   []byte
	gz     bool // gzip the answer when asked to
}

func (rec *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err == nil {
			b, _ = io.ReadAll(zr)
		}
	}
	rec.mu.Lock()
	rec.reqs = append(rec.reqs, r)
	rec.bodies = append(rec.bodies, b)
	status, body := rec.status, rec.body
	rec.mu.Unlock()
	if rec.gz && strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		zw.Write(body)
		zw.Close()
		body = buf.Bytes()
		w.Header().Set("Content-Encoding", "gzip")
	}
	w.WriteHeader(status)
	w.Write(body)
}

func TestHeadersCredentialsAndGzip(t *testing.T) {
	t.Parallel()
	rec := &recorder{status: http.StatusOK, body: registryBody(3), gz: true}
	srv := httptest.NewServer(rec)
	t.Cleanup(srv.Close)
	ep := mustParseURL(t, strings.Replace(srv.URL, "http://", "http://admin:s:cret@", 1)+"/eureka?x=1#f")
	if ep.URL != srv.URL+"/eureka/" || fmt.Sprintf("%v %+v", ep, ep) != ep.URL+" "+ep.URL {
		t.Fatalf("endpoint %q printed %v", ep.URL, ep)
	}
	for _, gz := range []bool{false, true} {
		c := New(Config{UserAgent: "test-agent", AcceptGzip: gz, CompressBatches: true})
		apps, err := c.GetApplications(t.Context(), ep, Delta)
		if err != nil || len(apps.Apps[0].Instances) != 3 {
			t.Fatalf("gzip %v: %v, %v", gz, apps, err)
		}
		if _, err := c.PostBatch(t.Context(), ep, nil); err == nil {
			t.Fatal("a registry body decoded as batch answers")
		} else if !errors.Is(err, ErrBadResponse) {
			t.Fatalf("batch answered with a registry: %v, want ErrBadResponse", err)
		}
	}
	want := "Basic " + base64.StdEncoding.EncodeToString([]byte("admin:s:cret"))
	for i, r := range rec.reqs {
		h := r.Header
		if h.Get("Authorization") != want || h.Get("DiscoveryIdentity-Name") != "DefaultServer" ||
			h.Get("DiscoveryIdentity-Version") != "1.0" || h.Get("Accept") != "application/json" || h.Get("User-Agent") != "test-agent" {
			t.Errorf("request %d headers %v", i, h)
		}
		if gz := i >= 2; (h.Get("Accept-Encoding") == "gzip") != gz {
			t.Errorf("request %d Accept-Encoding %q", i, h.Get("Accept-Encoding"))
		}
	}
	if p := rec.reqs[0].URL.Path; p != "/eureka/apps/delta" {
		t.Errorf("delta path %q", p)
	}
	if r := rec.reqs[1]; r.URL.Path != "/eureka/peerreplication/batch/" || r.Header.Get("Content-Encoding") != "gzip" ||
		r.Header.Get("Content-Type") != "application/json" || string(rec.bodies[1]) != `{"replicationList":[]}` {
		t.Errorf("batch %s %v body %q", r.URL.Path, r.Header, rec.bodies[1])
	}
	if ep, _ := ParseURL("http://admin@h/eureka/"); ep.Authorization != "" {
		t.Errorf("user without password sends %q", ep.Authorization)
	}
	for _, bad := range []string{"ftp://h/eureka/", "http:///eureka/", "://x"} {
		if _, err := ParseURL(bad); err == nil {
			t.Errorf("ParseURL(%q) accepted", bad)
		}
	}
}

func TestStatusAndBodyErrors(t *testing.T) {
	t.Parallel()
	rec := &recorder{status: http.StatusServiceUnavailable}
	srv := httptest.NewServer(rec)
	t.Cleanup(srv.Close)
	ep := endpoint(t, srv)
	c := New(Config{})
	var se *StatusError
	if _, err := c.GetApplications(t.Context(), ep, Full); !errors.As(err, &se) || se.Code != 503 || se.URL != ep.URL+"apps/" ||
		err.Error() != "GET "+ep.URL+"apps/ answered 503" {
		t.Fatalf("503: %v", err)
	}
	rec.mu.Lock()
	rec.status, rec.body = http.StatusOK, []byte("not json")
	rec.mu.Unlock()
	if _, err := c.GetApplications(t.Context(), ep, Full); !errors.Is(err, ErrBadResponse) {
		t.Fatalf("garbage: %v", err)
	}
	rec.mu.Lock()
	rec.body = bytes.Repeat([]byte("x"), 100)
	rec.mu.Unlock()
	if _, _, err := c.do(t.Context(), ep, http.MethodGet, "apps/", nil, false, 99, is(200)); !errors.Is(err, ErrBadResponse) {
		t.Fatalf("body over the limit: %v", err)
	}
	if code, b, err := c.do(t.Context(), ep, http.MethodGet, "apps/", nil, false, 100, is(200)); err != nil || code != 200 || len(b) != 100 {
		t.Fatalf("body at the limit: %d %d %v", code, len(b), err)
	}
}

func TestInstanceCalls(t *testing.T) {
	t.Parallel()
	rec := &recorder{status: http.StatusNoContent}
	srv := httptest.NewServer(rec)
	t.Cleanup(srv.Close)
	ep := endpoint(t, srv)
	c := New(Config{})
	in := &registry.Instance{InstanceID: "h:a b", App: "SVC", HostName: "h", Status: registry.StatusUp,
		LastDirtyTimestamp: time.UnixMilli(1_700_000_000_123)}
	if err := c.Register(t.Context(), ep, &registry.LeaseView{Instance: in}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		status int
		found  bool
		err    bool
	}{{200, true, false}, {404, false, false}, {500, false, true}} {
		rec.mu.Lock()
		rec.status = tc.status
		rec.mu.Unlock()
		found, err := c.Renew(t.Context(), ep, in)
		if found != tc.found || (err != nil) != tc.err {
			t.Errorf("renew answered %d: found %v err %v", tc.status, found, err)
		}
		if err := c.Cancel(t.Context(), ep, in.App, in.ID()); (err != nil) != tc.err {
			t.Errorf("cancel answered %d: %v", tc.status, err)
		}
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if r := rec.reqs[0]; r.Method != http.MethodPost || r.URL.Path != "/eureka/apps/SVC" || !bytes.Contains(rec.bodies[0], []byte(`"instanceId":"h:a b"`)) {
		t.Errorf("register %s %s %s", r.Method, r.URL.Path, rec.bodies[0])
	}
	if r := rec.reqs[1]; r.Method != http.MethodPut || r.URL.EscapedPath() != "/eureka/apps/SVC/h:a%20b" ||
		r.URL.RawQuery != "lastDirtyTimestamp=1700000000123&status=UP" {
		t.Errorf("renew %s %s?%s", r.Method, r.URL.EscapedPath(), r.URL.RawQuery)
	}
	if r := rec.reqs[2]; r.Method != http.MethodDelete || r.URL.Path != "/eureka/apps/SVC/h:a b" {
		t.Errorf("cancel %s %s", r.Method, r.URL.Path)
	}
}

// deaf is a peer that accepts connections and never reads from them
// (a peer hung with its socket open).
func deaf(t *testing.T) Endpoint {
	t.Helper()
	return mustParseURL(t, "http://"+proctest.Deaf(t)+"/eureka/")
}

// TestReadTimeoutBoundsWrites: writing a request to a peer that does not
// read fails after about one read timeout without progress, as a write
// on a socket with a timeout, not when the caller's context ends: a body
// of many MB (more than the socket buffers hold) to a hung peer.
func TestReadTimeoutBoundsWrites(t *testing.T) {
	t.Parallel()
	const read = 200 * time.Millisecond
	ep := deaf(t)
	c := New(Config{ReadTimeout: read})
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
	defer cancel()
	start := time.Now()
	_, _, err := c.Do(ctx, ep, http.MethodPost, "peerreplication/batch/", bytes.Repeat([]byte("x"), 32<<20))
	took := time.Since(start)
	if !errors.Is(err, ErrReadTimeout) {
		t.Fatalf("err = %v after %v, want ErrReadTimeout", err, took)
	}
	if took > 10*time.Second {
		t.Errorf("gave up after %v with a read timeout of %v", took, read)
	}
}

// TestSlowWriteIsNotCut: a peer that reads a large request slowly but
// steadily, for several read timeouts in all, gets it whole: the read
// timeout bounds each wait for progress, not the write.
func TestSlowWriteIsNotCut(t *testing.T) {
	t.Parallel()
	const read, size = 250 * time.Millisecond, 24 << 20
	// A small receive buffer, so that the client's write waits for the
	// handler's reads (at most its send buffer, 4 MB on Linux, is ahead).
	lc := net.ListenConfig{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		err := rc.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 64<<10) })
		return cmp.Or(err, serr)
	}}
	ln, err := lc.Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// 1 MB every 40 ms (18 MB: 720 ms, about three read timeouts), then
		// the rest at once: what is left once the client's write is done
		// comes without delay.
		n := int64(0)
		for n < size-6<<20 {
			m, err := io.CopyN(io.Discard, r.Body, 1<<20)
			n += m
			if err != nil {
				break
			}
			time.Sleep(40 * time.Millisecond)
		}
		m, _ := io.Copy(io.Discard, r.Body)
		fmt.Fprint(w, n+m)
	}))
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	start := time.Now()
	code, b, err := New(Config{ReadTimeout: read}).Do(t.Context(), endpoint(t, srv), http.MethodPost, "x", bytes.Repeat([]byte("x"), size))
	if err != nil || code != 200 || string(b) != fmt.Sprint(size) {
		t.Fatalf("slow reader: %d %q %v after %v", code, b, err, time.Since(start))
	}
}

// fakeClock runs the watchdog's timers on time that only Advance moves.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Duration
	timers []*fakeTimer
}

type fakeTimer struct {
	c  *fakeClock
	at time.Duration
	on bool
	f  func()
}

func (c *fakeClock) AfterFunc(d time.Duration, f func()) timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{c: c, at: c.now + d, on: true, f: f}
	c.timers = append(c.timers, t)
	return t
}

func (t *fakeTimer) Reset(d time.Duration) bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := t.on
	t.at, t.on = t.c.now+d, true
	return was
}

func (t *fakeTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := t.on
	t.on = false
	return was
}

// Advance moves the time by d and runs the timers that came due.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now += d
	var due []func()
	for _, t := range c.timers {
		if t.on && t.at <= c.now {
			t.on = false
			due = append(due, t.f)
		}
	}
	c.mu.Unlock()
	for _, f := range due {
		f()
	}
}

// TestRetryIsNotUnderTheLastTimer: Go's transport retries a GET on a
// kept-alive connection the server closed; the new connection's dial and
// handshake are the connect timeout's, and the read timeout armed by the
// first attempt must not run through them into a false ErrReadTimeout.
func TestRetryIsNotUnderTheLastTimer(t *testing.T) {
	t.Parallel()
	const read = time.Second
	body := registryBody(3)
	var mu sync.Mutex
	served := map[string]int{} // requests by connection
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		served[r.RemoteAddr]++
		n := served[r.RemoteAddr]
		mu.Unlock()
		if n == 2 {
			// The second request on a connection: closed unanswered, as a
			// server's idle timeout does just as the client writes.
			c, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				c.Close()
			}
			return
		}
		w.Write(body)
	}))
	t.Cleanup(srv.Close)
	clock := &fakeClock{}
	var dials int
	d := &net.Dialer{}
	tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		mu.Lock()
		dials++
		slow := dials == 2
		mu.Unlock()
		if slow {
			// The retry's dial takes longer than the read timeout.
			clock.Advance(3 * read)
		}
		return d.DialContext(ctx, network, addr)
	}}
	t.Cleanup(tr.CloseIdleConnections)
	c := New(Config{ReadTimeout: read, HTTPClient: &http.Client{Transport: tr}})
	c.afterFunc = clock.AfterFunc
	ep := endpoint(t, srv)
	for i := range 2 {
		if _, err := c.GetApplications(t.Context(), ep, Full); err != nil {
			t.Fatalf("fetch %d: %v", i, err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if dials != 2 {
		t.Fatalf("%d dials, want 2 (the second fetch retried on a new connection)", dials)
	}
}

// TestContentLengthDoesNotSizeTheBuffer: a large or false Content-Length
// (times 24 for gzip) does not allocate its size before the bytes arrive:
// the buffer is sized at most to maxPresize, then grows with what comes.
// Not parallel: it counts the bytes allocated.
func TestContentLengthDoesNotSizeTheBuffer(t *testing.T) {
	for _, tc := range []struct {
		name    string
		headers string
		body    string
	}{
		{"plain", "Content-Length: 1073741824\r\n", "{"},
		// 50 MiB of gzip, 1.2 GiB inflated by the guess; a gzip header.
		{"gzip", "Content-Length: 52428800\r\nContent-Encoding: gzip\r\n", "\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			c, bw, err := w.(http.Hijacker).Hijack()
			if err != nil {
				return
			}
			defer c.Close()
			fmt.Fprintf(bw, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n%s\r\n%s", tc.headers, tc.body)
			bw.Flush()
		}))
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := New(Config{}).GetApplications(t.Context(), endpoint(t, srv), Full)
		runtime.ReadMemStats(&after)
		srv.Close()
		if err == nil {
			t.Fatalf("%s: a cut body decoded", tc.name)
		}
		if got := after.TotalAlloc - before.TotalAlloc; got > 512<<20 {
			t.Errorf("%s: %d MiB allocated for a body of %d bytes", tc.name, got>>20, len(tc.body))
		}
	}
}

// TestRefusedAnswerIsNotRead: the body of an answer with a status the call
// does not take is not read (at most 64 KiB are discarded): a 503 that
// goes on sending, or sends broken gzip, is a *StatusError at once.
func TestRefusedAnswerIsNotRead(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/gz/") {
			w.Header().Set("Content-Encoding", "gzip")
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte("not gzip"))
			return
		}
		w.WriteHeader(http.StatusServiceUnavailable)
		w.Write(bytes.Repeat([]byte("x"), 1<<20))
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	t.Cleanup(srv.Close)
	c := New(Config{ReadTimeout: time.Minute})
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	var se *StatusError
	if _, err := c.GetApplications(ctx, endpoint(t, srv), Full); !errors.As(err, &se) || se.Code != 503 {
		t.Errorf("GET answered 503 and a long body: %v, want a *StatusError", err)
	}
	if _, err := c.PostBatch(ctx, endpoint(t, srv), nil); !errors.As(err, &se) || se.Code != 503 {
		t.Errorf("batch answered 503 and a long body: %v, want a *StatusError", err)
	}
	gz := mustParseURL(t, srv.URL+"/gz/eureka")
	if _, err := c.GetApplications(ctx, gz, Full); !errors.As(err, &se) || se.Code != 503 {
		t.Errorf("GET answered 503 and broken gzip: %v, want a *StatusError", err)
	}
}

// A goreka server names the revision of a registry document in
// X-Goreka-Revision; GetApplications returns it as the document's
// Revision (0 without the header, as from a stock server).
func TestGetApplicationsRevision(t *testing.T) {
	var header atomic.Value
	header.Store("41")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h := header.Load().(string); h != "" {
			w.Header().Set(RevisionHeader, h)
		}
		w.Header().Set(EpochHeader, "e1")
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"applications":{"versions__delta":"1","apps__hashcode":"","application":[]}}`)
	}))
	defer srv.Close()
	ep, _ := ParseURL(srv.URL + "/eureka/")
	c := New(Config{})
	for _, tc := range []struct {
		header string
		want   int64
	}{{"41", 41}, {"", 0}, {"junk", 0}} {
		header.Store(tc.header)
		for _, f := range []Fetch{Full, Delta} {
			apps, err := c.GetApplications(t.Context(), ep, f)
			if err != nil {
				t.Fatal(err)
			}
			if apps.Revision != tc.want {
				t.Errorf("header %q: Revision %d, want %d", tc.header, apps.Revision, tc.want)
			}
			// The epoch names the revision's sequence: none without a revision.
			if want := map[bool]string{true: "e1", false: ""}[tc.want > 0]; apps.Epoch != want {
				t.Errorf("header %q: Epoch %q, want %q", tc.header, apps.Epoch, want)
			}
		}
	}
}
