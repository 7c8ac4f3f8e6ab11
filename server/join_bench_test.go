package server

import (
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/goreka/goreka/eurekahttp"
	"github.com/goreka/goreka/registry"
	"github.com/goreka/goreka/replication"
)

// BenchmarkJoin is a joining node's start-up sync of a peer's registry of
// 100k instances over HTTP (an in-process goreka peer, gzip on): "stream"
// is the sync (X-Goreka-Sync: the peer streams from a registry view, the
// joiner decodes while reading and registers through RegisterAll);
// "whole" is the sync before it (the peer's cached document, read whole,
// decoded, registered one by one), against a warm cache, its best case.
//
// GOREKA_JOIN_INSTANCES sets the registry's size (1000000 for the 1M join).
func BenchmarkJoin(b *testing.B) {
	n := 100_000
	if v, err := strconv.Atoi(os.Getenv("GOREKA_JOIN_INSTANCES")); err == nil && v > 0 {
		n = v
	}
	peer, peerReg := benchServer(b, n)
	hs := httptest.NewServer(peer)
	b.Cleanup(hs.Close)
	url := hs.URL + "/eureka/"
	p, err := replication.ParsePeer(url)
	if err != nil {
		b.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	b.Run("stream", func(b *testing.B) {
		for b.Loop() {
			reg := registry.New(registry.Options{})
			rep := replication.New(replication.Config{Logger: quiet}, reg, []replication.Peer{p})
			got, err := rep.SyncUp(b.Context(), 1, 0)
			if err != nil || got != n || reg.Size() != n {
				b.Fatalf("synced %d (%d), %v", got, reg.Size(), err)
			}
		}
	})
	b.Run("whole", func(b *testing.B) {
		// The peer's cold build would trip the default 5 s read timeout
		// (the failure this replaces): the document is built before the
		// timer, and a minute allowed.
		c := eurekahttp.New(eurekahttp.Config{AcceptGzip: true, ReadTimeout: 5 * time.Minute})
		ep, _ := eurekahttp.ParseURL(url)
		if _, err := c.GetApplications(b.Context(), ep, eurekahttp.Full); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			reg := registry.New(registry.Options{})
			apps, err := c.GetApplications(b.Context(), ep, eurekahttp.Full)
			if err != nil {
				b.Fatal(err)
			}
			for _, app := range apps.Apps {
				for _, v := range app.Instances {
					in := v.Instance.Clone()
					in.LeaseInfo = registry.LeaseInfo{RenewalInterval: v.RenewalInterval, Duration: v.Duration}
					if _, err := reg.Register(in, true); err != nil {
						b.Fatal(err)
					}
				}
			}
			if reg.Size() != n {
				b.Fatalf("synced %d", reg.Size())
			}
		}
	}) // The sync before against a peer whose document is cold (a new
	// server, so a new response cache, over the same registry): the peer
	// builds it inside the request, which the default read timeout did not
	// wait for at 1M instances.
	b.Run("whole-cold", func(b *testing.B) {
		c := eurekahttp.New(eurekahttp.Config{AcceptGzip: true, ReadTimeout: 5 * time.Minute})
		for b.Loop() {
			b.StopTimer()
			cold := httptest.NewServer(New(Config{}, Deps{Registry: peerReg}))
			ep, _ := eurekahttp.ParseURL(cold.URL + "/eureka/")
			reg := registry.New(registry.Options{})
			b.StartTimer()
			apps, err := c.GetApplications(b.Context(), ep, eurekahttp.Full)
			if err != nil {
				b.Fatal(err)
			}
			for _, app := range apps.Apps {
				for _, v := range app.Instances {
					in := v.Instance.Clone()
					in.LeaseInfo = registry.LeaseInfo{RenewalInterval: v.RenewalInterval, Duration: v.Duration}
					if _, err := reg.Register(in, true); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.StopTimer()
			cold.Close()
			b.StartTimer()
		}
	})
}
