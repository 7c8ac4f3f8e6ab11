package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/goreka/goreka/cache"
	"github.com/goreka/goreka/cmd/goreka-bench/fleet"
	"github.com/goreka/goreka/cmd/goreka/config"
)

// BenchmarkPropagationAfterLoading is the ladder's "propagation right after
// loading" in process: a goreka as main wires it, its cache refreshing,
// loaded with the bench fleet while its full registry is read (the load
// tool's settle), the delta read once; then 100 s pass on its clock (in the
// ladder, the other servers' loading and warm-up: every chunk built in the
// loading is then due for fresh renewal timestamps) and one registration
// is timed until the delta shows it. The op is that registration.
// GOREKA_PROP_INSTANCES sets the size (default 20,000).
func BenchmarkPropagationAfterLoading(b *testing.B) {
	n := 20_000
	if s := os.Getenv("GOREKA_PROP_INSTANCES"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil {
			b.Fatal(err)
		}
	}
	full := cache.Key{Entity: cache.Application, Name: cache.AllApps, JSON: true}
	delta := cache.Key{Entity: cache.Application, Name: cache.AllAppsDelta, JSON: true}
	fresh := func(c *cache.Cache, k cache.Key, rev int64) {
		for {
			v, err := c.Get(k)
			if err != nil {
				b.Fatal(err)
			}
			if v.Revision >= rev {
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	b.Run(fmt.Sprintf("size=%dk", n/1000), func(b *testing.B) {
		for i := range b.N {
			b.StopTimer()
			var skew atomic.Int64
			now := func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
			cfg, err := config.Load(standaloneArgs("127.0.0.1", 8761), nil, b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			a, err := newApp(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), now)
			if err != nil {
				b.Fatal(err)
			}
			c, reg := a.stack.cache, a.stack.reg
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- c.Run(ctx) }()
			f := fleet.Fleet{Prefix: "bench", N: n, Apps: n / 50}
			for j := range n {
				if _, err := reg.Register(f.Instance(j), false); err != nil {
					b.Fatal(err)
				}
				if j%1000 == 0 {
					c.Get(full)
				}
			}
			fresh(c, full, reg.Revision())
			fresh(c, delta, reg.Revision())
			skew.Add(int64(100 * time.Second))
			p := fleet.Fleet{Prefix: fmt.Sprintf("probe%d", i), N: 1, Apps: 1}
			b.StartTimer()
			if _, err := reg.Register(p.Instance(0), false); err != nil {
				b.Fatal(err)
			}
			fresh(c, delta, reg.Revision())
			b.StopTimer()
			cancel()
			if err := <-done; err != nil {
				b.Fatal(err)
			}
		}
	})
}
