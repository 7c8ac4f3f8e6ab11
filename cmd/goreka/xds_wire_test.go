package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"io"
	"log/slog"
	"testing"
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"
)

type basicCreds string

func (b basicCreds) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Basic " + base64.StdEncoding.EncodeToString([]byte(b))}, nil
}
func (basicCreds) RequireTransportSecurity() bool { return true }

// TestXDSPortHasTheMainPortsTLSAndUsers: the xDS port serves the main
// port's certificate and requires the users of spring.security.user and
// goreka.security.read-only-user.
func TestXDSPortHasTheMainPortsTLSAndUsers(t *testing.T) {
	certFile, keyFile, cert := selfSigned(t)
	cfg := loadConfig(t, "--goreka.xds.enabled=true", "--server.ssl.certificate=file:"+certFile, "--server.ssl.certificate-private-key="+keyFile,
		"--spring.security.user.name=eureka", "--spring.security.user.password=s3cret",
		"--goreka.security.read-only-user=viewer", "--goreka.security.read-only-password=look")
	a, err := newApp(cfg, slog.New(slog.DiscardHandler), time.Now) // the xDS port asks the main port's edge
	if err != nil {
		t.Fatal(err)
	}
	s := a.xds
	if err := s.Start(t.Context(), "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	call := func(opts ...grpc.DialOption) error {
		cc, err := grpc.NewClient(s.Addr().String(), append(opts, grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{RootCAs: pool})))...)
		if err != nil {
			t.Fatal(err)
		}
		defer cc.Close()
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		defer cancel()
		st, err := discovery.NewAggregatedDiscoveryServiceClient(cc).StreamAggregatedResources(ctx)
		if err != nil {
			return err
		}
		if err := st.Send(&discovery.DiscoveryRequest{Node: &core.Node{Id: "e"}, TypeUrl: resource.ClusterType}); err != nil && err != io.EOF {
			return err
		}
		_, err = st.Recv() // after an io.EOF from Send too: the stream's status
		return err
	}
	for _, up := range []string{"eureka:s3cret", "viewer:look"} {
		if err := call(grpc.WithPerRPCCredentials(basicCreds(up))); err != nil {
			t.Errorf("TLS with %s: %v", up, err)
		}
	}
	if err := call(); status.Code(err) != codes.Unauthenticated {
		t.Errorf("TLS without credentials: %v, want Unauthenticated", err)
	}
}
