package main

import (
	"testing"

	"github.com/goreka/goreka/server"
)

// The table's defaults of goreka.fetch-limit.* are the server package's,
// and every property reaches the server's config.
func TestFetchLimitConfigMapping(t *testing.T) {
	if got, want := serverConfig(loadConfig(t)).FetchLimit, server.DefaultFetchLimitConfig(); got != want {
		t.Fatalf("defaults mapped %+v, server's %+v", got, want)
	}
	got := serverConfig(loadConfig(t, "--goreka.fetch-limit.enabled=true", "--goreka.fetch-limit.full-per-minute=2",
		"--goreka.fetch-limit.delta-per-minute=30", "--goreka.fetch-limit.burst=4", "--goreka.fetch-limit.max-clients=50",
		"--goreka.fetch-limit.identify-by=address")).FetchLimit
	want := server.FetchLimitConfig{Enabled: true, FullPerMinute: 2, DeltaPerMinute: 30, Burst: 4, MaxClients: 50, IdentifyBy: server.FetchLimitByAddress}
	if got != want {
		t.Fatalf("mapped %+v, want %+v", got, want)
	}
}
