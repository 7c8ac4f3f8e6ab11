package document

import (
	"compress/gzip"
	"fmt"
	"io"
	"strconv"
	"testing"
	"time"

	"github.com/goreka/goreka/cache"
	"github.com/goreka/goreka/compat"
	"github.com/goreka/goreka/registry"
	"github.com/goreka/goreka/registry/clocktest"
)

// springInstance is instance i of a fleet shaped like goreka-bench's (a
// Spring Boot service: ports, actuator URLs, four metadata keys).
func springInstance(i, apps int, dirty time.Time) *registry.Instance {
	app := fmt.Sprintf("BENCH-SERVICE-%03d", i%apps)
	host := fmt.Sprintf("bench-host-%06d.bench.local", i)
	base := "http://" + host + ":8080"
	return &registry.Instance{
		InstanceID: host + ":" + app + ":8080", HostName: host, App: app,
		IPAddr: fmt.Sprintf("10.%d.%d.%d", (i>>16)&255, (i>>8)&255, i&255),
		Status: registry.StatusUp, OverriddenStatus: registry.StatusUnknown,
		Port: registry.Port{Number: 8080, Enabled: true}, SecurePort: registry.Port{Number: 443},
		CountryID: 1, DataCenterInfo: registry.DataCenterInfo{Name: registry.DataCenterMyOwn},
		LeaseInfo: registry.LeaseInfo{RenewalInterval: 30 * time.Second, Duration: 90 * time.Second},
		Metadata: map[string]string{"management.port": "8080", "zone": "zone" + strconv.Itoa(i%3+1),
			"version": "1.4." + strconv.Itoa(i%10), "git.commit": fmt.Sprintf("%07x", i*2654435761%(1<<28))},
		HomePageURL: base + "/", StatusPageURL: base + "/actuator/info", HealthCheckURL: base + "/actuator/health",
		VIPAddress: app, SecureVIPAddress: app, LastDirtyTimestamp: dirty,
	}
}

// springRegistry registers n instances, one every 0.7 ms of a fake clock
// (about the pace of a loading), so that sizes are the same from run to run.
func springRegistry(b *testing.B, n int) *registry.Registry {
	b.Helper()
	clk := clocktest.New(time.UnixMilli(1764500000000))
	reg := registry.New(registry.Options{Now: clk.Now})
	for i := range n {
		clk.Advance(700 * time.Microsecond)
		if _, err := reg.Register(springInstance(i, n/50, time.UnixMilli(1764500000000)), false); err != nil {
			b.Fatal(err)
		}
	}
	return reg
}

// BenchmarkRebuildAfterOneChange is the cost of making one registration
// visible in GET /eureka/apps (gzip JSON): a re-registration, then the
// document's rebuild. "chunks" is goreka's loader (one chunk re-encoded);
// "whole" is the same registry encoded and gzipped whole as before the
// chunks (compress/gzip level 2), for the ratio in one run.
func BenchmarkRebuildAfterOneChange(b *testing.B) {
	for _, n := range []int{10000, 100000} {
		for _, mode := range []string{"chunks", "whole"} {
			b.Run(fmt.Sprintf("%dk/%s", n/1000, mode), func(b *testing.B) {
				reg := springRegistry(b, n)
				fr := newFragments(reg, compat.Codecs{})
				build := func() int {
					if mode == "whole" {
						cw := &countWriter{}
						zw, _ := gzip.NewWriterLevel(cw, 2)
						if err := compat.WriteApplications(zw, compat.JSON, false, reg.Applications()); err != nil {
							b.Fatal(err)
						}
						zw.Close()
						return cw.n
					}
					v, err := cache.BuildValue(func(w io.Writer) (bool, error) {
						return true, fr.writeDocument(w, false, compat.JSON, false)
					}, time.Now, cache.DefaultAutoExpiration)
					if err != nil {
						b.Fatal(err)
					}
					return v.GzipLen()
				}
				benchRebuildAfterEachChange(b, reg, n, build)
			})
		}
	}
}

// BenchmarkBuildAll is a build of every chunk (a registry where everything
// changed: loading, a restart storm): the cost and size of one full pass
// with the cache's compressor against compress/gzip level 2 of the whole.
func BenchmarkBuildAll(b *testing.B) {
	for _, n := range []int{10000, 100000} {
		for _, mode := range []string{"chunks", "whole"} {
			b.Run(fmt.Sprintf("%dk/%s", n/1000, mode), func(b *testing.B) {
				reg := springRegistry(b, n)
				size := 0
				for b.Loop() {
					if mode == "whole" {
						cw := &countWriter{}
						zw, _ := gzip.NewWriterLevel(cw, 2)
						compat.WriteApplications(zw, compat.JSON, false, reg.Applications())
						zw.Close()
						size = cw.n
						continue
					}
					fr := newFragments(reg, compat.Codecs{})
					v, err := cache.BuildValue(func(w io.Writer) (bool, error) {
						return true, fr.writeDocument(w, false, compat.JSON, false)
					}, time.Now, cache.DefaultAutoExpiration)
					if err != nil {
						b.Fatal(err)
					}
					size = v.GzipLen()
				}
				b.ReportMetric(float64(size), "gzip-bytes")
			})
		}
	}
}

type countWriter struct{ n int }

func (c *countWriter) Write(p []byte) (int, error) { c.n += len(p); return len(p), nil }

// benchRebuildAfterEachChange re-registers one of the n instances per
// iteration and rebuilds with build, which returns the gzip size reported.
func benchRebuildAfterEachChange(b *testing.B, reg *registry.Registry, n int, build func() int) {
	size := build()
	i := 0
	b.ReportAllocs()
	for b.Loop() {
		i++
		in := springInstance(i%n, n/50, time.UnixMilli(1764500000000+int64(i)))
		if _, err := reg.Register(in, false); err != nil {
			b.Fatal(err)
		}
		size = build()
	}
	b.ReportMetric(float64(size), "gzip-bytes")
}

// BenchmarkRefreshWhenAllDue is a housekeeping refresh of the full
// registry right after a loading's chunks all came due (3/4 of
// AutoExpiration later): what a change landing during it waits for.
// "budget" is goreka's (refreshBudget instances of aged chunks per
// refresh, the rest in the next ones); "all" re-encodes every due chunk in
// one refresh, as before the budget.
func BenchmarkRefreshWhenAllDue(b *testing.B) {
	const n = 100_000
	reg := springRegistry(b, n)
	for _, mode := range []string{"budget", "all"} {
		b.Run(mode, func(b *testing.B) {
			b.StopTimer()
			for range b.N {
				fr := newFragments(reg, compat.Codecs{})
				if mode == "all" {
					fr.refreshBudget = n
				}
				now := time.Now()
				build := func() {
					if _, err := cache.BuildValue(func(w io.Writer) (bool, error) {
						return true, fr.writeDocument(w, false, compat.JSON, false)
					}, func() time.Time { return now }, cache.DefaultAutoExpiration); err != nil {
						b.Fatal(err)
					}
				}
				build()
				now = now.Add(cache.DefaultAutoExpiration * 3 / 4)
				before := fr.encoded.Load()
				b.StartTimer()
				build()
				b.StopTimer()
				b.ReportMetric(float64(fr.encoded.Load()-before), "instances/op")
			}
		})
	}
}
