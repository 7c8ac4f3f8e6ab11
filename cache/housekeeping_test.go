package cache_test

import (
	"sync"
	"testing"
	"time"

	"github.com/goreka/goreka/cache"
	"github.com/goreka/goreka/document"
)

// TestIdleRegistryIsRebuiltOnlyWhenDue: with nothing changing, the
// housekeeping's ticks (UpdateInterval/16) rebuild the full registry and the
// delta only when one of their chunks is due (document's refreshAge plus its
// slack, Value.Due), about once per slack (Reuse/8, 17 s), not at every tick
// once the document's oldest chunk is 3/8 of AutoExpiration old (always, in
// a long-running server); and what is served is never older than
// AutoExpiration.
func TestIdleRegistryIsRebuiltOnlyWhenDue(t *testing.T) {
	t0 := time.Unix(1764500000, 0)
	now := t0
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	reg := idleFleet(t, 10_000, t0)
	cfg := cache.DefaultConfig()
	cfg.Now = clock
	c := cache.NewStreaming(cfg, document.New(document.Config{Registry: reg}).Load)
	keys := []cache.Key{
		{Entity: cache.Application, Name: cache.AllApps, JSON: true},
		{Entity: cache.Application, Name: cache.AllAppsDelta, JSON: true},
	}
	tick := cfg.UpdateInterval / 16
	ticks := int(cfg.AutoExpiration / tick)
	rebuilds := 0
	for i := range 3 * ticks {
		mu.Lock()
		now = now.Add(tick)
		mu.Unlock()
		for _, k := range keys {
			v, err := c.Get(k)
			if err != nil {
				t.Fatal(err)
			}
			if age := clock().Sub(v.Built); age > cfg.AutoExpiration {
				t.Fatalf("tick %d: %v served %v old, over AutoExpiration", i, k.Name, age)
			}
		}
		if c.HousekeepingTick(clock()) > 0 && i >= ticks {
			rebuilds++
		}
	}
	// The last two AutoExpirations, once the loading's chunks have spread: one
	// rebuild per slack of Reuse/8 (16.9 s), a few more where a chunk of the
	// delta and one of the full registry come due apart.
	t.Logf("rebuilt at %d of %d ticks", rebuilds, 2*ticks)
	if limit := 2 * int(cfg.AutoExpiration/(cfg.AutoExpiration*3/4/8)) * 3 / 2; rebuilds > limit {
		t.Fatalf("an idle registry was rebuilt at %d of %d ticks, want at most %d", rebuilds, 2*ticks, limit)
	}
}
