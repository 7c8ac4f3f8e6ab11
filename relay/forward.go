package relay

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/goreka/goreka/eurekahttp"
	"github.com/goreka/goreka/registry"
)

// key is an instance: application (upper case) and id.
type key struct{ app, id string }

// Override operations queued with an instance.
const (
	overrideNone = iota
	overrideSet
	overrideDelete
)

// pending is what is queued for an instance besides its registration
// state, which the worker reads from the local registry.
type pending struct {
	since    time.Time // when it was queued (upstream lag)
	gen      int       // changes since queued: a send of an older one sends again
	override int
	status   registry.Status // of the override operation
	dirty    time.Time       // lastDirtyTimestamp of the override operation
}

// forwarder is the ordered queue of instances whose state is to be sent
// upstream.
type forwarder struct {
	mu sync.Mutex
	// queues are FIFOs, each key in at most one of them (its shard's) at
	// most once: an instance's changes go through one worker, in order,
	// while the shards' workers send different instances at once.
	queues  [shards][]key
	queued  map[key]*pending
	resync  bool              // the queue overflowed: walk everything
	known   map[key]bool      // registered upstream by this relay, not cancelled since
	chains  map[key]string    // the chain a relayed registration came with
	looped  map[key]bool      // refused by a relay of the chain: not forwarded
	removed map[key]time.Time // removed locally, hidden in the copy until it drops them
	wake    chan struct{}
	healed  chan struct{} // the upstream answers again: cut the back-off short
}

// shards is how many instances are sent upstream at once.
const shards = 8

// shardOf is the queue of an instance (FNV-1a of its key).
func shardOf(k key) int {
	h := uint32(2166136261)
	for _, s := range [2]string{k.app, k.id} {
		for i := 0; i < len(s); i++ {
			h = (h ^ uint32(s[i])) * 16777619
		}
		h = (h ^ '/') * 16777619
	}
	return int(h % shards)
}

func (f *forwarder) init() {
	f.queued = map[key]*pending{}
	f.known = map[key]bool{}
	f.chains = map[key]string{}
	f.looped = map[key]bool{}
	f.removed = map[key]time.Time{}
	f.wake = make(chan struct{}, 1)
	f.healed = make(chan struct{}, 1)
}

func (f *forwarder) setChain(k key, chain string) {
	f.mu.Lock()
	f.chains[k] = chain
	f.mu.Unlock()
}

// enqueueLocked queues k (once) and returns its pending entry, nil when
// the queue is full (the relay resyncs then).
func (r *Relay) enqueueLocked(k key) *pending {
	f := &r.fwd
	if p := f.queued[k]; p != nil {
		p.gen++
		return p
	}
	if len(f.queued) >= r.cfg.MaxQueue {
		if !f.resync {
			r.m.overflows.Add(1)
			r.warn("overflow", "relay queue full: the upstream will be resynchronised from the local registry", "max", r.cfg.MaxQueue)
		}
		f.resync = true
		return nil
	}
	p := &pending{since: r.cfg.Now()}
	i := shardOf(k)
	f.queues[i] = append(f.queues[i], k)
	f.queued[k] = p
	return p
}

func (f *forwarder) signal() {
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// recover tells a forwarder waiting out a back-off that the upstream
// answers again (a heartbeat round got through).
func (f *forwarder) recover() {
	select {
	case f.healed <- struct{}{}:
	default:
	}
}

// OnEvent is the registry's change listener: a local change queues its
// instance for the upstream; changes from peers are forwarded by the relay
// that took them from the client. Every removal hides the instance in the
// upstream copy until the copy drops it. It never blocks. A nil relay
// does nothing.
func (r *Relay) OnEvent(e registry.Event) {
	if r == nil {
		return
	}
	k := key{e.App, e.ID}
	f := &r.fwd
	f.mu.Lock()
	switch {
	case e.Kind.Removal():
		f.removed[k] = r.cfg.Now()
	case e.Kind == registry.EventRegister:
		delete(f.removed, k)
	}
	if e.FromPeer || r.cfg.ReadOnly {
		f.mu.Unlock()
		return
	}
	switch e.Kind {
	case registry.EventRegister, registry.EventCancel, registry.EventEvict:
		if e.Kind == registry.EventRegister {
			delete(f.looped, k)
		}
		r.enqueueLocked(k)
	case registry.EventStatusUpdate, registry.EventDeleteStatusOverride:
		if p := r.enqueueLocked(k); p != nil {
			p.override, p.status, p.dirty = overrideSet, e.Status, e.Instance().LastDirtyTimestamp
			if e.Kind == registry.EventDeleteStatusOverride {
				p.override = overrideDelete
			}
		}
	default:
		f.mu.Unlock()
		return
	}
	f.mu.Unlock()
	f.signal()
}

// requeue puts an instance back in the queue (an upstream answered 404 to
// its heartbeat: register it again).
func (r *Relay) requeue(k key) {
	r.fwd.mu.Lock()
	if !r.fwd.looped[k] {
		r.enqueueLocked(k)
	}
	r.fwd.mu.Unlock()
	r.fwd.signal()
}

// runForward sends the queue upstream until ctx is done; a failed call
// waits a back-off (1 s doubling, at most the heartbeat interval, cut
// short when a heartbeat round gets through again) and is tried again.
func (r *Relay) runForward(ctx context.Context) {
	backoff := time.Duration(0)
	for {
		if backoff > 0 {
			t := time.NewTimer(backoff)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			case <-r.fwd.healed:
				t.Stop()
			}
		} else {
			select {
			case <-ctx.Done():
				return
			case <-r.fwd.wake:
			}
		}
		if _, err := r.SyncOnce(ctx); err != nil {
			backoff = min(max(2*backoff, time.Second), r.cfg.HeartbeatInterval)
			r.warn("forward", "forwarding to the upstream failed; retrying", "upstream", r.Upstream(), "err", err, "retry_in", backoff)
			continue
		}
		backoff = 0
	}
}

// SyncOnce sends every queued instance upstream, each queue in order (the
// queues at once), and returns how many it sent. A queue stops at the first
// call the upstream did not answer (refused, timed out, 5xx): that instance
// stays first in it, and the error is returned. After an overflow it first
// queues the whole local registry and every instance registered upstream.
func (r *Relay) SyncOnce(ctx context.Context) (int, error) {
	r.resyncIfNeeded()
	var wg sync.WaitGroup
	var sent [shards]int
	var errs [shards]error
	for i := range shards {
		r.fwd.mu.Lock()
		empty := len(r.fwd.queues[i]) == 0
		r.fwd.mu.Unlock()
		if !empty {
			wg.Go(func() { sent[i], errs[i] = r.syncQueue(ctx, i) })
		}
	}
	wg.Wait()
	n := 0
	var err error
	for i := range shards {
		n += sent[i]
		if err == nil {
			err = errs[i]
		}
	}
	return n, err
}

// syncQueue sends queue i until it is empty or the upstream does not
// answer.
func (r *Relay) syncQueue(ctx context.Context, i int) (int, error) {
	n := 0
	f := &r.fwd
	for {
		f.mu.Lock()
		if len(f.queues[i]) == 0 {
			f.queues[i] = nil // let the backing array go
			f.mu.Unlock()
			return n, nil
		}
		k := f.queues[i][0]
		p := f.queued[k]
		sent := *p
		chain := extend(f.chains[k], r.cfg.ID)
		f.mu.Unlock()

		err := r.send(withChain(ctx, chain), k, &sent)
		if unreachable(err) {
			return n, err
		}
		f.mu.Lock()
		// This queue's worker is the only one who pops it: k is still first.
		// A change of k while it was sent (p.gen moved) sends it again, with
		// that change.
		if p.gen == sent.gen {
			f.queues[i] = f.queues[i][1:]
			delete(f.queued, k)
		}
		f.mu.Unlock()
		n++
	}
}

// send brings one instance's upstream copy to the local state: registered
// as it is here (and its override operation), or cancelled. Answers other
// than unreachable ones are final: a 508 marks the instance looped, any
// other refusal is logged.
func (r *Relay) send(ctx context.Context, k key, p *pending) error {
	v, here := r.reg.Get(k.app, k.id)
	if here && r.reg.IsStatic(k.app, k.id) {
		// Static registrations are this server's own, never replicated:
		// not forwarded either (nobody would heartbeat them upstream).
		return nil
	}
	var err error
	var action string
	if here {
		action = actionRegister
		err = r.call(ctx, func(ep eurekahttp.Endpoint) error { return r.client.Register(ctx, ep, &v) })
		if err == nil {
			r.fwd.mu.Lock()
			r.fwd.known[k] = true
			r.fwd.mu.Unlock()
			if p.override != overrideNone {
				r.m.forwarded(actionRegister).Add(1)
				action = actionStatus
				err = r.call(ctx, func(ep eurekahttp.Endpoint) error { return r.sendOverride(ctx, ep, k, p) })
			}
		}
	} else {
		action = actionCancel
		err = r.call(ctx, func(ep eurekahttp.Endpoint) error { return r.client.Cancel(ctx, ep, k.app, k.id) })
		if err == nil {
			r.fwd.mu.Lock()
			delete(r.fwd.known, k)
			delete(r.fwd.chains, k)
			r.fwd.mu.Unlock()
		}
	}
	switch code := statusOf(err); {
	case err == nil:
		r.m.forwarded(action).Add(1)
	case unreachable(err):
	case code == http.StatusLoopDetected:
		r.loop(k, err)
	default:
		r.warn("refused", "the upstream refused a forwarded change", "app", k.app, "instance", k.id, "action", action, "err", err)
		r.m.refused.Add(1)
	}
	return err
}

// sendOverride sends a status override (PUT .../status?value=) or its
// removal (DELETE .../status) as an operator would.
func (r *Relay) sendOverride(ctx context.Context, ep eurekahttp.Endpoint, k key, p *pending) error {
	q := url.Values{"value": {string(p.status)}}
	if !p.dirty.IsZero() {
		q.Set("lastDirtyTimestamp", strconv.FormatInt(p.dirty.UnixMilli(), 10))
	}
	method := http.MethodPut
	if p.override == overrideDelete {
		method = http.MethodDelete
		if p.status == "" || p.status == registry.StatusUnknown {
			q.Del("value")
		}
	}
	path := "apps/" + url.PathEscape(k.app) + "/" + url.PathEscape(k.id) + "/status"
	code, _, err := r.client.Do(ctx, ep, method, path+"?"+q.Encode(), nil)
	if err == nil && code != http.StatusOK {
		err = &eurekahttp.StatusError{Method: method, URL: ep.URL + path, Code: code}
	}
	return err
}

// loop stops forwarding an instance a relay of its chain refused.
func (r *Relay) loop(k key, err error) {
	r.fwd.mu.Lock()
	r.fwd.looped[k] = true
	r.fwd.mu.Unlock()
	r.m.loops.Add(1)
	r.warn("loop", "an upstream relay refused a forwarded change because it went through it already: the relays' upstreams form a loop; the instance is no longer forwarded",
		"app", k.app, "instance", k.id, "upstream", r.Upstream(), "err", err)
}

// resyncIfNeeded queues, after an overflow, every local instance and
// every instance registered upstream: the worker registers what is here
// and cancels what is not.
func (r *Relay) resyncIfNeeded() {
	f := &r.fwd
	f.mu.Lock()
	if !f.resync {
		f.mu.Unlock()
		return
	}
	f.resync = false
	known := make([]key, 0, len(f.known))
	for k := range f.known {
		known = append(known, k)
	}
	f.mu.Unlock()
	r.m.resyncs.Add(1)
	// Outside the lock: the registry read may be long, and events keep
	// coming (they queue as usual).
	leases := r.reg.Leases(func(*registry.LeaseView) bool { return true })
	f.mu.Lock()
	defer f.mu.Unlock()
	seen := map[key]bool{}
	for i := range leases {
		k := key{leases[i].Instance.App, leases[i].Instance.ID()}
		seen[k] = true
		if !f.looped[k] {
			f.resyncAdd(r, k)
		}
	}
	for _, k := range known {
		if !seen[k] {
			f.resyncAdd(r, k)
		}
	}
}

// resyncAdd queues k during a resync, past MaxQueue if need be: the
// registry's size bounds it.
func (f *forwarder) resyncAdd(r *Relay, k key) {
	if f.queued[k] == nil {
		i := shardOf(k)
		f.queues[i] = append(f.queues[i], k)
		f.queued[k] = &pending{since: r.cfg.Now()}
	}
}

// queueState is the number of instances queued and the age of the oldest.
func (r *Relay) queueState() (int, time.Duration) {
	f := &r.fwd
	f.mu.Lock()
	defer f.mu.Unlock()
	var oldest time.Time
	for i := range f.queues {
		if q := f.queues[i]; len(q) > 0 {
			if at := f.queued[q[0]].since; oldest.IsZero() || at.Before(oldest) {
				oldest = at
			}
		}
	}
	if oldest.IsZero() {
		return len(f.queued), 0
	}
	return len(f.queued), r.cfg.Now().Sub(oldest)
}
