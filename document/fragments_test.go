package document

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/goreka/goreka/cache"
	"github.com/goreka/goreka/compat"
	"github.com/goreka/goreka/registry"
	"github.com/goreka/goreka/registry/clocktest"
)

func fragInstance(app string, i int) *registry.Instance {
	host := fmt.Sprintf("host-%05d", i)
	return &registry.Instance{
		InstanceID: host + ":" + app, HostName: host, App: app, IPAddr: "10.0.0.1",
		Status: registry.StatusUp, Port: registry.Port{Number: 8080, Enabled: true},
		DataCenterInfo: registry.DataCenterInfo{Name: registry.DataCenterMyOwn},
		Metadata:       map[string]string{"zone": "z" + fmt.Sprint(i%3)}, VIPAddress: app,
		LastDirtyTimestamp: time.UnixMilli(1700000000000),
	}
}

// served is what the cache answers for k, inflated.
func served(t *testing.T, c *cache.Cache, k cache.Key) []byte {
	t.Helper()
	v, err := c.Get(k)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(v.Gzip()))
	if err != nil {
		t.Fatal(err)
	}
	zr.Multistream(false)
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("%v: %v", k, err)
	}
	if v.PlainLen != len(b) {
		t.Fatalf("%v: PlainLen %d, inflated %d", k, v.PlainLen, len(b))
	}
	return b
}

// TestFragmentsServeTheWholeDocument runs random registrations, cancels and
// status changes over many applications and checks after each batch that
// every variant of the full registry and the delta, built from kept chunks,
// is byte for byte the document encoded whole from the registry.
func TestFragmentsServeTheWholeDocument(t *testing.T) {
	for _, codecs := range []compat.Codecs{{}, {JSON: compat.Jackson, XML: compat.Jackson}} {
		t.Run(fmt.Sprint(codecs), func(t *testing.T) {
			clk := clocktest.New(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
			var c *cache.Cache
			reg := registry.New(registry.Options{Now: clk.Now, OnEvent: func(e registry.Event) {
				c.Invalidate(e.App, "", "")
			}})
			cfg := cache.DefaultConfig()
			cfg.UseReadOnly = false // every Get reads the readWrite tier, fresh after Invalidate
			cfg.Now = clk.Now
			c = cache.NewStreaming(cfg, New(Config{Registry: reg, Codecs: codecs}).Load)
			rng := rand.New(rand.NewPCG(7, 8))
			var live []registry.InstanceKey
			for batch := range 12 {
				for range 1 + rng.IntN(400) {
					switch op := rng.IntN(10); {
					case op < 7 || len(live) == 0:
						app := fmt.Sprintf("APP-%03d", rng.IntN(60))
						in := fragInstance(app, rng.IntN(5000))
						if _, err := reg.Register(in, false); err != nil {
							t.Fatal(err)
						}
						live = append(live, registry.InstanceKey{App: app, ID: in.ID()})
					case op < 9:
						j := rng.IntN(len(live))
						reg.Cancel(live[j].App, live[j].ID, false)
						live = append(live[:j], live[j+1:]...)
					default:
						k := live[rng.IntN(len(live))]
						reg.StatusUpdate(k.App, k.ID, registry.StatusOutOfService, clk.Now(), false)
					}
				}
				clk.Advance(time.Duration(rng.IntN(40)) * time.Second)
				reg.PruneRecentlyChanged(3 * time.Minute)
				for _, f := range []compat.Format{compat.JSON, compat.XML} {
					for _, compact := range []bool{false, true} {
						full := served(t, c, cache.Key{Entity: cache.Application, Name: cache.AllApps, JSON: f == compat.JSON, Compact: compact})
						if want := codecs.AppendApplications(nil, f, compact, reg.Applications()); !bytes.Equal(full, want) {
							t.Fatalf("batch %d %v compact=%v: full document differs\ngot  %.200q\nwant %.200q", batch, f, compact, full, want)
						}
						got := served(t, c, cache.Key{Entity: cache.Application, Name: cache.AllAppsDelta, JSON: f == compat.JSON, Compact: compact})
						d := reg.Delta()
						d.VersionDelta-- // Delta takes the next number
						if want := codecs.AppendApplications(nil, f, compact, d); !bytes.Equal(got, want) {
							t.Fatalf("batch %d %v compact=%v: delta differs\ngot  %.200q\nwant %.200q", batch, f, compact, got, want)
						}
					}
				}
				// Prune without a change: the delta must shrink at its next build.
				clk.Advance(20 * time.Second)
				reg.PruneRecentlyChanged(time.Duration(rng.IntN(60)) * time.Second)
				c.Invalidate("", "", "")
			}
		})
	}
}

// TestFragmentsReencodeOnlyWhatChanged pins the point of the chunks: after
// one registration in a registry of 10k instances, a rebuild encodes one
// chunk, a small share of the registry; once the chunks are older than the
// cache's reuse age, everything is encoded again (fresh renewal timestamps).
func TestFragmentsReencodeOnlyWhatChanged(t *testing.T) {
	clk := clocktest.New(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	reg := registry.New(registry.Options{Now: clk.Now})
	for i := range 10000 {
		if _, err := reg.Register(fragInstance(fmt.Sprintf("APP-%03d", i%200), i), false); err != nil {
			t.Fatal(err)
		}
	}
	fr := newFragments(reg, compat.Codecs{})
	build := func() (*cache.Value, int) {
		before := fr.encoded.Load()
		v, err := cache.BuildValue(func(w io.Writer) (bool, error) {
			return true, fr.writeDocument(w, false, compat.JSON, false)
		}, clk.Now, cache.DefaultAutoExpiration)
		if err != nil {
			t.Fatal(err)
		}
		return v, int(fr.encoded.Load() - before)
	}
	if _, n := build(); n != 10000 {
		t.Fatalf("first build encoded %d instances, want all 10000", n)
	}
	if _, n := build(); n != 0 {
		t.Fatalf("a build without change encoded %d instances", n)
	}
	clk.Advance(time.Second)
	if _, err := reg.Register(fragInstance("APP-123", 99999), false); err != nil {
		t.Fatal(err)
	}
	v, n := build()
	if n == 0 || n > chunkMax {
		t.Fatalf("after one registration a build encoded %d instances, want one chunk (<= %d)", n, chunkMax)
	}
	if !bytes.Contains(inflate(t, v.Gzip()), []byte(`"host-99999:APP-123"`)) {
		t.Fatal("the new instance is not in the document")
	}
	clk.Advance(cache.DefaultAutoExpiration * 3 / 4)
	if _, n := build(); n != 10001 {
		t.Fatalf("after the reuse age a build encoded %d instances, want all 10001", n)
	}
}

// TestFragmentsChangeKeepsAgedChunks: a rebuild after a change
// (cache.ChangeWriter) re-encodes what changed even when every other chunk
// is due for fresh renewal timestamps (right after a loading, they all come
// due together); the next refresh build (the housekeeping's) re-encodes them,
// and a change re-encodes a chunk that reached AutoExpiration.
func TestFragmentsChangeKeepsAgedChunks(t *testing.T) {
	clk := clocktest.New(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	reg := registry.New(registry.Options{Now: clk.Now})
	for i := range 10000 {
		if _, err := reg.Register(fragInstance(fmt.Sprintf("APP-%03d", i%200), i), false); err != nil {
			t.Fatal(err)
		}
	}
	fr := newFragments(reg, compat.Codecs{})
	build := func(buildValue func(func(io.Writer) (bool, error), func() time.Time, time.Duration) (*cache.Value, error)) (*cache.Value, int) {
		before := fr.encoded.Load()
		v, err := buildValue(func(w io.Writer) (bool, error) {
			return true, fr.writeDocument(w, false, compat.JSON, false)
		}, clk.Now, cache.DefaultAutoExpiration)
		if err != nil {
			t.Fatal(err)
		}
		return v, int(fr.encoded.Load() - before)
	}
	if _, n := build(cache.BuildValue); n != 10000 {
		t.Fatalf("first build encoded %d instances, want all 10000", n)
	}
	clk.Advance(cache.DefaultAutoExpiration * 3 / 4)
	if _, err := reg.Register(fragInstance("APP-123", 99999), false); err != nil {
		t.Fatal(err)
	}
	v, n := build(cache.BuildValueForChange)
	if n == 0 || n > chunkMax {
		t.Fatalf("a change with every chunk due encoded %d instances, want its chunk (<= %d)", n, chunkMax)
	}
	if !bytes.Contains(inflate(t, v.Gzip()), []byte(`"host-99999:APP-123"`)) {
		t.Fatal("the new instance is not in the document")
	}
	if _, m := build(cache.BuildValue); m != 10001-n {
		t.Fatalf("the refresh after it encoded %d instances, want the %d the change kept", m, 10001-n)
	}
	clk.Advance(cache.DefaultAutoExpiration)
	if _, n := build(cache.BuildValueForChange); n != 10001 {
		t.Fatalf("a change at AutoExpiration encoded %d instances, want all 10001", n)
	}
}

// TestFragmentsRefreshIsBudgeted: a refresh (the housekeeping's build)
// re-encodes at most refreshBudget instances of aged chunks, a chunk at a
// time, and the rest in the next ones; a chunk past AutoExpiration is
// re-encoded whatever the budget.
func TestFragmentsRefreshIsBudgeted(t *testing.T) {
	clk := clocktest.New(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	reg := registry.New(registry.Options{Now: clk.Now})
	for i := range 10000 {
		if _, err := reg.Register(fragInstance(fmt.Sprintf("APP-%03d", i%200), i), false); err != nil {
			t.Fatal(err)
		}
	}
	fr := newFragments(reg, compat.Codecs{})
	fr.refreshBudget = 3000
	refresh := func() int {
		before := fr.encoded.Load()
		if _, err := cache.BuildValue(func(w io.Writer) (bool, error) {
			return true, fr.writeDocument(w, false, compat.JSON, false)
		}, clk.Now, cache.DefaultAutoExpiration); err != nil {
			t.Fatal(err)
		}
		return int(fr.encoded.Load() - before)
	}
	if n := refresh(); n != 10000 {
		t.Fatalf("first build encoded %d instances, want all 10000", n)
	}
	clk.Advance(cache.DefaultAutoExpiration * 3 / 4) // every chunk due
	total := 0
	for k := range 4 {
		n := refresh()
		if k < 3 && (n < 3000 || n >= 3000+chunkMax) {
			t.Fatalf("refresh %d encoded %d instances, want the budget of 3000 (one chunk over at most)", k, n)
		}
		total += n
	}
	if total != 10000 {
		t.Fatalf("four refreshes encoded %d instances, want each once (10000)", total)
	}
	if n := refresh(); n != 0 {
		t.Fatalf("a refresh with nothing due encoded %d", n)
	}
	clk.Advance(cache.DefaultAutoExpiration)
	if n := refresh(); n != 10000 {
		t.Fatalf("a refresh at AutoExpiration encoded %d instances, want all 10000", n)
	}
}

func inflate(t *testing.T, gz []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestFragmentsRefreshOldestFirst: when the budget leaves due chunks for
// later refreshes, each refresh takes the oldest first (ties in document
// order), whatever their place in the document: here the document's first
// chunk is the youngest and its second the next youngest, so they go last.
func TestFragmentsRefreshOldestFirst(t *testing.T) {
	clk := clocktest.New(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	reg := registry.New(registry.Options{Now: clk.Now})
	for i := range 10000 {
		if _, err := reg.Register(fragInstance(fmt.Sprintf("APP-%03d", i%200), i), false); err != nil {
			t.Fatal(err)
		}
	}
	fr := newFragments(reg, compat.Codecs{})
	fr.refreshBudget = 1 // one chunk per refresh
	d := &fr.docs[0][1][0]
	build := func(buildValue func(func(io.Writer) (bool, error), func() time.Time, time.Duration) (*cache.Value, error)) {
		t.Helper()
		if _, err := buildValue(func(w io.Writer) (bool, error) {
			return true, fr.writeDocument(w, false, compat.JSON, false)
		}, clk.Now, cache.DefaultAutoExpiration); err != nil {
			t.Fatal(err)
		}
	}
	// segs returns the chunks' segments in document order.
	segs := func() []*cache.Segment {
		names := make([]string, 0, len(d.chunks))
		for n := range d.chunks {
			names = append(names, n)
		}
		slices.Sort(names)
		out := make([]*cache.Segment, len(names))
		for i, n := range names {
			out[i] = d.chunks[n].seg
		}
		return out
	}
	change := func(chunk int) {
		t.Helper()
		app := segsApps(d, chunk)
		in := fragInstance(app, 0)
		in.Metadata = map[string]string{"zone": "changed-" + clk.Now().String()}
		if _, err := reg.Register(in, false); err != nil {
			t.Fatal(err)
		}
		build(cache.BuildValueForChange)
	}
	build(cache.BuildValue)
	n := len(d.chunks)
	if n < 4 {
		t.Fatalf("%d chunks, want several", n)
	}
	clk.Advance(10 * time.Second)
	change(1) // the second chunk, 10 s younger than the rest
	clk.Advance(10 * time.Second)
	change(0) // the first, 20 s younger
	// Every chunk past its refresh age (at most Reuse, 135 s), none at AutoExpiration.
	clk.Advance(cache.DefaultAutoExpiration*3/4 + 10*time.Second)
	var order []int
	for range n {
		before := segs()
		build(cache.BuildValue)
		after := segs()
		if len(after) != n {
			t.Fatalf("the chunks changed: %d, want %d", len(after), n)
		}
		var redone []int
		for i := range after {
			if after[i] != before[i] {
				redone = append(redone, i)
			}
		}
		if len(redone) != 1 {
			t.Fatalf("a refresh with a budget of one instance re-encoded chunks %v, want one", redone)
		}
		order = append(order, redone[0])
	}
	want := make([]int, 0, n)
	for i := 2; i < n; i++ {
		want = append(want, i)
	}
	want = append(want, 1, 0)
	if !slices.Equal(order, want) {
		t.Fatalf("refreshes re-encoded chunks in the order %v, want oldest first %v", order, want)
	}
}

// segsApps is the name of the first application of the chunk-th chunk in
// document order.
func segsApps(d *docParts, chunk int) string {
	names := make([]string, 0, len(d.chunks))
	for n := range d.chunks {
		names = append(names, n)
	}
	slices.Sort(names)
	return names[chunk]
}
