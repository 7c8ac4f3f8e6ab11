package interop

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/goreka/goreka/internal/proctest"
	"github.com/goreka/goreka/registry"
	"github.com/goreka/goreka/server"
	"github.com/goreka/goreka/server/api"
)

// prometheusBinary returns the real Prometheus that .ci/run installs
// (Debian's prometheus package). Outside CI a missing binary skips.
func prometheusBinary(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("prometheus")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("prometheus not installed (.ci/run installs it): %v", err)
		}
		t.Skip("prometheus not installed (apt-get install prometheus)")
	}
	return p
}

type promTarget struct {
	DiscoveredLabels map[string]string `json:"discoveredLabels"`
	Labels           map[string]string `json:"labels"`
	ScrapePool       string            `json:"scrapePool"`
	ScrapeURL        string            `json:"scrapeUrl"`
}

// TestPrometheusDiscoversGoreka runs real Prometheus against one goreka
// server with two jobs: its own eureka_sd_configs reading /eureka/apps, and
// http_sd_configs reading /goreka/api/v1/prometheus-sd. Both must give each
// instance the same __meta_eureka_* labels; the http_sd job also applies
// the prometheus.* metadata convention.
func TestPrometheusDiscoversGoreka(t *testing.T) {
	bin := prometheusBinary(t)
	var a *api.API
	reg := registry.New(registry.Options{OnEvent: func(e registry.Event) { a.OnEvent(e) }})
	a = api.New(reg, api.Config{})
	srv := server.New(server.Config{}, server.Deps{Registry: reg})
	srv.MountAPI(a)
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)

	mk := func(app, id string, port int, md map[string]string) {
		in := &registry.Instance{InstanceID: id, App: app, HostName: id + ".invalid", IPAddr: "127.0.0.9",
			Port: registry.Port{Number: port, Enabled: true}, SecurePort: registry.Port{Number: 8443},
			VIPAddress: strings.ToLower(app), HomePageURL: "http://" + id + ".invalid/",
			DataCenterInfo: registry.DataCenterInfo{Name: registry.DataCenterMyOwn}, Metadata: md}
		if _, err := reg.Register(in, false); err != nil {
			t.Fatal(err)
		}
	}
	mk("ORDERS", "orders-1", 8080, map[string]string{"prometheus.path": "/actuator/prometheus", "prometheus.port": "9100", "zone": "a"})
	mk("ORDERS", "orders-2", 8081, map[string]string{"zone": "b"})
	mk("BILLING", "billing-1", 8082, map[string]string{"prometheus.scrape": "false"})

	port := proctest.Port(t)
	dir := t.TempDir()
	cfg := fmt.Sprintf(`global:
  scrape_interval: 1h
scrape_configs:
  - job_name: eureka
    eureka_sd_configs:
      - server: %[1]s/eureka
        refresh_interval: 1s
  - job_name: goreka
    http_sd_configs:
      - url: %[1]s/goreka/api/v1/prometheus-sd
        refresh_interval: 1s
`, ts.URL)
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	var logs proctest.Log
	p, err := proctest.Start(proctest.Options{Name: "prometheus", Path: bin, Args: []string{"--config.file=" + filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path=" + filepath.Join(dir, "data"), fmt.Sprintf("--web.listen-address=127.0.0.1:%d", port)},
		Stdout: &logs, Stderr: &logs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop(syscall.SIGKILL, 10*time.Second) })

	var targets []promTarget
	err = p.WaitFor(60*time.Second, "discovery of the instances", func() (bool, string) {
		targets = activeTargets(port)
		n := map[string]int{}
		for _, tg := range targets {
			n[tg.ScrapePool]++
		}
		return n["eureka"] == 3 && n["goreka"] == 2, fmt.Sprint(n)
	})
	if err != nil {
		t.Fatalf("Prometheus did not discover the instances: %v\n%s", err, logs.String())
	}

	byJob := map[string]map[string]promTarget{"eureka": {}, "goreka": {}}
	for _, tg := range targets {
		byJob[tg.ScrapePool][tg.Labels["instance"]] = tg
	}
	if _, ok := byJob["goreka"]["billing-1"]; ok {
		t.Error("prometheus.scrape=false was discovered")
	}
	for _, id := range []string{"orders-1", "orders-2"} {
		e, g := byJob["eureka"][id], byJob["goreka"][id]
		em, gm := eurekaMeta(e.DiscoveredLabels), eurekaMeta(g.DiscoveredLabels)
		if len(em) < 12 || !maps.Equal(em, gm) { // Prometheus drops empty labels
			t.Errorf("%s: eureka_sd labels %v\nhttp_sd labels %v", id, em, gm)
		}
		if g.DiscoveredLabels["__meta_goreka_lifecycle"] != "up" || g.DiscoveredLabels["__meta_url"] == "" {
			t.Errorf("%s: goreka's own labels %v", id, g.DiscoveredLabels)
		}
	}
	if u := byJob["goreka"]["orders-1"].ScrapeURL; u != "http://orders-1.invalid:9100/actuator/prometheus" {
		t.Errorf("convention: scrape URL %s", u)
	}
	if u := byJob["goreka"]["orders-2"].ScrapeURL; u != "http://orders-2.invalid:8081/metrics" {
		t.Errorf("defaults: scrape URL %s", u)
	}
	if u := byJob["eureka"]["orders-1"].ScrapeURL; u != "http://orders-1.invalid:8080/metrics" {
		t.Errorf("eureka_sd: scrape URL %s", u)
	}
}

func eurekaMeta(ls map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range ls {
		if strings.HasPrefix(k, "__meta_eureka_") {
			out[k] = v
		}
	}
	return out
}

func activeTargets(port int) []promTarget {
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/api/v1/targets?state=active", port))
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	var body struct {
		Data struct {
			ActiveTargets []promTarget `json:"activeTargets"`
		} `json:"data"`
	}
	if json.NewDecoder(resp.Body).Decode(&body) != nil {
		return nil
	}
	return body.Data.ActiveTargets
}
