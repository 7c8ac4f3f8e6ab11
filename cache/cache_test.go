package cache

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/goreka/goreka/registry/clocktest"
)

// newClock returns the fake clock the tests start from.
func newClock() *clocktest.Clock { return clocktest.New(time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)) }

// fakeRegistry is a fake data source: each key's payload names the key and a version that
// bump increases, so tests can tell a fresh payload from a stale one.
type fakeRegistry struct {
	mu       sync.Mutex
	version  int
	missing  map[string]bool // Application names with no instances
	fail     map[Key]error
	loads    map[Key]int
	total    atomic.Int64
	blockFor map[Key]chan struct{} // a load of the key waits for the channel to close
	started  chan Key              // if set, receives each key whose load starts
}

func newRegistry() *fakeRegistry {
	return &fakeRegistry{missing: map[string]bool{}, fail: map[Key]error{}, loads: map[Key]int{}, blockFor: map[Key]chan struct{}{}}
}

func (r *fakeRegistry) bump() {
	r.mu.Lock()
	r.version++
	r.mu.Unlock()
}

func (r *fakeRegistry) payload(k Key, version int) []byte {
	return fmt.Appendf(nil, "%s|%s|json=%t|compact=%t|v%d", k.Entity, k.Name, k.JSON, k.Compact, version)
}

func (r *fakeRegistry) load(k Key) ([]byte, bool, error) {
	r.total.Add(1)
	r.mu.Lock()
	r.loads[k]++
	version := r.version
	block := r.blockFor[k]
	err := r.fail[k]
	missing := k.Entity == Application && r.missing[k.Name]
	started := r.started
	r.mu.Unlock()
	if started != nil {
		started <- k
	}
	if block != nil {
		<-block
	}
	if err != nil {
		return nil, false, err
	}
	if missing {
		return nil, false, nil
	}
	return r.payload(k, version), true, nil
}

func (r *fakeRegistry) loadsOf(k Key) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.loads[k]
}

func mustGet(t *testing.T, c *Cache, k Key) *Value {
	t.Helper()
	v, err := c.Get(k)
	if err != nil {
		t.Fatalf("Get(%v): %v", k, err)
	}
	return v
}

func wantPayload(t *testing.T, v *Value, want []byte) {
	t.Helper()
	if !bytes.Equal(v.Plain, want) {
		t.Fatalf("payload = %q, want %q", v.Plain, want)
	}
}

func rwConfig(clk *clocktest.Clock) Config {
	cfg := DefaultConfig()
	cfg.UseReadOnly = false
	cfg.Now = clk.Now
	return cfg
}

func TestGetBuildsGzipAndETag(t *testing.T) {
	r := newRegistry()
	c := New(rwConfig(newClock()), r.load)
	k := Key{Entity: Application, Name: AllApps, JSON: true}
	v := mustGet(t, c, k)
	wantPayload(t, v, r.payload(k, 0))
	zr, err := gzip.NewReader(bytes.NewReader(v.Gzip()))
	if err != nil {
		t.Fatal(err)
	}
	unz, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(unz, v.Plain) {
		t.Fatalf("gunzip = %q, want %q", unz, v.Plain)
	}
	if len(v.ETag) != 18 || v.ETag[0] != '"' || v.ETag[17] != '"' {
		t.Fatalf("ETag = %s, want a quoted 16-digit hash", v.ETag)
	}
	other := mustGet(t, c, Key{Entity: Application, Name: AllApps})
	if other.ETag == v.ETag {
		t.Fatalf("XML and JSON payloads share ETag %s", v.ETag)
	}
	if again := mustGet(t, c, k); again != v {
		t.Fatal("second Get did not return the cached value")
	}
	if n := r.loadsOf(k); n != 1 {
		t.Fatalf("loads = %d, want 1", n)
	}
}

func TestNotModified(t *testing.T) {
	v := &Value{Plain: []byte("x"), ETag: etagOf([]byte("x"))}
	tests := []struct {
		header string
		want   bool
	}{
		{"", false},
		{v.ETag, true},
		{"W/" + v.ETag, true},
		{`"nope", ` + v.ETag, true},
		{`"nope"`, false},
		{"*", true},
		{v.ETag[1 : len(v.ETag)-1], false}, // unquoted
	}
	for _, tt := range tests {
		if got := v.NotModified(tt.header); got != tt.want {
			t.Errorf("NotModified(%q) = %v, want %v", tt.header, got, tt.want)
		}
	}
	if (&Value{NotFound: true}).NotModified("*") {
		t.Error("a NotFound value matched *")
	}
}

func TestNotFoundIsCached(t *testing.T) {
	r := newRegistry()
	r.missing["GHOST"] = true
	c := New(rwConfig(newClock()), r.load)
	k := Key{Entity: Application, Name: "GHOST", JSON: true}
	for range 3 {
		v := mustGet(t, c, k)
		if !v.NotFound || v.Plain != nil || v.Gzip() != nil || v.ETag != "" {
			t.Fatalf("value = %+v, want NotFound without bytes", v)
		}
	}
	if n := r.loadsOf(k); n != 1 {
		t.Fatalf("loads = %d, want 1 (NotFound cached)", n)
	}
	// Registering GHOST invalidates the cached 404.
	delete(r.missing, "GHOST")
	c.Invalidate("ghost", "", "")
	if v := mustGet(t, c, k); v.NotFound {
		t.Fatal("still NotFound after Invalidate")
	}
}

func TestLoadErrorIsNotCached(t *testing.T) {
	r := newRegistry()
	k := Key{Entity: Application, Name: AllApps}
	boom := errors.New("boom")
	r.fail[k] = boom
	c := New(rwConfig(newClock()), r.load)
	if _, err := c.Get(k); !errors.Is(err, boom) {
		t.Fatalf("err = %v, want boom", err)
	}
	delete(r.fail, k)
	if v := mustGet(t, c, k); v.NotFound {
		t.Fatal("unexpected NotFound")
	}
	if n := r.loadsOf(k); n != 2 {
		t.Fatalf("loads = %d, want 2 (the error was not cached)", n)
	}
	if s := c.Stats(); s.LoadErrors != 1 {
		t.Fatalf("LoadErrors = %d, want 1", s.LoadErrors)
	}
	if _, err := New(rwConfig(newClock()), nil).Get(k); !errors.Is(err, ErrNilLoader) {
		t.Fatalf("nil loader: err = %v", err)
	}
}

func allVariants(e Entity, name string) []Key {
	var ks []Key
	for _, json := range []bool{false, true} {
		for _, compact := range []bool{false, true} {
			ks = append(ks, Key{Entity: e, Name: name, JSON: json, Compact: compact})
		}
	}
	return ks
}

func TestInvalidatePerKey(t *testing.T) {
	var keys []Key
	for _, n := range []string{"ORDERS", "BILLING", AllApps, AllAppsDelta} {
		keys = append(keys, allVariants(Application, n)...)
	}
	for _, n := range []string{"orders-vip", "a,b", "a", "b", "c"} {
		keys = append(keys, allVariants(VIP, n)...)
	}
	for _, n := range []string{"orders-svip", "x,y", "x", "y"} {
		keys = append(keys, allVariants(SVIP, n)...)
	}
	set := func(names ...any) map[Key]bool {
		m := map[Key]bool{}
		for i := 0; i < len(names); i += 2 {
			for _, k := range allVariants(names[i].(Entity), names[i+1].(string)) {
				m[k] = true
			}
		}
		return m
	}
	tests := []struct {
		name            string
		app, vip, svip  string
		wantInvalidated map[Key]bool
	}{
		{
			name: "app, vip and svip", app: "ORDERS", vip: "orders-vip", svip: "orders-svip",
			wantInvalidated: set(Application, "ORDERS", Application, AllApps, Application, AllAppsDelta,
				VIP, "orders-vip", SVIP, "orders-svip"),
		},
		{
			name: "app name is upper-cased", app: "orders",
			wantInvalidated: set(Application, "ORDERS", Application, AllApps, Application, AllAppsDelta),
		},
		{
			name: "comma-separated addresses invalidate each piece", app: "BILLING", vip: "a,b", svip: "x,y",
			wantInvalidated: set(Application, "BILLING", Application, AllApps, Application, AllAppsDelta,
				VIP, "a,b", VIP, "a", VIP, "b", SVIP, "x,y", SVIP, "x", SVIP, "y"),
		},
		{
			name:            "no app still drops the registry-wide keys",
			wantInvalidated: set(Application, AllApps, Application, AllAppsDelta),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRegistry()
			c := New(rwConfig(newClock()), r.load)
			for _, k := range keys {
				mustGet(t, c, k)
			}
			r.bump()
			c.Invalidate(tt.app, tt.vip, tt.svip)
			for _, k := range keys {
				v := mustGet(t, c, k)
				fresh := bytes.Equal(v.Plain, r.payload(k, 1))
				if fresh != tt.wantInvalidated[k] {
					t.Errorf("%v: reloaded = %v, want %v", k, fresh, tt.wantInvalidated[k])
				}
			}
		})
	}
}

func TestExpiryAfterAutoExpiration(t *testing.T) {
	clk := newClock()
	r := newRegistry()
	cfg := rwConfig(clk)
	cfg.AutoExpiration = 180 * time.Second
	c := New(cfg, r.load)
	k := Key{Entity: Application, Name: AllApps, JSON: true}
	mustGet(t, c, k)
	r.bump()
	clk.Advance(179 * time.Second)
	wantPayload(t, mustGet(t, c, k), r.payload(k, 0))
	clk.Advance(time.Second)
	wantPayload(t, mustGet(t, c, k), r.payload(k, 1))
	if n := r.loadsOf(k); n != 2 {
		t.Fatalf("loads = %d, want 2", n)
	}
}

func TestUseReadOnlyFalseIsAlwaysFresh(t *testing.T) {
	r := newRegistry()
	c := New(rwConfig(newClock()), r.load)
	k := Key{Entity: Application, Name: AllAppsDelta, JSON: true}
	for i := range 5 {
		wantPayload(t, mustGet(t, c, k), r.payload(k, i))
		r.bump()
		c.Invalidate("APP", "", "")
	}
	if s := c.Stats(); s.ReadOnlyKeys != 0 || s.ReadOnlyHits != 0 {
		t.Fatalf("readOnly tier used: %+v", s)
	}
}

func TestReadOnlyTierServesUntilRefreshed(t *testing.T) {
	clk := newClock()
	r := newRegistry()
	cfg := DefaultConfig()
	cfg.Now = clk.Now
	c := New(cfg, r.load)
	k := Key{Entity: Application, Name: AllApps, JSON: true}
	mustGet(t, c, k)
	r.bump()
	c.Invalidate("APP", "", "")
	// Without Run nothing rebuilds: readers keep the readOnly copy.
	wantPayload(t, mustGet(t, c, k), r.payload(k, 0))
	if s := c.Stats(); s.DirtyKeys != 1 { // only the JSON full ALL_APPS key is in the readOnly tier
		t.Fatalf("DirtyKeys = %d, want 1", s.DirtyKeys)
	}
	if n := c.rebuildDirty(true); n != 1 {
		t.Fatalf("rebuildDirty = %d, want 1", n)
	}
	wantPayload(t, mustGet(t, c, k), r.payload(k, 1))
}

// A load that started before an invalidation of its key must not be stored after it.
func TestStaleLoadIsNotStored(t *testing.T) {
	for _, useRO := range []bool{false, true} {
		t.Run(fmt.Sprintf("UseReadOnly=%v", useRO), func(t *testing.T) {
			r := newRegistry()
			cfg := rwConfig(newClock())
			cfg.UseReadOnly = useRO
			c := New(cfg, r.load)
			k := Key{Entity: Application, Name: AllApps, JSON: true}
			release := make(chan struct{})
			r.blockFor[k] = release
			r.started = make(chan Key, 1)

			got := make(chan *Value)
			go func() {
				v, _ := c.Get(k)
				got <- v
			}()
			<-r.started // the load has read version 0
			r.mu.Lock()
			r.started = nil
			delete(r.blockFor, k)
			r.mu.Unlock()
			r.bump()
			c.Invalidate("APP", "", "") // must not wait for the blocked load
			close(release)
			wantPayload(t, <-got, r.payload(k, 0)) // the caller gets what it loaded

			wantPayload(t, mustGet(t, c, k), r.payload(k, 1))
			if n := r.loadsOf(k); n != 2 {
				t.Fatalf("loads = %d, want 2", n)
			}
			if s := c.Stats(); s.StaleLoads != 1 {
				t.Fatalf("StaleLoads = %d, want 1", s.StaleLoads)
			}
		})
	}
}

func TestConcurrentMissesLoadOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRegistry()
		c := New(DefaultConfig(), r.load)
		k := Key{Entity: Application, Name: AllApps, JSON: true}
		release := make(chan struct{})
		r.blockFor[k] = release
		const n = 16
		var wg sync.WaitGroup
		vals := make([]*Value, n)
		for i := range n {
			wg.Go(func() { vals[i], _ = c.Get(k) })
		}
		synctest.Wait() // every Get is blocked: one in the loader, the rest on its result
		if s := c.Stats(); s.Misses != 1 || s.SharedLoads != n-1 {
			t.Fatalf("Misses = %d, SharedLoads = %d, want 1 and %d", s.Misses, s.SharedLoads, n-1)
		}
		close(release)
		wg.Wait()
		for i, v := range vals {
			if v != vals[0] {
				t.Fatalf("Get %d returned a different value", i)
			}
		}
		if got := r.loadsOf(k); got != 1 {
			t.Fatalf("loads = %d, want 1", got)
		}
	})
}

func TestConcurrentGetsAndInvalidates(t *testing.T) {
	r := newRegistry()
	c := New(DefaultConfig(), r.load)
	keys := append(allVariants(Application, AllApps), allVariants(Application, "ORDERS")...)
	keys = append(keys, allVariants(VIP, "v")...)
	ctx := t.Context()
	done := make(chan struct{})
	go func() { _ = c.Run(ctx); close(done) }()
	t.Cleanup(func() { <-done }) // t.Context is cancelled before cleanups run
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 500 {
				k := keys[(g+i)%len(keys)]
				v, err := c.Get(k)
				if err != nil || v == nil || v.NotFound {
					t.Errorf("Get(%v) = %v, %v", k, v, err)
					return
				}
			}
		})
	}
	for range 2 {
		wg.Go(func() {
			for range 200 {
				r.bump()
				c.Invalidate("orders", "v", "")
			}
		})
	}
	wg.Wait()
	s := c.Stats()
	if s.Invalidations != 400 || s.Hits+s.SharedLoads+s.Misses < 4000 {
		t.Fatalf("stats = %+v", s)
	}
}

func TestReadOnlyHitDoesNotAllocate(t *testing.T) {
	c := New(DefaultConfig(), newRegistry().load)
	k := Key{Entity: Application, Name: AllApps, JSON: true}
	mustGet(t, c, k)
	if n := testing.AllocsPerRun(100, func() { _, _ = c.Get(k) }); n != 0 {
		t.Fatalf("readOnly hit allocates %v times", n)
	}
}

func TestStats(t *testing.T) {
	clk := newClock()
	r := newRegistry()
	cfg := DefaultConfig()
	cfg.Now = clk.Now
	c := New(cfg, r.load)
	a := Key{Entity: Application, Name: AllApps, JSON: true}
	d := Key{Entity: Application, Name: AllAppsDelta, JSON: true}
	mustGet(t, c, a) // miss
	clk.Advance(10 * time.Second)
	mustGet(t, c, d) // miss
	mustGet(t, c, a) // readOnly hit
	mustGet(t, c, a) // readOnly hit
	clk.Advance(5 * time.Second)
	c.Invalidate("X", "", "")
	got := c.Stats()
	want := Stats{
		Hits: 2, ReadOnlyHits: 2, Misses: 2, Invalidations: 1,
		ReadOnlyKeys: 2, ReadWriteKeys: 0, DirtyKeys: 2,
		RefreshGap: DefaultMinRefreshGap, OldestPayload: 15 * time.Second,
	}
	if got != want {
		t.Fatalf("Stats() =\n %+v, want\n %+v", got, want)
	}
	c.rebuildDirty(true)
	got = c.Stats()
	if got.Rebuilds != 1 || got.RebuiltKeys != 2 || got.OldestPayload != 0 || got.DirtyKeys != 0 || got.Misses != 4 {
		t.Fatalf("after rebuild: %+v", got)
	}
}

func TestKeyString(t *testing.T) {
	seen := map[string]Key{}
	for _, e := range []Entity{Application, VIP, SVIP} {
		for _, name := range []string{"", "A", "AB", ":A"} {
			for _, k := range allVariants(e, name) {
				s := k.String()
				if prev, dup := seen[s]; dup {
					t.Fatalf("%v and %v share %q", prev, k, s)
				}
				seen[s] = k
			}
		}
	}
	if Entity(9).String() != "Entity(9)" || SVIP.String() != "SVIP" {
		t.Fatal("Entity.String")
	}
}

func TestManyReadOnlyKeys(t *testing.T) {
	r := newRegistry()
	c := New(DefaultConfig(), r.load)
	const n = 2000
	for i := range n {
		mustGet(t, c, Key{Entity: VIP, Name: fmt.Sprintf("vip-%d", i)})
	}
	if got := c.Stats().ReadOnlyKeys; got != n {
		t.Fatalf("ReadOnlyKeys = %d, want %d", got, n)
	}
	for i := range n {
		k := Key{Entity: VIP, Name: fmt.Sprintf("vip-%d", i)}
		wantPayload(t, mustGet(t, c, k), r.payload(k, 0))
	}
	if s := c.Stats(); s.ReadOnlyHits != n || s.Misses != n {
		t.Fatalf("stats = %+v", s)
	}
}

func TestLoaderPanicBecomesError(t *testing.T) {
	calls := 0
	c := New(DefaultConfig(), func(Key) ([]byte, bool, error) {
		calls++
		if calls == 1 {
			panic("encoder bug")
		}
		return []byte("ok"), true, nil
	})
	k := Key{Entity: Application, Name: AllApps}
	if _, err := c.Get(k); err == nil || !strings.Contains(err.Error(), "encoder bug") {
		t.Fatalf("err = %v, want the panic as an error", err)
	}
	// The key is not stuck in flight.
	if v := mustGet(t, c, k); string(v.Plain) != "ok" {
		t.Fatalf("payload = %q", v.Plain)
	}
}

func TestLargePayloadKeptGzippedOnly(t *testing.T) {
	big := bytes.Repeat([]byte(`{"instance":"x"},`), MaxPlainKept/8)
	small := []byte(`{"applications":{}}`)
	for _, tc := range []struct {
		name      string
		payload   []byte
		wantPlain bool
	}{{"small", small, true}, {"large", big, false}} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := buildValue(tc.payload, true, gzipLevel, time.Unix(0, 0))
			if err != nil {
				t.Fatal(err)
			}
			if (v.Plain != nil) != tc.wantPlain || v.PlainLen != len(tc.payload) {
				t.Fatalf("Plain kept = %v, PlainLen = %d", v.Plain != nil, v.PlainLen)
			}
			var out bytes.Buffer
			if err := v.WritePlain(&out); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(out.Bytes(), tc.payload) || v.ETag != etagOf(tc.payload) {
				t.Fatal("WritePlain or ETag does not match the payload")
			}
		})
	}
}

// TestStoredKeysAreForgottenWhenExpired: Invalidate deletes only the keys
// recorded as stored; reads of names that come and go (a scanner asking for
// random apps or VIPs) must not grow that record for good (found in review).
func TestStoredKeysAreForgottenWhenExpired(t *testing.T) {
	clk := newClock()
	r := newRegistry()
	cfg := rwConfig(clk)
	cfg.AutoExpiration = 180 * time.Second
	c := New(cfg, r.load)
	for i := range 100 {
		mustGet(t, c, Key{Entity: VIP, Name: fmt.Sprintf("vip-%d", i), JSON: true})
	}
	keep := Key{Entity: Application, Name: AllApps, JSON: true}
	clk.Advance(100 * time.Second)
	mustGet(t, c, Key{Entity: Application, Name: AllApps, JSON: true})
	c.deleteExpired()
	if n := len(c.stored); n != 101 {
		t.Fatalf("stored keys before expiry = %d, want 101", n)
	}
	clk.Advance(81 * time.Second)
	c.deleteExpired()
	if _, ok := c.stored[keep]; len(c.stored) != 1 || !ok {
		t.Fatalf("stored keys after the VIPs expired = %d (ALL_APPS kept: %v), want only ALL_APPS", len(c.stored), ok)
	}
	// What is still stored is still invalidated.
	r.bump()
	c.Invalidate("", "", "")
	wantPayload(t, mustGet(t, c, keep), r.payload(keep, 1))
}

// A pass publishes what it built before it builds the full registry
// documents: a delta (or an application) invalidated with the full
// registry reaches its readers while the full document is still being
// built, instead of waiting for it (a relay's whole union, a 1M refresh:
// seconds). The full document follows when its build ends.
func TestPassPublishesTheDeltaBeforeTheFullRegistry(t *testing.T) {
	clk := newClock()
	r := newRegistry()
	cfg := DefaultConfig()
	cfg.Now = clk.Now
	c := New(cfg, r.load)
	full := Key{Entity: Application, Name: AllApps, JSON: true}
	delta := Key{Entity: Application, Name: AllAppsDelta, JSON: true}
	app := Key{Entity: Application, Name: "APP", JSON: true}
	for _, k := range []Key{full, delta, app} {
		mustGet(t, c, k)
	}
	for range 20 { // map order: the full key must wait whichever comes first
		release := make(chan struct{})
		r.mu.Lock()
		r.blockFor[full] = release
		r.mu.Unlock()
		r.bump()
		c.Invalidate("APP", "", "")
		r.mu.Lock()
		version := r.version
		r.mu.Unlock()
		done := make(chan int)
		go func() { done <- c.rebuildDirty(true) }()
		for _, k := range []Key{delta, app} {
			deadline := time.Now().Add(time.Minute)
			for !bytes.Equal(mustGet(t, c, k).Plain, r.payload(k, version)) {
				if time.Now().After(deadline) {
					t.Fatalf("%s not published while the full registry was being built", k.Name)
				}
				runtime.Gosched()
			}
		}
		wantPayload(t, mustGet(t, c, full), r.payload(full, version-1))
		close(release)
		<-done
		wantPayload(t, mustGet(t, c, full), r.payload(full, version))
	}
}
