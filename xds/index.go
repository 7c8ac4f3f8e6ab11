package xds

import (
	"hash/maphash"
	"iter"
	"slices"
	"strings"

	"github.com/goreka/goreka/registry"
)

type instKey struct{ app, id string }

// held is what the index keeps of a lease: what the resources are built
// from (a LeaseView is ~200 bytes of timestamps xDS does not read), in 16
// bytes: the instance, and its revision and down cause in one word.
type held struct {
	in      *registry.Instance
	revDown uint64 // revision << 8 | down cause
}

func holdOf(v registry.LeaseView) held {
	return held{v.Instance, uint64(v.Revision)<<8 | uint64(v.DownBy)}
}

// view is h as the lease view build takes.
func (h held) view() registry.LeaseView {
	return registry.LeaseView{Instance: h.in, Revision: int64(h.revDown >> 8), DownBy: registry.DownCause(h.revDown)}
}

// index is a namespace's instances as of a revision, with the names each
// one is reachable under: its lower-cased application name and each of its
// VIP address pieces. A name's endpoints are the union of the instances
// reachable under it, so an application ORDERS with VIP orders (Spring's
// default) is one name, and a VIP shared by two applications spans both.
// It is kept by one goroutine (the namespace's feeder) and read under the
// namespace's lock.
//
// It is kept compact (it holds every instance): each lease is a slot of
// slots (free ones reused), found by a hash of its key (checked against
// the slot's instance, so no key strings are kept), and a name holds the
// slot numbers of its instances, not their keys.
type index struct {
	rev    int64
	seed   maphash.Seed
	byHash map[uint64]int32 // hash of a key -> its slot
	// clash is the keys whose hash another held key had first (rare).
	clash  map[instKey]int32
	slots  []held // in == nil: free
	free   []int32
	byName map[string][]int32
	// expired is the leases the last sweep found past their expiry
	// (renewals are no events: only a sweep of the registry sees them stop).
	expired map[instKey]struct{}
	// remote is the remote regions' instances by name, and remoteOf the
	// region of each (kept across resets: the regions are not the
	// registry's).
	remote   map[string][]registry.LeaseView
	remoteOf map[*registry.Instance]string
	// table is the server's names: the names of byName are its copies
	// (nil: none).
	table *nameTable
	// hash replaces hashOf's hash (tests: clashes).
	hash func(instKey) uint64
}

func newIndex() *index {
	return &index{seed: maphash.MakeSeed(), byHash: map[uint64]int32{}, byName: map[string][]int32{}, expired: map[instKey]struct{}{}}
}

func (x *index) hashOf(k instKey) uint64 {
	if x.hash != nil {
		return x.hash(k)
	}
	var h maphash.Hash
	h.SetSeed(x.seed)
	h.WriteString(k.app)
	h.WriteByte(0)
	h.WriteString(k.id)
	return h.Sum64()
}

// is tells whether slot i holds k (an event's App and ID are its
// instance's; the key's app is upper-cased).
func (x *index) is(i int32, k instKey) bool {
	in := x.slots[i].in
	return in != nil && in.ID() == k.id && strings.EqualFold(in.App, k.app)
}

// slot is k's slot (false: not held).
func (x *index) slot(k instKey) (int32, bool) {
	if i, ok := x.byHash[x.hashOf(k)]; ok && x.is(i, k) {
		return i, true
	}
	i, ok := x.clash[k]
	return i, ok
}

// lookup is what is held of k.
func (x *index) lookup(k instKey) (held, bool) {
	if i, ok := x.slot(k); ok {
		return x.slots[i], true
	}
	return held{}, false
}

// store holds h as k, in k's slot or a new one, and returns the slot.
func (x *index) store(k instKey, h held) int32 {
	if i, ok := x.slot(k); ok {
		x.slots[i] = h
		return i
	}
	var i int32
	if n := len(x.free); n > 0 {
		i, x.free = x.free[n-1], x.free[:n-1]
		x.slots[i] = h
	} else {
		i = int32(len(x.slots))
		x.slots = append(x.slots, h)
	}
	if hk := x.hashOf(k); !x.taken(hk) {
		x.byHash[hk] = i
	} else {
		if x.clash == nil {
			x.clash = map[instKey]int32{}
		}
		x.clash[k] = i
	}
	return i
}

// taken tells whether hash hk is some held key's.
func (x *index) taken(hk uint64) bool {
	_, ok := x.byHash[hk]
	return ok
}

// release frees k's slot.
func (x *index) release(k instKey) {
	hk := x.hashOf(k)
	i, ok := x.byHash[hk]
	if ok && x.is(i, k) {
		delete(x.byHash, hk)
	} else if i, ok = x.clash[k]; ok {
		delete(x.clash, k)
	} else {
		return
	}
	x.slots[i] = held{}
	x.free = append(x.free, i)
}

// setExpired replaces the expired set with keys and adds the names of the
// instances whose membership changed to touched.
func (x *index) setExpired(keys []registry.InstanceKey, touched map[string]struct{}) {
	next := make(map[instKey]struct{}, len(keys))
	for _, k := range keys {
		next[instKey{k.App, k.ID}] = struct{}{}
	}
	mark := func(k instKey) {
		if v, ok := x.lookup(k); ok {
			for _, n := range namesOf(v.in) {
				touched[n] = struct{}{}
			}
		}
	}
	for k := range next {
		if _, ok := x.expired[k]; !ok {
			mark(k)
		}
	}
	for k := range x.expired {
		if _, ok := next[k]; !ok {
			mark(k)
		}
	}
	x.expired = next
}

// namesOf returns the names in is reachable under, without duplicates.
func namesOf(in *registry.Instance) []string {
	out := []string{strings.ToLower(in.App)}
	for p := range registry.VIPPieces(in.VIPAddress) {
		if p = strings.TrimSpace(p); p != "" && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// apply records one change and adds the names whose endpoints it may have
// changed to touched.
func (x *index) apply(e registry.Event, touched map[string]struct{}) {
	if e.Revision <= x.rev {
		return
	}
	x.rev = e.Revision
	if !e.Changed {
		return // nothing a read returns changed: nothing to resend
	}
	k := instKey{strings.ToUpper(e.App), e.ID}
	if e.Kind.Removal() || e.Kind == registry.EventRegister {
		delete(x.expired, k) // gone, or renewed by its registration
	}
	if e.Kind.Removal() {
		x.put(k, nil, held{}, touched)
		return
	}
	x.put(k, e.Lease.Instance, holdOf(e.Lease), touched)
}

// put moves k from the names of its stored instance to those of in (nil:
// removes it), holding h for it, adding both to touched.
func (x *index) put(k instKey, in *registry.Instance, h held, touched map[string]struct{}) {
	var names []string
	i, had := x.slot(k)
	if had {
		names = namesOf(x.slots[i].in)
	}
	if in == nil {
		for _, n := range names {
			touched[n] = struct{}{}
			x.unlink(n, i)
		}
		x.release(k)
		return
	}
	next := namesOf(in)
	for _, n := range names {
		touched[n] = struct{}{}
		if !slices.Contains(next, n) {
			x.unlink(n, i)
		}
	}
	i = x.store(k, h)
	for _, n := range next {
		touched[n] = struct{}{}
		if !had || !slices.Contains(names, n) {
			s, ok := x.byName[n]
			if !ok {
				n = x.table.add(n)
			}
			x.byName[n] = append(s, i)
		}
	}
}

// unlink drops slot i from name's instances.
func (x *index) unlink(name string, i int32) {
	s := x.byName[name]
	j := slices.Index(s, i)
	if j < 0 {
		return
	}
	s[j] = s[len(s)-1]
	s = s[:len(s)-1]
	if len(s) == 0 {
		delete(x.byName, name)
		x.table.drop(name)
		return
	}
	if cap(s) > 64 && len(s) < cap(s)/4 {
		s = slices.Clip(slices.Clone(s)) // a name that shrank gives its room back
	}
	x.byName[name] = s
}

// reset replaces the contents with a view and adds every name of before
// and after to touched (a resynchronisation resends what may have changed).
func (x *index) reset(view *registry.Applications, touched map[string]struct{}) {
	for n := range x.byName {
		touched[n] = struct{}{}
		x.table.drop(n)
	}
	expired, remote, remoteOf, table, hash := x.expired, x.remote, x.remoteOf, x.table, x.hash // kept until the next sweep, the next region change
	*x = *newIndex()
	x.expired, x.remote, x.remoteOf, x.table, x.hash = expired, remote, remoteOf, table, hash
	x.rev = view.Revision
	for _, app := range view.Apps {
		for _, v := range app.Instances {
			k := instKey{strings.ToUpper(app.Name), v.Instance.ID()}
			x.put(k, v.Instance, holdOf(v), touched)
		}
	}
}

// views returns the instances reachable under name, the remote regions'
// included.
func (x *index) views(name string) []registry.LeaseView {
	s := x.byName[name]
	r := x.remote[name]
	out := make([]registry.LeaseView, 0, len(s)+len(r))
	for _, i := range s {
		out = append(out, x.slots[i].view())
	}
	return append(out, r...)
}

// names yields every name with local or remote instances.
func (x *index) names() iter.Seq[string] {
	return func(yield func(string) bool) {
		for n := range x.byName {
			if !yield(n) {
				return
			}
		}
		for n := range x.remote {
			if _, local := x.byName[n]; !local && !yield(n) {
				return
			}
		}
	}
}

// known tells whether name has local or remote instances.
func (x *index) known(name string) bool {
	_, ok := x.byName[name]
	return ok || len(x.remote[name]) > 0
}

// setRemote replaces the remote regions' instances (region -> views) and
// adds the names whose remote instances changed to touched.
func (x *index) setRemote(byRegion map[string][]registry.LeaseView, touched map[string]struct{}) {
	next := map[string][]registry.LeaseView{}
	of := map[*registry.Instance]string{}
	for region, vs := range byRegion {
		for _, v := range vs {
			of[v.Instance] = region
			for _, n := range namesOf(v.Instance) {
				next[n] = append(next[n], v)
			}
		}
	}
	same := func(a, b []registry.LeaseView) bool {
		return slices.EqualFunc(a, b, func(v, w registry.LeaseView) bool {
			return v.Instance == w.Instance && of[v.Instance] == x.remoteOf[w.Instance]
		})
	}
	for n, vs := range next {
		if !same(vs, x.remote[n]) {
			touched[n] = struct{}{}
		}
	}
	for n := range x.remote {
		if _, ok := next[n]; !ok {
			touched[n] = struct{}{}
		}
	}
	x.remote, x.remoteOf = next, of
}

// newIndex is an empty index whose names are s's copies.
func (s *Server) newIndex() *index {
	x := newIndex()
	x.table = &s.names
	return x
}
