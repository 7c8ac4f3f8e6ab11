package document

import (
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/goreka/goreka/cache"
	"github.com/goreka/goreka/compat"
	"github.com/goreka/goreka/region"
)

// BenchmarkRebuildWithRegion is BenchmarkRebuildAfterOneChange's plain GET
// /eureka/apps with a remote region as large as the local registry merged in
// (transparent fallback), its applications all remote-only: "local" has no
// region (the baseline), "fallback" is goreka's loader (local chunks plus the
// kept remote segment: a local change re-encodes no remote application),
// "whole" encodes the merged document whole, as a server without the
// remote segment would.
func BenchmarkRebuildWithRegion(b *testing.B) {
	const n = 10000
	remoteReg := springRegistry(b, n)
	doc := compat.AppendApplications(nil, compat.JSON, false, remoteReg.Applications())
	// Rename the remote applications so that none is local.
	doc = []byte(strings.ReplaceAll(string(doc), "BENCH-SERVICE-", "WEST-SERVICE-"))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(doc) }))
	b.Cleanup(srv.Close)
	rm, err := region.New(region.Config{Name: "west", URL: srv.URL + "/eureka/"})
	if err != nil {
		b.Fatal(err)
	}
	if err := rm.FetchOnce(b.Context()); err != nil {
		b.Fatal(err)
	}
	rg := Regions{Set: region.NewSet([]*region.Remote{rm}, nil)}
	for _, mode := range []string{"local", "fallback", "whole"} {
		b.Run(fmt.Sprintf("%dk+%dk/%s", n/1000, n/1000, mode), func(b *testing.B) {
			reg := springRegistry(b, n)
			cfg := Config{Registry: reg}
			if mode == "fallback" {
				cfg.Regions = rg
			}
			loader := New(cfg).Load
			k := cache.Key{Entity: cache.Application, Name: cache.AllApps, JSON: true}
			build := func() int {
				if mode == "whole" {
					cw := &countWriter{}
					zw, _ := gzip.NewWriterLevel(cw, 2)
					if err := compat.WriteApplications(zw, compat.JSON, false, rg.Set.Full(reg.Applications(), rg.Set.Names())); err != nil {
						b.Fatal(err)
					}
					zw.Close()
					return cw.n
				}
				v, err := cache.BuildValue(func(w io.Writer) (bool, error) { return loader(k, w) }, time.Now, cache.DefaultAutoExpiration)
				if err != nil {
					b.Fatal(err)
				}
				return v.GzipLen()
			}
			benchRebuildAfterEachChange(b, reg, n, build)
		})
	}
}
