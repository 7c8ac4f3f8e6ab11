package relay

import (
	"fmt"
	"testing"
	"time"

	"github.com/goreka/goreka/registry"
	"github.com/goreka/goreka/registry/clocktest"
)

// BenchmarkDeltaHash is the build of a relay's delta document with its
// hash, which counts every served instance of the copy (10 relays x 10,000:
// a copy of 110,000, this relay's own 10,000 echoed in it): Relay.Delta
// as it is, against the count it replaced, which built each application's
// served views (a local registry lookup and a view copy per instance).
func BenchmarkDeltaHash(b *testing.B) {
	const apps, perApp, local = 550, 200, 50 // 110,000 upstream, 10,000 of them this relay's echoes
	clock := clocktest.New(time.Unix(1_700_000_000, 0))
	up := newUpstream(b, clock)
	s := newSite(b, clock, nil, up.url())
	for a := range apps {
		app := fmt.Sprintf("APP-%03d", a)
		for i := range perApp {
			in := inst(app, fmt.Sprintf("%s-%d", app, i))
			if _, err := up.reg.Register(in, false); err != nil {
				b.Fatal(err)
			}
			if a < local {
				if _, err := s.reg.Register(inst(app, in.InstanceID), false); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	if err := s.relay.FetchOnce(b.Context()); err != nil {
		b.Fatal(err)
	}
	localDelta := s.reg.Delta()
	want := s.relay.Full(s.reg.Applications()).HashCode
	b.Run("counted", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if d := s.relay.Delta(localDelta); d.HashCode != want {
				b.Fatalf("delta hash %s, full %s", d.HashCode, want)
			}
		}
	})
	b.Run("served-views", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			apps, _ := s.relay.recent.delta(s.relay.cfg.Now())
			counts := map[registry.Status]int{}
			registry.ParseHashCode(localDelta.HashCode, counts)
			sh := s.relay.shadow()
			for i := range apps.Apps {
				for _, v := range sh.served(&apps.Apps[i]) {
					counts[v.Instance.Status]++
				}
			}
			if h := registry.HashCode(counts); h != want {
				b.Fatalf("hash %s, full %s", h, want)
			}
		}
	})
}
