package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/goreka/goreka/registry"
	"github.com/goreka/goreka/server/api/wire"
)

// history is a bounded ring of the recent changes (events that changed
// something), so that a watcher that resumes at a recent revision gets the
// changes it missed instead of a snapshot. Every changed event with a
// revision above floor, up to seen, is in the ring.
type history struct {
	mu     sync.Mutex
	buf    []registry.Event
	start  int // index of the oldest event when the ring is full
	floor  int64
	seen   int64         // last revision added, changed or not
	notify chan struct{} // closed on the next add; nil while nobody waits
}

func newHistory(n int, rev int64) *history {
	return &history{buf: make([]registry.Event, 0, n), floor: rev, seen: rev}
}

func (h *history) add(e registry.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if e.Revision <= h.seen {
		return
	}
	h.seen = e.Revision
	if e.Changed {
		if len(h.buf) < cap(h.buf) {
			h.buf = append(h.buf, e)
		} else {
			h.floor = h.buf[h.start].Revision
			h.buf[h.start] = e
			h.start = (h.start + 1) % len(h.buf)
		}
	}
	if h.notify != nil {
		close(h.notify)
		h.notify = nil
	}
}

// between returns the changes with revisions in (since, upto], in order,
// and false when some of them are no longer retained. It first waits until
// the ring has seen upto: a subscription can start at a revision whose
// event its writer has not delivered yet (it is delivering it right then).
func (h *history) between(ctx context.Context, since, upto int64) ([]registry.Event, bool) {
	h.mu.Lock()
	for h.seen < upto {
		if h.notify == nil {
			h.notify = make(chan struct{})
		}
		ch := h.notify
		h.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, false
		}
		h.mu.Lock()
	}
	defer h.mu.Unlock()
	if since < h.floor {
		return nil, false
	}
	var out []registry.Event
	for i := range h.buf {
		e := h.buf[(h.start+i)%len(h.buf)]
		if e.Revision > since && e.Revision <= upto {
			out = append(out, e)
		}
	}
	return out, true
}

func (a *API) snapshot() wire.Snapshot {
	view := a.reg.Applications()
	now := a.cfg.Now()
	out := wire.Snapshot{Revision: view.Revision, Instances: []wire.Instance{}}
	for _, app := range view.Apps {
		for _, v := range app.Instances {
			out.Instances = append(out.Instances, a.shape(v, LifecycleOf(v, now)))
		}
	}
	return out
}

func (a *API) change(e registry.Event) wire.Change {
	return ChangeOf(e)
}

// parseSince reads ?since= (or, for the watch, the Last-Event-ID header an
// EventSource sends when it reconnects).
func parseSince(c *gin.Context, q url.Values, header bool) (int64, error) {
	s, err := one(q, "since")
	if err != nil {
		return 0, err
	}
	// An EventSource reconnects to its original URL with the id of the last
	// event it got: that is further along than the URL's since.
	if id := c.GetHeader("Last-Event-ID"); header && id != "" {
		s = id
	}
	if s == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, badParam("since", "%q is not a revision (an integer >= 0)", s)
	}
	return n, nil
}

// start subscribes and works out where a watcher at since resumes: the
// retained changes after since (up to the subscription's start), or, when
// since is 0, unknown (from the future: another server or a restart) or
// no longer retained, nothing and snapshot true. The caller closes sub.
func (a *API) start(ctx context.Context, since int64) (sub *registry.Subscription, backlog []registry.Event, snapshot bool) {
	sub = a.reg.Subscribe(a.cfg.Buffer)
	s := sub.Start()
	if since == 0 || since > s {
		return sub, nil, true
	}
	backlog, ok := a.hist.between(ctx, since, s)
	return sub, backlog, !ok
}

func (a *API) watch(c *gin.Context) {
	q, err := params(c, "since")
	if err != nil {
		answerError(c, err)
		return
	}
	since, err := parseSince(c, q, true)
	if err != nil {
		answerError(c, err)
		return
	}
	ctx := c.Request.Context()
	sub, backlog, snap := a.start(ctx, since)
	defer sub.Close()

	w := c.Writer
	rc := http.NewResponseController(w)
	_ = rc.SetWriteDeadline(time.Time{}) // a stream outlives the server's write timeout
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	h.Set(wire.EpochHeader, a.reg.Epoch())
	w.WriteHeader(http.StatusOK)

	// last is the revision up to which the watcher has everything.
	last := sub.Start()
	if snap {
		s := a.snapshot()
		last = s.Revision
		if sse(w, last, wire.EventSnapshot, s) != nil {
			return
		}
	} else {
		for _, e := range backlog {
			if sse(w, e.Revision, wire.EventChange, a.change(e)) != nil {
				return
			}
		}
		_, _ = w.WriteString(": caught up\n\n")
	}
	w.Flush()

	keep := time.NewTicker(a.cfg.KeepAlive)
	defer keep.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-keep.C:
			if _, err := w.WriteString(": keep-alive\n\n"); err != nil {
				return
			}
			w.Flush()
		case e, ok := <-sub.Events():
			if !ok {
				var lag *registry.LaggedError
				if errors.As(sub.Err(), &lag) {
					r := max(last, lag.Revision)
					_ = sse(w, r, wire.EventLagged, wire.Lagged{Revision: r, Reason: "the watcher fell behind; resume with ?since=" + strconv.FormatInt(r, 10)})
					w.Flush()
				}
				return
			}
			if e.Revision <= last {
				continue
			}
			last = e.Revision
			if !e.Changed {
				continue
			}
			if sse(w, e.Revision, wire.EventChange, a.change(e)) != nil {
				return
			}
			if len(sub.Events()) == 0 {
				w.Flush()
			}
		}
	}
}

// sse writes one Server-Sent Event whose data is v as one line of JSON.
func sse(w gin.ResponseWriter, id int64, event string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	buf := make([]byte, 0, len(b)+48)
	buf = append(buf, "id: "...)
	buf = strconv.AppendInt(buf, id, 10)
	buf = append(buf, "\nevent: "...)
	buf = append(buf, event...)
	buf = append(buf, "\ndata: "...)
	buf = append(buf, b...)
	buf = append(buf, "\n\n"...)
	_, err = w.Write(buf)
	return err
}

func (a *API) changes(c *gin.Context) {
	q, err := params(c, "since", "wait")
	if err != nil {
		answerError(c, err)
		return
	}
	since, err := parseSince(c, q, false)
	if err != nil {
		answerError(c, err)
		return
	}
	wait := 30 * time.Second
	if s, err := one(q, "wait"); err != nil {
		answerError(c, err)
		return
	} else if s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d < 0 || d > a.cfg.MaxWait {
			answerError(c, badParam("wait", "%q is not a duration from 0s to %s", s, a.cfg.MaxWait))
			return
		}
		wait = d
	}
	// The wait may outlast the server's write timeout (goreka.server.write-timeout).
	_ = http.NewResponseController(c.Writer).SetWriteDeadline(time.Time{})
	c.JSON(http.StatusOK, a.poll(c.Request.Context(), since, wait))
}

func (a *API) poll(ctx context.Context, since int64, wait time.Duration) wire.ChangesAnswer {
	sub, backlog, snap := a.start(ctx, since)
	defer sub.Close()
	if snap {
		s := a.snapshot()
		return wire.ChangesAnswer{Revision: s.Revision, Changes: []wire.Change{}, Snapshot: &s}
	}
	out := wire.ChangesAnswer{Revision: sub.Start(), Changes: make([]wire.Change, 0, len(backlog))}
	for _, e := range backlog {
		out.Changes = append(out.Changes, a.change(e))
	}
	if len(out.Changes) > 0 {
		return out
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return out
		case <-timer.C:
			return out
		case e, ok := <-sub.Events():
			if !ok {
				return out // fell behind: the next poll resumes from out.Revision
			}
			out.Revision = e.Revision
			if e.Changed {
				out.Changes = append(out.Changes, a.change(e))
			}
			// Take what else is already there, then answer.
			if len(out.Changes) > 0 && len(sub.Events()) == 0 {
				return out
			}
		}
	}
}
