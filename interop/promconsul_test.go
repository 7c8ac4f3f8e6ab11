package interop

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/discovery"
	promconsul "github.com/prometheus/prometheus/discovery/consul"
	"github.com/prometheus/prometheus/discovery/targetgroup"

	"github.com/goreka/goreka/registry"
	"github.com/goreka/goreka/server/api"
)

// TestConsulCatalogWithPrometheusDiscovery runs Prometheus' own Consul
// service discovery (github.com/prometheus/prometheus/discovery/consul, the
// code behind consul_sd_configs) against goreka's catalog: it finds every
// instance with its address, health and metadata, and its blocking queries
// see a registration and a cancel.
func TestConsulCatalogWithPrometheusDiscovery(t *testing.T) {
	f := newConsulFixture(t)
	db := inst("DB", "pg-1")
	db.IPAddr = "10.0.0.5"
	db.Port = registry.Port{Number: 5432, Enabled: true}
	if _, err := f.reg.SetStatic([]*registry.Instance{db}); err != nil {
		t.Fatal(err)
	}

	u, _ := url.Parse(f.srv.URL)
	conf := promconsul.DefaultSDConfig
	conf.Server = u.Host
	// Prometheus waits refresh_interval (30 s by default) between the
	// blocking queries of a service; a short one keeps the test short.
	conf.RefreshInterval = model.Duration(100 * time.Millisecond)
	reg := prometheus.NewRegistry()
	rm := discovery.NewRefreshMetrics(reg)
	if err := rm.Register(); err != nil {
		t.Fatal(err)
	}
	metrics := conf.NewDiscovererMetrics(reg, rm)
	if err := metrics.Register(); err != nil {
		t.Fatal(err)
	}
	d, err := promconsul.NewDiscovery(&conf, slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn})), metrics)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	ch := make(chan []*targetgroup.Group)
	done := make(chan struct{})
	go func() { defer close(done); d.Run(ctx, ch) }()
	t.Cleanup(func() { cancel(); <-done })

	// groups holds the last target group per service (Source).
	groups := map[string]*targetgroup.Group{}
	await := func(what string, ok func() bool) {
		t.Helper()
		deadline := time.After(30 * time.Second)
		for !ok() {
			select {
			case tgs := <-ch:
				for _, g := range tgs {
					groups[g.Source] = g
				}
			case <-deadline:
				t.Fatalf("%s: not after 30s; groups %v", what, groups)
			}
		}
	}
	targets := func(service string) map[string]model.LabelSet {
		out := map[string]model.LabelSet{}
		if g := groups[service]; g != nil {
			for _, tg := range g.Targets {
				out[string(tg["__meta_consul_service_id"])] = tg
			}
		}
		return out
	}
	await("the three services", func() bool {
		return len(targets("orders")) == 2 && len(targets("billing")) == 1 && len(targets("db")) == 1
	})

	want := map[string]map[model.LabelName]string{
		"o1": {"__address__": "10.0.0.1:8080", "__meta_consul_health": "passing", "__meta_consul_service_metadata_zone": "a",
			"__meta_consul_tags": ",zone=a,", "__meta_consul_node": "o1"},
		"o2": {"__address__": "10.0.0.1:8080", "__meta_consul_health": "critical"},
	}
	for id, labels := range want {
		tg := targets("orders")[id]
		for k, v := range labels {
			if string(tg[k]) != v {
				t.Errorf("orders/%s: %s = %q, want %q (labels %v)", id, k, tg[k], v, tg)
			}
		}
	}
	if g := groups["orders"]; string(g.Labels["__meta_consul_dc"]) != api.ConsulDatacenter || string(g.Labels["__meta_consul_service"]) != "orders" {
		t.Errorf("orders group labels %v", g.Labels)
	}
	if tg := targets("db")["pg-1"]; string(tg["__address__"]) != "10.0.0.5:5432" {
		t.Errorf("static registration: %v", tg)
	}

	// Blocking queries: a registration and a cancel reach it.
	f.register(inst("ORDERS", "o3"))
	await("the new instance", func() bool { return len(targets("orders")) == 3 })
	if err := f.reg.Cancel("BILLING", "b1", false); err != nil {
		t.Fatal(err)
	}
	await("the cancelled service", func() bool { g := groups["billing"]; return g != nil && len(g.Targets) == 0 })
	if s := fmt.Sprint(groups); strings.Contains(s, "b1") {
		t.Errorf("b1 still discovered: %s", s)
	}
}
