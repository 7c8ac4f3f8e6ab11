package kubetest

import (
	"fmt"
	"io"
	"net/http"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestAPIServer checks what the bridge's tests rely on: the admin writes,
// a user without rights gets 403, loopback endpoint addresses are refused
// (422) and a network namespace's are accepted and reachable.
func TestAPIServer(t *testing.T) {
	s := Start(t)
	ctx := t.Context()
	admin := s.Client(Admin)
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kt"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err := s.Client(Nobody).DiscoveryV1().EndpointSlices("kt").List(ctx, metav1.ListOptions{})
	if !apierrors.IsForbidden(err) {
		t.Fatalf("list as %s: %v, want 403", Nobody, err)
	}
	slice := func(addr string) *discoveryv1.EndpointSlice {
		return &discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{GenerateName: "web-", Labels: map[string]string{discoveryv1.LabelServiceName: "web"}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{addr}}},
		}
	}
	_, err = admin.DiscoveryV1().EndpointSlices("kt").Create(ctx, slice("127.0.0.1"), metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) {
		t.Fatalf("loopback endpoint: %v, want 422", err)
	}

	n := NewNetNS(t, "kt", "10.244.250", 1)
	ln, err := n.Listen(n.Addr(1) + ":8080")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "in the namespace") })}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	if _, err := admin.DiscoveryV1().EndpointSlices("kt").Create(ctx, slice(n.Addr(1)), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get("http://" + n.Addr(1) + ":8080/")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "in the namespace" {
		t.Fatalf("got %q", b)
	}
}
