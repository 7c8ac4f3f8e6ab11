package config

import (
	"path/filepath"
	"strings"
	"testing"
)

// Spring's TLS names in a YAML file, relaxed environment variables and the
// command line all reach tlsconf, with the property names for its errors.
func TestServerTLSProperties(t *testing.T) {
	c := mustLoad(t, []string{"--server.ssl.client-auth=need", "--server.ssl.enabled-protocols=TLSv1.3"},
		[]string{"SERVER_SSL_KEYSTOREPASSWORD=env-secret", "SERVER_SSL_TRUSTSTORETYPE=JKS"},
		map[string]string{"application.yml": "server:\n  ssl:\n    key-store: certs/ks.p12\n    key-alias: web\n    trust-store: /etc/trust.jks\n    ciphers: TLS_AES_128_GCM_SHA256, TLS_AES_256_GCM_SHA384 ,TLS_CHACHA20_POLY1305_SHA256\n"})
	if !c.TLSEnabled() {
		t.Fatal("a key-store does not turn TLS on")
	}
	sc := c.ServerTLS()
	if !filepath.IsAbs(sc.Keys.Store) || !strings.HasSuffix(sc.Keys.Store, "certs/ks.p12") || sc.Keys.Password != "env-secret" || sc.Keys.Alias != "web" {
		t.Errorf("keys %+v", sc.Keys)
	}
	if sc.Trust.Store != "/etc/trust.jks" || sc.Trust.Type != "jks" || sc.ClientAuth != "need" || len(sc.Ciphers) != 3 || sc.Protocols[0] != "TLSv1.3" {
		t.Errorf("server %+v", sc)
	}
	if sc.Keys.Names.Password != "server.ssl.key-store-password" || sc.Trust.Names.Store != "server.ssl.trust-store" {
		t.Errorf("names %+v %+v", sc.Keys.Names, sc.Trust.Names)
	}
	if out := c.Render(); strings.Contains(out, "env-secret") {
		t.Error("--print-config shows the keystore password")
	}
}

func TestSSLBundles(t *testing.T) {
	yml := `spring:
  ssl:
    bundle:
      jks:
        web:
          key:
            alias: goreka
          keystore:
            location: file:/etc/ks.jks
            password: ks-pw
            type: JKS
          truststore:
            location: /etc/trust.p12
          options:
            enabled-protocols: TLSv1.2
      pem:
        mesh:
          keystore:
            certificate: /etc/tls.crt
            private-key: /etc/tls.key
          truststore:
            certificate: /etc/ca.crt
server:
  ssl:
    bundle: web
`
	c := mustLoad(t, nil, nil, map[string]string{"application.yml": yml})
	sc := c.ServerTLS()
	if sc.Keys.Store != "/etc/ks.jks" || sc.Keys.Type != "JKS" || sc.Keys.Password != "ks-pw" || sc.Keys.Alias != "goreka" || sc.Trust.Store != "/etc/trust.p12" ||
		len(sc.Protocols) != 1 || sc.Keys.Names.Password != "spring.ssl.bundle.jks.web.keystore.password" {
		t.Errorf("jks bundle: %+v", sc)
	}
	c = mustLoad(t, []string{"--server.ssl.bundle=mesh"}, nil, map[string]string{"application.yml": yml})
	sc = c.ServerTLS()
	if sc.Keys.Store != "/etc/tls.crt" || sc.Keys.PrivateKey != "/etc/tls.key" || sc.Keys.Type != "PEM" || sc.Trust.Store != "/etc/ca.crt" {
		t.Errorf("pem bundle: %+v", sc)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--server.ssl.bundle=nope"}, `server.ssl.bundle="nope": no such bundle (configured: mesh, web)`},
		{[]string{"--spring.ssl.bundle.jks.web.keystore.colour=red"}, `unknown field "keystore.colour"`},
		{[]string{"--server.ssl.key-store=/x.p12"}, "server.ssl.bundle and server.ssl.certificate or key-store are both set"},
		{[]string{"--server.ssl.client-auth=sometimes"}, "server.ssl.client-auth"},
	} {
		_, err := load(tc.args, nil, setup(t, map[string]string{"application.yml": yml}), fakeHost)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err %v, want %q", tc.args, err, tc.want)
		}
	}
}

func TestClientTLSProperties(t *testing.T) {
	if _, ok := mustLoad(t, nil, nil, nil).ClientTLS(); ok {
		t.Fatal("eureka.client.tls is on by default")
	}
	c := mustLoad(t, nil, []string{"EUREKA_CLIENT_TLS_ENABLED=true", "EUREKA_CLIENT_TLS_KEYSTORE=/c.p12", "EUREKA_CLIENT_TLS_KEYSTOREPASSWORD=pw",
		"EUREKA_CLIENT_TLS_TRUSTSTORE=/t.jks", "EUREKA_CLIENT_TLS_TRUSTSTORETYPE=JKS"}, nil)
	cc, ok := c.ClientTLS()
	if !ok || cc.Keys.Store != "/c.p12" || cc.Keys.Type != "pkcs12" || cc.Keys.Password != "pw" || cc.Trust.Store != "/t.jks" || cc.Trust.Type != "jks" ||
		cc.Trust.Names.Password != "eureka.client.tls.trust-store-password" {
		t.Errorf("client %+v", cc)
	}
	if len(c.Warnings) != 0 {
		t.Errorf("warnings %q", c.Warnings)
	}
}

func TestCertificateSubjectUser(t *testing.T) {
	c := mustLoad(t, []string{"--goreka.security.users[0].name=orders", "--goreka.security.users[0].certificate-subject=orders.svc", "--goreka.security.users[0].apps=ORDERS"}, nil, nil)
	if len(c.Security.Users) != 1 || c.Security.Users[0].CertificateSubject != "orders.svc" || c.Security.Users[0].Password != "" {
		t.Fatalf("users %+v", c.Security.Users)
	}
	_, err := load([]string{"--goreka.security.users[0].name=a", "--goreka.security.users[0].certificate-subject=x",
		"--goreka.security.users[1].name=b", "--goreka.security.users[1].certificate-subject=x"}, nil, setup(t, nil), fakeHost)
	if err == nil || !strings.Contains(err.Error(), `certificate-subject "x" is user "a"'s too`) {
		t.Errorf("err %v", err)
	}
	_, err = load([]string{"--goreka.security.users[0].name=a"}, nil, setup(t, nil), fakeHost)
	if err == nil || !strings.Contains(err.Error(), "needs a password or a certificate-subject") {
		t.Errorf("err %v", err)
	}
}

// A certificate user with TLS on but no trust store of the server's own
// would be named by any certificate the system's roots verify: refused.
func TestCertificateSubjectNeedsATrustStore(t *testing.T) {
	files := map[string]string{"tls.crt": "x", "tls.key": "x", "ca.crt": "x"}
	base := []string{"--server.ssl.certificate=tls.crt", "--server.ssl.certificate-private-key=tls.key", "--server.ssl.client-auth=want",
		"--goreka.security.users[0].name=orders", "--goreka.security.users[0].certificate-subject=orders.svc"}
	_, err := load(base, nil, setup(t, files), fakeHost)
	if err == nil || !strings.Contains(err.Error(), "goreka.security.users[0].certificate-subject=\"orders.svc\" needs server.ssl.trust-store") {
		t.Errorf("without a trust store: %v", err)
	}
	if _, err := load(append(base, "--server.ssl.trust-certificate=ca.crt"), nil, setup(t, files), fakeHost); err != nil {
		t.Errorf("with one: %v", err)
	}
}

// A misspelt server.ssl property is named in the warnings (a silently
// dropped client-auth would serve without client certificates), and a
// Spring Boot one goreka has no use for says so.
func TestServerSSLUnknownPropertiesWarn(t *testing.T) {
	c := mustLoad(t, []string{"--server.ssl.client-auht=need", "--server.ssl.protocol=TLS", "--server.ssl.client-auth=want"}, []string{"SERVER_SSL_KEYSTOREPROVIDER=SUN"}, nil)
	want := []string{"server.ssl.client-auht (command line): unknown property; did you mean server.ssl.client-auth?",
		"server.ssl.protocol (command line): a Spring Boot property that goreka ignores; goreka speaks TLS",
		"(environment variable SERVER_SSL_KEYSTOREPROVIDER): a Spring Boot property that goreka ignores"}
	all := strings.Join(c.Warnings, "\n")
	for _, w := range want {
		if !strings.Contains(all, w) {
			t.Errorf("warnings lack %q:\n%s", w, all)
		}
	}
	if strings.Contains(all, "server.ssl.client-auth ") {
		t.Errorf("a known property warned:\n%s", all)
	}
}

// server.ssl.enabled=false turns a configured keystore off (plain HTTP), as
// in Spring Boot; the eureka.client.tls side is its own.
func TestServerSSLEnabledFalse(t *testing.T) {
	args := []string{"--server.ssl.key-store=/etc/ks.p12", "--server.ssl.key-store-password=pw"}
	if c := mustLoad(t, args, nil, nil); !c.TLSEnabled() {
		t.Fatal("a key-store does not turn TLS on")
	}
	c := mustLoad(t, args, []string{"SERVER_SSL_ENABLED=false"}, nil)
	if c.TLSEnabled() {
		t.Fatal("server.ssl.enabled=false still serves TLS")
	}
}
