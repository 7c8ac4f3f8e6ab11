package xds

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/goreka/goreka/registry"
	"github.com/goreka/goreka/registry/clocktest"
)

// selfSigned is a certificate for 127.0.0.1 and the pool that trusts it.
func selfSigned(t *testing.T) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "goreka-xds-test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, IsCA: true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, pool
}

// basic is call credentials sending authorization: Basic user:pass.
type basic struct{ user, pass string }

func (b basic) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Basic " + base64.StdEncoding.EncodeToString([]byte(b.user+":"+b.pass))}, nil
}
func (basic) RequireTransportSecurity() bool { return true }

// cds opens an ADS stream with opts and asks for the clusters: the first
// answer's error, if any.
func cds(t *testing.T, addr string, opts ...grpc.DialOption) error {
	t.Helper()
	return cdsAs(t, addr, node("e"), opts...)
}

// cdsAs is cds for node n.
func cdsAs(t *testing.T, addr string, n *core.Node, opts ...grpc.DialOption) error {
	t.Helper()
	cc, err := grpc.NewClient(addr, opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	ctx, cancel := context.WithTimeout(t.Context(), wait)
	defer cancel()
	st, err := discovery.NewAggregatedDiscoveryServiceClient(cc).StreamAggregatedResources(ctx)
	if err != nil {
		return err
	}
	if err := st.Send(&discovery.DiscoveryRequest{Node: n, TypeUrl: resource.ClusterType}); err != nil && err != io.EOF {
		return err
	}
	_, err = st.Recv() // after an io.EOF from Send too: the stream's status
	return err
}

// With the main port's certificate source and users, the xDS port serves
// TLS with that certificate, and a grpc-go client is served only with
// valid Basic credentials; refusals are logged at most once per 10 s.
func TestTLSAndCredentials(t *testing.T) {
	cert, pool := selfSigned(t)
	var handshakes atomic.Int64
	var logs strings.Builder
	clock := clocktest.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	f := newFixture(t, Config{
		TLS:      &tls.Config{GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { handshakes.Add(1); return &cert, nil }},
		Identify: basicUsers(map[string]string{"eureka": "s3cret", "viewer": "look"}, nil),
		Logger:   slog.New(slog.NewTextHandler(&syncWriter{w: &logs}, nil)),
		Now:      clock.Now,
	})
	f.register(inst("A", "a1", "10.0.0.1"))
	f.sync()
	if err := f.s.Start(t.Context(), "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	addr := f.s.Addr().String()
	tlsCreds := grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{RootCAs: pool}))

	if err := cds(t, addr, tlsCreds, grpc.WithPerRPCCredentials(basic{"eureka", "s3cret"})); err != nil {
		t.Fatalf("TLS with valid credentials: %v", err)
	}
	if err := cds(t, addr, tlsCreds, grpc.WithPerRPCCredentials(basic{"viewer", "look"})); err != nil {
		t.Fatalf("TLS with the second user's credentials: %v", err)
	}
	if handshakes.Load() == 0 {
		t.Error("the certificate source was never asked")
	}
	for _, tc := range []struct {
		name string
		opts []grpc.DialOption
	}{
		{"no credentials", []grpc.DialOption{tlsCreds}},
		{"a wrong password", []grpc.DialOption{tlsCreds, grpc.WithPerRPCCredentials(basic{"eureka", "nope"})}},
		{"an unknown user", []grpc.DialOption{tlsCreds, grpc.WithPerRPCCredentials(basic{"who", "s3cret"})}},
	} {
		if err := cds(t, addr, tc.opts...); status.Code(err) != codes.Unauthenticated {
			t.Errorf("%s: %v, want Unauthenticated", tc.name, err)
		}
	}
	if err := cds(t, addr, grpc.WithTransportCredentials(insecure.NewCredentials())); err == nil {
		t.Error("a plaintext client was served by the TLS port")
	}
	if n := strings.Count(logs.String(), "xds call refused"); n != 1 {
		t.Errorf("%d refusal log lines for three refusals within 10 s, want 1:\n%s", n, logs.String())
	}
	clock.Advance(refusalEvery)
	if err := cds(t, addr, tlsCreds); status.Code(err) != codes.Unauthenticated {
		t.Errorf("no credentials, later: %v", err)
	}
	if !strings.Contains(logs.String(), "suppressed_since_last=2") {
		t.Errorf("the second refusal line does not count the two suppressed:\n%s", logs.String())
	}
}

// A user restricted to some namespaces (goreka.security.users[N].namespaces)
// cannot read another one by naming it in its node's metadata, over gRPC or
// the REST form; an unrestricted user reads both.
func TestCredentialsKeepAUserToItsNamespaces(t *testing.T) {
	cert, pool := selfSigned(t)
	f := newFixture(t, Config{
		TLS:      &tls.Config{Certificates: []tls.Certificate{cert}},
		Identify: basicUsers(map[string]string{"ops": "all", "team": "dev-only"}, map[string][]string{"team": {"dev"}}),
	})
	f.s.Attach("dev", registry.New(registry.Options{Now: f.clock.Now}))
	f.register(inst("A", "a1", "10.0.0.1"))
	f.sync()
	if err := f.s.Start(t.Context(), "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	addr := f.s.Addr().String()
	tlsCreds := grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{RootCAs: pool}))
	as := func(user, pass string) grpc.DialOption { return grpc.WithPerRPCCredentials(basic{user, pass}) }
	for _, tc := range []struct {
		user, pass, ns string
		want           codes.Code
	}{
		{"team", "dev-only", "dev", codes.OK},
		{"team", "dev-only", "default", codes.PermissionDenied},
		{"ops", "all", "dev", codes.OK},
		{"ops", "all", "default", codes.OK},
	} {
		err := cdsAs(t, addr, node("n-"+tc.user, NodeNamespace, tc.ns), tlsCreds, as(tc.user, tc.pass))
		if status.Code(err) != tc.want {
			t.Errorf("%s reading %s: %v, want %v", tc.user, tc.ns, err, tc.want)
		}
	}
	for _, tc := range []struct {
		user, pass, ns string
		want           int
	}{
		{"team", "dev-only", "default", http.StatusForbidden},
		{"team", "dev-only", "dev", http.StatusOK},
		{"ops", "all", "default", http.StatusOK},
	} {
		body := `{"node": {"id": "r", "metadata": {"goreka.namespace": "` + tc.ns + `"}}}`
		req := httptest.NewRequest(http.MethodPost, resource.FetchClusters, strings.NewReader(body))
		req.SetBasicAuth(tc.user, tc.pass)
		rec := httptest.NewRecorder()
		f.s.Handler().ServeHTTP(rec, req)
		if rec.Code != tc.want {
			t.Errorf("REST: %s reading %s: %d %s, want %d", tc.user, tc.ns, rec.Code, rec.Body, tc.want)
		}
	}
}

// basicUsers is an Identify for tests (the real one is the main port's
// edge, server.Ops.Identify): Basic user:password of users, restricted to
// namespaces[user] when set.
func basicUsers(users map[string]string, namespaces map[string][]string) func(string, *tls.ConnectionState) (string, []string, bool) {
	return func(h string, _ *tls.ConnectionState) (string, []string, bool) {
		b, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(h, "Basic "))
		user, pass, ok := strings.Cut(string(b), ":")
		if err != nil || !ok || users[user] != pass || pass == "" {
			return "", nil, false
		}
		return user, namespaces[user], true
	}
}

// A stream's later request may not switch its node to another namespace:
// go-control-plane would serve that node's resources on the same stream.
func TestStreamMayNotSwitchNamespace(t *testing.T) {
	f := newFixture(t, Config{Identify: func(string, *tls.ConnectionState) (string, []string, bool) { return "team", []string{"dev"}, true }})
	f.s.Attach("dev", registry.New(registry.Options{Now: f.clock.Now}))
	f.register(inst("A", "a1", "10.0.0.1"))
	f.sync()
	if err := f.s.Start(t.Context(), "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	cc, err := grpc.NewClient(f.s.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	ctx, cancel := context.WithTimeout(t.Context(), wait)
	defer cancel()
	st, err := discovery.NewAggregatedDiscoveryServiceClient(cc).StreamAggregatedResources(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Send(&discovery.DiscoveryRequest{Node: node("n", NodeNamespace, "dev"), TypeUrl: resource.ClusterType}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Recv(); err != nil {
		t.Fatalf("dev's clusters for a dev user: %v", err)
	}
	if err := st.Send(&discovery.DiscoveryRequest{Node: node("n", NodeNamespace, "default"), TypeUrl: resource.EndpointType}); err != nil && err != io.EOF {
		t.Fatal(err)
	}
	for {
		r, err := st.Recv()
		if err != nil {
			if status.Code(err) != codes.InvalidArgument {
				t.Fatalf("switching the node to default: %v, want InvalidArgument", err)
			}
			return
		}
		if r.GetTypeUrl() == resource.EndpointType {
			t.Fatalf("served %s to a node that switched namespace", r.GetTypeUrl())
		}
	}
}
