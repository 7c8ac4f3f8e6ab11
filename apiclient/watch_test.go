package apiclient

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/goreka/goreka/server/api/wire"
)

// The watch of a real API: a snapshot from 0, then every change in order;
// a consumer that stops closes the stream.
func TestWatchAgainstAPI(t *testing.T) {
	g := newGoreka(t, "", "")
	g.register("ORDERS", "o1")
	c := mustNew(t, g.srv.URL, WithHTTPClient(&http.Client{Timeout: time.Nanosecond})) // the watch ignores it
	var got []string
	for ev, err := range c.Watch(t.Context(), 0) {
		if err != nil {
			t.Fatal(err)
		}
		switch ev.Type {
		case wire.EventSnapshot:
			got = append(got, fmt.Sprintf("%d snapshot %d", ev.ID, len(ev.Snapshot.Instances)))
			g.register("ORDERS", "o2")
			g.register("ORDERS", "o3")
		case wire.EventChange:
			got = append(got, fmt.Sprintf("%d %s %s", ev.ID, ev.Change.Kind, ev.Change.ID))
		}
		if len(got) == 3 {
			break
		}
	}
	if w := "1 snapshot 1|2 register o2|3 register o3"; strings.Join(got, "|") != w {
		t.Errorf("watch: %q, want %q", strings.Join(got, "|"), w)
	}
	// From a revision: only what came after it.
	for ev, err := range c.Watch(t.Context(), 2) {
		if err != nil || ev.Change == nil || ev.Change.ID != "o3" || string(ev.Data) == "" {
			t.Fatalf("since 2: %v %+v", err, ev)
		}
		break
	}
}

// sseServer answers each watch connection with the next script, recording
// the since of each.
type sseServer struct {
	mu      sync.Mutex
	scripts []string
	since   []string
	hanging chan struct{} // a "hang" script has its connection
	srv     *httptest.Server
}

func newSSEServer(t *testing.T, scripts ...string) *sseServer {
	s := &sseServer{scripts: scripts, hanging: make(chan struct{}, len(scripts))}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.since = append(s.since, r.URL.Query().Get("since"))
		var script string
		if len(s.scripts) > 0 {
			script, s.scripts = s.scripts[0], s.scripts[1:]
		}
		s.mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		if script == "hang" {
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			s.hanging <- struct{}{}
			<-r.Context().Done()
			return
		}
		fmt.Fprint(w, script)
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func change(rev int64, id string) string {
	return fmt.Sprintf("id: %d\nevent: change\ndata: {\"revision\":%d,\"kind\":\"register\",\"app\":\"A\",\"id\":%q,\"instance\":{}}\n\n", rev, rev, id)
}

// A lagged event is delivered, then the watch reconnects from its
// revision; the end of the stream is a *StreamError saying where to resume.
func TestWatchResumesAfterLagged(t *testing.T) {
	s := newSSEServer(t,
		change(5, "a")+": keep-alive\n\n"+"id: 9\nevent: lagged\ndata: {\"revision\":9,\"reason\":\"behind\"}\n\n"+change(6, "never"),
		change(10, "b")+"event: novel\ndata: {}\n\n")
	c := mustNew(t, s.srv.URL)
	var got []string
	var last error
	for ev, err := range c.Watch(t.Context(), 4) {
		if err != nil {
			last = err
			break
		}
		got = append(got, fmt.Sprintf("%s %d", ev.Type, ev.ID))
	}
	if w := "change 5|lagged 9|change 10|novel 0"; strings.Join(got, "|") != w {
		t.Errorf("events %q, want %q", strings.Join(got, "|"), w)
	}
	if strings.Join(s.since, ",") != "4,9" {
		t.Errorf("connections since %q, want 4,9", s.since)
	}
	var se *StreamError
	if !errors.As(last, &se) || se.Err != nil || se.Revision != 10 || !strings.Contains(last.Error(), "the server ended the stream") {
		t.Errorf("end: %v, want a StreamError at revision 10", last)
	}
}

// An event that does not decode is yielded with the error that ends the
// watch.
func TestWatchBadEvent(t *testing.T) {
	s := newSSEServer(t, "event: change\ndata: {\"revision\":\"x\"}\n\n")
	for ev, err := range mustNew(t, s.srv.URL).Watch(t.Context(), 1) {
		var se *StreamError
		if ev.Type != wire.EventChange || ev.Change != nil || string(ev.Data) != `{"revision":"x"}` ||
			!errors.As(err, &se) || !strings.Contains(err.Error(), "bad change event") {
			t.Fatalf("bad event: %+v %v", ev, err)
		}
	}
}

// Cancelling the context ends a watch that waits for events, with an
// error that says so, and leaves no connection behind (the server's Close
// waits for them).
func TestWatchCancel(t *testing.T) {
	s := newSSEServer(t, "hang")
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		for _, err := range mustNew(t, s.srv.URL).Watch(ctx, 1) {
			done <- err
			return
		}
		done <- nil
	}()
	<-s.hanging
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("after cancel: %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the watch did not end")
	}
	s.srv.Close()
}

// silentStream answers the watch with a stream whose first connection sends
// one keep-alive and then nothing (a connection cut silently), and whose
// second is a change; a request's context ending closes its body, as the
// real transport does.
type silentStream struct {
	mu    sync.Mutex
	conns int
}

func (s *silentStream) RoundTrip(req *http.Request) (*http.Response, error) {
	s.mu.Lock()
	s.conns++
	n := s.conns
	s.mu.Unlock()
	pr, pw := io.Pipe()
	go func() {
		if n == 1 {
			io.WriteString(pw, ": keep-alive\n\n")
		} else {
			io.WriteString(pw, change(7, "a"))
		}
		<-req.Context().Done()
		pw.CloseWithError(req.Context().Err())
	}()
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: pr, Request: req}, nil
}

// slowSnapshot answers the watch with one snapshot line whose bytes come
// 1 KiB a second for two minutes (a large registry on a slow link).
type slowSnapshot struct{}

func (slowSnapshot) RoundTrip(req *http.Request) (*http.Response, error) {
	pr, pw := io.Pipe()
	go func() {
		io.WriteString(pw, "id: 9\nevent: snapshot\ndata: {\"revision\":9,\"apps\":[")
		pad := strings.Repeat(" ", 1024)
		for range 120 {
			select {
			case <-req.Context().Done():
				pw.CloseWithError(req.Context().Err())
				return
			case <-time.After(time.Second):
			}
			io.WriteString(pw, pad)
		}
		io.WriteString(pw, "]}\n\n")
		<-req.Context().Done()
		pw.CloseWithError(req.Context().Err())
	}()
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: pr, Request: req}, nil
}

// Bytes arriving count as life, not only whole lines: a snapshot taking
// longer than the idle bound to arrive is read to its end.
func TestWatchIdleLetsASlowSnapshotArrive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := mustNew(t, "http://core.test", WithHTTPClient(&http.Client{Transport: slowSnapshot{}}), WithWatchIdle(45*time.Second))
		for ev, err := range c.Watch(t.Context(), 3) {
			if err != nil || ev.Snapshot == nil {
				t.Fatalf("a snapshot arriving over two minutes: %+v %v", ev.Type, err)
			}
			break
		}
	})
}

// A watch connection on which nothing arrives for the WithWatchIdle time
// ends with ErrWatchIdle and the revision to resume from; without the
// option it waits for its context.
func TestWatchIdleEndsASilentConnection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &silentStream{}
		c := mustNew(t, "http://core.test", WithHTTPClient(&http.Client{Transport: s}), WithWatchIdle(45*time.Second))
		start := time.Now()
		for _, err := range c.Watch(t.Context(), 3) {
			var se *StreamError
			if !errors.Is(err, ErrWatchIdle) || !errors.As(err, &se) || se.Revision != 3 {
				t.Fatalf("silent connection: %v, want ErrWatchIdle at revision 3", err)
			}
			break
		}
		if d := time.Since(start); d != 45*time.Second {
			t.Fatalf("the watch ended after %v, want 45s of silence", d)
		}

		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
		defer cancel()
		s.conns = 0
		for _, err := range mustNew(t, "http://core.test", WithHTTPClient(&http.Client{Transport: s})).Watch(ctx, 3) {
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("without WithWatchIdle: %v, want the context's end", err)
			}
			break
		}
	})
}
