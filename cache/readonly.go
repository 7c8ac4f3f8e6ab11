package cache

import (
	"iter"
	"maps"
	"sync/atomic"

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
	shards [roShards]atomic.Pointer[map[Key]*Value]
}

func newReadOnly() *readOnly {
	t := &readOnly{}
	for i := range t.shards {
		t.shards[i].Store(&map[Key]*Value{})
	}
	return t
}

// shardOf hashes only the name, so the variants of one name share a shard.
func shardOf(k Key) int { return int(xxhash.Sum64String(k.Name) % roShards) }

func (t *readOnly) get(k Key) (*Value, bool) {
	v, ok := (*t.shards[shardOf(k)].Load())[k]
	return v, ok
}

// all yields every entry of a consistent-per-shard snapshot.
func (t *readOnly) all() iter.Seq2[Key, *Value] {
	return func(yield func(Key, *Value) bool) {
		for i := range t.shards {
			for k, v := range *t.shards[i].Load() {
				if !yield(k, v) {
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

// publish applies updates, copying each shard they touch once. Callers hold Cache.mu, which
// serialises the writers.
func (t *readOnly) publish(updates map[Key]*Value) {
	if len(updates) == 0 {
		return
	}
	if len(updates) == 1 {
		for k, v := range updates {
			t.publishOne(k, v)
		}
		return
	}
	var touched [roShards]map[Key]*Value
	for k, v := range updates {
		i := shardOf(k)
		if touched[i] == nil {
			cur := *t.shards[i].Load()
			touched[i] = make(map[Key]*Value, len(cur)+1)
			maps.Copy(touched[i], cur)
		}
		touched[i][k] = v
	}
	for i, m := range touched {
		if m != nil {
			t.shards[i].Store(&m)
		}
	}
}

func (t *readOnly) publishOne(k Key, v *Value) {
	i := shardOf(k)
	cur := *t.shards[i].Load()
	next := make(map[Key]*Value, len(cur)+1)
	maps.Copy(next, cur)
	next[k] = v
	t.shards[i].Store(&next)
}
