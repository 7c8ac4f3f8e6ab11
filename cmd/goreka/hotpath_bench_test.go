package main

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/goreka/goreka/cmd/goreka-bench/fleet"
	"github.com/goreka/goreka/cmd/goreka/config"
)

// wiredApp is a standalone goreka as main wires it (every listener of the
// change stream and of heartbeats: cache invalidation, replication, the
// read API's index, metrics, the change log), its loops not running: the
// benchmarks below drive its HTTP handler directly, without a socket, so
// they measure what the server adds to the gin floor's request handling.
func wiredApp(b testing.TB) *app {
	b.Helper()
	cfg, err := config.Load(standaloneArgs("127.0.0.1", 8761), nil, b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	a, err := newApp(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), time.Now)
	if err != nil {
		b.Fatal(err)
	}
	return a
}

// nopWriter is a ResponseWriter that keeps nothing.
type nopWriter struct{ h http.Header }

func (w *nopWriter) Header() http.Header         { return w.h }
func (w *nopWriter) Write(p []byte) (int, error) { return len(p), nil }
func (w *nopWriter) WriteHeader(int)             {}

// BenchmarkWiredRegister is the ladder's burst: a registration of a new
// instance of the bench fleet (goreka-bench's body) through the wired
// handler into a registry of 10,000.
func BenchmarkWiredRegister(b *testing.B) {
	a := wiredApp(b)
	f := fleet.Fleet{Prefix: "bench", N: 10_000, Apps: 200}
	for i := range f.N {
		if _, err := a.stack.reg.Register(f.Instance(i), false); err != nil {
			b.Fatal(err)
		}
	}
	benchRegister(b, a.http.Handler)
}

// BenchmarkFloorRegister is the gin floor (cmd/goreka-baseline's register
// route: 204, the body unread) with the same requests.
func BenchmarkFloorRegister(b *testing.B) { benchRegister(b, floorRouter()) }

// benchRegister sends registrations of new instances to h; the requests
// are built before the clock starts.
func benchRegister(b *testing.B, h http.Handler) {
	burst := fleet.Fleet{Prefix: "burst", N: 1 << 30, Apps: 200}
	reqs := make([]*http.Request, b.N+1)
	for i := range reqs {
		r := httptest.NewRequest("POST", "/eureka/apps/"+burst.App(i), bytes.NewReader(burst.RegisterBody(i)))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept-Encoding", "gzip")
		reqs[i] = r
	}
	var n atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		w := &nopWriter{h: http.Header{}}
		for pb.Next() {
			clear(w.h)
			h.ServeHTTP(w, reqs[n.Add(1)])
		}
	})
}

func floorRouter() http.Handler {
	gin.SetMode(gin.ReleaseMode)
	e := gin.New()
	g := e.Group("/eureka")
	g.POST("/apps/:app", func(c *gin.Context) { c.Status(http.StatusNoContent) })
	g.PUT("/apps/:app/:id", func(c *gin.Context) { c.Status(http.StatusOK) })
	return e
}

// BenchmarkWiredRenew is the ladder's renew phase (goreka-bench's heartbeats
// over the whole fleet, in its order) through the wired handler at three
// registry sizes: the cost of a heartbeat must not grow with the registry.
func BenchmarkWiredRenew(b *testing.B) {
	for _, size := range []int{10_000, 100_000, 1_000_000} {
		b.Run(fmt.Sprintf("size=%dk", size/1000), func(b *testing.B) {
			a := wiredApp(b)
			f := fleet.Fleet{Prefix: "bench", N: size, Apps: size / 50}
			reqs := make([]*http.Request, size)
			for i := range size {
				if _, err := a.stack.reg.Register(f.Instance(i), false); err != nil {
					b.Fatal(err)
				}
				reqs[i] = httptest.NewRequest("PUT", "/eureka/"+f.RenewPath(i), nil)
			}
			h := a.http.Handler
			var n atomic.Int64
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				w := &nopWriter{h: http.Header{}}
				for pb.Next() {
					h.ServeHTTP(w, reqs[int(n.Add(1))%size])
				}
			})
		})
	}
}
