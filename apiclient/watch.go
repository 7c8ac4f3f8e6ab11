package apiclient

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"strconv"
	"strings"
	"time"

	"github.com/goreka/goreka/server/api/wire"
)

// Event is one event of the watch stream. Type says which of Change,
// Snapshot and Lagged is set; an event of a type this package does not
// know has none set. Data is the event's JSON as the server sent it.
type Event struct {
	Type string // wire.EventChange, wire.EventSnapshot, wire.EventLagged, or another
	ID   int64  // the SSE id: the revision the watcher has everything up to
	Data json.RawMessage

	Change   *wire.Change
	Snapshot *wire.Snapshot
	Lagged   *wire.Lagged

	// Epoch is the server's X-Goreka-Epoch on the connection the event came
	// on (its registry's sequence of revisions; empty from an older server).
	Epoch string
}

// StreamError ends a watch whose stream broke or ended: Err is what broke
// it (a read error, an event that does not decode), nil when the server
// closed the stream without a lagged event (it shut down, or a proxy cut
// the connection). Revision is the last revision delivered (the since the
// watch started at, if none): Watch(ctx, Revision) continues without a gap.
type StreamError struct {
	Server   string // Client.URL
	Revision int64
	Err      error
}

func (e *StreamError) Error() string {
	if e.Err == nil {
		return "watch " + e.Server + ": the server ended the stream"
	}
	return fmt.Sprintf("watch %s: %v", e.Server, e.Err)
}

func (e *StreamError) Unwrap() error { return e.Err }

// Watch streams the changes after revision since (GET
// /goreka/api/v1/watch), in revision order. since 0, or a revision the
// server no longer retains or never had (another server, a restart),
// starts with a snapshot event (the whole registry) and continues after it.
//
// A lagged event (the watcher fell behind the server's buffer) is yielded,
// then the watch resumes by itself from the revision it names, so nothing
// is skipped silently. Any other end is the sequence's last error: a
// *StatusError or *UnreachableError when connecting, a *StreamError when
// the stream breaks or ends, whose Revision says where to resume. An event
// whose data does not decode is yielded with that *StreamError. When ctx
// ends, the error wraps ctx.Err().
//
// The watch has no timeout but ctx (the HTTP client's Timeout does not
// apply). It holds one connection while iterated and none after: breaking
// out of the loop closes it; no goroutine outlives the loop.
func (c *Client) Watch(ctx context.Context, since int64) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		for {
			cctx, cancel := context.WithCancelCause(ctx)
			alive, stop := func() {}, func() {}
			if c.watchIdle > 0 {
				idle := time.AfterFunc(c.watchIdle, func() { cancel(ErrWatchIdle) })
				alive, stop = func() { idle.Reset(c.watchIdle) }, func() { idle.Stop() }
			}
			resp, err := c.do(cctx, c.stream, "GET", wire.Prefix+"/watch?since="+strconv.FormatInt(since, 10))
			if err != nil {
				stop()
				cancel(nil)
				yield(Event{}, idleCause(cctx, err))
				return
			}
			// Any bytes count as life, not only whole lines: a snapshot is one
			// line of the whole registry, which can take longer than the
			// bound to arrive.
			body := &aliveReader{r: resp.Body, alive: alive}
			next, more := c.events(cctx, body, resp.Header.Get(wire.EpochHeader), &since, yield)
			resp.Body.Close()
			stop()
			cancel(nil)
			if !more {
				return
			}
			since = next
		}
	}
}

// events yields the events of one connection. It returns the revision to
// resume from after a lagged event and true, or false when the watch ends
// (the consumer stopped, or the error was yielded). last is the last
// revision delivered.
func (c *Client) events(ctx context.Context, body io.Reader, epoch string, last *int64, yield func(Event, error) bool) (resume int64, more bool) {
	fail := func(ev Event, err error) (int64, bool) {
		if cerr := context.Cause(ctx); cerr != nil && err == nil {
			err = cerr
		} else if cerr != nil && !errors.Is(err, cerr) {
			err = fmt.Errorf("%w: %w", cerr, err)
		}
		yield(ev, &StreamError{Server: c.base, Revision: *last, Err: err})
		return 0, false
	}
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	ev := Event{Epoch: epoch}
	var data strings.Builder
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "id: "):
			ev.ID, _ = strconv.ParseInt(line[len("id: "):], 10, 64)
		case strings.HasPrefix(line, "event: "):
			ev.Type = line[len("event: "):]
		case strings.HasPrefix(line, "data: "):
			data.WriteString(line[len("data: "):])
		case line == "":
			if ev.Type != "" {
				ev.Data = json.RawMessage(data.String())
				if err := decode(&ev); err != nil {
					return fail(ev, err)
				}
				if ev.ID > *last {
					*last = ev.ID
				}
				if !yield(ev, nil) {
					return 0, false
				}
				if ev.Lagged != nil {
					return ev.Lagged.Revision, true
				}
			}
			ev = Event{Epoch: epoch}
			data.Reset()
		}
	}
	return fail(Event{}, sc.Err())
}

// decode sets the typed field of ev from its data.
func decode(ev *Event) error {
	var v any
	switch ev.Type {
	case wire.EventChange:
		ev.Change = new(wire.Change)
		v = ev.Change
	case wire.EventSnapshot:
		ev.Snapshot = new(wire.Snapshot)
		v = ev.Snapshot
	case wire.EventLagged:
		ev.Lagged = new(wire.Lagged)
		v = ev.Lagged
	default:
		return nil
	}
	if err := json.Unmarshal(ev.Data, v); err != nil {
		ev.Change, ev.Snapshot, ev.Lagged = nil, nil, nil
		return fmt.Errorf("bad %s event: %v", ev.Type, err)
	}
	return nil
}

// ErrWatchIdle ends a watch's connection on which nothing arrived for the
// WithWatchIdle time; the StreamError's Revision resumes it.
var ErrWatchIdle = errors.New("apiclient: watch idle (no event or keep-alive)")

// idleCause is err, or ErrWatchIdle when the idle bound cut the request.
func idleCause(ctx context.Context, err error) error {
	if errors.Is(context.Cause(ctx), ErrWatchIdle) {
		return fmt.Errorf("%w: %w", ErrWatchIdle, err)
	}
	return err
}

// aliveReader calls alive after every read that brought bytes.
type aliveReader struct {
	r     io.Reader
	alive func()
}

func (a *aliveReader) Read(p []byte) (int, error) {
	n, err := a.r.Read(p)
	if n > 0 {
		a.alive()
	}
	return n, err
}
