package main

import (
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/goreka/goreka/cmd/goreka/config"
	"github.com/goreka/goreka/registry"
)

// metricRef finds metric names in PromQL (and in the files around it):
// goreka's own series and Spring's eureka_server_instances.
var metricRef = regexp.MustCompile(`\b(?:goreka|eureka_server)_[a-z0-9_]+\b`)

// Every metric the Grafana dashboard and the alerting rules in
// deploy/observability query is one a goreka server exports: the names are
// taken from a real app's registry with a peer and an instance, so that the
// per-peer and per-application families exist, and with TLS on, so that
// the certificate's expiry does.
func TestObservabilityQueriesExportedMetrics(t *testing.T) {
	certFile, keyFile, _ := selfSigned(t) // with TLS: goreka_tls_certificate_expiry_seconds exists
	cfg, err := config.Load([]string{"--server.port=18761", "--eureka.client.service-url.defaultZone=http://peer.invalid:8761/eureka/",
		"--server.ssl.certificate=file:" + certFile, "--server.ssl.certificate-private-key=" + keyFile}, nil, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	a, err := newApp(cfg, slog.New(slog.DiscardHandler), time.Now)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.reg.Register(testInstance("ORDERS", "o1"), false); err != nil {
		t.Fatal(err)
	}
	a.metrics.Fetch("full")
	a.metrics.HTTPRoute("GET", "/eureka/apps")
	mfs, err := a.metrics.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	// The Kubernetes bridge's set, which newApp registers on this registry
	// when goreka.kubernetes.enabled (it needs an API server to be on).
	bridge := prometheus.NewPedanticRegistry()
	bridge.MustRegister(a.kubeMetrics.Collector())
	a.kubeMetrics.APIWrites.WithLabelValues("create", "services")
	bmfs, err := bridge.Gather()
	if err != nil {
		t.Fatal(err)
	}
	mfs = append(mfs, bmfs...)
	exported := map[string]bool{}
	for _, mf := range mfs {
		n := mf.GetName()
		exported[n] = true
		if mf.GetType() == dto.MetricType_HISTOGRAM {
			for _, s := range []string{"_bucket", "_sum", "_count"} {
				exported[n+s] = true
			}
		}
	}
	files, _ := filepath.Glob("../../deploy/observability/*")
	checked := 0
	for _, f := range files {
		if strings.HasSuffix(f, "-test.yaml") {
			continue // the promtool tests' series are checked by promtool against the rules
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		refs := metricRef.FindAllString(string(b), -1)
		slices.Sort(refs)
		for _, m := range slices.Compact(refs) {
			checked++
			if !exported[m] {
				t.Errorf("%s queries %s, which goreka does not export", filepath.Base(f), m)
			}
		}
	}
	if checked < 20 {
		t.Fatalf("only %d metric names found in %v", checked, files)
	}
}

func testInstance(app, id string) *registry.Instance {
	return &registry.Instance{InstanceID: id, HostName: id, App: app, IPAddr: "10.0.0.1", Status: registry.StatusUp,
		Port: registry.Port{Number: 8080, Enabled: true}, DataCenterInfo: registry.DataCenterInfo{Name: registry.DataCenterMyOwn}}
}
