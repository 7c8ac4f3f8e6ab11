package cache

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	gocache "github.com/patrickmn/go-cache"

	"github.com/goreka/goreka/registry"
)

// Entity is the kind of thing a cached response describes (Eureka's Key.EntityType).
type Entity uint8

// Entities.
const (
	Application Entity = iota // one application, ALL_APPS or ALL_APPS_DELTA
	VIP                       // /vips/{vip}
	SVIP                      // /svips/{svip}
)

// Names of the registry-wide Application keys, as in Eureka's ResponseCacheImpl.
const (
	AllApps      = "ALL_APPS"
	AllAppsDelta = "ALL_APPS_DELTA"
)

// Key identifies one cached response. It is comparable and used as a map key.
//
// Name is an upper-case application name (Eureka's ApplicationResource upper-cases the path),
// AllApps, AllAppsDelta, or a VIP or secure VIP name exactly as requested (VIP matching is
// case-sensitive). JSON selects JSON over XML; Compact selects X-Eureka-Accept: compact.
type Key struct {
	Entity  Entity
	Name    string
	JSON    bool
	Compact bool
	// Regions is the remote regions a registry read asked for (?regions=,
	// as the server normalised it); "" for none. Only AllApps and
	// AllAppsDelta carry regions (Eureka's Key.hasRegions); Invalidate drops
	// their region variants with them.
	Regions string
}

// String is the key's form in the readWrite tier: fixed-width prefix, then the name.
func (k Key) String() string {
	var b strings.Builder
	b.Grow(4 + len(k.Name))
	b.WriteByte('A' + byte(k.Entity))
	if k.JSON {
		b.WriteByte('J')
	} else {
		b.WriteByte('X')
	}
	if k.Compact {
		b.WriteByte('C')
	} else {
		b.WriteByte('F')
	}
	b.WriteByte(':')
	b.WriteString(k.Name)
	if k.Regions != "" {
		b.WriteByte('|')
		b.WriteString(k.Regions)
	}
	return b.String()
}

// Loader encodes the response for k. found is false for an application that has no
// instances; the cache then stores a NotFound value. An error is returned to the caller of
// Get and nothing is cached.
//
// The loader is called once per (re)generation of a key, never concurrently for the same key,
// so a loader that numbers delta payloads (Eureka's versions__delta, incremented each time a
// delta payload is regenerated) can keep that counter itself.
type Loader func(Key) (payload []byte, found bool, err error)

// Config tunes the cache. Start from DefaultConfig; New fills zero durations with defaults.
type Config struct {
	// UseReadOnly is eureka.server.use-read-only-response-cache (true): Get consults the
	// readOnly tier first. When false, Get reads the readWrite tier, which is always fresh.
	UseReadOnly bool
	// AutoExpiration is eureka.server.response-cache-auto-expiration-in-seconds (180 s): a
	// readWrite entry is rebuilt this long after it was built even if nothing invalidated it
	// (renewal timestamps in payloads are stale by up to this much).
	AutoExpiration time.Duration
	// UpdateInterval is eureka.server.response-cache-update-interval-ms (30 s): in timer mode
	// (RefreshOnChange false) every readOnly key is copied from the readWrite tier this often.
	// In on-change mode it is the period of the housekeeping pass that refreshes readOnly
	// entries older than AutoExpiration.
	UpdateInterval time.Duration
	// RefreshOnChange (goreka's default, true) rebuilds invalidated readOnly entries soon after
	// a change instead of waiting for the UpdateInterval timer.
	RefreshOnChange bool
	// MinRefreshGap is the shortest time between two coalesced rebuilds (200 ms). The gap adapts
	// upward to twice the duration of the last rebuild (capped at UpdateInterval), so a storm of
	// registrations cannot keep the CPU busy compressing.
	MinRefreshGap time.Duration
	// Now is the clock (nil means time.Now).
	Now func() time.Time
}

// Defaults.
const (
	DefaultAutoExpiration = 180 * time.Second
	DefaultUpdateInterval = 30 * time.Second
	DefaultMinRefreshGap  = 200 * time.Millisecond
)

// DefaultConfig returns goreka's defaults: a readOnly tier refreshed on change.
func DefaultConfig() Config {
	return Config{
		UseReadOnly:     true,
		AutoExpiration:  DefaultAutoExpiration,
		UpdateInterval:  DefaultUpdateInterval,
		RefreshOnChange: true,
		MinRefreshGap:   DefaultMinRefreshGap,
	}
}

// ErrNilLoader is returned by Get when the cache was built without a loader.
var ErrNilLoader = errors.New("cache: nil loader")

// Cache is Eureka's two-tier response cache. Its methods are safe for concurrent use.
type Cache struct {
	cfg  Config
	now  func() time.Time
	load StreamLoader

	// ro is the readOnly tier: sharded immutable maps replaced on write under mu, so a hit
	// takes no lock and allocates nothing.
	ro *readOnly

	// rw is the readWrite tier. go-cache stores the entries and drops them after
	// AutoExpiration by the real clock (its DeleteExpired is our janitor, called from Run).
	// Because go-cache only knows the real clock, each entry also carries its own expiry by
	// Config.Now, which Get checks: that is the expiry tests control.
	rw *gocache.Cache

	mu       sync.Mutex
	inflight map[Key]*call // loads under way, one per key (hand-written singleflight)
	// stored holds the keys put in the readWrite tier since their last invalidation (some
	// may have expired there since), so that Invalidate deletes only those: most of the 24
	// keys a change touches were never asked for, and each delete builds its string key.
	// The value is the entry's expiry (by Config.Now): deleteExpired forgets expired keys,
	// so that reads of names that come and go (unknown apps, VIPs) do not grow it for good.
	stored map[Key]time.Time
	dirty  map[Key]struct{} // readOnly keys invalidated since the last rebuild (on-change mode)
	// regions holds every Key.Regions a Get asked for, so that Invalidate
	// drops the region variants of AllApps and AllAppsDelta too (Eureka's
	// regionSpecificKeys, Netflix/eureka#118). The server bounds its values
	// (subsets of the configured regions). A sync.Map: Get reads it on every ?regions=
	// request, and after the first of each set only reads, without c.mu.
	regions sync.Map      // string -> struct{}
	wake    chan struct{} // size 1: coalesces rebuild requests
	gap     atomic.Int64  // current coalescing gap, ns
	lastDur atomic.Int64  // duration of the last rebuild, ns
	stats   counters
}

// rwEntry is what the readWrite tier stores.
type rwEntry struct {
	v       *Value
	expires time.Time // by Config.Now
}

// call is one load in progress. stale is the load's generation check: Invalidate sets it (under
// Cache.mu) when the key is invalidated while the load runs, and the result is then handed to
// the callers already waiting but not stored in either tier.
type call struct {
	done  chan struct{}
	v     *Value
	err   error
	stale bool // guarded by Cache.mu
}

type counters struct {
	rwHits, roHits, misses, shared, loadErrors, staleLoads atomic.Uint64
	invalidations, rebuilds, rebuiltKeys, unreadDropped    atomic.Uint64
}

// New returns a cache that calls load on misses. Zero durations in cfg take their defaults;
// the booleans are used as given (start from DefaultConfig). Call Run to refresh the readOnly
// tier.
func New(cfg Config, load Loader) *Cache {
	var stream StreamLoader
	if load != nil {
		stream = func(k Key, w io.Writer) (bool, error) {
			payload, found, err := load(k)
			if err != nil || !found {
				return false, err
			}
			_, err = w.Write(payload)
			return true, err
		}
	}
	return NewStreaming(cfg, stream)
}

// StreamLoader writes the payload of k to w, in as many writes as it likes,
// and reports whether the entity exists (when it does not, it writes
// nothing). The cache gzips and hashes the bytes as they arrive and keeps
// them uncompressed only up to MaxPlainKept, so a large payload is never
// held whole in memory.
type StreamLoader func(k Key, w io.Writer) (found bool, err error)

// NewStreaming is New with a StreamLoader.
func NewStreaming(cfg Config, load StreamLoader) *Cache {
	if cfg.AutoExpiration <= 0 {
		cfg.AutoExpiration = DefaultAutoExpiration
	}
	if cfg.UpdateInterval <= 0 {
		cfg.UpdateInterval = DefaultUpdateInterval
	}
	if cfg.MinRefreshGap <= 0 {
		cfg.MinRefreshGap = DefaultMinRefreshGap
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	c := &Cache{
		cfg:  cfg,
		now:  now,
		load: load,
		// No go-cache janitor goroutine (cleanup interval 0): it could only be stopped by the
		// garbage collector. Run calls DeleteExpired instead.
		rw:       gocache.New(cfg.AutoExpiration, 0),
		inflight: make(map[Key]*call),
		stored:   make(map[Key]time.Time),
		dirty:    make(map[Key]struct{}),
		wake:     make(chan struct{}, 1),
		ro:       newReadOnly(),
	}
	c.gap.Store(int64(cfg.MinRefreshGap))
	return c
}

// Get returns the cached response for k: from the readOnly tier if enabled and present, else
// from the readWrite tier, loading on a miss (concurrent misses of one key share one load).
// The returned Value is shared and must not be modified. A loader error is returned as is and
// nothing is cached.
func (c *Cache) Get(k Key) (*Value, error) {
	if k.Regions != "" {
		c.noteRegions(k.Regions)
	}
	if c.cfg.UseReadOnly {
		if v, ok, first := c.ro.get(k); ok {
			c.stats.roHits.Add(1) // one atomic add: the only shared write on the hot path
			if first && isRegistryDocument(k) && c.cfg.RefreshOnChange {
				// An unread registry document may have been kept dirty (rebuildDirty):
				// now that somebody reads it, rebuild it with the next pass.
				c.signal()
			}
			return v, nil
		}
	}
	return c.getRW(k, c.cfg.UseReadOnly, false)
}

// noteRegions remembers a Key.Regions value for Invalidate.
func (c *Cache) noteRegions(r string) {
	if _, ok := c.regions.Load(r); !ok {
		c.regions.Store(r, struct{}{})
	}
}

// getRW reads the readWrite tier, loading on a miss. With promote, the value is also put in
// the readOnly tier (Eureka's getValue does the same on a readOnly miss). change marks a
// rebuild after a change (ChangeWriter).
func (c *Cache) getRW(k Key, promote, change bool) (*Value, error) {
	ks := k.String()
	if e, ok := c.rwGet(ks); ok {
		c.stats.rwHits.Add(1)
		if promote {
			c.mu.Lock()
			// Only if no invalidation removed the entry since we read it: a key put in the
			// readOnly tier after its invalidation would never be marked dirty.
			if cur, ok := c.rwGet(ks); ok && cur == e {
				c.ro.publishOne(k, e.v)
			}
			c.mu.Unlock()
		}
		return e.v, nil
	}
	return c.loadShared(k, ks, promote, change)
}

// rwGet returns the live readWrite entry for ks, treating entries expired by Config.Now as
// absent.
func (c *Cache) rwGet(ks string) (*rwEntry, bool) {
	x, ok := c.rw.Get(ks)
	if !ok {
		return nil, false
	}
	e := x.(*rwEntry)
	if !c.now().Before(e.expires) {
		return nil, false
	}
	return e, true
}

// loadShared loads k once for all concurrent callers.
func (c *Cache) loadShared(k Key, ks string, promote, change bool) (*Value, error) {
	c.mu.Lock()
	// Another goroutine may have stored the value between our lookup and the lock.
	if e, ok := c.rwGet(ks); ok {
		if promote {
			c.ro.publishOne(k, e.v)
		}
		c.mu.Unlock()
		c.stats.rwHits.Add(1)
		return e.v, nil
	}
	if cl, ok := c.inflight[k]; ok {
		c.mu.Unlock()
		c.stats.shared.Add(1)
		<-cl.done
		return cl.v, cl.err
	}
	cl := &call{done: make(chan struct{})}
	c.inflight[k] = cl
	c.mu.Unlock()
	c.stats.misses.Add(1)

	cl.v, cl.err = c.loadValue(k, change)

	c.mu.Lock()
	if c.inflight[k] == cl {
		delete(c.inflight, k)
	}
	switch {
	case cl.err != nil:
		c.stats.loadErrors.Add(1)
	case cl.stale:
		c.stats.staleLoads.Add(1)
	default:
		exp := cl.v.Built.Add(c.cfg.AutoExpiration)
		c.rw.Set(ks, &rwEntry{v: cl.v, expires: exp}, gocache.DefaultExpiration)
		c.stored[k] = exp
		if promote {
			c.ro.publishOne(k, cl.v)
		}
	}
	c.mu.Unlock()
	close(cl.done)
	return cl.v, cl.err
}

// loadValue calls the loader and builds the Value. A panicking loader is turned into an
// error: otherwise the callers waiting on this load, and every later Get of the key, would
// block forever on a load that never finishes.
func (c *Cache) loadValue(k Key, change bool) (v *Value, err error) {
	if c.load == nil {
		return nil, ErrNilLoader
	}
	defer func() {
		if p := recover(); p != nil {
			v, err = nil, fmt.Errorf("cache: loading %v: panic: %v", k, p)
		}
	}()
	return streamValue(func(w io.Writer) (bool, error) { return c.load(k, w) }, gzipLevel, c.now, c.cfg.AutoExpiration, c.maxAge(change), change)
}

// agedTick is the period of the housekeeping's refresh of due registry
// documents (runOnChange).
func (c *Cache) agedTick() time.Duration {
	return max(c.cfg.UpdateInterval/16, c.cfg.MinRefreshGap)
}

// maxAge is ChangeWriter's: the age up to which a build may keep a segment,
// AutoExpiration less one tick for a change and less two for a refresh, so
// that no kept segment is served past AutoExpiration (Cache.markAged).
func (c *Cache) maxAge(change bool) time.Duration {
	ticks := time.Duration(2)
	if change {
		ticks = 1
	}
	return max(c.cfg.AutoExpiration-ticks*c.agedTick(), c.cfg.AutoExpiration/2)
}

// Invalidate drops from the readWrite tier, in JSON and XML and full and compact, the keys a
// change to an instance of app with the given VIP and secure VIP addresses affects:
// (Application, app), (Application, ALL_APPS), (Application, ALL_APPS_DELTA), (VIP, vip) and
// (SVIP, svip). app is upper-cased like Eureka's request path. Empty arguments are skipped.
//
// Two Eureka quirks are fixed on purpose: Eureka invalidates only the full VIP/SVIP keys, so
// compact ones live until AutoExpiration; goreka drops both. And Eureka drops the key of the
// whole address string, while an instance with vipAddress "a,b" is served under /vips/a and
// /vips/b; goreka also drops each comma-separated piece (untrimmed, as Eureka matches them).
//
// The readOnly tier is never invalidated directly. In on-change mode the dropped keys that it
// holds are marked dirty and Run rebuilds them soon; in timer mode the next tick copies them.
// A load of one of these keys already in progress is not waited for: its result goes to its
// callers but is not stored.
func (c *Cache) Invalidate(app, vip, svip string) {
	keys := make([]Key, 0, 24)
	add := func(e Entity, name string) {
		for _, json := range [2]bool{false, true} {
			for _, compact := range [2]bool{false, true} {
				keys = append(keys, Key{Entity: e, Name: name, JSON: json, Compact: compact})
			}
		}
	}
	if app != "" {
		add(Application, strings.ToUpper(app))
	}
	add(Application, AllApps)
	add(Application, AllAppsDelta)
	c.regions.Range(func(rk, _ any) bool {
		r := rk.(string)
		for _, json := range [2]bool{false, true} {
			for _, compact := range [2]bool{false, true} {
				keys = append(keys, Key{Entity: Application, Name: AllApps, JSON: json, Compact: compact, Regions: r},
					Key{Entity: Application, Name: AllAppsDelta, JSON: json, Compact: compact, Regions: r})
			}
		}
		return true
	})
	addAddr := func(e Entity, addr string) {
		if addr == "" {
			return
		}
		add(e, addr)
		if strings.Contains(addr, ",") {
			for piece := range registry.VIPPieces(addr) {
				if piece != "" {
					add(e, piece)
				}
			}
		}
	}
	addAddr(VIP, vip)
	addAddr(SVIP, svip)

	marked := false
	c.mu.Lock()
	for _, k := range keys {
		if _, ok := c.stored[k]; ok {
			c.rw.Delete(k.String())
			delete(c.stored, k)
		}
		if cl, ok := c.inflight[k]; ok {
			cl.stale = true
			// Later Gets start a fresh load instead of joining the stale one.
			delete(c.inflight, k)
		}
		if c.cfg.UseReadOnly && c.cfg.RefreshOnChange {
			if c.ro.has(k) {
				c.dirty[k] = struct{}{}
				marked = true
			}
		}
	}
	c.mu.Unlock()
	c.stats.invalidations.Add(1)
	if marked {
		c.signal()
	}
}

// signal wakes the refresher without blocking; requests made while one is pending coalesce.
func (c *Cache) signal() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}
