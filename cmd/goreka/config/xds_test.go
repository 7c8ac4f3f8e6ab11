package config

import "testing"

func TestXDSDefaults(t *testing.T) {
	c := mustLoad(t, nil, nil, nil)
	x := c.Goreka.XDS
	if x.Enabled || x.Port != 18000 || x.Address != "" || !x.ZonePriority || !x.HeldAsUnhealthy {
		t.Errorf("defaults %+v, want disabled on :18000 with zone priority and held-as-unhealthy", x)
	}
	if got := x.Listen(); got != ":18000" {
		t.Errorf("listen %q, want :18000", got)
	}
}

func TestXDSAddressFollowsServerAddress(t *testing.T) {
	c := mustLoad(t, []string{"--server.address=10.1.2.3", "--goreka.xds.enabled=true", "--goreka.xds.port=19000"}, nil, nil)
	if got := c.Goreka.XDS.Listen(); got != "10.1.2.3:19000" {
		t.Errorf("listen %q, want server.address with goreka.xds.port", got)
	}
	c = mustLoad(t, []string{"--server.address=10.1.2.3", "--goreka.xds.address=127.0.0.1"}, []string{"GOREKA_XDS_ZONEPRIORITY=false"}, nil)
	if c.Goreka.XDS.Address != "127.0.0.1" || c.Goreka.XDS.ZonePriority {
		t.Errorf("%+v, want the own address and zone priority off", c.Goreka.XDS)
	}
}
