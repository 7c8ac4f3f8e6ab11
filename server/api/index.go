package api

import (
	"container/heap"
	"slices"
	"sync"

	"github.com/goreka/goreka/registry"
)

// key addresses an instance; keys order results (application, then id).
type key struct{ app, id string }

func (a key) less(b key) bool { return a.app < b.app || a.app == b.app && a.id < b.id }

// entry is one instance as of the index's revision: the lease view carried
// by its last change event. Entries are replaced, never mutated.
type entry struct {
	key  key
	view registry.LeaseView
}

type set map[*entry]struct{}

// appIndex is one application's instances and their counts by status.
// The counts stay here beside the registry's (AppStatusCounts, which the
// metrics read): Apps answers them as of the index's revision, with the
// instances the same answer and the watch stream are at, and the registry
// may already be ahead of that revision; counting them from the index's own
// change is O(1) and takes no registry lock.
type appIndex struct {
	ids    map[string]*entry
	counts map[registry.Status]int
}

// Index is the query side of the registry: every instance as of a revision,
// with secondary indexes by status, VIP address, secure VIP address and
// metadata key=value. It is maintained from the ordered change stream
// (Apply, called with every event in revision order), so each change costs
// O(number of the instance's VIP pieces and metadata entries), independent
// of the registry's size, and a query never reads the registry's maps.
//
// The secondary indexes are built by the first query that filters on one of
// those fields (one pass over the instances) and maintained from then on:
// until a tool asks, a change costs only the application's map and counts,
// which matters in a registration storm (the secondary indexes were 6 % of
// a registration's CPU at 10k, perf). The price is paid once: the building
// query holds the write lock for its pass, and change delivery (Apply)
// waits meanwhile: 0.22-0.27 s at 100k instances
// (BenchmarkBuildSecondary100k), about ten times that at 1M.
type Index struct {
	mu    sync.RWMutex
	rev   int64
	size  int
	apps  map[string]*appIndex
	names []string // application names, sorted
	// secondary indexes, nil until the first query that needs them
	// (secondary); a value's set is deleted when it becomes empty
	secondary bool
	status    map[registry.Status]set
	vip       map[string]set
	svip      map[string]set
	meta      map[string]map[string]set // metadata key -> value -> instances
}

// NewIndex builds an index from a view of the registry. Apply must then see
// every event after the view's revision (earlier ones are ignored): build
// it before the registry's writers start, or seed it from a view taken
// after subscribing.
func NewIndex(view *registry.Applications) *Index {
	x := &Index{apps: make(map[string]*appIndex)}
	if view != nil {
		x.rev = view.Revision
		for _, app := range view.Apps {
			for _, v := range app.Instances {
				x.link(&entry{key: key{app.Name, v.Instance.ID()}, view: v})
			}
		}
	}
	return x
}

// Revision is the revision of the last event applied.
func (x *Index) Revision() int64 {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.rev
}

// Apply records one change. Events at or below the index's revision are
// ignored; events that changed nothing only advance the revision.
func (x *Index) Apply(e registry.Event) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if e.Revision <= x.rev {
		return
	}
	x.rev = e.Revision
	if !e.Changed || e.Lease.Instance == nil {
		return
	}
	k := key{e.App, e.ID}
	if ai := x.apps[k.app]; ai != nil {
		if old := ai.ids[k.id]; old != nil {
			x.unlink(old)
		}
	}
	if !e.Kind.Removal() {
		x.link(&entry{key: k, view: e.Lease})
	}
}

func (x *Index) link(en *entry) {
	ai := x.apps[en.key.app]
	if ai == nil {
		ai = &appIndex{ids: make(map[string]*entry), counts: make(map[registry.Status]int)}
		x.apps[en.key.app] = ai
		i, _ := slices.BinarySearch(x.names, en.key.app)
		x.names = slices.Insert(x.names, i, en.key.app)
	}
	in := en.view.Instance
	ai.ids[en.key.id] = en
	ai.counts[in.Status]++
	x.size++
	if x.secondary {
		x.linkSecondary(en)
	}
}

// buildSecondary builds the secondary indexes from the instances; the
// caller holds the write lock.
func (x *Index) buildSecondary() {
	if x.secondary {
		return
	}
	x.secondary = true
	x.status = make(map[registry.Status]set)
	x.vip = make(map[string]set)
	x.svip = make(map[string]set)
	x.meta = make(map[string]map[string]set)
	for _, ai := range x.apps {
		for _, en := range ai.ids {
			x.linkSecondary(en)
		}
	}
}

func (x *Index) linkSecondary(en *entry) {
	in := en.view.Instance
	add(x.status, in.Status, en)
	for p := range registry.VIPPieces(in.VIPAddress) {
		add(x.vip, p, en)
	}
	for p := range registry.VIPPieces(in.SecureVIPAddress) {
		add(x.svip, p, en)
	}
	for k, v := range in.Metadata {
		m := x.meta[k]
		if m == nil {
			m = make(map[string]set)
			x.meta[k] = m
		}
		add(m, v, en)
	}
}

func (x *Index) unlink(en *entry) {
	ai := x.apps[en.key.app]
	in := en.view.Instance
	delete(ai.ids, en.key.id)
	if ai.counts[in.Status]--; ai.counts[in.Status] == 0 {
		delete(ai.counts, in.Status)
	}
	if len(ai.ids) == 0 {
		delete(x.apps, en.key.app)
		if i, ok := slices.BinarySearch(x.names, en.key.app); ok {
			x.names = slices.Delete(x.names, i, i+1)
		}
	}
	x.size--
	if !x.secondary {
		return
	}
	remove(x.status, in.Status, en)
	for p := range registry.VIPPieces(in.VIPAddress) {
		remove(x.vip, p, en)
	}
	for p := range registry.VIPPieces(in.SecureVIPAddress) {
		remove(x.svip, p, en)
	}
	for k, v := range in.Metadata {
		if m := x.meta[k]; m != nil {
			remove(m, v, en)
			if len(m) == 0 {
				delete(x.meta, k)
			}
		}
	}
}

func add[K comparable](m map[K]set, k K, en *entry) {
	s := m[k]
	if s == nil {
		s = make(set)
		m[k] = s
	}
	s[en] = struct{}{}
}

func remove[K comparable](m map[K]set, k K, en *entry) {
	if s := m[k]; s != nil {
		delete(s, en)
		if len(s) == 0 {
			delete(m, k)
		}
	}
}

// KV is one metadata.KEY=VALUE filter.
type KV struct{ Key, Value string }

// Filter selects instances; zero fields match everything. All given
// fields must match (AND).
type Filter struct {
	App    string // upper case
	Status registry.Status
	VIP    string // one piece of vipAddress
	SVIP   string // one piece of secureVipAddress
	Meta   []KV
}

func (f *Filter) matches(en *entry) bool {
	in := en.view.Instance
	if f.App != "" && en.key.app != f.App {
		return false
	}
	if f.Status != "" && in.Status != f.Status {
		return false
	}
	if f.VIP != "" && !registry.VIPMatches(in.VIPAddress, f.VIP) {
		return false
	}
	if f.SVIP != "" && !registry.VIPMatches(in.SecureVIPAddress, f.SVIP) {
		return false
	}
	for _, kv := range f.Meta {
		if v, ok := in.Metadata[kv.Key]; !ok || v != kv.Value {
			return false
		}
	}
	return true
}

// smallest returns the smallest candidate set the filter's indexed fields
// give (a set, or an application's instances), the rest of the filter that
// its members still have to match, and false when the filter has no
// indexed field. The caller holds x.mu.
func (x *Index) smallest(f *Filter) (set, map[string]*entry, Filter, bool) {
	var (
		best    set
		bestApp map[string]*entry
		rest    Filter
		n       = -1
	)
	consider := func(s set, without Filter) {
		if n < 0 || len(s) < n {
			best, bestApp, rest, n = s, nil, without, len(s)
		}
	}
	if f.App != "" {
		ai := x.apps[f.App]
		if ai == nil {
			return nil, nil, Filter{}, true // no such application: nothing matches
		}
		rest = *f
		rest.App = ""
		bestApp, n = ai.ids, len(ai.ids)
	}
	if f.Status != "" {
		r := *f
		r.Status = ""
		consider(x.status[f.Status], r)
	}
	if f.VIP != "" {
		r := *f
		r.VIP = ""
		consider(x.vip[f.VIP], r)
	}
	if f.SVIP != "" {
		r := *f
		r.SVIP = ""
		consider(x.svip[f.SVIP], r)
	}
	for i, kv := range f.Meta {
		r := *f
		r.Meta = slices.Delete(slices.Clone(f.Meta), i, i+1)
		consider(x.meta[kv.Key][kv.Value], r)
	}
	return best, bestApp, rest, n >= 0
}

// Select returns, at the index's revision, the instances matching f with
// keys after from (all if from is nil), in key order, at most limit of them
// (limit < 0: no limit) plus one more when there are more, so the caller
// knows to offer a continuation.
//
// Cost: with an indexed filter, a pass over the smallest matching index set
// (O(m log limit) for m instances in it); without one, a walk over the
// applications in name order from the continuation that stops once the
// page is full. The read lock is held only while collecting; sorting the
// page happens after it is released (entries are immutable).
func (x *Index) Select(f Filter, from *key, limit int) (int64, []*entry) {
	rev, out := x.collect(&f, from, limit)
	sortEntries(out)
	return rev, out
}

func (x *Index) collect(f *Filter, from *key, limit int) (int64, []*entry) {
	x.mu.RLock()
	if !x.secondary && (f.Status != "" || f.VIP != "" || f.SVIP != "" || len(f.Meta) > 0) {
		x.mu.RUnlock()
		x.mu.Lock()
		x.buildSecondary()
		x.mu.Unlock()
		x.mu.RLock()
	}
	defer x.mu.RUnlock()
	want := limit + 1
	if limit < 0 {
		want = -1
	}
	s, ids, rest, indexed := x.smallest(f)
	if indexed {
		// Members of the chosen set match its field already.
		ok := func(en *entry) bool { return (from == nil || from.less(en.key)) && rest.matches(en) }
		b := best{max: want}
		for en := range s {
			if ok(en) {
				b.offer(en)
			}
		}
		for _, en := range ids {
			if ok(en) {
				b.offer(en)
			}
		}
		return x.rev, b.h
	}
	// Applications are disjoint and walked in name order, so the page is
	// the concatenation of each application's smallest keys.
	ok := func(en *entry) bool { return (from == nil || from.less(en.key)) && f.matches(en) }
	var out []*entry
	start := 0
	if from != nil {
		start, _ = slices.BinarySearch(x.names, from.app)
	}
	for _, name := range x.names[start:] {
		b := best{max: -1}
		if want >= 0 {
			if len(out) >= want {
				break
			}
			b.max = want - len(out)
		}
		for _, en := range x.apps[name].ids {
			if ok(en) {
				b.offer(en)
			}
		}
		out = append(out, b.h...)
	}
	return x.rev, out
}

func sortEntries(es []*entry) {
	slices.SortFunc(es, func(a, b *entry) int {
		switch {
		case a.key.less(b.key):
			return -1
		case b.key.less(a.key):
			return 1
		}
		return 0
	})
}

// AppCount is one application's instance counts.
type AppCount struct {
	Name   string
	Total  int
	Status map[registry.Status]int
}

// Apps returns every application with its counts by status, by name, at
// the index's revision.
func (x *Index) Apps() (int64, []AppCount) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	out := make([]AppCount, 0, len(x.names))
	for _, name := range x.names {
		ai := x.apps[name]
		counts := make(map[registry.Status]int, len(ai.counts))
		for s, n := range ai.counts {
			counts[s] = n
		}
		out = append(out, AppCount{Name: name, Total: len(ai.ids), Status: counts})
	}
	return x.rev, out
}

// Size is the number of instances in the index.
func (x *Index) Size() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.size
}

// best keeps the max smallest entries by key (all of them when max < 0):
// a max-heap whose root is the largest kept key.
type best struct {
	max int
	h   entryHeap
}

func (b *best) offer(en *entry) {
	switch {
	case b.max < 0 || len(b.h) < b.max:
		heap.Push(&b.h, en)
	case b.max > 0 && en.key.less(b.h[0].key):
		b.h[0] = en
		heap.Fix(&b.h, 0)
	}
}

type entryHeap []*entry

func (h entryHeap) Len() int           { return len(h) }
func (h entryHeap) Less(i, j int) bool { return h[j].key.less(h[i].key) }
func (h entryHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *entryHeap) Push(v any)        { *h = append(*h, v.(*entry)) }
func (h *entryHeap) Pop() any {
	old := *h
	v := old[len(old)-1]
	*h = old[:len(old)-1]
	return v
}
