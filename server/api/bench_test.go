package api

import (
	"fmt"
	"net/url"
	"testing"

	"github.com/goreka/goreka/registry"
	"github.com/goreka/goreka/registry/clocktest"
)

// fleet100k is 100,000 instances: 1000 applications of 100, each with its
// own VIP, metadata zone one of 10, 1% DOWN.
func fleet100k(b *testing.B) (*registry.Registry, *API) {
	b.Helper()
	clock := clocktest.New(epoch)
	var a *API
	reg := registry.New(registry.Options{Now: clock.Now, OnEvent: func(e registry.Event) { a.OnEvent(e) }})
	a = New(reg, Config{Now: clock.Now})
	for app := range 1000 {
		for i := range 100 {
			in := inst(fmt.Sprintf("APP%04d", app), fmt.Sprintf("app%04d-%03d", app, i))
			in.VIPAddress = fmt.Sprintf("vip%04d", app)
			in.Metadata = map[string]string{"zone": fmt.Sprintf("z%d", i%10), "version": "1.2.3"}
			if (app*100+i)%100 == 7 {
				in.Status = registry.StatusDown
			}
			if _, err := reg.Register(in, false); err != nil {
				b.Fatal(err)
			}
		}
	}
	if a.idx.Size() != 100_000 {
		b.Fatalf("index holds %d", a.idx.Size())
	}
	return reg, a
}

// BenchmarkQuery100k answers GET /instances (index, live heartbeat times,
// plain shape; JSON encoding excluded) at 100k instances. "scan" is the
// same app filter done the way a Eureka client must: a full view of the
// registry, filtered.
func BenchmarkQuery100k(b *testing.B) {
	reg, a := fleet100k(b)
	middle := encodeToken(key{"APP0500", "app0500-050"})
	cases := []struct{ name, query string }{
		{"app", "app=APP0500"},
		{"vip", "vip=vip0500"},
		{"app+metadata", "app=APP0500&metadata.zone=z3"},
		{"status=DOWN,limit=100", "status=DOWN&limit=100"},
		{"metadata,limit=100", "metadata.zone=z3&limit=100"},
		{"unfiltered,limit=100", "limit=100"},
		{"unfiltered,limit=100,continue", "limit=100&continue=" + middle},
		{"app+lifecycle", "app=APP0500&lifecycle=up"},
	}
	for _, c := range cases {
		v, err := url.ParseQuery(c.query)
		if err != nil {
			b.Fatal(err)
		}
		q, err := parseInstancesQuery(v)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(c.name, func(b *testing.B) {
			n := 0
			for b.Loop() {
				n = len(a.page(q).Instances)
			}
			b.ReportMetric(float64(n), "results")
		})
	}
	b.Run("scan-app", func(b *testing.B) {
		n := 0
		for b.Loop() {
			n = 0
			for _, app := range reg.Applications().Apps {
				if app.Name == "APP0500" {
					n += len(app.Instances)
				}
			}
		}
		b.ReportMetric(float64(n), "results")
	})
}

// BenchmarkIndexApply is the cost the index adds to each change (a status
// update of an instance with two metadata entries) at 100k instances.
func BenchmarkIndexApply(b *testing.B) {
	reg, a := fleet100k(b)
	v, _ := reg.Get("APP0500", "app0500-001")
	e := registry.Event{Kind: registry.EventStatusUpdate, App: "APP0500", ID: "app0500-001", Lease: v, Changed: true}
	rev := reg.Revision()
	for b.Loop() {
		rev++
		e.Revision = rev
		a.idx.Apply(e)
	}
}

// BenchmarkBuildSecondary100k is the pass the first status, VIP or
// metadata query makes over 100k instances; the index's write lock is held
// meanwhile, so change delivery waits that long once.
func BenchmarkBuildSecondary100k(b *testing.B) {
	_, a := fleet100k(b)
	for b.Loop() {
		a.idx.mu.Lock()
		a.idx.secondary = false
		a.idx.buildSecondary()
		a.idx.mu.Unlock()
	}
}
