package relay

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/goreka/goreka/compat"
	"github.com/goreka/goreka/eurekahttp"
	"github.com/goreka/goreka/registry"
)

// beat is one collected heartbeat: what the instance's own heartbeat
// upstream carries.
type beat struct {
	status registry.Status
	dirty  time.Time
}

// heartbeats collects the local clients' heartbeats between two sends.
type heartbeats struct {
	mu      sync.Mutex
	renewed map[key]beat
	// refused: the last round's upstream answered with a server error
	// (overloaded, in a rollout) rather than not at all.
	refused atomic.Bool
}

func (h *heartbeats) init() { h.renewed = map[key]beat{} }

// OnRenew is the registry's heartbeat listener: a client's heartbeat that
// found its lease is collected for the next send (a peer's is sent by the
// relay the client heartbeats to). It runs on the renew path: it takes one
// short lock and never blocks on I/O. A nil relay does nothing.
func (r *Relay) OnRenew(rn registry.Renewal) {
	if r == nil || rn.FromPeer || r.cfg.ReadOnly {
		return
	}
	b := beat{status: rn.Instance.Status, dirty: rn.Instance.LastDirtyTimestamp}
	r.hb.mu.Lock()
	r.hb.renewed[key{rn.App, rn.ID}] = b
	r.hb.mu.Unlock()
}

// runHeartbeats sends a round every heartbeat interval. A round the
// upstream did not answer keeps its heartbeats and is tried again every
// second (at most every interval) until it answers, and then the
// forwarder's back-off is cut short: after a partition heals, the first
// round (whose 404s re-register what the upstream lost) and the queued
// changes go out within about a second, not an interval or two later. An
// upstream that answers with server errors (overloaded, in a rollout) is
// not asked every second by every relay: its retries back off, doubling
// up to the interval.
func (r *Relay) runHeartbeats(ctx context.Context) {
	first := min(time.Second, r.cfg.HeartbeatInterval)
	t := time.NewTicker(r.cfg.HeartbeatInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		failed := false
		retry := first
		for {
			if _, answered := r.heartbeatRound(ctx); answered {
				break
			}
			failed = true
			var wait time.Duration
			wait, retry = retryAfter(first, retry, r.cfg.HeartbeatInterval, r.hb.refused.Load())
			if !sleep(ctx, wait) {
				return
			}
		}
		if failed {
			r.fwd.recover()
			t.Reset(r.cfg.HeartbeatInterval)
		}
	}
}

// retryAfter is the wait before a failed round is tried again and the
// back-off after it: first while no upstream answered (a partition, which
// costs the upstream nothing), the back-off, doubling up to interval, while
// one answers with server errors.
func retryAfter(first, backoff, interval time.Duration, refused bool) (wait, next time.Duration) {
	if !refused {
		return first, backoff
	}
	return backoff, min(2*backoff, interval)
}

// HeartbeatOnce sends the heartbeats collected since the last call: in one
// request to a goreka upstream, one per instance paced over the heartbeat
// interval to a stock one. Instances queued for forwarding are left out
// (their registration comes first), looped ones too. An instance the
// upstream answers 404 is queued for registration. When no upstream
// answers, the heartbeats are kept for the next call (none is sent one by
// one to an upstream that did not answer the probe). It returns how many
// heartbeats the upstream took.
func (r *Relay) HeartbeatOnce(ctx context.Context) int {
	n, _ := r.heartbeatRound(ctx)
	return n
}

// heartbeatRound is HeartbeatOnce; answered is false when no upstream
// answered (the heartbeats are kept then).
func (r *Relay) heartbeatRound(ctx context.Context) (n int, answered bool) {
	r.hb.mu.Lock()
	got := r.hb.renewed
	r.hb.renewed = make(map[key]beat, len(got))
	r.hb.mu.Unlock()
	if len(got) == 0 {
		return 0, true
	}
	keys := make([]key, 0, len(got))
	r.fwd.mu.Lock()
	for k := range got {
		if r.fwd.queued[k] == nil && !r.fwd.looped[k] {
			keys = append(keys, k)
		}
	}
	r.fwd.mu.Unlock()
	if len(keys) == 0 {
		return 0, true
	}
	kind, reached := r.upstreamKind(ctx)
	if !reached {
		r.keep(got)
		return 0, false
	}
	if kind == kindGoreka {
		n, ok, reached := r.aggregate(ctx, keys, got)
		if !reached {
			r.keep(got)
			return 0, false
		}
		if ok {
			return n, true
		}
	}
	return r.paced(ctx, keys, got), true
}

// keep puts back the heartbeats of a round no upstream answered, under
// the ones collected since.
func (r *Relay) keep(got map[key]beat) {
	r.hb.mu.Lock()
	for k, b := range got {
		if _, newer := r.hb.renewed[k]; !newer {
			r.hb.renewed[k] = b
		}
	}
	r.hb.mu.Unlock()
}

// upstreamKind probes the upstream in use once: a goreka answers an empty
// aggregated-heartbeat list 200, a stock server 404 (or anything else).
// reached is false when no upstream answered the probe.
func (r *Relay) upstreamKind(ctx context.Context) (kind int32, reached bool) {
	if k := r.kind.Load(); k != kindUnknown {
		return k, true
	}
	var code int
	err := r.call(ctx, func(ep eurekahttp.Endpoint) error {
		var err error
		code, _, err = r.client.Do(ctx, ep, http.MethodPost, compat.RenewalsPath, compat.AppendReplicationList(nil, nil))
		return err
	})
	switch {
	case err != nil:
		return kindUnknown, !unreachable(err) // probe again next time
	case code == http.StatusOK:
		r.kind.Store(kindGoreka)
	case code == http.StatusNotFound || code == http.StatusMethodNotAllowed:
		r.kind.Store(kindStock) // a server without the endpoint: Eureka's own
	default:
		return kindUnknown, true // 503 in a rollout, 401, 429: not an answer about the endpoint; probe again
	}
	return r.kind.Load(), true
}

// aggregate sends the heartbeats in one request; ok is false when the
// upstream no longer has the endpoint (probed again next time), reached
// false when no upstream answered.
func (r *Relay) aggregate(ctx context.Context, keys []key, got map[key]beat) (n int, ok, reached bool) {
	items := make([]compat.ReplicationItem, len(keys))
	for i, k := range keys {
		b := got[k]
		items[i] = compat.ReplicationItem{AppName: k.app, ID: k.id, Status: string(b.status), Action: compat.ActionHeartbeat}
		if !b.dirty.IsZero() {
			items[i].LastDirtyTimestamp, items[i].HasLastDirty = b.dirty.UnixMilli(), true
		}
	}
	body := compat.AppendReplicationList(nil, items)
	var code int
	var out []byte
	r.hb.refused.Store(false)
	err := r.call(ctx, func(ep eurekahttp.Endpoint) error {
		var err error
		code, out, err = r.client.Do(ctx, ep, http.MethodPost, compat.RenewalsPath, body)
		if err == nil && code >= 500 {
			r.hb.refused.Store(true)
			err = &eurekahttp.StatusError{Method: http.MethodPost, URL: ep.URL + compat.RenewalsPath, Code: code}
		}
		return err
	})
	if err != nil {
		r.warn("heartbeat", "sending the aggregated heartbeats failed", "upstream", r.Upstream(), "count", len(items), "err", err)
		return 0, true, !unreachable(err) // kept for the retry when unreachable
	}
	if code == http.StatusLoopDetected {
		for _, k := range keys {
			r.loop(k, &eurekahttp.StatusError{Method: http.MethodPost, URL: compat.RenewalsPath, Code: code})
		}
		return 0, true, true
	}
	if code != http.StatusOK {
		r.kind.Store(kindUnknown)
		return 0, false, true
	}
	rs, err := compat.DecodeReplicationResponses(out)
	if err != nil || len(rs) != len(keys) {
		r.warn("heartbeat", "the upstream's answer to the aggregated heartbeats is unusable", "upstream", r.Upstream(), "err", err)
		return 0, true, true
	}
	for i, resp := range rs {
		switch resp.StatusCode {
		case http.StatusOK:
			n++
		case http.StatusNotFound:
			r.m.reregistered.Add(1)
			r.requeue(keys[i])
		}
	}
	r.m.aggregated.Add(int64(n))
	r.m.forwarded(actionHeartbeat).Add(int64(n))
	return n, true, true
}

// pacedInFlight bounds the per-instance heartbeats paced sends at once.
const pacedInFlight = 32

// paced sends one heartbeat per instance, spread over the heartbeat
// interval (as the clients themselves would have sent them): one starts
// every interval/(n+1), without waiting for the ones before it (at most
// pacedInFlight at once), so that a round of 10,000 takes the interval and
// not 10,000 round trips.
func (r *Relay) paced(ctx context.Context, keys []key, got map[key]beat) int {
	gap := r.cfg.HeartbeatInterval / time.Duration(len(keys)+1)
	var n atomic.Int64
	var wg sync.WaitGroup
	sem := make(chan struct{}, pacedInFlight)
	for i, k := range keys {
		if i > 0 && !r.cfg.Pace(ctx, gap) {
			break
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		b := got[k]
		wg.Go(func() {
			defer func() { <-sem }()
			if r.heartbeatOne(ctx, k, b) {
				n.Add(1)
			}
		})
	}
	wg.Wait()
	return int(n.Load())
}

// heartbeatOne sends instance k's heartbeat upstream; true when it was
// renewed there.
func (r *Relay) heartbeatOne(ctx context.Context, k key, b beat) bool {
	in := &registry.Instance{App: k.app, InstanceID: k.id, Status: b.status, LastDirtyTimestamp: b.dirty}
	var found bool
	err := r.call(ctx, func(ep eurekahttp.Endpoint) error {
		var err error
		found, err = r.client.Renew(ctx, ep, in)
		return err
	})
	switch {
	case err == nil && found:
		r.m.forwarded(actionHeartbeat).Add(1)
		return true
	case err == nil:
		r.m.reregistered.Add(1)
		r.requeue(k)
	case statusOf(err) == http.StatusLoopDetected:
		r.loop(k, err)
	default:
		r.warn("heartbeat", "sending a heartbeat to the upstream failed", "upstream", r.Upstream(), "app", k.app, "instance", k.id, "err", err)
	}
	return false
}
