package cache

import (
	"context"
	"errors"
	"io"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// startRun runs c.Run in the bubble and stops it when the test function returns.
func startRun(t *testing.T, c *Cache) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run returned %v, want nil", err)
		}
	})
}

// Inside a synctest bubble time.Now is the bubble's fake clock, so Config.Now stays nil.

func TestRefreshOnChangeCoalescesAStorm(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRegistry()
		c := New(DefaultConfig(), r.load)
		full := Key{Entity: Application, Name: AllApps, JSON: true}
		delta := Key{Entity: Application, Name: AllAppsDelta, JSON: true}
		mustGet(t, c, full)
		mustGet(t, c, delta)
		startRun(t, c)

		// 1000 registrations over one second, with clients reading both keys every 10 ms.
		for i := range 1000 {
			r.bump()
			c.Invalidate("APP", "", "")
			time.Sleep(time.Millisecond)
			if i%10 == 0 {
				mustGet(t, c, full)
				mustGet(t, c, delta)
			}
		}
		time.Sleep(DefaultMinRefreshGap)
		synctest.Wait()

		wantPayload(t, mustGet(t, c, full), r.payload(full, 1000))
		wantPayload(t, mustGet(t, c, delta), r.payload(delta, 1000))
		s := c.Stats()
		t.Logf("1000 invalidations over 1 s: %d rebuilds", s.Rebuilds)
		// One rebuild at once, then one per 200 ms gap: 1 + 1000/200 + the tail.
		if s.Rebuilds < 2 || s.Rebuilds > 7 {
			t.Fatalf("Rebuilds = %d for 1000 invalidations, want 2..7", s.Rebuilds)
		}
		if s.Invalidations != 1000 || s.RebuiltKeys != 2*s.Rebuilds {
			t.Fatalf("stats = %+v", s)
		}
		if got := r.total.Load(); got != int64(2+2*s.Rebuilds) {
			t.Fatalf("loads = %d, want %d", got, 2+2*s.Rebuilds)
		}
	})
}

// A key nobody reads (a VIP a client fetched once) is not rebuilt on every
// change: the first pass after it was read rebuilds it, the next one removes
// it from the readOnly tier, and the next Get loads the current payload.
func TestRefreshOnChangeSkipsUnreadKeys(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRegistry()
		c := New(DefaultConfig(), r.load)
		xml := Key{Entity: VIP, Name: "vip"}
		mustGet(t, c, xml)
		startRun(t, c)
		for range 1000 {
			r.bump()
			c.Invalidate("APP", "vip", "")
			time.Sleep(time.Millisecond)
		}
		time.Sleep(DefaultMinRefreshGap)
		synctest.Wait()
		s := c.Stats()
		if s.RebuiltKeys != 1 || s.UnreadDropped != 1 || s.ReadOnlyKeys != 0 || s.DirtyKeys != 0 {
			t.Fatalf("stats after an unread storm = %+v", s)
		}
		if got := r.total.Load(); got != 2 {
			t.Fatalf("loads = %d, want 2 (the first Get, one rebuild)", got)
		}
		wantPayload(t, mustGet(t, c, xml), r.payload(xml, 1000))
		if s := c.Stats(); s.ReadOnlyKeys != 1 || r.total.Load() != 3 {
			t.Fatalf("the next Get did not load and keep the key: %+v, loads %d", s, r.total.Load())
		}
		// Read again, it is rebuilt on the next change.
		r.bump()
		c.Invalidate("APP", "vip", "")
		synctest.Wait()
		wantPayload(t, mustGet(t, c, xml), r.payload(xml, 1001))
		if s := c.Stats(); s.RebuiltKeys != 2 {
			t.Fatalf("read key not rebuilt: %+v", s)
		}
	})
}

// The registry documents are never dropped, being the one thing whose cold
// load costs the whole registry: unread, a dirty one keeps its last copy and
// is rebuilt at most once per UpdateInterval (Eureka's staleness bound); its
// first reader wakes a pass that brings it up to date.
func TestRefreshOnChangeKeepsUnreadRegistryDocuments(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRegistry()
		c := New(DefaultConfig(), r.load)
		full := Key{Entity: Application, Name: AllApps}
		mustGet(t, c, full)
		startRun(t, c)
		for range 1000 {
			r.bump()
			c.Invalidate("APP", "", "")
			time.Sleep(time.Millisecond)
		}
		time.Sleep(DefaultMinRefreshGap)
		synctest.Wait()
		s := c.Stats()
		if s.RebuiltKeys != 1 || s.UnreadDropped != 0 || s.ReadOnlyKeys != 1 || s.DirtyKeys != 1 {
			t.Fatalf("stats after an unread storm = %+v; want one rebuild, the document kept and dirty", s)
		}
		loads := r.total.Load()
		// Its first reader gets the kept copy at once (no load in the request) and
		// wakes a pass: the next read is current.
		v := mustGet(t, c, full)
		if r.total.Load() != loads {
			t.Fatalf("a read of the kept document loaded it in the request")
		}
		if string(v.Plain) == string(r.payload(full, 1000)) {
			t.Fatalf("the kept copy is already current: the test proves nothing")
		}
		time.Sleep(DefaultMinRefreshGap)
		synctest.Wait()
		wantPayload(t, mustGet(t, c, full), r.payload(full, 1000))

		// Unread for longer than UpdateInterval, it is rebuilt by housekeeping.
		r.bump()
		c.Invalidate("APP", "", "")
		time.Sleep(DefaultMinRefreshGap)
		synctest.Wait()
		r.bump()
		c.Invalidate("APP", "", "")
		time.Sleep(2 * DefaultUpdateInterval)
		synctest.Wait()
		v, _ = c.ro.peek(full)
		if string(v.Plain) != string(r.payload(full, 1002)) {
			t.Fatalf("unread document not rebuilt within two UpdateIntervals: %q", v.Plain)
		}
	})
}

func TestRefreshOnChangeVisibility(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRegistry()
		c := New(DefaultConfig(), r.load)
		k := Key{Entity: Application, Name: AllApps, JSON: true, Compact: true}
		mustGet(t, c, k)
		startRun(t, c)

		// After a quiet period the first change is rebuilt at once.
		r.bump()
		c.Invalidate("APP", "", "")
		synctest.Wait()
		wantPayload(t, mustGet(t, c, k), r.payload(k, 1))

		// A second change right after waits for the gap.
		r.bump()
		c.Invalidate("APP", "", "")
		time.Sleep(DefaultMinRefreshGap - time.Millisecond)
		synctest.Wait()
		wantPayload(t, mustGet(t, c, k), r.payload(k, 1))
		time.Sleep(time.Millisecond)
		synctest.Wait()
		wantPayload(t, mustGet(t, c, k), r.payload(k, 2))

	})
}

// A change to keys that are not in the readOnly tier does not wake the refresher.
func TestInvalidateWakesOnlyForReadOnlyKeys(t *testing.T) {
	c := New(DefaultConfig(), newRegistry().load)
	mustGet(t, c, Key{Entity: Application, Name: "ORDERS", JSON: true})
	c.Invalidate("BILLING", "some-vip", "")
	if len(c.wake) != 0 || c.Stats().DirtyKeys != 0 {
		t.Fatal("invalidating keys outside the readOnly tier woke the refresher")
	}
	c.Invalidate("ORDERS", "", "")
	if len(c.wake) != 1 || c.Stats().DirtyKeys != 1 {
		t.Fatal("invalidating a readOnly key did not wake the refresher")
	}
}

func TestRefreshGapAdaptsToRebuildTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRegistry()
		k := Key{Entity: Application, Name: AllApps, JSON: true}
		slow := func(k Key) ([]byte, bool, error) {
			time.Sleep(300 * time.Millisecond) // a big registry takes a while to encode
			return r.load(k)
		}
		c := New(DefaultConfig(), slow)
		mustGet(t, c, k)
		startRun(t, c)

		start := time.Now()
		r.bump()
		c.Invalidate("APP", "", "")
		time.Sleep(300 * time.Millisecond)
		synctest.Wait()
		wantPayload(t, mustGet(t, c, k), r.payload(k, 1))
		s := c.Stats()
		if s.LastRebuild != 300*time.Millisecond || s.RefreshGap != 600*time.Millisecond {
			t.Fatalf("LastRebuild = %v, RefreshGap = %v, want 300ms and 600ms", s.LastRebuild, s.RefreshGap)
		}

		// The next change is rebuilt 600 ms after the previous rebuild ended, taking 300 ms.
		r.bump()
		c.Invalidate("APP", "", "")
		time.Sleep(300*time.Millisecond + 600*time.Millisecond + 300*time.Millisecond - time.Millisecond - time.Since(start))
		synctest.Wait()
		wantPayload(t, mustGet(t, c, k), r.payload(k, 1))
		time.Sleep(time.Millisecond)
		synctest.Wait()
		wantPayload(t, mustGet(t, c, k), r.payload(k, 2))
	})
}

// A change that lands while its key is being rebuilt is not lost: the rebuild publishes what it
// loaded, the key is dirty again, and the next rebuild catches up.
func TestChangeDuringRebuildIsNotLost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRegistry()
		k := Key{Entity: Application, Name: AllApps, JSON: true}
		slow := func(k Key) ([]byte, bool, error) {
			p, found, err := r.load(k) // reads the version first, then takes a while to encode
			time.Sleep(50 * time.Millisecond)
			return p, found, err
		}
		c := New(DefaultConfig(), slow)
		mustGet(t, c, k)
		startRun(t, c)

		r.bump()
		c.Invalidate("APP", "", "")
		time.Sleep(10 * time.Millisecond) // the rebuild is loading version 1
		r.bump()
		c.Invalidate("APP", "", "")
		time.Sleep(40 * time.Millisecond)
		synctest.Wait()
		wantPayload(t, mustGet(t, c, k), r.payload(k, 1))
		if s := c.Stats(); s.StaleLoads != 1 || s.DirtyKeys != 1 {
			t.Fatalf("StaleLoads = %d, DirtyKeys = %d, want 1 and 1", s.StaleLoads, s.DirtyKeys)
		}
		time.Sleep(DefaultMinRefreshGap + 50*time.Millisecond)
		synctest.Wait()
		wantPayload(t, mustGet(t, c, k), r.payload(k, 2))
	})
}

func TestRefreshGapIsCappedAtUpdateInterval(t *testing.T) {
	c := New(DefaultConfig(), nil)
	c.adaptGap(time.Minute)
	if g := c.Stats().RefreshGap; g != DefaultUpdateInterval {
		t.Fatalf("RefreshGap = %v, want %v", g, DefaultUpdateInterval)
	}
	c.adaptGap(time.Millisecond)
	if g := c.Stats().RefreshGap; g != DefaultMinRefreshGap {
		t.Fatalf("RefreshGap = %v, want %v", g, DefaultMinRefreshGap)
	}
}

func TestOnChangeRefreshesAgedEntries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRegistry()
		c := New(DefaultConfig(), r.load)
		k := Key{Entity: VIP, Name: "v", JSON: true}
		first := mustGet(t, c, k)
		startRun(t, c)
		r.bump() // e.g. renewals: they change payloads but never invalidate

		time.Sleep(DefaultAutoExpiration - time.Millisecond)
		synctest.Wait()
		if v := mustGet(t, c, k); v != first {
			t.Fatal("entry refreshed before AutoExpiration")
		}
		time.Sleep(time.Millisecond) // 180 s is a multiple of the 30 s housekeeping tick
		synctest.Wait()
		v := mustGet(t, c, k)
		wantPayload(t, v, r.payload(k, 1))
		if age := c.Stats().OldestPayload; age != 0 {
			t.Fatalf("OldestPayload = %v, want 0 right after the refresh", age)
		}
	})
}

func TestRebuildKeepsOldValueOnLoadError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRegistry()
		c := New(DefaultConfig(), r.load)
		k := Key{Entity: Application, Name: AllApps, JSON: true}
		mustGet(t, c, k)
		startRun(t, c)

		r.mu.Lock()
		r.fail[k] = errors.New("encoder broke")
		r.mu.Unlock()
		r.bump()
		c.Invalidate("APP", "", "")
		synctest.Wait()
		wantPayload(t, mustGet(t, c, k), r.payload(k, 0))
		if s := c.Stats(); s.DirtyKeys != 1 || s.LoadErrors != 1 {
			t.Fatalf("after a failed rebuild: %+v", s)
		}

		// The next change retries the key.
		r.mu.Lock()
		delete(r.fail, k)
		r.mu.Unlock()
		c.Invalidate("APP", "", "")
		time.Sleep(DefaultMinRefreshGap)
		synctest.Wait()
		wantPayload(t, mustGet(t, c, k), r.payload(k, 1))
	})
}

// Timer mode is Eureka's: invalidations reach readers only at the aligned 30 s ticks.
func TestTimerModeCopiesEveryInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// The bubble starts at midnight UTC 2000-01-01, a multiple of 30 s.
		time.Sleep(10 * time.Second)
		r := newRegistry()
		r.missing["NEWAPP"] = true
		cfg := DefaultConfig()
		cfg.RefreshOnChange = false
		c := New(cfg, r.load)
		full := Key{Entity: Application, Name: AllApps, JSON: true}
		app := Key{Entity: Application, Name: "NEWAPP", JSON: true}
		mustGet(t, c, full)
		if v := mustGet(t, c, app); !v.NotFound {
			t.Fatal("NEWAPP found before it registered")
		}
		startRun(t, c)

		r.bump()
		delete(r.missing, "NEWAPP")
		c.Invalidate("NEWAPP", "", "")
		if s := c.Stats(); s.DirtyKeys != 0 {
			t.Fatalf("timer mode marked %d keys dirty", s.DirtyKeys)
		}
		// First tick at the next multiple of 30 s, 20 s from now, not 30 s.
		time.Sleep(20*time.Second - time.Millisecond)
		synctest.Wait()
		wantPayload(t, mustGet(t, c, full), r.payload(full, 0))
		if v := mustGet(t, c, app); !v.NotFound {
			t.Fatal("NEWAPP visible before the tick")
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		wantPayload(t, mustGet(t, c, full), r.payload(full, 1))
		if v := mustGet(t, c, app); v.NotFound {
			t.Fatal("NEWAPP still NotFound after the tick")
		}

		// Then every 30 s.
		r.bump()
		c.Invalidate("OTHER", "", "")
		time.Sleep(30*time.Second - time.Millisecond)
		synctest.Wait()
		wantPayload(t, mustGet(t, c, full), r.payload(full, 1))
		time.Sleep(time.Millisecond)
		synctest.Wait()
		wantPayload(t, mustGet(t, c, full), r.payload(full, 2))
		// Unchanged keys are not reloaded: NEWAPP was loaded once at the first tick.
		if n := r.loadsOf(app); n != 2 {
			t.Fatalf("NEWAPP loads = %d, want 2", n)
		}
	})
}

func TestRunReturnsNilOnCancel(t *testing.T) {
	for _, tt := range []struct {
		name           string
		useRO, onChage bool
	}{{"on-change", true, true}, {"timer", true, false}, {"readWrite only", false, true}} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := DefaultConfig()
				cfg.UseReadOnly, cfg.RefreshOnChange = tt.useRO, tt.onChage
				c := New(cfg, newRegistry().load)
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan error, 1)
				go func() { done <- c.Run(ctx) }()
				time.Sleep(time.Hour)
				cancel()
				if err := <-done; err != nil {
					t.Fatalf("Run = %v", err)
				}
			})
		})
	}
}

// The readWrite janitor drops entries go-cache considers expired (by the real clock in
// production; here the bubble's clock drives both).
func TestJanitorSweepsReadWriteTier(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := DefaultConfig()
		cfg.UseReadOnly = false
		c := New(cfg, newRegistry().load)
		mustGet(t, c, Key{Entity: Application, Name: AllApps})
		startRun(t, c)
		if n := c.Stats().ReadWriteKeys; n != 1 {
			t.Fatalf("ReadWriteKeys = %d, want 1", n)
		}
		time.Sleep(DefaultAutoExpiration + DefaultUpdateInterval)
		synctest.Wait()
		if n := c.Stats().ReadWriteKeys; n != 0 {
			t.Fatalf("ReadWriteKeys = %d after expiry, want 0", n)
		}
	})
}

// A registry document variant nobody read for longer than AutoExpiration
// (one a client asked for once: XML, compact, a regions list) is dropped as
// any unread key, not rebuilt for as long as the registry changes; one read
// within it is kept, and the JSON full registry clients use always is.
func TestUnreadRegistryDocumentIsDroppedAfterAutoExpiration(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRegistry()
		c := New(DefaultConfig(), r.load)
		xml := Key{Entity: Application, Name: AllApps}
		full := Key{Entity: Application, Name: AllApps, JSON: true}
		mustGet(t, c, xml)
		mustGet(t, c, full)
		startRun(t, c)
		change := func() {
			r.bump()
			c.Invalidate("APP", "", "")
			time.Sleep(DefaultUpdateInterval)
			synctest.Wait()
		}
		rounds := 2 * int(DefaultAutoExpiration/DefaultUpdateInterval) // six minutes of changes
		for i := range rounds {
			change()
			if i == rounds/4 && !c.ro.has(xml) {
				t.Fatal("the XML document read two minutes ago was dropped")
			}
		}
		if !c.ro.has(full) {
			t.Fatal("the JSON full registry, which delta clients read rarely, was dropped")
		}
		if c.ro.has(xml) {
			t.Fatalf("the XML document nobody read for %s is still rebuilt", 2*DefaultAutoExpiration)
		}
	})
}

// After a rebuild that covered a storm (a loading: every chunk re-encoded,
// seconds at 100k instances), the first change waits MinRefreshGap, not
// twice that rebuild; a storm of changes still waits the full gap, so
// rebuilds keep their bounded share of the CPU.
func TestRefreshGapShrinksWithFewerChanges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRegistry()
		k := Key{Entity: Application, Name: AllApps, JSON: true}
		slow := func(k Key) ([]byte, bool, error) {
			p, found, err := r.load(k)
			time.Sleep(300 * time.Millisecond)
			return p, found, err
		}
		c := New(DefaultConfig(), slow)
		mustGet(t, c, k)
		storm := func(n int) {
			for range n {
				r.bump()
				c.Invalidate("APP", "", "")
			}
		}
		storm(1000) // before Run: its first pass covers them all, in 300 ms: gap 600 ms after it
		startRun(t, c)
		time.Sleep(300 * time.Millisecond)
		synctest.Wait()
		wantPayload(t, mustGet(t, c, k), r.payload(k, 1000))
		if g := c.Stats().RefreshGap; g != 600*time.Millisecond {
			t.Fatalf("RefreshGap = %v, want 600ms", g)
		}

		// One change: rebuilt MinRefreshGap after the storm's rebuild.
		storm(1)
		time.Sleep(DefaultMinRefreshGap + 300*time.Millisecond - time.Millisecond)
		synctest.Wait()
		wantPayload(t, mustGet(t, c, k), r.payload(k, 1000))
		time.Sleep(time.Millisecond)
		synctest.Wait()
		wantPayload(t, mustGet(t, c, k), r.payload(k, 1001))

		// A storm after a rebuild that covered one change: the full 600 ms gap.
		storm(1000)
		time.Sleep(600*time.Millisecond + 300*time.Millisecond - time.Millisecond)
		synctest.Wait()
		wantPayload(t, mustGet(t, c, k), r.payload(k, 1001))
		time.Sleep(time.Millisecond)
		synctest.Wait()
		wantPayload(t, mustGet(t, c, k), r.payload(k, 2001))
	})
}

// A rebuild for a change tells the loader so (ChangeWriter: keep segments
// up to AutoExpiration less a tick), the housekeeping's does not (less two
// ticks); the housekeeping rebuilds a segmented registry document at its
// first tick (every UpdateInterval/16) once it is due (a segment without a
// Due: 3/8 of AutoExpiration old), and a change right after its pass waits
// for the gap as after any rebuild (twice the last change's 1 s rebuild).
func TestHousekeepingRefreshesSegmentedDocuments(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		full := Key{Entity: Application, Name: AllApps, JSON: true}
		type build struct {
			change bool
			maxAge time.Duration
			at     time.Duration
		}
		var mu sync.Mutex
		var all []build
		snapshot := func() []build { mu.Lock(); defer mu.Unlock(); return slices.Clone(all) }
		start := time.Now()
		load := func(k Key, w io.Writer) (bool, error) {
			maxAge, change := w.(ChangeWriter).ForChange()
			mu.Lock()
			all = append(all, build{change, maxAge, time.Since(start)})
			mu.Unlock()
			time.Sleep(time.Second) // a big document
			return true, w.(SegmentWriter).WriteSegment(NewSegment([]byte(`{"applications":{}}`), w.(SegmentWriter).Now()))
		}
		c := NewStreaming(DefaultConfig(), load)
		if _, err := c.Get(full); err != nil {
			t.Fatal(err)
		}
		startRun(t, c)
		c.Invalidate("APP", "", "")
		synctest.Wait()
		builds := snapshot()
		tick := DefaultUpdateInterval / 16
		if len(builds) != 2 || builds[0].change || !builds[1].change || builds[1].maxAge != DefaultAutoExpiration-tick {
			t.Fatalf("builds = %+v, want a load, then a rebuild for a change keeping segments up to %v", builds, DefaultAutoExpiration-tick)
		}
		// Run started at 1 s, the change's segment is of 2 s; 3/8 of 180 s is 67.5 s:
		// the first tick of UpdateInterval/16 after 69.5 s refreshes it.
		at := time.Second + tick*(68500*time.Millisecond/tick+1)
		time.Sleep(at - time.Millisecond - time.Since(start))
		synctest.Wait()
		builds = snapshot()
		if len(builds) != 2 {
			t.Fatalf("builds before %v = %+v", at, builds)
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		builds = snapshot()
		if len(builds) != 3 || builds[2].change || builds[2].at != at || builds[2].maxAge != DefaultAutoExpiration-2*tick {
			t.Fatalf("builds = %+v, want the housekeeping's refresh at %v keeping segments up to %v", builds, at, DefaultAutoExpiration-2*tick)
		}
		time.Sleep(time.Second) // the refresh ends
		synctest.Wait()
		if _, err := c.Get(full); err != nil { // read: a change rebuilds it
			t.Fatal(err)
		}
		synctest.Wait()
		c.Invalidate("APP", "", "")
		synctest.Wait()
		builds = snapshot()
		if len(builds) != 3 {
			t.Fatalf("builds = %+v, want the change to wait for the gap after the housekeeping's pass", builds)
		}
		time.Sleep(2*time.Second - time.Millisecond)
		synctest.Wait()
		if builds = snapshot(); len(builds) != 3 {
			t.Fatalf("builds = %+v, want the change to wait for the gap after the housekeeping's pass", builds)
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		builds = snapshot()
		if len(builds) != 4 || !builds[3].change || builds[3].at != at+3*time.Second {
			t.Fatalf("builds = %+v, want the change rebuilt a gap (2 s) after the housekeeping's pass", builds)
		}
	})
}

// A loader that keeps its segment as long as ForChange allows (the worst a
// budgeted refresh can do: document's re-encodes a due chunk later when the
// budget is spent, but never one past maxAge) and whose segment is always
// due: with changes every 7 s and the housekeeping's ticks, no Get is ever
// answered with bytes older than AutoExpiration (before the refresh's maxAge
// was two ticks short of it, the kept segment was served up to a tick past).
func TestKeptSegmentsAreNeverServedPastAutoExpiration(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		full := Key{Entity: Application, Name: AllApps, JSON: true}
		var mu sync.Mutex
		var seg *Segment
		load := func(k Key, w io.Writer) (bool, error) {
			sw := w.(SegmentWriter)
			maxAge, _ := w.(ChangeWriter).ForChange()
			mu.Lock()
			defer mu.Unlock()
			if seg == nil || sw.Now().Sub(seg.Built) >= maxAge {
				seg = NewSegment([]byte(`{"applications":{}}`), sw.Now())
				seg.Due = seg.Built // always due: every tick refreshes
			}
			return true, sw.WriteSegment(seg)
		}
		c := NewStreaming(DefaultConfig(), load)
		startRun(t, c)
		worst := time.Duration(0)
		for i := range 4000 { // 400 s
			time.Sleep(100 * time.Millisecond)
			synctest.Wait()
			if i%70 == 0 {
				c.Invalidate("APP", "", "")
			}
			v, err := c.Get(full)
			if err != nil {
				t.Fatal(err)
			}
			worst = max(worst, time.Since(v.Built))
		}
		// >=: the clock here moves in steps that land on the ticks, so the
		// old bound served exactly AutoExpiration-old bytes.
		if worst >= DefaultAutoExpiration {
			t.Fatalf("a Get was answered with bytes %v old, over AutoExpiration (%v)", worst, DefaultAutoExpiration)
		}
		t.Logf("oldest bytes served: %v", worst)
	})
}
