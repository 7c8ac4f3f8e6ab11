package cache

import "time"

// HousekeepingTick is one tick of Run's housekeeping at now (on-change mode,
// the UpdateInterval/16 ticker): it marks the aged registry documents and
// rebuilds them, returning how many keys it rebuilt (0: the tick did
// nothing). For benchmarks of the idle cost in package cache_test.
func (c *Cache) HousekeepingTick(now time.Time) int {
	if c.markAged(now, false) == 0 {
		return 0
	}
	return c.rebuildDirty(false)
}
