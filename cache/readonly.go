package cache

import (
	"iter"
	"maps"
	"sync/atomic"
	"time"

	"github.com/cespare/xxhash/v2"
)

// roShards is the number of readOnly shards. Each shard is an immutable map replaced on write,
// so adding a key copies one shard, not the whole tier: a client (or a scanner) asking for
// many distinct /apps/{name} or /vips/{name} keys costs linear, not quadratic, time. Eureka's
// readOnly map only grows too; sharding keeps our copy-on-write from making that worse.
const roShards = 64

// readOnly is the readOnly tier: readers do one xxhash of the name, one atomic load and one map
// lookup, with no lock and no allocation. Writers hold Cache.mu.
type readOnly struct {
	shards [roShards]atomic.Pointer[map[Key]*roEntry]
}

// roEntry is one readOnly value and whether a reader got it: a rebuild on change skips the
// entries nobody read since they were published (Cache.rebuildDirty). The flag is written
// once per value, so readers of a hot key only load it.
type roEntry struct {
	v    *Value
	read atomic.Bool
	// readAfter: the entry's key was last read after this time (the build
	// time of the last copy that was read; zero: never). Kept by publish,
	// off the readers' path.
	readAfter time.Time
}

func newReadOnly() *readOnly {
	t := &readOnly{}
	for i := range t.shards {
		t.shards[i].Store(&map[Key]*roEntry{})
	}
	return t
}

// shardOf hashes only the name, so the variants of one name share a shard.
func shardOf(k Key) int { return int(xxhash.Sum64String(k.Name) % roShards) }

// get is a reader's lookup: it marks the entry read, and first says whether
// this reader was the first to get it.
func (t *readOnly) get(k Key) (v *Value, ok, first bool) {
	e, ok := (*t.shards[shardOf(k)].Load())[k]
	if !ok {
		return nil, false, false
	}
	if !e.read.Load() {
		first = e.read.CompareAndSwap(false, true)
	}
	return e.v, true, first
}

// peek returns k's value without marking it read.
func (t *readOnly) peek(k Key) (*Value, bool) {
	e, ok := (*t.shards[shardOf(k)].Load())[k]
	if !ok {
		return nil, false
	}
	return e.v, true
}

// has reports whether k has an entry, without marking it read.
func (t *readOnly) has(k Key) bool {
	_, ok := (*t.shards[shardOf(k)].Load())[k]
	return ok
}

// lastRead is a lower bound of the last time a reader got k (the build time
// of the last copy of it that was read; zero: never or no entry).
func (t *readOnly) lastRead(k Key) time.Time {
	e, ok := (*t.shards[shardOf(k)].Load())[k]
	switch {
	case !ok:
		return time.Time{}
	case e.read.Load():
		return e.v.Built
	default:
		return e.readAfter
	}
}

// wasRead reports whether a reader got k's entry since it was published.
func (t *readOnly) wasRead(k Key) bool {
	e, ok := (*t.shards[shardOf(k)].Load())[k]
	return ok && e.read.Load()
}

// all yields every entry of a consistent-per-shard snapshot.
func (t *readOnly) all() iter.Seq2[Key, *Value] {
	return func(yield func(Key, *Value) bool) {
		for i := range t.shards {
			for k, e := range *t.shards[i].Load() {
				if !yield(k, e.v) {
					return
				}
			}
		}
	}
}

func (t *readOnly) len() int {
	n := 0
	for i := range t.shards {
		n += len(*t.shards[i].Load())
	}
	return n
}

// publish applies updates (a nil value removes the key), copying each shard they touch once;
// the new entries count as unread. Callers hold Cache.mu, which serialises the writers.
func (t *readOnly) publish(updates map[Key]*Value) {
	if len(updates) == 0 {
		return
	}
	var touched [roShards]map[Key]*roEntry
	for k, v := range updates {
		i := shardOf(k)
		if touched[i] == nil {
			cur := *t.shards[i].Load()
			touched[i] = make(map[Key]*roEntry, len(cur)+1)
			maps.Copy(touched[i], cur)
		}
		if v == nil {
			delete(touched[i], k)
		} else {
			e := &roEntry{v: v}
			if old, ok := touched[i][k]; ok {
				if old.read.Load() {
					e.readAfter = old.v.Built
				} else {
					e.readAfter = old.readAfter
				}
			}
			touched[i][k] = e
		}
	}
	for i, m := range touched {
		if m != nil {
			t.shards[i].Store(&m)
		}
	}
}

// publishOne stores the value a reader's Get loaded (so it counts as read).
func (t *readOnly) publishOne(k Key, v *Value) {
	i := shardOf(k)
	cur := *t.shards[i].Load()
	next := make(map[Key]*roEntry, len(cur)+1)
	maps.Copy(next, cur)
	e := &roEntry{v: v}
	e.read.Store(true)
	next[k] = e
	t.shards[i].Store(&next)
}
