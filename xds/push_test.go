package xds

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func (f *fixture) tick() {
	f.s.mu.Lock()
	sp := f.s.spaces["default"]
	f.s.mu.Unlock()
	f.s.tick(sp, f.reg)
}

// A push (a response to a change made while the stream was subscribed)
// is observed in goreka_xds_push_latency_seconds; a client's first answer
// is not.
func TestPushLatencyIsObserved(t *testing.T) {
	f := newFixture(t, Config{})
	f.register(inst("A", "a1", "10.0.0.1"))
	f.sync()
	st := ads(t, f.s)
	cds := roundTrip(t, st, &discovery.DiscoveryRequest{Node: node("e"), TypeUrl: resource.ClusterType})
	if n := testutil.CollectAndCount(f.s.latency); n != 0 {
		t.Errorf("%d latency series after the first answer, want none", n)
	}
	if err := st.Send(&discovery.DiscoveryRequest{TypeUrl: resource.ClusterType, VersionInfo: cds.GetVersionInfo(), ResponseNonce: cds.GetNonce()}); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(time.Second) // the change comes after the answer
	f.register(inst("B", "b1", "10.0.0.2"))
	if _, err := st.Recv(); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(f.s.latency, "goreka_xds_push_latency_seconds"); n != 1 {
		t.Errorf("%d latency series after a push, want 1 (cds)", n)
	}
	if got := testutil.ToFloat64(f.s.pushes.WithLabelValues("cds")); got != 2 {
		t.Errorf("cds pushes %v, want 2", got)
	}
}

// An application whose last instance goes loses its cluster at once and
// its assignment after two ticks (the empty one pushed first, so that
// subscribed clients learn it has no endpoints), rather than keeping an
// empty assignment forever; one that comes back before is kept.
func TestVanishedNamesAreRemoved(t *testing.T) {
	f := newFixture(t, Config{})
	a, b := inst("A", "a1", "10.0.0.1"), inst("B", "b1", "10.0.0.2")
	a.VIPAddress = "a-vip"
	f.register(a, b)
	f.sync()
	g := f.s.mustGroup(t, node("e"))
	for _, id := range []string{"a1", "b1"} {
		if err := f.reg.Cancel(strings.ToUpper(id[:1]), id, false); err != nil {
			t.Fatal(err)
		}
	}
	f.sync()
	eds := func() map[string]bool {
		out := map[string]bool{}
		for n := range g.cache(resource.EndpointType).GetResources() {
			out[n] = true
		}
		return out
	}
	if got := eds(); !got["a"] || !got["a-vip"] || !got["b"] {
		t.Fatalf("assignments right after the cancels %v, want empty ones for a, a-vip and b", got)
	}
	if got := names(t, sotw(t, f.s, node("e"), resource.ClusterType)); len(got) != 0 {
		t.Errorf("clusters %v after every instance went, want none", got)
	}
	f.tick()
	f.register(inst("B", "b2", "10.0.0.3")) // back before its deletion
	f.sync()
	if got := eds(); !got["a"] {
		t.Fatalf("a's assignment deleted at the first tick: %v", got)
	}
	f.tick()
	if got := eds(); got["a"] || got["a-vip"] || !got["b"] {
		t.Errorf("assignments after two ticks %v, want b only", got)
	}
	if _, ok := f.s.Resolve("default", "a", Envoy); ok {
		t.Error("a vanished name still resolves")
	}
}

// Start warns once that instance metadata is exposed to xDS clients.
func TestMetadataExposureWarning(t *testing.T) {
	var logs syncWriter
	var b strings.Builder
	logs.w = &b
	s := New(Config{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err := s.Start(t.Context(), "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	s.Close()
	logs.mu.Lock()
	defer logs.mu.Unlock()
	if n := strings.Count(b.String(), `filter_metadata[\"envoy.lb\"]`); n != 1 {
		t.Errorf("%d metadata warnings, want 1:\n%s", n, b.String())
	}
}
