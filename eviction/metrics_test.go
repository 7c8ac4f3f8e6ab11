package eviction

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// TestCollector checks the self-preservation series, names and help texts
// included (dashboards and alerts use them), and that values follow their
// source from one scrape to the next.
func TestCollector(t *testing.T) {
	st := Status{RenewsLastMinute: 12, Threshold: 17, ExpectedClients: 10, SelfPreservationEnabled: true,
		BelowThreshold: true, ActiveSince: time.Unix(1, 0), HeldBack: 3}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(NewCollector(func() Status { return st }))

	gather := func() map[string]*dto.MetricFamily {
		t.Helper()
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]*dto.MetricFamily{}
		for _, mf := range mfs {
			out[mf.GetName()] = mf
		}
		return out
	}
	for _, tc := range []struct {
		name, help string
		v          float64
	}{
		{"goreka_renews_last_minute", "Renewals received in the last full minute (Eureka's Renews (last min)).", 12},
		{"goreka_renews_threshold", "Renewals per minute below which self-preservation starts (Eureka's Renews threshold).", 17},
		{"goreka_expected_clients", "Expected number of clients sending renews.", 10},
		{"goreka_self_preservation_enabled", "1 if eureka.server.enable-self-preservation is on.", 1},
		{"goreka_self_preservation_active", "1 while self-preservation holds: lease expiration is disabled because renewals are below the threshold.", 1},
		{"goreka_lease_expiration_enabled", "1 if expired leases are evicted.", 0},
		{"goreka_renews_below_threshold", "1 if renewals are below the threshold (the dashboard's red banner).", 1},
		{"goreka_evictions_held_back", "Expired leases the last eviction run did not evict (self-preservation or eviction limit).", 3},
	} {
		mf := gather()[tc.name]
		if mf == nil {
			t.Fatalf("%s: no such family", tc.name)
		}
		if mf.GetHelp() != tc.help || mf.GetType() != dto.MetricType_GAUGE || len(mf.GetMetric()) != 1 ||
			len(mf.GetMetric()[0].GetLabel()) != 0 {
			t.Fatalf("%s: help %q, type %v, series %v", tc.name, mf.GetHelp(), mf.GetType(), mf.GetMetric())
		}
		if got := mf.GetMetric()[0].GetGauge().GetValue(); got != tc.v {
			t.Errorf("%s = %v, want %v", tc.name, got, tc.v)
		}
	}

	st.ActiveSince, st.RenewsLastMinute, st.LeaseExpirationEnabled = time.Time{}, 20, true
	mfs := gather()
	for name, v := range map[string]float64{"goreka_self_preservation_active": 0, "goreka_renews_last_minute": 20,
		"goreka_lease_expiration_enabled": 1} {
		if got := mfs[name].GetMetric()[0].GetGauge().GetValue(); got != v {
			t.Errorf("after the change, %s = %v, want %v", name, got, v)
		}
	}
}

// TestEvictorCollector reads a real Evictor's state.
func TestEvictorCollector(t *testing.T) {
	e := newEnv(t, true)
	e.ev.OpenForTraffic(10)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(e.ev.Collector())
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		got[mf.GetName()] = mf.GetMetric()[0].GetGauge().GetValue()
	}
	st := e.ev.Status()
	if got["goreka_expected_clients"] != 10 || got["goreka_renews_threshold"] != float64(st.Threshold) ||
		got["goreka_self_preservation_enabled"] != 1 {
		t.Fatalf("collector %v, status %+v", got, st)
	}
}
