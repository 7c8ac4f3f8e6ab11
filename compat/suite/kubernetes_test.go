//go:build compat

package suite

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/goreka/goreka/internal/kubetest"
	"github.com/goreka/goreka/internal/proctest"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestKubernetesImportSpringBoot: a real Spring Boot 3 app with the
// unchanged Eureka client (compat/agents/spring-boot3) calls a Kubernetes
// Service that goreka imports (goreka.kubernetes.import), by application
// name through @LoadBalanced (the agent's GET /call/web). The Service's
// endpoints are real HTTP servers listening on a network namespace's
// addresses (10.244.205.1 and .2; the API server refuses loopback ones),
// which the Spring app reaches through the namespace's veth from the root
// namespace. web-1 turning not ready leaves the app's instances within one
// registry refresh; a goreka restart loses the app no instance.
// Standalone (go test -tags compat -run TestKubernetesImportSpringBoot
// ./compat/suite/); it builds the agent if its jar is missing.
func TestKubernetesImportSpringBoot(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	agents := filepath.Join(root, "compat", "agents")
	if _, err := os.Stat(filepath.Join(agents, "spring-boot3", "target", "agent.jar")); err != nil {
		if err := runBuild(filepath.Join(agents, "spring-boot3", "build.sh"), filepath.Join(t.TempDir(), "build.log"), 15*time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	api := kubetest.Start(t)
	admin := api.Client(kubetest.Admin)
	ns := kubetest.NewNetNS(t, "spring", "10.244.205", 2)
	for i := 1; i <= 2; i++ {
		ln, err := ns.Listen(ns.Addr(i) + ":8080")
		if err != nil {
			t.Fatal(err)
		}
		body := fmt.Sprintf("web-%d", i-1)
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, body) })}
		go srv.Serve(ln)
		t.Cleanup(func() { srv.Close() })
	}
	ctx := t.Context()
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Ports: []corev1.ServicePort{{Name: "http", Port: 8080}}}}
	if _, err := admin.CoreV1().Services("shop").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	slice := func(web1Ready bool) *discoveryv1.EndpointSlice {
		ep := func(i int, ready bool) discoveryv1.Endpoint {
			return discoveryv1.Endpoint{Addresses: []string{ns.Addr(i)}, Conditions: discoveryv1.EndpointConditions{Ready: &ready, Serving: &ready},
				TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: "shop", Name: fmt.Sprintf("web-%d", i-1)}}
		}
		return &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "web-abc", Labels: map[string]string{discoveryv1.LabelServiceName: "web"}},
			AddressType: discoveryv1.AddressTypeIPv4, Endpoints: []discoveryv1.Endpoint{ep(1, true), ep(2, web1Ready)},
			Ports: []discoveryv1.EndpointPort{{Name: new("http"), Port: new(int32(8080))}}}
	}
	if _, err := admin.DiscoveryV1().EndpointSlices("shop").Create(ctx, slice(true), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	bin, err := proctest.Build(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	port := proctest.Port(t)
	ps := &procs{}
	t.Cleanup(ps.killAll)
	out, snapshot := t.TempDir(), filepath.Join(t.TempDir(), "registry.snapshot")
	kubeconfig := api.Kubeconfig(kubetest.Admin)
	var g *proc
	startGoreka := func(log string) error {
		p, err := ps.start("goreka", filepath.Join(out, log), out, nil, bin,
			"--server.port="+strconv.Itoa(port), "--server.address=127.0.0.1", "--eureka.client.service-url.defaultZone=",
			"--eureka.client.register-with-eureka=false", "--goreka.snapshot.path="+snapshot, "--goreka.kubernetes.enabled=true",
			"--goreka.kubernetes.kubeconfig="+kubeconfig, "--goreka.kubernetes.import.enabled=true")
		if err != nil {
			return err
		}
		g = p
		if err := p.WaitListening(fmt.Sprintf("127.0.0.1:%d", port), time.Minute); err != nil {
			return fmt.Errorf("%v\n%s", err, proctest.Tail(p.log, 30))
		}
		return nil
	}
	if err := startGoreka("goreka.log"); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = g.stop(syscall.SIGTERM, 10*time.Second) }()
	// status is web-1's status in goreka ("" when it has none).
	status := func(id string) string {
		req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/eureka/apps/WEB/%s", port, id), nil)
		req.Header.Set("Accept", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return ""
		}
		defer resp.Body.Close()
		var v struct{ Instance struct{ Status string } }
		if json.NewDecoder(resp.Body).Decode(&v) != nil {
			return ""
		}
		return v.Instance.Status
	}
	target, _ := url.Parse(fmt.Sprintf("http://127.0.0.1:%d", port))
	caller, err := startAgent(ps, agents, t.TempDir(), "spring-boot3", "k8s-caller", target, "", "compat=k8s")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = caller.p.stop(syscall.SIGTERM, 15*time.Second); caller.proxy.Close() }()

	seen := map[string]bool{}
	if err := waitFor(3*time.Minute, "GET /call/web reaches both endpoints", func() (bool, string) {
		code, body := caller.get("/call/web")
		if code == http.StatusOK {
			seen[body] = true
		}
		return seen["web-0"] && seen["web-1"], fmt.Sprintf("%d %q, seen %v", code, body, seen)
	}); err != nil {
		t.Fatalf("%v\n%s", err, proctest.Tail(caller.p.log, 30))
	}
	update := func(web1Ready bool) {
		t.Helper()
		cur, err := admin.DiscoveryV1().EndpointSlices("shop").Get(ctx, "web-abc", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		s := slice(web1Ready)
		s.ResourceVersion = cur.ResourceVersion
		if _, err := admin.DiscoveryV1().EndpointSlices("shop").Update(ctx, s, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// fetches counts the app's completed registry fetches (full and delta).
	fetches := func() int {
		c := caller.proxy.Snapshot()
		return c["GET apps/"] + c["GET apps/delta"]
	}

	// web-1 turns not ready: once goreka has it OUT_OF_SERVICE, the app's
	// next registry fetch drops it (the agent fetches every second). A
	// fetch that was in flight when goreka changed may answer the old
	// registry; the one after it cannot, and the client applies a fetch
	// before it starts the next: an app that still lists web-1 after the
	// third fetch since goreka changed missed a refresh.
	t0 := time.Now()
	update(false)
	if err := waitFor(10*time.Second, "goreka has web-1 OUT_OF_SERVICE", func() (bool, string) {
		st := status("web-1")
		return st == "OUT_OF_SERVICE", st
	}); err != nil {
		t.Fatal(err)
	}
	imported, f0 := time.Since(t0), fetches()
	for {
		n := fetches() - f0
		got, last := caller.seenCount("web")
		if got == 1 {
			t.Logf("web-1 not ready: OUT_OF_SERVICE in goreka after %v, out of the app's instances after %v (%d fetches after goreka's change)",
				imported.Round(time.Millisecond), time.Since(t0).Round(time.Millisecond), n)
			break
		}
		if n >= 3 {
			t.Fatalf("the app still lists %s of web after %d registry fetches since goreka had web-1 OUT_OF_SERVICE, want it gone within one refresh\n%s",
				last, n, caller.proxy.Recent())
		}
		if time.Since(t0) > 30*time.Second {
			t.Fatalf("the app made %d fetches in 30 s and still lists %s of web", n, last)
		}
		time.Sleep(50 * time.Millisecond)
	}
	run := 0
	if err := waitFor(30*time.Second, "20 calls in a row to web-0 only", func() (bool, string) {
		code, body := caller.get("/call/web")
		if code == http.StatusOK && body == "web-0" {
			run++
		} else {
			run = 0
		}
		return run >= 20, fmt.Sprintf("%d %q", code, body)
	}); err != nil {
		t.Fatal(err)
	}

	// goreka restarted while the API server is away too, so that what it
	// serves after the restart can come from its snapshot only
	// (goreka.snapshot.path keeps the imported instances): the app never
	// lists fewer than both endpoints, while goreka is down (its client
	// keeps its copy) and through its first fetches after the restart,
	// and every call succeeds.
	update(true)
	if err := waitSeen(caller, "web", 2, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	api.Stop()
	if err := g.stop(syscall.SIGTERM, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	restarted := make(chan error, 1)
	go func() { restarted <- startGoreka("goreka-restarted.log") }()
	okFetches := func() int {
		c := caller.proxy.Snapshot()
		return c["GET apps/ 200"] + c["GET apps/delta 200"]
	}
	var after int
	// Bounded: goreka may restart in its minute and the app fetch five
	// times in far less; a restart that never gets there fails here with
	// what it got to, not at the go test timeout.
	end := time.Now().Add(2 * time.Minute)
	for up := false; ; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("goreka restarted (up %v): %d successful registry fetches of the app in 2 minutes since, want 5\n%s\n%s",
				up, okFetches()-after, caller.proxy.Recent(), proctest.Tail(filepath.Join(out, "goreka-restarted.log"), 30))
		}
		if !up {
			select {
			case err := <-restarted:
				if err != nil {
					t.Fatal(err)
				}
				up, after = true, okFetches()
			default:
			}
		}
		if got, last := caller.seenCount("web"); got != 2 {
			t.Fatalf("goreka restarted (up %v): the app lists %s of web, want both\n%s", up, last, caller.proxy.Recent())
		}
		if code, body := caller.get("/call/web"); code != http.StatusOK {
			t.Fatalf("goreka restarted (up %v): GET /call/web %d %q", up, code, body)
		}
		if up && okFetches()-after >= 5 {
			break
		}
	}
	if st0, st1 := status("web-0"), status("web-1"); st0 != "UP" || st1 != "UP" {
		t.Fatalf("after the restart goreka has web-0 %q, web-1 %q", st0, st1)
	}
}
