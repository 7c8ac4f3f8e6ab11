// Command goreka-baseline is the ceiling of the machine for a Eureka server's
// work: a bare gin server that answers renew-shaped PUTs with 200, registers
// with 204, cancels with 200, and full and delta fetches with fixed
// pre-gzipped bytes. The bytes are goreka's own gzip JSON for the fleet that
// goreka-bench registers (same instances, same encoder, same size), built
// once at start-up; nothing is stored or looked up per request.
//
//	goreka-baseline --port=8763 --instances=10000 --apps=200
package main

import (
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"

	"github.com/gin-gonic/gin"

	"github.com/goreka/goreka/cache"
	"github.com/goreka/goreka/cmd/goreka-bench/fleet"
	"github.com/goreka/goreka/document"
	"github.com/goreka/goreka/registry"
)

func main() {
	addr := flag.String("addr", "127.0.0.1", "bind address")
	port := flag.Int("port", 8763, "HTTP port")
	n := flag.Int("instances", 10000, "instances in the served registry (as goreka-bench registers them)")
	apps := flag.Int("apps", 200, "applications")
	prefix := flag.String("prefix", "bench", "fleet prefix (goreka-bench --prefix)")
	flag.Parse()

	full, delta, err := payloads(fleet.Fleet{Prefix: *prefix, N: *n, Apps: *apps})
	if err != nil {
		log.Fatalf("goreka-baseline: building payloads: %v", err)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(*addr, strconv.Itoa(*port)))
	if err != nil {
		log.Fatalf("goreka-baseline: %v", err)
	}
	srv := &http.Server{Handler: router(full, delta)}
	go func() {
		ch := make(chan os.Signal, 1)
		signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM)
		<-ch
		srv.Close()
	}()
	fmt.Fprintf(os.Stderr, "goreka-baseline: serving on %s (full %d bytes, delta %d bytes gzip)\n", ln.Addr(), len(full), len(delta))
	if err := srv.Serve(ln); err != nil && err != http.ErrServerClosed {
		log.Fatalf("goreka-baseline: %v", err)
	}
}

// payloads registers the fleet in a goreka registry and returns the gzip
// JSON goreka would serve for GET /apps/ and /apps/delta right after loading.
func payloads(f fleet.Fleet) (full, delta []byte, err error) {
	reg := registry.New(registry.Options{})
	for i := range f.N {
		if _, err := reg.Register(f.Instance(i), false); err != nil {
			return nil, nil, err
		}
	}
	c := cache.NewStreaming(cache.DefaultConfig(), document.New(document.Config{Registry: reg}).Load)
	fv, err := c.Get(cache.Key{Entity: cache.Application, Name: cache.AllApps, JSON: true})
	if err != nil {
		return nil, nil, err
	}
	dv, err := c.Get(cache.Key{Entity: cache.Application, Name: cache.AllAppsDelta, JSON: true})
	if err != nil {
		return nil, nil, err
	}
	return fv.Gzip(), dv.Gzip(), nil
}

func router(full, delta []byte) *gin.Engine {
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	r.RedirectTrailingSlash = false
	serve := func(body []byte) gin.HandlerFunc {
		return func(c *gin.Context) {
			h := c.Writer.Header()
			h["Content-Type"] = []string{"application/json"}
			h["Content-Encoding"] = []string{"gzip"}
			h["Content-Length"] = []string{strconv.Itoa(len(body))}
			c.Writer.WriteHeader(http.StatusOK)
			c.Writer.Write(body)
		}
	}
	for _, base := range []string{"/eureka", "/eureka/v2"} {
		g := r.Group(base)
		g.GET("/apps", serve(full))
		g.GET("/apps/", serve(full))
		g.GET("/apps/delta", serve(delta))
		g.POST("/apps/:app", func(c *gin.Context) { c.Status(http.StatusNoContent) })
		g.PUT("/apps/:app/:id", func(c *gin.Context) { c.Status(http.StatusOK) })
		g.DELETE("/apps/:app/:id", func(c *gin.Context) { c.Status(http.StatusOK) })
	}
	return r
}
