package interop

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/goreka/goreka/registry"
	"github.com/goreka/goreka/xds"
)

// envoyTLSBootstrap is envoyBootstrap with TLS to goreka's xDS port
// (trusting the CA file %[2]s) and the credentials %[3]s in the ADS
// stream's initial metadata.
const envoyTLSBootstrap = `
node: {id: interop-envoy-tls, cluster: interop}
admin:
  address: {socket_address: {address: 127.0.0.1, port_value: 0}}
dynamic_resources:
  ads_config:
    api_type: GRPC
    transport_api_version: V3
    grpc_services:
    - envoy_grpc: {cluster_name: goreka_xds}
      initial_metadata: [{key: authorization, value: "Basic %[3]s"}]
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
    transport_socket:
      name: envoy.transport_sockets.tls
      typed_config:
        "@type": type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext
        common_tls_context:
          alpn_protocols: [h2]
          validation_context: {trusted_ca: {filename: %[2]s}}
    load_assignment:
      cluster_name: goreka_xds
      endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: %[1]d}}}}]}]
` + envoyWebListener

// TestXDSEnvoyOverTLSWithCredentials: with TLS and users, a real Envoy that
// trusts the certificate and sends Basic credentials in its ADS stream's
// initial_metadata gets its clusters and reaches the backends; the same
// Envoy with a wrong password gets none and is logged as refused.
func TestXDSEnvoyOverTLSWithCredentials(t *testing.T) {
	bin := envoyBinary(t)
	cert, caFile := testCA(t)
	var logs syncBuilder
	reg := registry.New(registry.Options{})
	srv := xds.New(xds.Config{ZonePriority: true, HeldAsUnhealthy: true,
		TLS: &tls.Config{Certificates: []tls.Certificate{cert}},
		// goreka wires the main port's edge here (server.Ops.Identify); one
		// user, eureka:s3cret, stands for it.
		Identify: func(h string, _ *tls.ConnectionState) (string, []string, bool) {
			return "eureka", nil, h == "Basic "+base64.StdEncoding.EncodeToString([]byte("eureka:s3cret"))
		},
		Logger: newTextLogger(&logs)})
	srv.Attach("default", reg)
	if err := srv.Start(t.Context(), "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	registerWeb(t, reg)
	port := srv.Addr().(*net.TCPAddr).Port

	bad := base64.StdEncoding.EncodeToString([]byte("eureka:wrong"))
	badAdmin, _ := runEnvoyWith(t, bin, fmt.Sprintf(envoyTLSBootstrap, port, caFile, bad))
	good := base64.StdEncoding.EncodeToString([]byte("eureka:s3cret"))
	admin, listener := runEnvoyWith(t, bin, fmt.Sprintf(envoyTLSBootstrap, port, caFile, good))
	waitAllReached(t, admin, listener)

	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(logs.String(), "xds call refused") {
		if time.Now().After(deadline) {
			t.Fatalf("no refusal logged for the Envoy with a wrong password:\n%s", logs.String())
		}
		time.Sleep(20 * time.Millisecond) // polling an external process's retries
	}
	if clusters, _ := get(badAdmin + "/clusters"); strings.Contains(clusters, "web::") {
		t.Errorf("the Envoy with a wrong password has the cluster web:\n%s", clusters)
	}
}

// testCA is a self-signed certificate for 127.0.0.1 and the PEM file of it.
func testCA(t *testing.T) (tls.Certificate, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "goreka-xds-interop"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, IsCA: true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, file
}

// syncBuilder is a strings.Builder safe for a logger's goroutines.
type syncBuilder struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuilder) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuilder) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func newTextLogger(w io.Writer) *slog.Logger { return slog.New(slog.NewTextHandler(w, nil)) }
