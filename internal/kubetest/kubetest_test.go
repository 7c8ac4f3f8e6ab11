package kubetest

import (
	"fmt"
	"io"
	"net/http"
	"runtime"
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

// outcome is a testing.TB that records whether Start failed or skipped
// (and stops the goroutine there, as both do).
type outcome struct {
	testing.TB
	failed, skipped bool
}

func (o *outcome) Helper()      {}
func (o *outcome) Fatal(...any) { o.failed = true; runtime.Goexit() }
func (o *outcome) Skip(...any)  { o.skipped = true; runtime.Goexit() }

func startWithout(t *testing.T) *outcome {
	o := &outcome{TB: t}
	done := make(chan struct{})
	go func() { defer close(done); Start(o) }()
	<-done
	return o
}

// Missing binaries fail the test where they are required (CI=true, or
// K8S_TOOLS naming their directory, as .ci/run does) and skip it only on
// a machine that never asked for them.
func TestMissingToolsFailWhenRequired(t *testing.T) {
	empty := t.TempDir()
	t.Setenv("HOME", empty) // the default directory is missing too
	t.Setenv("CI", "")
	t.Setenv("K8S_TOOLS", "")
	if o := startWithout(t); !o.skipped || o.failed {
		t.Errorf("no tools, nothing required: skipped %v failed %v, want a skip", o.skipped, o.failed)
	}
	t.Setenv("K8S_TOOLS", empty)
	if o := startWithout(t); !o.failed {
		t.Errorf("K8S_TOOLS=%s without the binaries: skipped %v failed %v, want a failure", empty, o.skipped, o.failed)
	}
	t.Setenv("K8S_TOOLS", "")
	t.Setenv("CI", "true")
	if o := startWithout(t); !o.failed {
		t.Errorf("CI=true without the binaries: skipped %v failed %v, want a failure", o.skipped, o.failed)
	}
}
