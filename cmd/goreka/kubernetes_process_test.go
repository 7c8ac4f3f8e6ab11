package main

// Process-level test of the Kubernetes import (goreka.kubernetes.import,
// package kube/importer) against a real kube-apiserver
// (internal/kubetest): a goreka restart drops no imported instance. The
// endpoints' addresses (10.244.204.x) are data here, never dialled; the
// API server accepts them because they are not loopback.

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/goreka/goreka/internal/kubetest"
	"github.com/goreka/goreka/kube"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestKubernetesImportSurvivesRestart(t *testing.T) {
	api := kubetest.Start(t)
	admin := api.Client(kubetest.Admin)
	ctx := t.Context()
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ready := true
	slice := func(ids ...string) *discoveryv1.EndpointSlice {
		s := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "web-a", Labels: map[string]string{kube.LabelServiceName: "web"}},
			AddressType: discoveryv1.AddressTypeIPv4, Ports: []discoveryv1.EndpointPort{{Port: new(int32(8080))}}}
		for i, id := range ids {
			s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{"10.244.204." + string(rune('1'+i))},
				Conditions: discoveryv1.EndpointConditions{Ready: &ready}, TargetRef: &corev1.ObjectReference{Kind: "Pod", Name: id}})
		}
		return s
	}
	if _, err := admin.DiscoveryV1().EndpointSlices("shop").Create(ctx, slice("web-0", "web-1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	port := freePort(t, "127.0.0.1")
	n := processNode(t, "K", "127.0.0.1", port, standaloneArgs("127.0.0.1", port,
		"--goreka.snapshot.path="+filepath.Join(t.TempDir(), "registry.snapshot"),
		"--goreka.kubernetes.enabled=true", "--goreka.kubernetes.kubeconfig="+api.Kubeconfig(kubetest.Admin),
		"--goreka.kubernetes.import.enabled=true", "--goreka.kubernetes.resync-grace=20s")...) // a loaded machine reads within it
	n.start()
	n.waitServing()
	both := map[string]string{"WEB/web-0": "UP", "WEB/web-1": "UP"}
	waitUntil(t, "both imported", 30*time.Second, func() (bool, string) {
		got, code := appInstances(n, "WEB")
		return maps.Equal(got, both), http.StatusText(code)
	})
	n.stop()
	// While goreka is down, web-1 goes: the restarted goreka serves it
	// from its snapshot until its informers synced and the grace passed.
	cur, err := admin.DiscoveryV1().EndpointSlices("shop").Get(ctx, "web-a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s := slice("web-0")
	s.ResourceVersion = cur.ResourceVersion
	if _, err := admin.DiscoveryV1().EndpointSlices("shop").Update(ctx, s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	n.start()
	n.waitServing()
	if got, _ := appInstances(n, "WEB"); !maps.Equal(got, both) {
		t.Fatalf("first read after the restart: %v, want both (nothing dropped before the sync and the grace)", got)
	}
	waitUntil(t, "web-1 withdrawn after the grace", 60*time.Second, func() (bool, string) {
		got, _ := appInstances(n, "WEB")
		return maps.Equal(got, map[string]string{"WEB/web-0": "UP"}), ""
	})
	if m := scrape(t, n); m["goreka_kubernetes_imported_instances"] != 1 {
		t.Errorf("goreka_kubernetes_imported_instances = %v", m["goreka_kubernetes_imported_instances"])
	}
}

// shopInstances is GET /ns/shop/eureka/apps/WEB on n as "WEB/id" ->
// status (nil and the code unless 200).
func shopInstances(n *node) (map[string]string, int) {
	code, body, err := do("GET", "http://"+n.addr()+"/ns/shop/eureka/apps/WEB", "")
	if err != nil || code != http.StatusOK {
		return nil, code
	}
	var doc struct {
		Application struct {
			Instance []struct{ InstanceID, Status string }
		}
	}
	if json.Unmarshal(body, &doc) != nil {
		return nil, -1
	}
	out := map[string]string{}
	for _, in := range doc.Application.Instance {
		out["WEB/"+in.InstanceID] = in.Status
	}
	return out, code
}

// Both directions on, Services imported into the goreka namespace of
// their Kubernetes namespace (goreka.kubernetes.import.namespace-mode=
// namespaces), the API server goes away for longer than the export
// Lease's renew deadline (10 s) and comes back: goreka keeps serving all
// along (its imported instances, a client registering and reading,
// readiness), drops nothing imported while the API server is away, gives
// up the Lease (goreka_kubernetes_leader 0) instead of exiting, and once
// it is back writes what changed meanwhile and applies the Service's new
// slice.
func TestKubernetesOutageKeepsServing(t *testing.T) {
	t.Parallel() // ~65 s, most of it waiting on the outage and client-go's backoff
	api := kubetest.Start(t)
	admin := api.Client(kubetest.Admin)
	ctx := t.Context()
	for _, ns := range []string{"shop", "bridge"} {
		if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	ready := true
	slice := func(ids ...string) *discoveryv1.EndpointSlice {
		s := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "web-a", Labels: map[string]string{kube.LabelServiceName: "web"}},
			AddressType: discoveryv1.AddressTypeIPv4, Ports: []discoveryv1.EndpointPort{{Port: new(int32(8080))}}}
		for i, id := range ids {
			s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{"10.244.206." + string(rune('1'+i))},
				Conditions: discoveryv1.EndpointConditions{Ready: &ready}, TargetRef: &corev1.ObjectReference{Kind: "Pod", Name: id}})
		}
		return s
	}
	if _, err := admin.DiscoveryV1().EndpointSlices("shop").Create(ctx, slice("web-0", "web-1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	port := freePort(t, "127.0.0.1")
	n := processNode(t, "K", "127.0.0.1", port, standaloneArgs("127.0.0.1", port,
		"--goreka.kubernetes.enabled=true", "--goreka.kubernetes.kubeconfig="+api.Kubeconfig(kubetest.Admin),
		"--goreka.kubernetes.import.enabled=true", "--goreka.kubernetes.import.namespaces=shop",
		"--goreka.kubernetes.import.namespace-mode=namespaces", "--goreka.namespaces.allowed=shop",
		"--goreka.kubernetes.export.enabled=true", "--goreka.kubernetes.export.namespace=bridge",
		"--goreka.kubernetes.resync-grace=1s")...)
	n.start()
	n.waitServing()
	register(t, n, "ORDERS", "orders-1", 30, 90) // ipAddr 10.9.8.7
	exported := func(svc string) bool {
		ep, err := admin.CoreV1().Endpoints("bridge").Get(context.Background(), svc, metav1.GetOptions{})
		return err == nil && len(ep.Subsets) == 1 && len(ep.Subsets[0].Addresses) == 1 && ep.Subsets[0].Addresses[0].IP == "10.9.8.7"
	}
	both := map[string]string{"WEB/web-0": "UP", "WEB/web-1": "UP"}
	waitUntil(t, "web imported into /ns/shop/ and orders exported", 60*time.Second, func() (bool, string) {
		got, _ := shopInstances(n)
		return maps.Equal(got, both) && exported("orders"), fmt.Sprint(got)
	})
	if got, code := appInstances(n, "WEB"); code != http.StatusNotFound {
		t.Fatalf("web in the default namespace too: %d %v", code, got)
	}

	if m := scrape(t, n); m["goreka_kubernetes_leader"] != 1 {
		t.Fatalf("before the outage: goreka_kubernetes_leader %v, want 1", m["goreka_kubernetes_leader"])
	}
	// Through the outage (its start, the API server's own shutdown,
	// included) goreka serves both imported instances and is ready; polled
	// until the API server is gone, then until the leader has given the
	// Lease up (its renew deadline of 10 s passed without a renewal, on
	// client-go's timers: up to 20 s) and the outage has lasted longer than
	// that deadline.
	serving := func() {
		if got, code := shopInstances(n); !maps.Equal(got, both) {
			t.Fatalf("API server away: GET /ns/shop/eureka/apps/WEB %d %v, want both imported instances", code, got)
		}
		if code, _, err := do("GET", "http://"+n.addr()+"/actuator/health/readiness", ""); err != nil || code != http.StatusOK {
			t.Fatalf("API server away: readiness %d %v", code, err)
		}
	}
	down, stopped := time.Now(), make(chan struct{})
	go func() { defer close(stopped); api.Stop() }()
	t.Cleanup(func() { <-stopped }) // before kubetest's own cleanup stops it
	waitUntil(t, "the API server stopped", 30*time.Second, func() (bool, string) {
		serving()
		select {
		case <-stopped:
			return true, ""
		default:
			return false, "stopping"
		}
	})
	stop := time.Since(down)
	waitUntil(t, "API server away: goreka_kubernetes_leader 0", 20*time.Second, func() (bool, string) {
		serving()
		m := scrape(t, n)
		return m["goreka_kubernetes_leader"] == 0 && time.Since(down) > 12*time.Second,
			fmt.Sprintf("leader %v after %v", m["goreka_kubernetes_leader"], time.Since(down).Round(100*time.Millisecond))
	})
	t.Logf("API server away: stopped in %v, outage checked for %v", stop.Round(100*time.Millisecond), time.Since(down).Round(100*time.Millisecond))
	register(t, n, "PAYMENTS", "payments-1", 30, 90)
	if got, _ := appInstances(n, "PAYMENTS"); got["PAYMENTS/payments-1"] != "UP" {
		t.Fatalf("registered while the API server is away: %v", got)
	}
	m := scrape(t, n)
	if m["goreka_kubernetes_leader"] != 0 || m["goreka_kubernetes_sync_errors_total"] == 0 || m["goreka_kubernetes_imported_instances"] != 2 {
		t.Errorf("API server away: leader %v, sync errors %v, imported %v; want 0, some, 2",
			m["goreka_kubernetes_leader"], m["goreka_kubernetes_sync_errors_total"], m["goreka_kubernetes_imported_instances"])
	}
	if code, page, err := do("GET", "http://"+n.addr()+"/", ""); err != nil || code != http.StatusOK ||
		!strings.Contains(string(page), "2 instances from EndpointSlices") || !strings.Contains(string(page), "standby: not holding the export Lease") {
		t.Errorf("API server away: the dashboard (%d, %v) shows no import of 2 instances or no export on standby", code, err)
	}
	if !n.alive() {
		t.Fatal("goreka exited while the API server was away")
	}

	api.Restart()
	cur, err := admin.DiscoveryV1().EndpointSlices("shop").Get(ctx, "web-a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s := slice("web-0")
	s.ResourceVersion = cur.ResourceVersion
	if _, err := admin.DiscoveryV1().EndpointSlices("shop").Update(ctx, s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "back: payments exported, leader again, web-1 withdrawn", 90*time.Second, func() (bool, string) {
		got, _ := shopInstances(n)
		m := scrape(t, n)
		return exported("payments") && exported("orders") && m["goreka_kubernetes_leader"] == 1 &&
				maps.Equal(got, map[string]string{"WEB/web-0": "UP"}),
			fmt.Sprintf("web %v, payments exported %v, leader %v", got, exported("payments"), m["goreka_kubernetes_leader"])
	})
}
