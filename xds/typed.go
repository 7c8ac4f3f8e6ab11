package xds

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
)

// typed is the cache of one resource type for one group: goreka's own
// cachev3.Cache (go-control-plane's server keeps the protocol: streams,
// nonces, ACKs), built so that one change costs what it touches, not what
// each stream is subscribed to. go-control-plane's LinearCache answers each
// response by walking and cloning the stream's whole subscription, and
// re-registers every subscribed name on each SotW ACK; at 2,000 names and
// 100 streams that was most of a push's time. Here:
//
//   - each resource is held marshalled, once (entry.any), and the same
//     bytes go to every stream and response; the messages are not kept;
//     an assignment is held as its parts (render.go), shared by the
//     zones' caches, and rendered for its zone as it is sent;
//   - a stream's state (watcher) outlives its watches: go-control-plane
//     opens a new watch on every request, and the watcher of a known
//     stream (router binds the request to its stream) only diffs the
//     subscription (delta: by the request's own subscribe and unsubscribe
//     lists) instead of registering every name again;
//   - an index name -> watchers finds the streams a change concerns; the
//     wildcard ones are a set, woken without scanning what they hold;
//   - a change marks the name pending on each of those watchers, and a
//     watcher with an open watch is answered with its pending names only
//     (SotW EDS and RDS carry just the changed resources, as the protocol
//     allows; SotW CDS and LDS carry every subscribed resource, as it
//     requires); a watcher between a response and its ACK keeps them
//     pending until its next watch.
//
// Its version is prefix + the update counter; the revision ring turns one
// into the registry revision it stands for (version.go).
type typed struct {
	typeURL string
	// full: a state-of-the-world answer carries every subscribed resource
	// (CDS, LDS), not only the changed ones.
	full   bool
	prefix string

	mu   sync.Mutex
	n    uint64               // the update counter
	cur  string               // prefix + n, the version of the answers of update n
	revs [revisionRing]update // update i at i % revisionRing
	res  map[string]*entry
	// ids interns the names the watchers refer to, with the watchers
	// subscribed to each by name (ids.go); wild is the wildcard ones,
	// streams the watchers of known streams.
	ids     *nameIDs
	wild    map[*watcher]struct{}
	streams map[streamKey]*watcher
	// all is every resource at update n (a wildcard SotW answer of a
	// full-state type, shared by the streams), nil until asked for.
	all []*anypb.Any
	// touched is the watchers an update marked (scratch).
	touched []*watcher
	// req and dreq are the requests the answers carry: go-control-plane
	// reads only their type, so that a watcher need not keep its stream's
	// last request (a SotW one lists every subscribed name).
	req  *cachev3.Request
	dreq *cachev3.DeltaRequest
}

// body is one resource as held: marshalled whole (any), or an
// assignment's parts (cla, shared by the zones' caches) and the zone it is
// rendered for (render.go), which it is when sent.
type body struct {
	any  *anypb.Any
	cla  *claBytes
	zone string
}

// whole is a as a body.
func whole(a *anypb.Any) body { return body{any: a} }

// zoned is the body of c for a node in zone.
func zoned(c *claBytes, zone string) body { return body{cla: c, zone: c.effective(zone)} }

// same tells whether b and c are the same resource's bytes.
func (b body) same(c body) bool {
	if b.cla != nil || c.cla != nil {
		return b.zone == c.zone && b.cla.equal(c.cla)
	}
	return bytes.Equal(b.any.GetValue(), c.any.GetValue())
}

// entry is one resource: marshalled once, with the update that set it.
type entry struct {
	body
	ver uint64
	// delta is its delta form, made on first use and then shared (a whole
	// resource's only: a rendered one is made per answer, with vs, its
	// version, made once).
	delta *discovery.Resource
	vs    string
}

// resource is e as sent: its Any, rendered for an assignment's zone.
func (t *typed) resource(e *entry) *anypb.Any {
	if e.cla == nil {
		return e.any
	}
	return &anypb.Any{TypeUrl: t.typeURL, Value: e.cla.render(e.zone)}
}

// renderJob is an assignment an answer carries, rendered when the server
// takes the answer to send it (on the stream's goroutine, outside the
// cache's lock): its parts are never changed once made.
type renderJob struct {
	into *anypb.Any
	cla  *claBytes
	zone string
}

// renders renders an answer's jobs.
func renders(jobs []renderJob) {
	for _, j := range jobs {
		j.into.Value = j.cla.render(j.zone)
	}
}

// lazy is e as an answer carries it: a rendered assignment's Any is
// filled in by jobs when the answer is sent.
func (t *typed) lazy(e *entry, jobs *[]renderJob) *anypb.Any {
	if e.cla == nil {
		return e.any
	}
	a := &anypb.Any{TypeUrl: t.typeURL}
	*jobs = append(*jobs, renderJob{a, e.cla, e.zone})
	return a
}

// deltaOf is e's delta form.
func (t *typed) deltaOf(name string, e *entry, jobs *[]renderJob) *discovery.Resource {
	if e.delta != nil {
		return e.delta
	}
	if e.vs == "" {
		e.vs = t.version(e.ver)
	}
	r := &discovery.Resource{Name: name, Version: e.vs, Resource: t.lazy(e, jobs)}
	if e.cla == nil {
		e.delta = r
	}
	return r
}

// What a watcher knows the client holds of a name is kept as a mark: 0
// nothing, the entry's update + 1 that update's resource, foreign one whose
// version the client sent but is not this cache's (known to the client,
// to be sent again).
const foreign = math.MaxUint64

// markOf is the mark of having been sent e.
func markOf(e *entry) uint64 { return e.ver + 1 }

// watcher is one stream's subscription to one typed cache, with its open
// watch if any.
type watcher struct {
	key      streamKey
	keyed    bool // a known stream's: kept across its watches until the stream closes
	wildcard bool
	// subState is the names subscribed to by name and what the client
	// was sent of each name (a mark; 0: nothing yet), subscribed or not
	// (a wildcard's): by interned id, as a stream holds as many names as
	// it subscribes to (2,000 at 100k instances).
	subState
	// pending is the names changed (or newly subscribed) since the last
	// answer, to look at on the next one.
	pending map[string]struct{}
	mark    uint64 // the update that last put it in touched
	slot    uint32 // its number in the cache's name table (ids.go)

	seq uint64 // numbers its watches, so that an old watch's cancel leaves the new one
	// last is a keyed SotW stream's last answer: the server drops an
	// answer still queued when a request of its type arrives first (it
	// replaces the watch's channel), so the next watch undoes what an
	// answer that was never sent recorded. redo makes the next answer of
	// a whole-type stream be sent whatever is pending.
	last  *sotwResponse
	redo  bool
	open  bool
	fresh bool // answer even when nothing changed (a first request)
	ch    chan cachev3.Response
	dch   chan cachev3.DeltaResponse
	// returned is what a keyed delta stream's server-side subscription
	// holds as returned resources: the server writes to it on
	// unsubscriptions; this cache keeps its own state in names and extra.
	returned map[string]string
}

var (
	_ cachev3.Cache         = (*typed)(nil)
	_ cachev3.Response      = (*sotwResponse)(nil)
	_ cachev3.DeltaResponse = (*deltaResponse)(nil)
)

// noneReturned is the returned resources a keyed SotW stream's server-side
// subscription is given: empty, so that the server's per-request pruning
// of it (against the names the request lists) costs nothing; never
// written to (the server deletes only the entries it holds).
var noneReturned = map[string]string{}

// cacheSeq numbers caches, to give each a prefix of its own.
var cacheSeq atomic.Uint64

// newTyped returns the cache of typeURL holding init, at version rev.
func newTyped(typeURL string, init map[string]*anypb.Any, rev string) *typed {
	bs := make(map[string]body, len(init))
	for name, a := range init {
		bs[name] = whole(a)
	}
	return newTypedBodies(typeURL, bs, rev)
}

// newTypedBodies is newTyped holding bodies.
func newTypedBodies(typeURL string, init map[string]body, rev string) *typed {
	t := &typed{
		typeURL: typeURL, full: cachev3.ResourceRequiresFullStateInSotw(typeURL),
		prefix: versionPrefix + strconv.FormatUint(cacheSeq.Add(1), 36) + "-",
		res:    make(map[string]*entry, len(init)),
		ids:    newNameIDs(), wild: map[*watcher]struct{}{}, streams: map[streamKey]*watcher{},
		req: &cachev3.Request{TypeUrl: typeURL}, dreq: &cachev3.DeltaRequest{TypeUrl: typeURL},
	}
	t.cur = t.prefix + "0"
	t.ids.top = 1
	t.revs[0] = update{version: rev}
	for name, b := range init {
		t.res[name] = &entry{body: b}
	}
	return t
}

// marshalOptions make equal messages equal bytes, which is how a rebuilt
// resource is told from the one held (holds).
var marshalOptions = proto.MarshalOptions{Deterministic: true}

// marshalAny is m as a resource of typeURL.
func marshalAny(typeURL string, m proto.Message) (*anypb.Any, error) {
	b, err := marshalOptions.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("xds: marshalling %s: %w", typeName(typeURL), err)
	}
	return &anypb.Any{TypeUrl: typeURL, Value: b}, nil
}

// update hands the cache a change made at version rev (the registry
// revision) received at at: the resources of upd replace or add theirs,
// those of del go. Every stream subscribed to one of those names is
// marked, and those with an open watch are answered.
func (t *typed) update(upd map[string]*anypb.Any, del []string, rev string, at time.Time) error {
	bs := make(map[string]body, len(upd))
	for name, a := range upd {
		bs[name] = whole(a)
	}
	return t.updateBodies(bs, del, rev, at)
}

// updateBodies is update with bodies.
func (t *typed) updateBodies(upd map[string]body, del []string, rev string, at time.Time) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.n++
	t.ids.top = t.n + 1
	if t.n%(markPeriod/4) == 0 {
		t.ids.sweep()
	}
	t.revs[t.n%revisionRing] = update{rev, at}
	t.cur = t.prefix + strconv.FormatUint(t.n, 10)
	t.all = nil
	t.touched = t.touched[:0]
	for name, b := range upd {
		t.res[name] = &entry{body: b, ver: t.n}
		t.touch(name)
	}
	for _, name := range del {
		if _, ok := t.res[name]; ok {
			delete(t.res, name)
			t.touch(name)
		}
	}
	for _, w := range t.touched {
		if w.open {
			t.respond(w)
		}
	}
	clear(t.touched)
	return nil
}

// touch marks name pending on the watchers it concerns.
func (t *typed) touch(name string) {
	mark := func(w *watcher) {
		w.pending[name] = struct{}{}
		if w.mark != t.n {
			w.mark = t.n
			t.touched = append(t.touched, w)
		}
	}
	if id, ok := t.ids.lookup(name); ok {
		for _, slot := range t.ids.subs[id] {
			mark(t.ids.ws[slot])
		}
	}
	for w := range t.wild {
		mark(w)
	}
}

// holds tells whether the cache holds b as name.
func (t *typed) holds(name string, b body) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.res[name]
	return e != nil && e.same(b)
}

// snapshot is every resource held, by name.
func (t *typed) snapshot() map[string]body {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[string]body, len(t.res))
	for name, e := range t.res {
		out[name] = e.body
	}
	return out
}

// pick is the resources of names (every resource when names is empty),
// with the version of the cache's last update.
func (t *typed) pick(names []string) ([]*anypb.Any, string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []*anypb.Any
	if len(names) == 0 {
		out = make([]*anypb.Any, 0, len(t.res))
		for _, e := range t.res {
			out = append(out, t.resource(e))
		}
	}
	for _, n := range names {
		if e, ok := t.res[n]; ok {
			out = append(out, t.resource(e))
		}
	}
	return out, t.revs[t.n%revisionRing].version
}

// GetResources is every resource held, decoded (tests and tools; the
// cache keeps the bytes only).
func (t *typed) GetResources() map[string]types.Resource {
	out := map[string]types.Resource{}
	t.mu.Lock()
	all := make(map[string]*anypb.Any, len(t.res))
	for name, e := range t.res {
		all[name] = t.resource(e)
	}
	t.mu.Unlock()
	for name, a := range all {
		if m, err := a.UnmarshalNew(); err == nil {
			out[name] = m
		}
	}
	return out
}

// CreateWatch is a state-of-the-world watch of a stream the cache does
// not know (router.CreateWatch binds the streams it knows): its state is
// the subscription's, and it is dropped after its one answer.
func (t *typed) CreateWatch(req *cachev3.Request, sub cachev3.Subscription, ch chan cachev3.Response) (func(), error) {
	return t.watch(streamKey{}, false, req, sub, ch)
}

// CreateDeltaWatch is CreateWatch's delta form.
func (t *typed) CreateDeltaWatch(req *cachev3.DeltaRequest, sub cachev3.Subscription, ch chan cachev3.DeltaResponse) (func(), error) {
	return t.watchDelta(streamKey{}, false, req, sub, ch)
}

// Fetch is not served from here (the REST form is rest.go's).
func (t *typed) Fetch(context.Context, *cachev3.Request) (cachev3.Response, error) {
	return nil, errors.New("xds: fetch is served by the REST handler")
}

func (t *typed) watch(sk streamKey, keyed bool, req *cachev3.Request, sub cachev3.Subscription, ch chan cachev3.Response) (func(), error) {
	if req.GetTypeUrl() != t.typeURL {
		return nil, fmt.Errorf("xds: request type %s on the cache of %s", req.GetTypeUrl(), t.typeURL)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	w := t.watcherOf(sk, keyed, sub)
	created := w == nil
	if created {
		w = t.newWatcher(sk, keyed, sub)
	} else {
		if l := w.last; l != nil && !l.delivered.Load() {
			for _, u := range l.undo {
				if u.m == 0 {
					w.forgetKnown(u.name)
				} else {
					w.setKnown(u.name, u.m)
				}
				w.pending[u.name] = struct{}{}
			}
			w.redo = w.redo || l.whole
		}
		w.last = nil
		t.setWildcard(w, sub.IsWildcard())
		// After the additions w holds every requested name, so the two
		// sets are equal when their sizes are.
		s := sub.SubscribedResources()
		for name := range s {
			if !w.subscribedByName(name) {
				t.register(w, name)
			}
		}
		if w.nsub != len(s) {
			var gone []string
			w.subscribedNames(func(name string) {
				if _, ok := s[name]; !ok {
					gone = append(gone, name)
				}
			})
			for _, name := range gone {
				t.unregister(w, name)
			}
		}
	}
	v := req.GetVersionInfo()
	w.ch, w.dch = ch, nil
	// A new watcher of a known stream knows nothing of what the stream
	// holds (a reconnect sends the version it had): its first answer goes
	// out even when nothing changed, so that a resource gone meanwhile (the
	// last cluster, a listener) is gone at the client too. An unknown
	// stream's watcher is new on every request and reads what the stream
	// holds from its subscription.
	w.fresh = (created && keyed) || v == "" || !strings.HasPrefix(v, t.prefix)
	return t.open(w), nil
}

func (t *typed) watchDelta(sk streamKey, keyed bool, req *cachev3.DeltaRequest, sub cachev3.Subscription, ch chan cachev3.DeltaResponse) (func(), error) {
	if req.GetTypeUrl() != t.typeURL {
		return nil, fmt.Errorf("xds: request type %s on the cache of %s", req.GetTypeUrl(), t.typeURL)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	w := t.watcherOf(sk, keyed, sub)
	if w == nil {
		w = t.newWatcher(sk, keyed, sub)
		w.returned = map[string]string{}
	} else {
		// The server applied the request's lists to its subscription; the
		// watcher applies the same lists, not a diff of everything.
		for _, name := range req.GetResourceNamesSubscribe() {
			if name != "*" && !w.subscribedByName(name) {
				t.register(w, name)
			}
		}
		for _, name := range req.GetResourceNamesUnsubscribe() {
			if name == "*" {
				continue
			}
			t.unregister(w, name)
			if !w.wildcard {
				w.forgetKnown(name) // the client dropped it: nothing to say
			} else {
				// Still wanted through the wildcard: the protocol says
				// send it again (or say it is gone).
				if _, ok := w.known(name); ok {
					w.setKnown(name, foreign)
				}
				w.pending[name] = struct{}{}
			}
		}
		t.setWildcard(w, sub.IsWildcard())
		clear(w.returned)
	}
	w.ch, w.dch = nil, ch
	w.fresh = w.wildcard && req.GetResponseNonce() == ""
	return t.open(w), nil
}

// watcherOf is the watcher of stream sk (nil: a new one is needed).
func (t *typed) watcherOf(sk streamKey, keyed bool, sub cachev3.Subscription) *watcher {
	if !keyed {
		return nil
	}
	return t.streams[sk]
}

// newWatcher is the watcher of a stream's first watch (or of an unknown
// stream's watch), from its subscription: everything it subscribes to and
// everything it says it holds is pending.
func (t *typed) newWatcher(sk streamKey, keyed bool, sub cachev3.Subscription) *watcher {
	w := &watcher{key: sk, keyed: keyed, subState: subState{ids: t.ids}, pending: map[string]struct{}{}}
	t.ids.addWatcher(w)
	for name := range sub.SubscribedResources() {
		t.register(w, name)
	}
	for name, v := range sub.ReturnedResources() {
		w.setKnown(name, t.entryMark(v))
		w.pending[name] = struct{}{}
	}
	t.setWildcard(w, sub.IsWildcard())
	if keyed {
		t.streams[sk] = w
	}
	return w
}

// setWildcard makes w wildcard or not; becoming one puts every resource
// pending, ceasing to be one every name it holds only through it.
func (t *typed) setWildcard(w *watcher, on bool) {
	if on == w.wildcard {
		return
	}
	w.wildcard = on
	if on {
		t.wild[w] = struct{}{}
		for name := range t.res {
			w.pending[name] = struct{}{}
		}
		return
	}
	delete(t.wild, w)
	w.marked(func(name string, _ uint64) {
		if !w.subscribedByName(name) {
			w.pending[name] = struct{}{}
		}
	})
}

func (t *typed) register(w *watcher, name string) {
	w.subscribe(w, name)
	w.pending[name] = struct{}{}
}

// unregister drops name from w's names; it is pending, so that the next
// answer forgets (delta: removes) it.
func (t *typed) unregister(w *watcher, name string) {
	if w.unsubscribe(w, name) {
		w.pending[name] = struct{}{} // its mark, if any, stays
	}
}

// drop removes w from the index.
func (t *typed) drop(w *watcher) {
	w.release(w)
	t.ids.dropWatcher(w)
	delete(t.wild, w)
	if w.keyed && t.streams[w.key] == w {
		delete(t.streams, w.key)
	}
	w.open = false
}

// forget drops stream sk's watcher (the stream closed).
func (t *typed) forget(sk streamKey) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if w := t.streams[sk]; w != nil {
		t.drop(w)
	}
}

// open opens w's watch, answering it at once if anything is due, and
// returns its cancel.
func (t *typed) open(w *watcher) func() {
	w.seq++
	seq := w.seq
	w.open = true
	t.respond(w)
	return func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		if w.seq != seq || !w.open {
			return
		}
		w.open = false
		if !w.keyed {
			t.drop(w)
		}
	}
}

// subscribed tells whether w wants name.
func (w *watcher) subscribed(name string) bool {
	return w.wildcard || w.subscribedByName(name)
}

// known is the mark of name (false: nothing sent).
func (w *watcher) known(name string) (uint64, bool) {
	m := w.markFor(name)
	return m, m != 0
}

// setKnown records that the client holds mark m (not 0) of name.
func (w *watcher) setKnown(name string, m uint64) { w.setMark(name, m) }

// forgetKnown records that the client holds nothing of name.
func (w *watcher) forgetKnown(name string) { w.clearMark(name) }

// resetPending empties w.pending, replacing a map grown large (a first
// answer's) rather than clearing it on every answer.
func (w *watcher) resetPending() {
	if len(w.pending) > 64 {
		w.pending = map[string]struct{}{}
		return
	}
	clear(w.pending)
}

// respond answers w's open watch with what its pending names call for;
// nothing is sent (the watch stays open) when nothing is due and the
// watch is not a first one.
func (t *typed) respond(w *watcher) {
	if full(w.ch) || full(w.dch) {
		// go-control-plane drains a stream's channel (one answer per type)
		// before each new watch, so this does not happen; should it, a send
		// would block every push of the namespace under its locks. The
		// changes stay pending for the stream's next watch or update.
		return
	}
	if w.dch != nil {
		t.respondDelta(w)
		return
	}
	var list []*anypb.Any
	var jobs []renderJob
	var undo []mark
	whole := false
	// remember records that name's mark becomes m, to be undone if the
	// answer is dropped (keyed streams: an unknown one's state is its
	// subscription's, which a dropped answer does not change).
	remember := func(name string, m uint64) {
		if w.keyed {
			old, _ := w.known(name)
			undo = append(undo, mark{name, old})
		}
		if m == 0 {
			w.forgetKnown(name)
		} else {
			w.setKnown(name, m)
		}
	}
	switch {
	case t.full && w.wildcard && w.keyed:
		// Every answer is the whole type, and everything pending was
		// changed after the last one (or newly subscribed): no per-name
		// bookkeeping needed.
		changed := w.fresh || w.redo || len(w.pending) > 0
		w.resetPending()
		if !changed {
			return
		}
		w.redo = false
		list, whole = t.everything(), true
	case t.full:
		changed := w.fresh
		for name := range w.pending {
			e, ok := t.res[name]
			m, known := w.known(name)
			if ok && w.subscribed(name) && (!known || m != markOf(e)) || (!ok || !w.subscribed(name)) && known {
				changed = true
				break
			}
		}
		w.resetPending()
		if !changed {
			return
		}
		if w.wildcard {
			list = t.everything()
			var stale []string
			w.marked(func(name string, _ uint64) {
				if _, ok := t.res[name]; !ok {
					stale = append(stale, name)
				}
			})
			for _, name := range stale {
				w.forgetKnown(name)
			}
			for name, e := range t.res {
				w.setKnown(name, markOf(e))
			}
		} else {
			var extra, names []string
			w.marked(func(name string, _ uint64) {
				if !w.subscribedByName(name) {
					extra = append(extra, name)
				}
			})
			w.subscribedNames(func(name string) { names = append(names, name) })
			for _, name := range extra {
				remember(name, 0)
			}
			for _, name := range names {
				if e, ok := t.res[name]; ok {
					list = append(list, t.lazy(e, &jobs))
					remember(name, markOf(e))
				} else {
					remember(name, 0)
				}
			}
		}
	default:
		for name := range w.pending {
			e, ok := t.res[name]
			if !ok || !w.subscribed(name) {
				if _, known := w.known(name); known {
					remember(name, 0)
				}
				continue
			}
			if m, known := w.known(name); known && m == markOf(e) {
				continue
			}
			remember(name, markOf(e))
			list = append(list, t.lazy(e, &jobs))
		}
		w.resetPending()
		if len(list) == 0 && !w.fresh {
			// Nothing sent: what was forgotten stays forgotten.
			return
		}
	}
	r := &sotwResponse{req: t.req, version: t.cur, returned: noneReturned, undo: undo, whole: whole, jobs: jobs,
		out: &discovery.DiscoveryResponse{VersionInfo: t.cur, Resources: list, TypeUrl: t.typeURL}}
	if w.keyed {
		w.last = r
	} else {
		r.returned = t.versionMap(w)
	}
	ch := w.ch
	t.sent(w)
	ch <- r // buffered: one answer per watch
}

// full reports whether a buffered channel has no room (false for nil).
func full[T any](ch chan T) bool { return ch != nil && len(ch) == cap(ch) }

// everything is every resource, for a wildcard answer of a full-state
// type: one slice per update, shared by the streams.
func (t *typed) everything() []*anypb.Any {
	if t.all == nil {
		t.all = make([]*anypb.Any, 0, len(t.res))
		for _, e := range t.res {
			t.all = append(t.all, t.resource(e))
		}
	}
	return t.all
}

func (t *typed) respondDelta(w *watcher) {
	var out []*discovery.Resource
	var removed []string
	var jobs []renderJob
	for name := range w.pending {
		e, ok := t.res[name]
		m, known := w.known(name)
		switch {
		case ok && w.subscribed(name):
			if known && m == markOf(e) {
				continue
			}
			w.setKnown(name, markOf(e))
			out = append(out, t.deltaOf(name, e, &jobs))
		case known:
			w.forgetKnown(name)
			removed = append(removed, name)
		}
	}
	w.resetPending()
	if len(out) == 0 && len(removed) == 0 && !w.fresh {
		return
	}
	r := &deltaResponse{req: t.dreq, version: t.cur, returned: w.returned, jobs: jobs,
		out: &discovery.DeltaDiscoveryResponse{SystemVersionInfo: t.cur, Resources: out, RemovedResources: removed, TypeUrl: t.typeURL}}
	if !w.keyed {
		r.returned = t.versionMap(w)
	}
	ch := w.dch
	t.sent(w)
	ch <- r // buffered: one answer per watch and type
}

// sent closes w's watch after its answer; an unknown stream's watcher is
// done with.
func (t *typed) sent(w *watcher) {
	w.open = false
	if !w.keyed {
		t.drop(w)
	}
}

// version is the resource version of an entry's update (delta).
func (t *typed) version(ver uint64) string {
	return t.prefix + "v" + strconv.FormatUint(ver, 10)
}

// entryMark is the mark of resource version v (foreign when v is not one
// of this cache's).
func (t *typed) entryMark(v string) uint64 {
	s, ok := strings.CutPrefix(v, t.prefix+"v")
	if !ok {
		return foreign
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil || n == foreign-1 || n > t.n || n+1+markPeriod/2 < t.ids.top {
		return foreign // not one this cache made, or too old to keep in a mark
	}
	return n + 1
}

// versionMap is what w holds as the returned resources of an unknown
// stream's subscription, which is all the state it has for its next
// watch.
func (t *typed) versionMap(w *watcher) map[string]string {
	out := map[string]string{}
	w.marked(func(name string, m uint64) {
		if m == foreign {
			out[name] = ""
		} else {
			out[name] = t.version(m - 1)
		}
	})
	return out
}

// revisionOf is the revision of cache version v ("" and false when v is not
// one of this cache's or is too old to be remembered).
func (t *typed) revisionOf(v string) (update, bool) {
	n, err := strconv.ParseUint(strings.TrimPrefix(v, t.prefix), 10, 64)
	if err != nil || !strings.HasPrefix(v, t.prefix) {
		return update{}, false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if n > t.n || t.n-n >= revisionRing {
		return update{}, false
	}
	return t.revs[n%revisionRing], true
}

// latest is the version of the cache's last update.
func (t *typed) latest() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.revs[t.n%revisionRing].version
}

// sotwResponse is a state-of-the-world answer: the resources' bytes are
// the cache's, shared; the DiscoveryResponse is the stream's own (the
// server sets its nonce, the callbacks its version).
type sotwResponse struct {
	req      *cachev3.Request
	version  string
	out      *discovery.DiscoveryResponse
	returned map[string]string
	// delivered is set when the server takes the answer to send it;
	// undo is the marks it replaced, whole that it was a whole-type one.
	delivered atomic.Bool
	undo      []mark
	whole     bool
	// jobs are the assignments to render into out, once, when sent.
	jobs   []renderJob
	render sync.Once
}

// mark is a name's mark before an answer changed it.
type mark struct {
	name string
	m    uint64
}

func (r *sotwResponse) GetDiscoveryResponse() (*discovery.DiscoveryResponse, error) {
	r.delivered.Store(true) // the server calls it as it sends
	r.render.Do(func() { renders(r.jobs); r.jobs = nil })
	return r.out, nil
}
func (r *sotwResponse) GetRequest() *discovery.DiscoveryRequest            { return r.req }
func (r *sotwResponse) GetVersion() (string, error)                        { return r.version, nil }
func (r *sotwResponse) GetResponseVersion() string                         { return r.version }
func (r *sotwResponse) GetReturnedResources() map[string]string            { return r.returned }
func (r *sotwResponse) GetContext() context.Context                        { return context.Background() }
func (r *deltaResponse) GetDeltaRequest() *discovery.DeltaDiscoveryRequest { return r.req }

// deltaResponse is sotwResponse's delta form.
type deltaResponse struct {
	req      *cachev3.DeltaRequest
	version  string
	out      *discovery.DeltaDiscoveryResponse
	returned map[string]string
	jobs     []renderJob
	render   sync.Once
}

func (r *deltaResponse) GetDeltaDiscoveryResponse() (*discovery.DeltaDiscoveryResponse, error) {
	r.render.Do(func() { renders(r.jobs); r.jobs = nil })
	return r.out, nil
}
func (r *deltaResponse) GetSystemVersion() (string, error)       { return r.version, nil }
func (r *deltaResponse) GetResponseVersion() string              { return r.version }
func (r *deltaResponse) GetNextVersionMap() map[string]string    { return r.returned }
func (r *deltaResponse) GetReturnedResources() map[string]string { return r.returned }
func (r *deltaResponse) GetContext() context.Context             { return context.Background() }
