package cache

import (
	"context"
	"slices"
	"time"
)

// Run keeps the readOnly tier fresh until ctx is done, then returns nil.
//
// In on-change mode (RefreshOnChange) it waits for Invalidate to mark readOnly keys dirty and
// rebuilds them from the readWrite tier, at most once per refresh gap: the first change after
// a quiet period is rebuilt at once, and the changes that arrive while a rebuild runs or during
// the gap after it are rebuilt together at the end of the gap. Every UpdateInterval it also
// rebuilds readOnly entries older than AutoExpiration and runs the readWrite janitor.
//
// In timer mode (RefreshOnChange false) it behaves like Eureka: every UpdateInterval, first at
// the next multiple of the interval since the Unix epoch, every readOnly key is copied from the
// readWrite tier (which loads whatever was invalidated or expired).
//
// With UseReadOnly false it only runs the readWrite janitor every UpdateInterval.
func (c *Cache) Run(ctx context.Context) error {
	switch {
	case !c.cfg.UseReadOnly:
		return c.runJanitor(ctx)
	case c.cfg.RefreshOnChange:
		return c.runOnChange(ctx)
	default:
		return c.runTimer(ctx)
	}
}

func (c *Cache) runJanitor(ctx context.Context) error {
	t := time.NewTicker(c.cfg.UpdateInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			c.deleteExpired()
		}
	}
}

func (c *Cache) runTimer(ctx context.Context) error {
	iv := c.cfg.UpdateInterval
	// Like Eureka's Timer.schedule(task, firstTime, period): the first run at the next
	// wall-clock multiple of the interval, then at a fixed rate.
	now := c.now()
	ivMs := iv.Milliseconds()
	if ivMs <= 0 {
		ivMs = 1
	}
	next := time.UnixMilli((now.UnixMilli()/ivMs + 1) * ivMs)
	first := time.NewTimer(next.Sub(now))
	defer first.Stop()
	select {
	case <-ctx.Done():
		return nil
	case <-first.C:
	}
	t := time.NewTicker(iv)
	defer t.Stop()
	for {
		c.refreshAll()
		c.deleteExpired()
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

func (c *Cache) runOnChange(ctx context.Context) error {
	housekeeping := time.NewTicker(c.cfg.UpdateInterval)
	defer housekeeping.Stop()
	// The registry documents' segments come due for fresh renewal timestamps
	// spread over the second half of Reuse; a tick every UpdateInterval/16
	// refreshes a document once its earliest segment is due (Value.Due), so
	// that each such pass is a small share of a document (a few % right after
	// a loading, when they all come due within a minute) and an idle registry
	// is rebuilt only as often as its loader's segments need.
	due := time.NewTicker(c.agedTick())
	defer due.Stop()
	var lastEnd time.Time // end of the previous rebuild (for a change or the housekeeping's), by c.now
	// The invalidations counted when the last pass started, and how many the
	// last rebuild for a change covered (those since the one before).
	var passInv, covered uint64
	for {
		aged := false
		select {
		case <-ctx.Done():
			return nil
		case <-c.wake:
		case <-housekeeping.C:
			c.deleteExpired()
			if c.markAged(c.now(), true) == 0 {
				continue
			}
			aged = true
		case <-due.C:
			if c.markAged(c.now(), false) == 0 {
				continue
			}
			aged = true
		}
		for !lastEnd.IsZero() {
			d := lastEnd.Add(c.gapFor(c.stats.invalidations.Load()-passInv, covered)).Sub(c.now())
			if d <= 0 {
				break
			}
			t := time.NewTimer(d)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil
			case <-t.C:
			}
		}
		start, inv := c.now(), c.stats.invalidations.Load()
		if c.rebuildDirty(!aged) == 0 {
			continue
		}
		if aged {
			// The housekeeping's pass re-encodes what aged: it says nothing of what
			// the next change costs, so it does not adapt the gap, but the next
			// rebuild waits for the gap after it as after any other: no two
			// rebuilds closer than MinRefreshGap.
			lastEnd = c.now()
			c.lastDur.Store(int64(lastEnd.Sub(start)))
			passInv = inv
			continue
		}
		covered, passInv = inv-passInv, inv
		lastEnd = c.now()
		c.adaptGap(lastEnd.Sub(start))
	}
}

// gapFor is the gap before the next rebuild, with pending invalidations since the last pass
// started and covered the invalidations the last rebuild for a change covered. A storm keeps
// the gap at twice the last rebuild (the changes in a gap cost about what those of the gap
// before did); fewer pending changes than the last rebuild covered shorten it in proportion,
// so that the first change after a loading (a rebuild of every chunk, seconds at 100k
// instances) waits MinRefreshGap and its own small rebuild, not twice the loading's.
func (c *Cache) gapFor(pending, covered uint64) time.Duration {
	g := time.Duration(c.gap.Load())
	if covered > 0 && pending < covered {
		g = time.Duration(float64(g) * float64(pending) / float64(covered))
	}
	return max(g, c.cfg.MinRefreshGap)
}

// adaptGap sets the coalescing gap from the last rebuild's duration: twice that, but no less
// than MinRefreshGap and no more than UpdateInterval (never slower than Eureka's timer).
func (c *Cache) adaptGap(took time.Duration) {
	c.lastDur.Store(int64(took))
	gap := max(2*took, c.cfg.MinRefreshGap)
	gap = min(gap, max(c.cfg.UpdateInterval, c.cfg.MinRefreshGap))
	c.gap.Store(int64(gap))
}

// markAged marks dirty the registry documents made of segments whose earliest segment is
// due (Value.Due, the loader's Segment.Due: document's chunks at their refresh age plus a
// slack that batches the chunks coming due close together): a rebuild for a change keeps
// segments up to ChangeWriter's maxAge, so the housekeeping's passes are where a loader
// refreshes them, and a document none of whose segments is due is not rebuilt (an idle
// registry costs a rebuild per batch of chunks coming due, not one per tick). With all,
// it also marks the readOnly entries built at or before now - AutoExpiration, so that
// on-change mode keeps Eureka's bound on staleness (renewal timestamps) even without
// changes. It returns how many keys are dirty.
//
// The bound on a segmented document: a refresh re-encodes every segment at least
// AutoExpiration less two ticks old (ChangeWriter), and while one such is kept the
// document is due (a loader's Segment.Due comes before that age; document's is at
// most 27/32 of AutoExpiration), so the tick that refreshes it comes at most a tick
// later, plus the refresh gap when a rebuild ended less than a gap before; a change's
// rebuild re-encodes those a tick older. A served segment is thus at most
// AutoExpiration - tick + gap old, plus one rebuild's duration: within AutoExpiration
// while the gap is at most a tick (MinRefreshGap, and rebuilds under half a tick), and
// never more than AutoExpiration - tick + UpdateInterval (the gap's cap), within
// Eureka's own bound (its readOnly copy of a readWrite entry built AutoExpiration ago
// lives an UpdateInterval more).
func (c *Cache) markAged(now time.Time, all bool) int {
	cutoff := now.Add(-c.cfg.AutoExpiration)
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, v := range c.ro.all() {
		switch {
		case all && !v.Built.After(cutoff):
			c.dirty[k] = struct{}{}
		case v.segmented && isRegistryDocument(k) && !now.Before(v.due):
			// Its readWrite entry has not expired: drop it, so the pass loads.
			if _, ok := c.stored[k]; ok {
				c.rw.Delete(k.String())
				delete(c.stored, k)
			}
			c.dirty[k] = struct{}{}
		}
	}
	return len(c.dirty)
}

// rebuildDirty reloads the dirty readOnly keys through the readWrite tier and publishes them
// in one new readOnly map. Keys whose load fails keep their old value and stay dirty (retried
// on the next change or housekeeping pass). change marks a rebuild after a change, not the
// housekeeping's (ChangeWriter). It returns the number of keys it tried.
func (c *Cache) rebuildDirty(change bool) int {
	c.mu.Lock()
	if len(c.dirty) == 0 {
		c.mu.Unlock()
		return 0
	}
	keys := make([]Key, 0, len(c.dirty))
	for k := range c.dirty {
		keys = append(keys, k)
	}
	clear(c.dirty)
	c.mu.Unlock()

	// The full registry documents go last, and what was built before them
	// is published first: a full document is the pass's one build that
	// can take seconds (a relay's union of its whole copy, a 1M registry's
	// refresh), and a delta or an application waiting for it in the same
	// pass would reach its readers that much later. Eureka's readOnly
	// tier is copied key by key too; each document stays consistent with
	// itself (its hash over its own content).
	var full []Key
	keys = slices.DeleteFunc(keys, func(k Key) bool {
		if isFullRegistry(k) {
			full = append(full, k)
			return true
		}
		return false
	})
	keys = append(keys, full...)
	updates := make(map[Key]*Value, len(keys))
	var failed, kept []Key
	dropped, built := 0, 0
	now := c.now()
	for _, k := range keys {
		if isFullRegistry(k) && len(updates) > 0 {
			c.mu.Lock()
			c.ro.publish(updates)
			c.mu.Unlock()
			built += len(updates)
			clear(updates)
		}
		if isRegistryDocument(k) && !c.ro.wasRead(k) && (isClientsDocument(k) || now.Sub(c.ro.lastRead(k)) < c.cfg.AutoExpiration) {
			// The full registry and the delta that Eureka's clients read (JSON, full
			// form, no regions) are not dropped, nor another variant a client read in
			// the last AutoExpiration: loading one cold is a whole-registry encode
			// inside a request (seconds at 1M instances), where Eureka always answers
			// from its readOnly copy, and delta clients read the full document rarely
			// (at start, after a hash mismatch). Unread, it is rebuilt at most once per
			// UpdateInterval, Eureka's own bound on staleness; its first reader wakes a
			// pass (Get), and once read it is rebuilt on every pass again. A variant
			// nobody read for longer (XML, compact, a regions list one curl asked for)
			// is dropped as any unread key, not rebuilt for as long as the registry
			// changes.
			if v, ok := c.ro.peek(k); ok && now.Sub(v.Built) < c.cfg.UpdateInterval {
				kept = append(kept, k)
				continue
			}
		} else if !c.ro.wasRead(k) {
			// Nobody asked for it since it was built (a probe's XML document, a VIP a
			// client fetched once): building it again on every change would cost as much
			// as for the hottest key. It leaves the readOnly tier; the next Get loads it,
			// as a first Get does, with concurrent Gets sharing the load.
			updates[k] = nil
			dropped++
			continue
		}
		// If k is invalidated again while it loads, the load is not stored in the readWrite
		// tier but is still newer than what readers see now, so it is published; k is dirty
		// again and the next rebuild replaces it.
		v, err := c.getRW(k, false, change)
		if err != nil {
			failed = append(failed, k)
			continue
		}
		updates[k] = v
	}
	c.mu.Lock()
	c.ro.publish(updates)
	for _, k := range failed {
		c.dirty[k] = struct{}{}
	}
	for _, k := range kept {
		c.dirty[k] = struct{}{} // for a later pass: a change, its first reader, or housekeeping
	}
	c.mu.Unlock()
	c.stats.rebuilds.Add(1)
	c.stats.rebuiltKeys.Add(uint64(built + len(updates) - dropped))
	c.stats.unreadDropped.Add(uint64(dropped))
	return len(keys)
}

// refreshAll is Eureka's timer task: copy every readOnly key from the readWrite tier.
func (c *Cache) refreshAll() {
	start := c.now()
	updates := make(map[Key]*Value)
	for k, old := range c.ro.all() {
		v, err := c.getRW(k, false, false)
		if err != nil || v == old {
			continue
		}
		updates[k] = v
	}
	c.mu.Lock()
	c.ro.publish(updates)
	c.mu.Unlock()
	c.stats.rebuilds.Add(1)
	c.stats.rebuiltKeys.Add(uint64(len(updates)))
	c.lastDur.Store(int64(c.now().Sub(start)))
}

// Stats is a snapshot of the cache's counters and state.
type Stats struct {
	Hits          uint64 // Gets answered without loading, from either tier
	ReadOnlyHits  uint64 // of which from the readOnly tier
	Misses        uint64 // loads started (by Gets and by refreshes)
	SharedLoads   uint64 // Gets that waited for a load another goroutine had started
	LoadErrors    uint64 // loads that returned an error (nothing cached)
	StaleLoads    uint64 // loads not stored because their key was invalidated meanwhile
	Invalidations uint64 // Invalidate calls
	Rebuilds      uint64 // refresh passes over the readOnly tier
	RebuiltKeys   uint64 // readOnly entries replaced by those passes
	// UnreadDropped counts dirty readOnly entries that on-change passes removed instead of
	// rebuilding, because no Get had read them since they were built.
	UnreadDropped uint64

	ReadOnlyKeys  int // entries in the readOnly tier
	ReadWriteKeys int // entries in the readWrite tier (including ones expired but not yet swept)
	DirtyKeys     int // readOnly entries waiting for a rebuild

	LastRebuild time.Duration // duration of the last refresh pass
	RefreshGap  time.Duration // current minimum gap between rebuilds (on-change mode)
	// OldestPayload is the age of the oldest payload a Get can return now without loading
	// (readOnly tier, or readWrite tier when the readOnly tier is off); 0 when empty.
	OldestPayload time.Duration
}

// Stats returns current counters. It walks the served tier to find the oldest payload, so
// call it at metrics-scrape rate, not per request.
func (c *Cache) Stats() Stats {
	s := Stats{
		ReadOnlyHits:  c.stats.roHits.Load(),
		Misses:        c.stats.misses.Load(),
		SharedLoads:   c.stats.shared.Load(),
		LoadErrors:    c.stats.loadErrors.Load(),
		StaleLoads:    c.stats.staleLoads.Load(),
		Invalidations: c.stats.invalidations.Load(),
		Rebuilds:      c.stats.rebuilds.Load(),
		RebuiltKeys:   c.stats.rebuiltKeys.Load(),
		UnreadDropped: c.stats.unreadDropped.Load(),
		LastRebuild:   time.Duration(c.lastDur.Load()),
		RefreshGap:    time.Duration(c.gap.Load()),
		ReadWriteKeys: c.rw.ItemCount(),
	}
	s.Hits = s.ReadOnlyHits + c.stats.rwHits.Load()
	now := c.now()
	var oldest time.Time
	note := func(v *Value) {
		if oldest.IsZero() || v.Built.Before(oldest) {
			oldest = v.Built
		}
	}
	s.ReadOnlyKeys = c.ro.len()
	if c.cfg.UseReadOnly {
		for _, v := range c.ro.all() {
			note(v)
		}
	} else {
		for _, it := range c.rw.Items() {
			if e := it.Object.(*rwEntry); now.Before(e.expires) {
				note(e.v)
			}
		}
	}
	if !oldest.IsZero() {
		s.OldestPayload = now.Sub(oldest)
	}
	c.mu.Lock()
	s.DirtyKeys = len(c.dirty)
	c.mu.Unlock()
	return s
}

// deleteExpired drops the readWrite tier's expired entries and forgets their
// keys in stored. An entry Get would no longer serve (expired by Config.Now)
// needs no Invalidate, so forgetting it early is safe.
func (c *Cache) deleteExpired() {
	c.rw.DeleteExpired()
	now := c.now()
	c.mu.Lock()
	for k, exp := range c.stored {
		if !now.Before(exp) {
			delete(c.stored, k)
		}
	}
	c.mu.Unlock()
}

// isClientsDocument reports whether k is the full registry or the delta as
// Eureka's clients ask for them: JSON, full form, no remote regions.
func isClientsDocument(k Key) bool { return k.JSON && !k.Compact && k.Regions == "" }

// isRegistryDocument reports whether k is the full registry or the delta (any variant, any
// regions).
func isFullRegistry(k Key) bool { return k.Entity == Application && k.Name == AllApps }

func isRegistryDocument(k Key) bool {
	return k.Entity == Application && (k.Name == AllApps || k.Name == AllAppsDelta)
}
