//go:build compat

package suite

import (
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
// namespace. web-1 turning not ready leaves the app's load balancer.
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
	g, err := ps.start("goreka", filepath.Join(t.TempDir(), "goreka.log"), t.TempDir(), nil, bin,
		"--server.port="+strconv.Itoa(port), "--server.address=127.0.0.1", "--eureka.client.service-url.defaultZone=",
		"--eureka.client.register-with-eureka=false", "--goreka.kubernetes.enabled=true",
		"--goreka.kubernetes.kubeconfig="+api.Kubeconfig(kubetest.Admin), "--goreka.kubernetes.import.enabled=true")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = g.stop(syscall.SIGTERM, 10*time.Second) }()
	if err := g.WaitListening(fmt.Sprintf("127.0.0.1:%d", port), time.Minute); err != nil {
		t.Fatal(err)
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
	cur, err := admin.DiscoveryV1().EndpointSlices("shop").Get(ctx, "web-abc", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s := slice(false)
	s.ResourceVersion = cur.ResourceVersion
	if _, err := admin.DiscoveryV1().EndpointSlices("shop").Update(ctx, s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The Spring client refreshes every second (the agent's
	// registry-fetch-interval-seconds): then every call is web-0's.
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
}
