package replication

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/goreka/goreka/compat"
	"github.com/goreka/goreka/registry"
)

// Replicator sends the registry's client-originated changes to the peers.
type Replicator struct {
	cfg    Config
	reg    *registry.Registry
	client peerClient
	http   *httpClient
	log    *slog.Logger
	// sleep waits between sync attempts; tests replace it.
	sleep func(ctx context.Context, d time.Duration) error

	// set is the current peer set, replaced as a whole by SetPeers, so the
	// renew path reads it without a lock.
	set   atomic.Pointer[[]*peerState]
	setMu sync.Mutex // serialises SetPeers
	// mu orders changes of the set against OnEvent (see SetPeers) and
	// guards what follows.
	mu      sync.Mutex
	seen    int64     // revision of the last event OnEvent handled
	run     *runState // the running Run, nil outside it
	seeds   uint64    // jitter streams handed out so far
	added   uint64    // peers added by SetPeers
	removed uint64    // peers removed by SetPeers
}

// runState is one call of Run: the context senders run under and the
// senders it waits for.
type runState struct {
	ctx context.Context
	wg  sync.WaitGroup
}

type peerState struct {
	peer Peer
	log  *slog.Logger
	wake chan struct{} // size 1: bursts of enqueues coalesce into one wake-up
	rnd  *rand.Rand    // jitter; used under mu

	// stop and done are the running sender's cancel and exit signal; nil
	// until a Run starts it. Guarded by Replicator.mu.
	stop context.CancelFunc
	done chan struct{}

	mu          sync.Mutex
	gone        bool // removed from the set: the queue is freed, pushes are ignored
	q           *queue
	seen        int64 // revision of the last registry change OnEvent handled
	st          counters
	lastContact time.Time // last answer or failure, for probes
	streak      int       // consecutive rounds of retryable failures
	lastErr     failure   // kind of the last failure, 0 after a success

	// The batches in flight (package doc, "Pipelining"): busy holds the
	// instances they carry, inFlight counts them. seq numbers the batches
	// (and probes) as they are formed; roundSeq is the last number formed
	// when the failure streak last grew: a batch numbered up to it was in
	// flight with that failure, so its own failure does not grow the
	// streak (nor back off again) and its success does not end the streak.
	// pause is the back-off the sender must wait before it forms the next
	// batch.
	busy     map[instanceKey]struct{}
	inFlight int
	seq      uint64
	roundSeq uint64
	pause    time.Duration
}

// batch is one batch formed from a peer's queue: its tasks, in order, and
// its number (peerState.seq).
type batch struct {
	seq   uint64
	tasks []*task
}

type counters struct {
	batches, items                                   uint64
	congestion, network, rejected, badResp, itemFail uint64
	dropped, expired, coalesced, heldBack, resynced  uint64
	lastSuccess, lastErrAt, backoffUntil             time.Time
	lastErr                                          string
}

// New returns a Replicator for peers. It starts nothing: Run starts the
// senders. cfg's zero fields take their defaults.
func New(cfg Config, reg *registry.Registry, peers []Peer) *Replicator {
	cfg.fill()
	h := newHTTPClient(&cfg)
	return newReplicator(cfg, reg, peers, h, h)
}

func newReplicator(cfg Config, reg *registry.Registry, peers []Peer, c peerClient, h *httpClient) *Replicator {
	cfg.fill()
	r := &Replicator{cfg: cfg, reg: reg, client: c, http: h, sleep: sleepCtx,
		log: cfg.Logger.With("component", "replication")}
	var set []*peerState
	seen := map[string]bool{}
	for _, p := range peers {
		if k := peerKey(p); !seen[k] {
			seen[k] = true
			set = append(set, r.newPeerState(p))
		}
	}
	r.set.Store(&set)
	return r
}

// newPeerState returns the state of a new peer: an empty queue and its own
// jitter stream. Callers hold r.mu or own r.
func (r *Replicator) newPeerState(p Peer) *peerState {
	ps := &peerState{
		peer: p,
		log:  r.log.With("peer", p.URL),
		wake: make(chan struct{}, 1),
		rnd:  rand.New(rand.NewPCG(r.cfg.Seed, r.seeds)),
		q:    newQueue(r.cfg.MaxElementsInPeerReplicationPool),
		busy: make(map[instanceKey]struct{}),
	}
	if r.reg != nil {
		ps.q.limit = r.reg.Size
	}
	r.seeds++
	return ps
}

// list returns the current peer set; callers must not modify it.
func (r *Replicator) list() []*peerState { return *r.set.Load() }

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Peers returns the peers this Replicator sends to.
func (r *Replicator) Peers() []Peer {
	ps := r.list()
	out := make([]Peer, len(ps))
	for i, p := range ps {
		out[i] = p.peer
	}
	return out
}

// OnEvent queues a registry change for every peer. It is a registry
// listener: called in revision order, never concurrently, and it never
// blocks on the network (a full queue marks its oldest task's instance for
// a resync, see queue). Each event is
// self-contained, so nothing is read back from the registry. Changes that
// came from a peer, evictions (every server evicts on its own), status
// corrections on renew and adopted overrides (the heartbeat carries those)
// are not replicated.
func (r *Replicator) OnEvent(e registry.Event) {
	// A peer added by SetPeers gets the changes after r.seen, no earlier
	// one: the set is read under the lock that records the revision.
	r.mu.Lock()
	r.seen = e.Revision
	peers := r.list()
	r.mu.Unlock()
	if len(peers) == 0 {
		return
	}
	item, ok := itemOf(&e)
	now := r.cfg.Now()
	var t task
	if ok {
		t = task{item: item, enqueued: now, expires: now.Add(r.ttl(item.Action, e.Instance()))}
	}
	for _, p := range peers {
		p.mu.Lock()
		p.seen = e.Revision
		if ok {
			tk := t
			p.pushLocked(&tk)
		}
		p.mu.Unlock()
		if ok {
			p.wakeUp()
		}
	}
}

// OnRenew queues a heartbeat for every peer (a registry OnRenew hook, called
// concurrently by renewing requests). Heartbeats from peers are not sent on.
// Heartbeats are not ordered with changes: one that read a lease whose last
// change this peer's queue has not seen yet (rn.Revision > seen) would
// overtake that change, and is not queued for that peer; the change's own
// task carries the newer state, and the next heartbeat follows it.
func (r *Replicator) OnRenew(rn registry.Renewal) {
	peers := r.list()
	if rn.FromPeer || len(peers) == 0 || rn.Instance == nil {
		return
	}
	it := compat.ReplicationItem{Action: compat.ActionHeartbeat, AppName: rn.App, ID: rn.ID,
		Status: string(rn.Instance.Status), OverriddenStatus: string(rn.OverriddenStatus)}
	setDirty(&it, rn.Instance)
	now := r.cfg.Now()
	exp := now.Add(r.ttl(it.Action, rn.Instance))
	for _, p := range peers {
		p.mu.Lock()
		if rn.Revision > p.seen {
			p.st.heldBack++
			p.mu.Unlock()
			continue
		}
		p.pushLocked(&task{item: it, rev: rn.Revision, enqueued: now, expires: exp})
		p.mu.Unlock()
		p.wakeUp()
	}
}

// ttl is Eureka's task expiry: register and heartbeat live one renewal
// interval of the instance (a newer heartbeat is on its way by then), the
// others max-time-for-replication.
func (r *Replicator) ttl(a compat.ReplicationAction, in *registry.Instance) time.Duration {
	if a == compat.ActionRegister || a == compat.ActionHeartbeat {
		if in != nil && in.LeaseInfo.RenewalInterval > 0 {
			return in.LeaseInfo.RenewalInterval
		}
		return registry.DefaultRenewalInterval
	}
	return r.cfg.MaxTimeForReplication
}

func (p *peerState) enqueue(t *task) {
	p.mu.Lock()
	p.pushLocked(t)
	p.mu.Unlock()
	p.wakeUp()
}

func (p *peerState) pushLocked(t *task) {
	if p.gone {
		return
	}
	coalesced, dropped := p.q.push(t)
	if coalesced {
		p.st.coalesced++
	}
	p.st.dropped += uint64(dropped)
}

func (p *peerState) wakeUp() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

func setDirty(it *compat.ReplicationItem, in *registry.Instance) {
	if in != nil && !in.LastDirtyTimestamp.IsZero() {
		it.LastDirtyTimestamp, it.HasLastDirty = in.LastDirtyTimestamp.UnixMilli(), true
	}
}

// itemOf builds the batch item for a change (ReplicationTaskProcessor's
// createReplicationInstanceOf) from the event alone; false for changes that
// are not replicated.
func itemOf(e *registry.Event) (compat.ReplicationItem, bool) {
	it := compat.ReplicationItem{AppName: e.App, ID: e.ID}
	in := e.Instance()
	if e.FromPeer || e.Lease.Static {
		// Static registrations are each node's own configuration: nothing
		// about them is replicated (registry/static.go).
		return it, false
	}
	if e.Kind == registry.EventCancel {
		it.Action = compat.ActionCancel
		return it, true
	}
	if in == nil {
		return it, false
	}
	switch e.Kind {
	case registry.EventRegister:
		it.Action = compat.ActionRegister
		v := e.Lease
		it.Instance = &v
		it.Status = string(in.Status)
	case registry.EventProbeStatus:
		// The prober's opinion travels as the registration a peer would get
		// from a client whose own health check flipped its status: Java
		// peers need nothing new, and a peer holds no verdict of its own.
		it.Action = compat.ActionRegister
		v := e.Lease
		if v.Instance.Status != e.Status {
			c := v.Instance.Clone()
			c.Status = e.Status
			v.Instance = c
		}
		it.Instance = &v
		it.Status = string(e.Status)
	case registry.EventStatusUpdate:
		it.Action = compat.ActionStatusUpdate
		it.Status = string(e.Status)
	case registry.EventDeleteStatusOverride:
		it.Action = compat.ActionDeleteStatusOverride
		it.Status = string(e.Status)
	default:
		return it, false
	}
	setDirty(&it, in)
	return it, true
}

// Run starts one sender per peer and blocks until ctx is done; it then
// waits for the senders and returns nil. Peers added by SetPeers meanwhile
// get a sender at once, removed ones lose theirs. Tasks still queued stay
// queued for Flush. Run must not be called again before it returned.
func (r *Replicator) Run(ctx context.Context) error {
	rs := &runState{ctx: ctx}
	r.mu.Lock()
	if r.run != nil {
		r.mu.Unlock()
		return errors.New("replication: Run is already running")
	}
	r.run = rs
	for _, p := range r.list() {
		r.startLocked(p)
	}
	r.mu.Unlock()
	<-ctx.Done()
	r.mu.Lock()
	r.run = nil
	r.mu.Unlock()
	rs.wg.Wait()
	return nil
}

// startLocked starts p's sender under the running Run; r.mu is held.
func (r *Replicator) startLocked(p *peerState) {
	ctx, cancel := context.WithCancel(r.run.ctx)
	done := make(chan struct{})
	p.stop, p.done = cancel, done
	r.run.wg.Go(func() {
		defer close(done)
		defer cancel()
		r.runPeer(ctx, p)
	})
}

// runPeer forms batches: it sends when BatchSize tasks are pending or the
// oldest has waited BatchDelay, up to MaxBatchesInFlight at a time, each
// sent (encoded, posted, answered) by its own goroutine while the next one
// is formed; after a retryable failure it waits out the back-off while new
// tasks keep queueing (within the bound) and the batches still in flight
// finish. It returns once ctx is done and every batch in flight returned
// (a cancelled one is put back for Flush).
func (r *Replicator) runPeer(ctx context.Context, p *peerState) {
	var sends sync.WaitGroup
	defer sends.Wait()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	// wait returns after d, on an enqueue or a finished batch (p.wake),
	// false when ctx is done.
	wait := func(d time.Duration) bool {
		timer.Reset(d)
		select {
		case <-ctx.Done():
			return false
		case <-p.wake:
			return true
		case <-timer.C:
			return true
		}
	}
	for ctx.Err() == nil {
		p.mu.Lock()
		n, oldest, resyncs := p.q.len(), p.q.oldest(), p.q.pendingResyncs()
		contact, inFlight, pause := p.lastContact, p.inFlight, p.pause
		p.pause = 0
		p.mu.Unlock()
		if pause > 0 {
			// A failed batch's back-off: wakes do not shorten it.
			timer.Reset(pause)
			select {
			case <-ctx.Done():
				return
			case <-timer.C:
			}
			continue
		}
		if inFlight >= r.cfg.MaxBatchesInFlight {
			if !wait(time.Hour) { // until a batch returns
				return
			}
			continue
		}
		if resyncs > 0 {
			// Marks are older than anything queued: no batch delay.
			n = max(n, r.cfg.BatchSize)
		}
		if n == 0 {
			if inFlight > 0 {
				if !wait(time.Hour) { // probes only when nothing is in flight
					return
				}
				continue
			}
			if contact.IsZero() {
				contact = r.cfg.Now() // started: the first probe after one interval
				p.mu.Lock()
				p.lastContact = contact
				p.mu.Unlock()
			}
			d := contact.Add(r.cfg.ProbeInterval).Sub(r.cfg.Now())
			if d <= 0 {
				r.probe(ctx, p) // a failure leaves its back-off in p.pause
				continue
			}
			if !wait(d) {
				return
			}
			continue
		}
		if n < r.cfg.BatchSize {
			if d := oldest.Add(r.cfg.BatchDelay).Sub(r.cfg.Now()); d > 0 {
				if !wait(d) {
					return
				}
				continue
			}
		}
		b, progressed := r.takeBatch(p, true)
		if b == nil {
			// Nothing to send now: what is pending belongs to batches in
			// flight (one of them returning wakes us), or a back-off just
			// began, or expired tasks were discarded.
			if !progressed && !wait(time.Hour) {
				return
			}
			continue
		}
		sends.Go(func() {
			r.deliver(ctx, p, b)
			p.wakeUp()
		})
	}
}

// probe sends an empty batch to an idle peer: the answer is the peer's
// availability. A failure counts and backs off like a batch's.
func (r *Replicator) probe(ctx context.Context, p *peerState) time.Duration {
	p.mu.Lock()
	p.seq++
	seq := p.seq
	p.mu.Unlock()
	resps, err := r.client.sendBatch(ctx, &p.peer, nil)
	if err == nil && len(resps) != 0 {
		err = fmt.Errorf("%w: %d answers to an empty batch", errBadResponse, len(resps))
	}
	if ctx.Err() != nil {
		return 0
	}
	if err != nil {
		return r.failed(p, &batch{seq: seq}, err)
	}
	r.succeeded(p, &batch{seq: seq})
	return 0
}

// sendOnce sends one batch from the front of p's queue and handles the
// answer. It returns the back-off to wait before the next batch (0 if
// none) and the error of a failed batch.
func (r *Replicator) sendOnce(ctx context.Context, p *peerState) (time.Duration, error) {
	b, _ := r.takeBatch(p, false)
	if b == nil {
		return 0, nil
	}
	return r.deliver(ctx, p, b)
}

// takeBatch forms p's next batch: the oldest resync marks, then queued
// tasks from the front, up to BatchSize, leaving out every instance that
// a batch in flight carries (package doc, "Pipelining"); the batch's
// instances are in flight from then on, until deliver returns. It returns nil when there is
// nothing to send, or, with inRun, while a back-off is pending (the sender
// must wait it out first); progressed says whether expired tasks or
// resync marks were consumed on the way.
func (r *Replicator) takeBatch(p *peerState, inRun bool) (b *batch, progressed bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if inRun && p.pause > 0 {
		return nil, true
	}
	var skip func(instanceKey) bool
	if len(p.busy) > 0 {
		skip = func(k instanceKey) bool { _, ok := p.busy[k]; return ok }
	}
	now := r.cfg.Now()
	resynced := p.st.resynced
	ts := r.resyncLocked(p, r.cfg.BatchSize, now, skip)
	more, expired := p.q.takeSkipping(r.cfg.BatchSize-len(ts), now, skip)
	ts = append(ts, more...)
	p.st.expired += uint64(expired)
	progressed = expired > 0 || p.st.resynced != resynced
	if len(ts) == 0 {
		return nil, progressed
	}
	for _, t := range ts {
		p.busy[t.inst] = struct{}{}
	}
	p.seq++
	p.inFlight++
	return &batch{seq: p.seq, tasks: ts}, progressed
}

// releaseLocked ends b's flight: its instances may go into the next batch.
// p.mu is held, together with whatever put b's tasks back.
func (p *peerState) releaseLocked(b *batch) {
	if len(b.tasks) == 0 {
		return // a probe
	}
	for _, t := range b.tasks {
		delete(p.busy, t.inst)
	}
	p.inFlight--
}

// deliver sends b, formed by takeBatch, and handles the answer: it returns
// the back-off to wait before the next batch (0 if none) and the error of a
// failed batch. Whatever the outcome, b's instances leave the in-flight set
// under the same lock that puts a retryable batch back at the front of the
// queue, so no later batch can take a newer task of theirs first.
func (r *Replicator) deliver(ctx context.Context, p *peerState, b *batch) (time.Duration, error) {
	items := make([]compat.ReplicationItem, len(b.tasks))
	for i, t := range b.tasks {
		items[i] = t.item
	}
	resps, err := r.client.sendBatch(ctx, &p.peer, items)
	if err == nil && len(resps) != len(items) {
		err = fmt.Errorf("%w: %d answers to %d items", errBadResponse, len(resps), len(items))
	}
	if err != nil {
		if ctx.Err() != nil {
			// Shutting down, not the peer's fault: keep the tasks for Flush.
			p.mu.Lock()
			exp, drop := p.q.requeue(b.tasks, r.cfg.Now())
			p.st.expired += uint64(exp)
			p.st.dropped += uint64(drop)
			p.releaseLocked(b)
			p.mu.Unlock()
			return 0, err
		}
		return r.failed(p, b, err), err
	}
	r.succeeded(p, b)
	for i, resp := range resps {
		if resp.StatusCode >= 200 && resp.StatusCode <= 299 {
			continue
		}
		p.mu.Lock()
		p.st.itemFail++
		p.mu.Unlock()
		r.handleItemFailure(p, items[i], b.tasks[i].rev, resp)
	}
	return 0, nil
}

// resyncLocked turns the oldest resync marks of p's queue into tasks, at
// most n items: each instance's current state from the registry, a
// Register of the local copy or, when it is gone, a Cancel; and when an
// override change was among the tasks the mark replaced, the current
// override as a StatusUpdate or, without one, a DeleteStatusOverride with
// the current status (two items, never split over two batches; with n < 2
// they exceed it). The copy may be newer than the revisions the queue
// has seen (p.seen): the changes in between are still on their way to
// OnEvent and reach the peer after it, in order, each a setter of state
// the copy already holds, so the peer ends at the same state. p.mu is held.
func (r *Replicator) resyncLocked(p *peerState, n int, now time.Time, skip func(instanceKey) bool) []*task {
	var out []*task
	for from := 0; len(out) < n; {
		k, f, at, ok := p.q.nextResync(from, skip)
		if !ok || (f&resyncOverride != 0 && len(out)+2 > n && len(out) > 0) {
			break // the next one's two items go into the next batch
		}
		p.q.takeResyncAt(at)
		from = at + 1
		p.st.resynced++
		add := func(it compat.ReplicationItem, in *registry.Instance, rev int64) {
			out = append(out, &task{inst: k, item: it, rev: rev, enqueued: now, expires: now.Add(r.ttl(it.Action, in))})
		}
		v, ok := r.reg.Get(k.app, k.id)
		if !ok {
			add(compat.ReplicationItem{AppName: k.app, ID: k.id, Action: compat.ActionCancel}, nil, 0)
			continue
		}
		if v.Static {
			continue // each node's own configuration, never replicated
		}
		in := v.Instance
		reg := compat.ReplicationItem{AppName: k.app, ID: k.id, Action: compat.ActionRegister,
			Instance: &v, Status: string(in.Status)}
		setDirty(&reg, in)
		add(reg, in, v.Revision)
		if f&resyncOverride == 0 {
			continue
		}
		ov := compat.ReplicationItem{AppName: k.app, ID: k.id, Action: compat.ActionDeleteStatusOverride, Status: string(in.Status)}
		if o := in.OverriddenStatus; o != "" && o != registry.StatusUnknown {
			ov.Action, ov.Status = compat.ActionStatusUpdate, string(o)
		}
		setDirty(&ov, in)
		add(ov, in, v.Revision)
	}
	return out
}

// succeeded records b's success (a probe's when it has no tasks) and ends
// b's flight. It ends a failure streak unless b was in flight with the
// failure that last grew it (an older batch the peer still took says
// nothing about the retry).
func (r *Replicator) succeeded(p *peerState, b *batch) {
	now := r.cfg.Now()
	p.mu.Lock()
	p.releaseLocked(b)
	if n := len(b.tasks); n > 0 {
		p.st.batches++
		p.st.items += uint64(n)
	}
	p.st.lastSuccess, p.lastContact = now, now
	was := p.lastErr
	if b.seq > p.roundSeq {
		p.st.backoffUntil = time.Time{}
		p.streak, p.lastErr = 0, 0
	}
	recovered := was != 0 && p.lastErr == 0
	p.mu.Unlock()
	if recovered {
		p.log.Info("peer replication recovered")
	}
}

// failed records b's failure and either puts it back at the front of the
// queue (retryable) or drops it, and ends b's flight under the same lock.
// It returns the back-off before the next attempt, also left in p.pause
// for the sender. Batches in flight together fail together when a peer goes
// away: only the first failure of such a round grows the streak and backs
// off (see peerState.roundSeq), the others are put back and counted.
func (r *Replicator) failed(p *peerState, b *batch, err error) time.Duration {
	kind := classify(err)
	now := r.cfg.Now()
	var delay time.Duration
	p.mu.Lock()
	was := p.lastErr
	p.lastErr = kind
	p.st.lastErr, p.st.lastErrAt, p.lastContact = err.Error(), now, now
	switch kind {
	case failCongestion:
		p.st.congestion++
	case failNetwork:
		p.st.network++
	case failRejected:
		p.st.rejected++
	default:
		p.st.badResp++
	}
	if kind.retry() {
		if b.seq > p.roundSeq {
			p.streak++
			p.roundSeq = p.seq
			base := r.cfg.NetworkFailureRetryDelay
			if kind == failCongestion {
				base = r.cfg.CongestionRetryDelay
			}
			delay = backoff(base, r.cfg.MaxRetryDelay, p.streak, p.rnd)
			p.st.backoffUntil = now.Add(delay)
			p.pause = max(p.pause, delay)
		}
		exp, drop := p.q.requeue(b.tasks, now)
		p.st.expired += uint64(exp)
		p.st.dropped += uint64(drop)
	} else {
		p.streak = 0
		p.st.dropped += uint64(len(b.tasks))
	}
	p.releaseLocked(b)
	p.mu.Unlock()
	// Log changes of state, not every failure: a dead peer would otherwise
	// write a line per back-off.
	if was != kind {
		p.log.Warn("peer replication failing", "kind", kind.String(), "retry", kind.retry(), "count", len(b.tasks), "err", err)
	} else {
		p.log.Debug("peer replication still failing", "kind", kind.String(), "count", len(b.tasks), "err", err)
	}
	return delay
}

// handleItemFailure is Eureka's PeerEurekaNode handling of a failed item:
// a heartbeat the peer does not know (404) is answered with a register of
// the local copy; a heartbeat the peer knows better (409 with its copy)
// makes this server adopt the peer's copy, locally only, provided the local
// lease is still the one the heartbeat was sent for (rev, see
// registry.Adopt): a cancel or override removal made since must not be
// undone by the peer's older view.
func (r *Replicator) handleItemFailure(p *peerState, it compat.ReplicationItem, rev int64, resp compat.ReplicationResponse) {
	p.log.Debug("peer refused item", "action", string(it.Action), "app", it.AppName, "instance", it.ID, "status", resp.StatusCode)
	if it.Action != compat.ActionHeartbeat {
		return
	}
	if resp.StatusCode == 404 {
		r.reregister(p, it.AppName, it.ID)
		return
	}
	if resp.Entity == nil || resp.Entity.Instance == nil {
		return
	}
	// syncInstancesIfTimestampDiffers; the registry decides whether this
	// server adopts peers' copies at all (sync-when-timestamp-differs).
	if err := r.reg.Adopt(*resp.Entity, rev); err != nil {
		p.log.Warn("cannot adopt peer's copy", "app", it.AppName, "instance", it.ID, "err", err)
	}
}

// reregister answers a peer's 404 to a heartbeat with a Register of the
// local copy, queued behind whatever is pending for that peer. It must not
// overtake a newer change of the instance: the copy is read while the peer's
// queue is locked, and only queued when its lease's revision is one the
// queue has already seen (p.seen). A copy newer than that belongs to a
// change the registry is delivering right now, which reaches the peer in
// order; if that change is not itself a register, the next heartbeat 404s
// and this runs again. An instance cancelled meanwhile is gone from the
// registry and not registered again.
func (r *Replicator) reregister(p *peerState, app, id string) {
	p.mu.Lock()
	v, ok := r.reg.Get(app, id)
	if !ok || v.Revision > p.seen {
		p.mu.Unlock()
		return
	}
	reg := compat.ReplicationItem{AppName: app, ID: id, Action: compat.ActionRegister,
		Instance: &v, Status: string(v.Instance.Status)}
	setDirty(&reg, v.Instance)
	now := r.cfg.Now()
	p.pushLocked(&task{item: reg, enqueued: now, expires: now.Add(r.ttl(compat.ActionRegister, v.Instance))})
	p.mu.Unlock()
	p.wakeUp()
}

// backoff returns the delay before retry number attempt (1-based): base
// doubled per earlier attempt, capped at max, then jittered into
// [d/2, d] so that the servers of a cluster do not retry in step.
func backoff(base, max time.Duration, attempt int, rnd *rand.Rand) time.Duration {
	d := base
	for i := 1; i < attempt && d < max; i++ {
		d *= 2
	}
	d = min(d, max)
	half := d / 2
	return half + time.Duration(rnd.Int64N(int64(d-half)+1))
}

// Flush sends what is queued for every peer, ignoring the batch delay, until
// the queues are empty, a peer fails, or ctx is done. It is meant for
// shutdown, after Run returned; it returns the peers' errors joined.
func (r *Replicator) Flush(ctx context.Context) error {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for _, p := range r.list() {
		wg.Go(func() {
			for ctx.Err() == nil {
				p.mu.Lock()
				n := p.q.len() + p.q.pendingResyncs()
				p.mu.Unlock()
				if n == 0 {
					return
				}
				if _, err := r.sendOnce(ctx, p); err != nil {
					mu.Lock()
					errs = append(errs, fmt.Errorf("flushing to %s: %w", p.peer.URL, err))
					mu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	if len(errs) == 0 && ctx.Err() != nil {
		return ctx.Err()
	}
	return errors.Join(errs...)
}

// PeerStatus is the replication state of one peer.
type PeerStatus struct {
	URL         string        // scrubbed
	Host        string        // the URL's host (Peer.Host)
	State       string        // "up", "backing off" or "failing"
	QueueDepth  int           // pending tasks
	InFlight    int           // batches sent and not answered yet
	Lag         time.Duration // age of the oldest pending task
	BatchesSent uint64
	ItemsSent   uint64
	// Failures by kind: batches answered 503 or timed out (Congestion),
	// network errors (Network), other statuses (Rejected), unusable answers
	// (BadResponse), and items a peer answered with a non-2xx (Items).
	Failures  Failures
	Dropped   uint64 // tasks dropped: queue and resync marks full, or batch not retryable
	Expired   uint64 // tasks that outlived their expiry while queued
	Coalesced uint64 // tasks folded into the instance's last pending task of the same action
	HeldBack  uint64 // heartbeats not queued because they overtook a change not yet queued
	// ResyncPending counts the instances marked for a resync (their tasks
	// overflowed the queue, see queue); Resyncs counts the instances ever
	// marked, Resynced the resyncs taken into a batch.
	ResyncPending     int
	Resyncs, Resynced uint64
	LastSuccess       time.Time
	LastError         string
	LastErrorAt       time.Time
	// Available: the last batch or probe sent to the peer succeeded. A peer
	// nothing was sent to yet is not available.
	Available bool
}

// Failures counts failures by kind.
type Failures struct {
	Congestion, Network, Rejected, BadResponse, Items uint64
}

// Status returns the state of every peer, in peer order.
func (r *Replicator) Status() []PeerStatus {
	now := r.cfg.Now()
	peers := r.list()
	out := make([]PeerStatus, 0, len(peers))
	for _, p := range peers {
		p.mu.Lock()
		s := PeerStatus{
			URL: p.peer.URL, Host: p.peer.Host, State: "up", QueueDepth: p.q.len(), InFlight: p.inFlight,
			BatchesSent: p.st.batches, ItemsSent: p.st.items,
			Failures: Failures{Congestion: p.st.congestion, Network: p.st.network, Rejected: p.st.rejected,
				BadResponse: p.st.badResp, Items: p.st.itemFail},
			Dropped: p.st.dropped, Expired: p.st.expired, Coalesced: p.st.coalesced, HeldBack: p.st.heldBack,
			ResyncPending: p.q.pendingResyncs(), Resyncs: p.q.resyncs, Resynced: p.st.resynced,
			LastSuccess: p.st.lastSuccess, LastError: p.st.lastErr, LastErrorAt: p.st.lastErrAt,
		}
		if o := p.q.oldest(); !o.IsZero() {
			s.Lag = max(now.Sub(o), 0)
		}
		s.Available = p.lastErr == 0 && !p.st.lastSuccess.IsZero()
		switch {
		case now.Before(p.st.backoffUntil):
			s.State = "backing off"
		case p.lastErr != 0:
			s.State = "failing"
		}
		p.mu.Unlock()
		out = append(out, s)
	}
	return out
}
