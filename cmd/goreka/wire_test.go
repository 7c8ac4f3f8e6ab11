package main

import (
	"log/slog"
	"testing"
	"time"

	"github.com/goreka/goreka/cmd/goreka/config"
	"github.com/goreka/goreka/eviction"
	"github.com/goreka/goreka/registry"
)

func loadConfig(t *testing.T, args ...string) *config.Config {
	t.Helper()
	cfg, err := config.Load(append([]string{"--server.port=8762"}, args...), nil, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// With no settings, the mapped eviction config is eviction's (Eureka's)
// defaults plus goreka's read wait: the table and the package agree.
func TestEvictionConfigDefaults(t *testing.T) {
	c := evictionConfig(loadConfig(t), time.Now, slog.New(slog.DiscardHandler))
	d := eviction.Default()
	if c.EnableSelfPreservation != d.EnableSelfPreservation || c.RenewalPercentThreshold != d.RenewalPercentThreshold ||
		c.ExpectedClientRenewalInterval != d.ExpectedClientRenewalInterval || c.EvictionInterval != d.EvictionInterval ||
		c.RenewalThresholdUpdateInterval != d.RenewalThresholdUpdateInterval || c.WaitTimeWhenSyncEmpty != d.WaitTimeWhenSyncEmpty ||
		c.DeltaRetentionInterval != d.DeltaRetentionInterval || c.DeltaRetention != d.DeltaRetention ||
		c.DefaultOpenForTrafficCount != d.DefaultOpenForTrafficCount {
		t.Fatalf("mapped %+v\ndefault %+v", c, d)
	}
	if c.SyncReadWait != 2500*time.Millisecond {
		t.Fatalf("sync read wait %v, want half the 5 s peer read timeout", c.SyncReadWait)
	}
	if c.ExpectedClientRenewalInterval != registry.DefaultRenewalInterval {
		t.Fatalf("expected client renewal interval %v, want the lease default", c.ExpectedClientRenewalInterval)
	}
}

// The start-up gate's settings reach the evictor, Netflix's warm-up
// (count 0) included, and an explicit wait of 0 stays 0.
func TestEvictionConfigGateSettings(t *testing.T) {
	c := evictionConfig(loadConfig(t,
		"--eureka.instance.registry.default-open-for-traffic-count=0",
		"--eureka.server.wait-time-in-ms-when-sync-empty=0",
		"--eureka.server.peer-node-read-timeout-ms=800",
		"--eureka.server.enable-self-preservation=false",
	), time.Now, slog.New(slog.DiscardHandler))
	if c.DefaultOpenForTrafficCount != 0 || c.WaitTimeWhenSyncEmpty != 0 || c.SyncReadWait != 400*time.Millisecond || c.EnableSelfPreservation {
		t.Fatalf("mapped %+v", c)
	}

	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	c.Now = func() time.Time { return now }
	c.WaitTimeWhenSyncEmpty = time.Minute
	ev := eviction.New(registry.New(registry.Options{Now: c.Now}), c)
	ev.OpenAfterSync(0)
	if ev.AllowAccess() {
		t.Fatal("reads allowed right after an empty sync with count 0")
	}
	now = now.Add(time.Minute + time.Millisecond)
	if !ev.AllowAccess() {
		t.Fatal("reads refused after the warm-up")
	}
}

func TestSelfLeaseDefaults(t *testing.T) {
	l := loadConfig(t).SelfLease()
	if l.RenewalInterval != registry.DefaultRenewalInterval || l.Duration != registry.DefaultLeaseDuration {
		t.Fatalf("self lease %+v, want the registry's defaults", l)
	}
}
