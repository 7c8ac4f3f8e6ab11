package config

import (
	"net/netip"
	"slices"
	"strings"
	"testing"
)

// goreka.health.probe.allowed-networks: CIDRs or bare addresses, comma
// separated (also as a YAML list); default empty (any network); a bad
// entry is named.
func TestAllowedNetworks(t *testing.T) {
	if c := mustLoad(t, nil, nil, nil); len(c.Goreka.Health.AllowedNetworks) != 0 {
		t.Errorf("default %v, want empty (any)", c.Goreka.Health.AllowedNetworks)
	}
	want := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("192.168.1.7/32"), netip.MustParsePrefix("fd00::/8")}
	c := mustLoad(t, []string{"--goreka.health.probe.allowed-networks=10.1.2.3/8, 192.168.1.7,fd00::/8"}, nil, nil)
	if got := c.Goreka.Health.AllowedNetworks; !slices.Equal(got, want) {
		t.Errorf("flag: %v, want %v", got, want)
	}
	c = mustLoad(t, nil, nil, map[string]string{"application.yml": "goreka:\n  health:\n    probe:\n      allowed-networks:\n        - 10.0.0.0/8\n        - 192.168.1.7\n        - fd00::/8\n"})
	if got := c.Goreka.Health.AllowedNetworks; !slices.Equal(got, want) {
		t.Errorf("YAML list: %v, want %v", got, want)
	}
	_, err := load([]string{"--goreka.health.probe.allowed-networks=10.0.0.0/8,10.0.0.0/33"}, nil, setup(t, nil), fakeHost)
	if err == nil || !strings.Contains(err.Error(), `"10.0.0.0/33" is not a CIDR`) {
		t.Errorf("bad entry: %v", err)
	}
}
