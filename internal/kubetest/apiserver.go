package kubetest

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/goreka/goreka/internal/proctest"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Users every API server knows (static tokens, kube-apiserver
// --token-auth-file): Admin is in system:masters; the others have no
// rights until a test grants them some with RBAC objects.
const (
	Admin  = "admin"
	Goreka = "goreka"
	Nobody = "nobody"
)

// Tools is the directory holding bin/kube-apiserver and bin/etcd.
func Tools() string {
	if d := os.Getenv("K8S_TOOLS"); d != "" {
		return d
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "goreka-k8s", "v1.37.2")
}

// APIServer is a running etcd and kube-apiserver.
type APIServer struct {
	t    testing.TB
	dir  string
	port int
	etcd *proctest.Proc
	kas  *proctest.Proc
	args []string
}

// Start runs etcd and kube-apiserver (authorization mode RBAC) on
// loopback ports and waits until the API server is ready; both stop when
// the test ends. It skips the test when the binaries are missing, unless
// Required.
func Start(t testing.TB) *APIServer {
	t.Helper()
	bin := filepath.Join(Tools(), "bin")
	for _, b := range []string{"etcd", "kube-apiserver"} {
		if _, err := os.Stat(filepath.Join(bin, b)); err != nil {
			unavailable(t, fmt.Sprintf("%s/%s missing: run .ci/k8s-tools.sh (or set K8S_TOOLS)", bin, b))
		}
	}
	dir := t.TempDir()
	s := &APIServer{t: t, dir: dir}
	etcdClient, etcdPeer := proctest.Port(t), proctest.Port(t)
	s.port = proctest.Port(t)
	cu := "http://127.0.0.1:" + strconv.Itoa(etcdClient)
	pu := "http://127.0.0.1:" + strconv.Itoa(etcdPeer)
	var err error
	s.etcd, err = proctest.Start(proctest.Options{Name: "etcd", Path: filepath.Join(bin, "etcd"),
		Args: []string{"--name=default", "--data-dir=" + filepath.Join(dir, "etcd"),
			"--listen-client-urls=" + cu, "--advertise-client-urls=" + cu,
			"--listen-peer-urls=" + pu, "--initial-advertise-peer-urls=" + pu,
			"--initial-cluster=default=" + pu, "--unsafe-no-fsync", "--log-level=warn"},
		LogFile: filepath.Join(dir, "etcd.log")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.etcd.Stop(syscall.SIGTERM, 10*time.Second) })
	if err := s.etcd.WaitListening("127.0.0.1:"+strconv.Itoa(etcdClient), 30*time.Second); err != nil {
		t.Fatalf("etcd: %v\n%s", err, s.etcd.Tail(20))
	}

	saKey := filepath.Join(dir, "sa.key")
	writeKey(t, saKey)
	var tokens strings.Builder
	for _, u := range []string{Admin, Goreka, Nobody} {
		groups := ""
		if u == Admin {
			groups = "system:masters"
		}
		fmt.Fprintf(&tokens, "%s,%s,%s,\"%s\"\n", Token(u), u, u, groups)
	}
	tokenFile := filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(tokenFile, []byte(tokens.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	s.args = []string{
		"--etcd-servers=" + cu,
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", "--secure-port=" + strconv.Itoa(s.port),
		"--cert-dir=" + filepath.Join(dir, "certs"),
		"--token-auth-file=" + tokenFile,
		"--authorization-mode=RBAC",
		"--service-cluster-ip-range=10.0.0.0/24",
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file=" + saKey, "--service-account-signing-key-file=" + saKey,
		"--disable-admission-plugins=ServiceAccount",
		"--allow-privileged=true", "--v=0",
		// The kubernetes Service's endpoints would be this loopback address,
		// which the API server itself refuses.
		"--endpoint-reconciler-type=none",
	}
	s.startAPIServer()
	t.Cleanup(s.Stop)
	return s
}

// Required reports whether a test that cannot have its API server or
// network namespace must fail instead of skipping: under CI=true, and
// whenever K8S_TOOLS names the tools' directory (.ci/run exports it, so
// CI cannot skip the bridge's tests silently whatever its environment
// says; only a developer machine without the tools skips).
func Required() bool { return os.Getenv("CI") == "true" || os.Getenv("K8S_TOOLS") != "" }

// unavailable fails the test with msg when Required, else skips it.
func unavailable(t testing.TB, msg string) {
	t.Helper()
	if Required() {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// Token is a user's bearer token.
func Token(user string) string { return user + "-token" }

func writeKey(t testing.TB, path string) {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	b := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)})
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func (s *APIServer) startAPIServer() {
	s.t.Helper()
	var err error
	s.kas, err = proctest.Start(proctest.Options{Name: "kube-apiserver", Path: filepath.Join(Tools(), "bin", "kube-apiserver"),
		Args: s.args, LogFile: filepath.Join(s.dir, "kube-apiserver.log")})
	if err != nil {
		s.t.Fatal(err)
	}
	c := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	err = s.kas.WaitFor(90*time.Second, "kube-apiserver ready", func() (bool, string) {
		req, _ := http.NewRequest(http.MethodGet, s.URL()+"/readyz", nil)
		req.Header.Set("Authorization", "Bearer "+Token(Admin))
		resp, err := c.Do(req)
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, resp.Status
	})
	if err != nil {
		s.t.Fatalf("%v\n%s", err, s.kas.Tail(30))
	}
}

// URL is the API server's https URL.
func (s *APIServer) URL() string { return "https://127.0.0.1:" + strconv.Itoa(s.port) }

// Stop stops the API server (etcd keeps running); idempotent.
func (s *APIServer) Stop() {
	if s.kas != nil && !s.kas.Exited() {
		_ = s.kas.Stop(syscall.SIGTERM, 20*time.Second)
	}
}

// Restart starts the stopped API server again, on the same address
// against the same etcd, and waits until it is ready.
func (s *APIServer) Restart() {
	s.t.Helper()
	s.Stop()
	s.startAPIServer()
}

// Config is a client configuration for user (Admin, Goreka, Nobody). It
// drops the API server's warnings (core/v1 Endpoints is deprecated: a
// line per write of the export's Endpoints, as goreka's own client does).
func (s *APIServer) Config(user string) *rest.Config {
	return &rest.Config{Host: s.URL(), BearerToken: Token(user),
		TLSClientConfig: rest.TLSClientConfig{Insecure: true}, QPS: 100, Burst: 200,
		WarningHandler: rest.NoWarnings{}}
}

// Client is a clientset for user.
func (s *APIServer) Client(user string) kubernetes.Interface {
	s.t.Helper()
	c, err := kubernetes.NewForConfig(s.Config(user))
	if err != nil {
		s.t.Fatal(err)
	}
	return c
}

// Kubeconfig writes a kubeconfig file for user and returns its path (for
// goreka.kubernetes.kubeconfig or kubectl).
func (s *APIServer) Kubeconfig(user string) string {
	s.t.Helper()
	p := filepath.Join(s.dir, user+".kubeconfig")
	text := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: test
  cluster:
    server: %s
    insecure-skip-tls-verify: true
users:
- name: %s
  user:
    token: %s
contexts:
- name: test
  context: {cluster: test, user: %s}
current-context: test
`, s.URL(), user, Token(user), user)
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		s.t.Fatal(err)
	}
	return p
}
