package server

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/goreka/goreka/cache"
	"github.com/goreka/goreka/compat"
	"github.com/goreka/goreka/document"
	"github.com/goreka/goreka/registry"
	"github.com/goreka/goreka/registry/clocktest"
)

// TestStockFidelity runs the stock scenario against goreka and compares every
// answer with the one captured from the stock Java server
// (testdata/stock/<target>/), after stockNormalize and canonicalOrder on
// both sides.
func TestStockFidelity(t *testing.T) {
	for _, tg := range stockTargets {
		if tg.held {
			continue // TestStockHeldLease
		}
		t.Run(tg.dir, func(t *testing.T) {
			f := newStockFixture(t, tg.codecs)
			if tg.regions {
				f = newStockRegionFixture(t, tg.codecs, stockRemote(t).URL+"/eureka/")
			}
			used := make([]bool, len(tg.deliberate))
			ran, total := 0, len(stockFetches(stockEmptyReads))+len(stockFetches(stockReads))
			if tg.regions {
				total += len(stockFetches(stockRegionReads))
			}
			defer func() {
				for i, u := range used {
					// Only a full run can tell that an entry is stale.
					if !u && ran == total && !t.Failed() {
						t.Errorf("deliberate difference %q (%s) matches no capture: delete it", tg.deliberate[i].old, tg.deliberate[i].why)
					}
				}
			}()
			dir := filepath.Join("..", "testdata", "stock", tg.dir)
			compare := func(reads []stockRead) {
				for _, fe := range stockFetches(reads) {
					t.Run(fe.file, func(t *testing.T) {
						ran++
						want, err := os.ReadFile(filepath.Join(dir, fe.file))
						if err != nil {
							t.Fatalf("%v (capture with: go test -tags capture -run TestCaptureStock ./server/)", err)
						}
						w := f.do(t, "GET", fe.path, "", fe.hdr)
						got := stockAnswer(w.Code, w.Header().Get("Content-Type"), w.Body.Bytes())
						for i, d := range tg.deliberate {
							if strings.HasSuffix(fe.file, d.suffix) && bytes.Contains(want, []byte(d.old)) {
								want = bytes.ReplaceAll(want, []byte(d.old), []byte(d.new))
								used[i] = true
							}
						}
						g, w2 := stockComparable(t, fe.file, got), stockComparable(t, fe.file, want)
						if !bytes.Equal(g, w2) {
							t.Errorf("goreka differs from the stock server\n got: %s\nwant: %s", g, w2)
						}
					})
				}
			}
			compare(stockEmptyReads)
			for _, st := range stockSteps {
				w := f.do(t, st.method, st.path, st.body, map[string]string{"Content-Type": "application/json"})
				if w.Code != st.want {
					t.Fatalf("%s %s = %d (%s), want %d", st.method, st.path, w.Code, w.Body.String(), st.want)
				}
				f.clock.Advance(time.Second)
			}
			compare(stockReads)
			if tg.regions {
				compare(stockRegionReads)
			}
		})
	}
}

// stockComparable applies what the comparison ignores besides the
// timestamps stockNormalize already replaced: the order of hash-map entries
// (canonicalOrder) and, in deltas, versions__delta, which Java bumps at
// every delta cache load (a count of this server's reads, not of changes).
func stockComparable(t *testing.T, file string, answer []byte) []byte {
	t.Helper()
	head, body, _ := bytes.Cut(answer, []byte{'\n'})
	if strings.HasPrefix(file, "delta") {
		body = stockDeltaVersion.ReplaceAll(body, []byte("${1}VERSION"))
	}
	if len(bytes.TrimSpace(body)) > 0 {
		var err error
		if body, err = canonicalOrder(body); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
	}
	return append(append(head, '\n'), body...)
}

// newStockFixture is newFixture with the cache invalidated on every change,
// as cmd/goreka wires it, since the scenario reads before it writes.
func newStockFixture(t *testing.T, codecs compat.Codecs) *fixture {
	t.Helper()
	clk := clocktest.New(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	var c *cache.Cache
	reg := registry.New(registry.Options{Now: clk.Now, ExpectedClients: 1, SelfID: "eureka-1", OnEvent: func(e registry.Event) {
		if in := e.Instance(); e.Changed {
			c.Invalidate(e.App, in.VIPAddress, in.SecureVIPAddress)
		}
	}})
	cfg := cache.DefaultConfig()
	cfg.UseReadOnly = false
	cfg.Now = clk.Now
	docs := document.New(document.Config{Registry: reg, Codecs: codecs})
	srv := New(Config{}, Deps{Registry: reg, Docs: docs, Cache: &cfg, Now: clk.Now})
	c = srv.Cache()
	return &fixture{srv: srv, reg: reg, clock: clk}
}
