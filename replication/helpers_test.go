package replication

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/goreka/goreka/registry"
	"github.com/goreka/goreka/replication/peertest"
)

// handlerTransport serves requests in memory, so that synctest bubbles can
// talk to a peertest.Peer without sockets.
type handlerTransport struct{ h http.Handler }

func (t handlerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	t.h.ServeHTTP(rec, req)
	return rec.Result(), nil
}

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func instance(app, id string, dirty time.Time) *registry.Instance {
	return &registry.Instance{
		InstanceID: id, HostName: id, App: app, IPAddr: "10.0.0.1",
		Status: registry.StatusUp, Port: registry.Port{Number: 8080, Enabled: true},
		DataCenterInfo:     registry.DataCenterInfo{Name: registry.DataCenterMyOwn},
		LastDirtyTimestamp: dirty,
	}
}

func mustPeer(t testing.TB, raw string) Peer {
	t.Helper()
	p, err := ParsePeer(raw)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// wired returns a local registry whose events feed a Replicator sending to
// fake peers (over loopback HTTP).
func wired(t *testing.T, cfg Config, fakes ...*peertest.Peer) (*registry.Registry, *Replicator) {
	t.Helper()
	var rep *Replicator
	reg := registry.New(registry.Options{Now: cfg.Now, OnEvent: func(e registry.Event) { rep.OnEvent(e) },
		OnRenew: func(rn registry.Renewal) { rep.OnRenew(rn) }})
	var peers []Peer
	for _, f := range fakes {
		peers = append(peers, mustPeer(t, f.ServiceURL()))
	}
	if cfg.Logger == nil {
		cfg.Logger = testLogger(t)
	}
	if cfg.Seed == 0 {
		cfg.Seed = 1
	}
	rep = New(cfg, reg, peers)
	return reg, rep
}
