// Package kubetest runs a real kube-apiserver and etcd for the Kubernetes
// bridge's tests (issue 27), from the binaries .ci/k8s-tools.sh builds
// once per machine into $K8S_TOOLS/bin (default
// $HOME/.cache/goreka-k8s/v1.37.2/bin). Without them a test is skipped,
// or fails when Required (CI=true, or K8S_TOOLS set).
//
// It is its own launcher, not controller-runtime's envtest: the bridge's
// tests need RBAC with users of their own (a static token file, so that a
// user without rights gets the real 403), an API server stopped and
// started again on the same address against the same etcd (an outage),
// and nothing of controller-runtime in goreka's go.mod; envtest starts
// the same two binaries with flags much like these.
//
// The API server refuses loopback addresses in EndpointSlices and
// Endpoints (422), so NetNS makes a network namespace with a veth pair:
// endpoints listen on its non-loopback addresses (10.244.N.x) and are
// reached from the root namespace through the veth's host end. Test
// support: imported by test files only.
package kubetest
