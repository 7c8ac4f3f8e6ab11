package xds

import (
	"math"
	"math/bits"
	"slices"
	"sync"
)

// nameIDs interns the resource names a typed cache's streams refer to as
// small integers, so that a stream's state is a bitset of what it
// subscribes to and a slice of what it was sent, indexed by id, not maps
// of strings: 100 streams subscribed to 2,000 names each held 200,000 map
// entries in the caches, and their marks as many again. An id lives while
// a stream refers to it (a subscription or a mark); then it is freed for
// reuse, so that names clients ask for and drop do not accumulate.
type nameIDs struct {
	ids   map[string]uint32
	names []string
	refs  []uint32
	subs  [][]uint32 // the watchers subscribed to each id by name, by slot
	free  []uint32
	// ws is the watchers by slot (nil: free), so that subs holds 4 bytes
	// per subscription, not a pointer.
	ws    []*watcher
	wfree []uint32
	// top is the newest mark there can be (the cache's update counter
	// + 1): marks are kept in 32 bits, and read back as the newest full
	// mark with those bits (sweep keeps them all within reach).
	top uint64
}

// markPeriod is how far apart two marks with the same 32 bits are: a
// watcher keeps marks as uint32 (half the bytes of a stream's state),
// encoded as 1 + m mod markPeriod, MaxUint32 for foreign and 0 for none.
// A variable for tests.
var markPeriod uint64 = math.MaxUint32 - 1

const foreign32 = math.MaxUint32

func encodeMark(m uint64) uint32 {
	if m == foreign {
		return foreign32
	}
	return uint32(m%markPeriod) + 1
}

// decodeMark is the newest full mark that e stands for: exact while the
// mark is less than markPeriod updates old, which sweep ensures.
func (n *nameIDs) decodeMark(e uint32) uint64 {
	switch e {
	case 0:
		return 0
	case foreign32:
		return foreign
	}
	r := uint64(e - 1)
	return n.top - (n.top%markPeriod+markPeriod-r)%markPeriod
}

// sweep turns the marks older than half a period into foreign (the
// client holds something: sent again when the name changes), so that
// every mark kept is younger than a period and decodes exactly. The
// caller runs it every quarter period.
func (n *nameIDs) sweep() {
	for _, w := range n.ws {
		if w == nil {
			continue
		}
		w.subState.known.each(func(id uint32) {
			if m := n.decodeMark(w.marks[id]); m != foreign && m+markPeriod/2 < n.top {
				w.marks[id] = foreign32
			}
		})
	}
}

// addWatcher gives w a slot.
func (n *nameIDs) addWatcher(w *watcher) {
	if k := len(n.wfree); k > 0 {
		w.slot, n.wfree = n.wfree[k-1], n.wfree[:k-1]
		n.ws[w.slot] = w
		return
	}
	w.slot = uint32(len(n.ws))
	n.ws = append(n.ws, w)
}

// dropWatcher frees w's slot (w holds no subscription any more).
func (n *nameIDs) dropWatcher(w *watcher) {
	if int(w.slot) < len(n.ws) && n.ws[w.slot] == w {
		n.ws[w.slot] = nil
		n.wfree = append(n.wfree, w.slot)
	}
}

func newNameIDs() *nameIDs { return &nameIDs{ids: map[string]uint32{}} }

// lookup is name's id, if it has one.
func (n *nameIDs) lookup(name string) (uint32, bool) {
	id, ok := n.ids[name]
	return id, ok
}

// intern is name's id, made if needed; the caller takes a reference
// (ref) before it can be freed.
func (n *nameIDs) intern(name string) uint32 {
	if id, ok := n.ids[name]; ok {
		return id
	}
	var id uint32
	if k := len(n.free); k > 0 {
		id, n.free = n.free[k-1], n.free[:k-1]
		n.names[id] = name
	} else {
		id = uint32(len(n.names))
		n.names = append(n.names, name)
		n.refs = append(n.refs, 0)
		n.subs = append(n.subs, nil)
	}
	n.ids[name] = id
	return id
}

func (n *nameIDs) ref(id uint32) { n.refs[id]++ }

// unref drops a reference to id, freeing it with the last.
func (n *nameIDs) unref(id uint32) {
	n.refs[id]--
	if n.refs[id] == 0 {
		delete(n.ids, n.names[id])
		n.names[id] = ""
		n.subs[id] = nil
		n.free = append(n.free, id)
	}
}

// idSet is a set of ids.
type idSet []uint64

func (s idSet) has(id uint32) bool {
	i := int(id / 64)
	return i < len(s) && s[i]&(1<<(id%64)) != 0
}

func (s *idSet) add(id uint32) {
	i := int(id / 64)
	for len(*s) <= i {
		*s = append(*s, 0)
	}
	(*s)[i] |= 1 << (id % 64)
}

func (s idSet) remove(id uint32) {
	if i := int(id / 64); i < len(s) {
		s[i] &^= 1 << (id % 64)
	}
}

// each calls f with every id in s (f may remove ids).
func (s idSet) each(f func(uint32)) {
	for i, w := range s {
		for w != 0 {
			b := bits.TrailingZeros64(w)
			w &^= 1 << b
			f(uint32(i*64 + b))
		}
	}
}

// subState is what a watcher knows of its stream, by id: the names it
// subscribes to by name, and the mark of what the client was sent of each
// name (0: nothing), subscribed or not (a wildcard's, a name just
// unsubscribed).
type subState struct {
	ids   *nameIDs
	sub   idSet
	nsub  int
	marks []uint32 // encodeMark's
	known idSet    // the ids with a mark
}

// subscribedByName tells whether name is subscribed to by name.
func (s *subState) subscribedByName(name string) bool {
	id, ok := s.ids.lookup(name)
	return ok && s.sub.has(id)
}

// markFor is name's mark (0: nothing sent).
func (s *subState) markFor(name string) uint64 {
	id, ok := s.ids.lookup(name)
	if !ok || int(id) >= len(s.marks) {
		return 0
	}
	return s.ids.decodeMark(s.marks[id])
}

// setMark records mark m (not 0) of name.
func (s *subState) setMark(name string, m uint64) {
	id := s.ids.intern(name)
	if int(id) >= len(s.marks) {
		// Sized to the table at once, not grown an id at a time: a
		// stream's marks cover most of its cache's names.
		n := len(s.ids.names)
		s.marks = slices.Grow(s.marks, n-len(s.marks))[:n]
	}
	if s.marks[id] == 0 {
		s.ids.ref(id)
		s.known.add(id)
	}
	s.marks[id] = encodeMark(m)
}

// clearMark records that nothing of name was sent.
func (s *subState) clearMark(name string) {
	if id, ok := s.ids.lookup(name); ok {
		s.clearID(id)
	}
}

func (s *subState) clearID(id uint32) {
	if int(id) < len(s.marks) && s.marks[id] != 0 {
		s.marks[id] = 0
		s.known.remove(id)
		s.ids.unref(id)
	}
}

// subscribe adds name to the names subscribed to; false if it was.
func (s *subState) subscribe(w *watcher, name string) bool {
	id := s.ids.intern(name)
	if s.sub.has(id) {
		return false
	}
	s.ids.ref(id)
	s.sub.add(id)
	s.nsub++
	s.ids.subs[id] = append(s.ids.subs[id], w.slot)
	return true
}

// unsubscribe drops name from the names subscribed to; false if it was
// not.
func (s *subState) unsubscribe(w *watcher, name string) bool {
	id, ok := s.ids.lookup(name)
	if !ok || !s.sub.has(id) {
		return false
	}
	s.sub.remove(id)
	s.nsub--
	ws := s.ids.subs[id]
	if i := slices.Index(ws, w.slot); i >= 0 {
		ws[i] = ws[len(ws)-1]
		s.ids.subs[id] = ws[:len(ws)-1]
	}
	s.ids.unref(id)
	return true
}

// subscribedNames calls f with each name subscribed to by name.
func (s *subState) subscribedNames(f func(string)) {
	s.sub.each(func(id uint32) { f(s.ids.names[id]) })
}

// marked calls f with each name that has a mark.
func (s *subState) marked(f func(name string, m uint64)) {
	s.known.each(func(id uint32) { f(s.ids.names[id], s.ids.decodeMark(s.marks[id])) })
}

// release drops every reference s holds (its stream is gone).
func (s *subState) release(w *watcher) {
	var names []string
	s.subscribedNames(func(n string) { names = append(names, n) })
	for _, n := range names {
		s.unsubscribe(w, n)
	}
	s.known.each(s.clearID)
}

// nameTable is the names the server's namespaces have instances under,
// each held once: a request's resource names (2,000 per SotW ACK at 100k
// instances) are decoded as these by the gRPC codec (codec.go), and
// replaced by these (the REST form's, delta's) before go-control-plane's
// server keys its subscription with them
// and the caches intern them, so that what each stream keeps refers to
// the one copy. Names nobody has are left as they are (and not added:
// clients cannot grow the table).
type nameTable struct {
	mu sync.RWMutex
	m  map[string]tableName
}

type tableName struct {
	name string
	refs int32 // the namespaces that have it
}

// add is name's copy in t, adding it (a namespace has it now).
func (t *nameTable) add(name string) string {
	if t == nil {
		return name
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m = map[string]tableName{}
	}
	e, ok := t.m[name]
	if !ok {
		e.name = name
	}
	e.refs++
	t.m[name] = e
	return e.name
}

// drop says that a namespace no longer has name.
func (t *nameTable) drop(name string) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if e, ok := t.m[name]; ok {
		if e.refs--; e.refs <= 0 {
			delete(t.m, name)
		} else {
			t.m[name] = e
		}
	}
}

// canon replaces each name of names held by t with t's copy.
func (t *nameTable) canon(names []string) {
	if t == nil || len(names) == 0 {
		return
	}
	t.mu.RLock()
	defer t.mu.RUnlock()
	for i, n := range names {
		if e, ok := t.m[n]; ok {
			names[i] = e.name
		}
	}
}
