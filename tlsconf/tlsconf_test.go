package tlsconf

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"log/slog"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	keystore "github.com/pavlo-v-chernykh/keystore-go/v4"
	pkcs12 "software.sslmate.com/src/go-pkcs12"
)

var t0 = time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)

type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

func newCA(t testing.TB, cn string) *testCA {
	t.Helper()
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn},
		NotBefore: t0.Add(-time.Hour), NotAfter: t0.Add(365 * 24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tpl, tpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := x509.ParseCertificate(der)
	return &testCA{c, k}
}

var serial int64 = 100

// leaf issues a certificate for localhost/127.0.0.1 valid from nb to na.
func (ca *testCA) leaf(t testing.TB, cn string, nb, na time.Time) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	serial++
	tpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn},
		NotBefore: nb, NotAfter: na, DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}, KeyUsage: x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tpl, ca.cert, &k.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := x509.ParseCertificate(der)
	return c, k
}

func (ca *testCA) valid(t testing.TB, cn string) (*x509.Certificate, *ecdsa.PrivateKey) {
	return ca.leaf(t, cn, t0.Add(-time.Hour), t0.Add(90*24*time.Hour))
}

func certPEM(cs ...*x509.Certificate) []byte {
	var b bytes.Buffer
	for _, c := range cs {
		pem.Encode(&b, &pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
	}
	return b.Bytes()
}

func keyPEM(k *ecdsa.PrivateKey) []byte {
	der, _ := x509.MarshalPKCS8PrivateKey(k)
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
}

func write(t *testing.T, path string, b []byte) string {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func p12(t *testing.T, c *x509.Certificate, k *ecdsa.PrivateKey, ca *testCA, pw string) []byte {
	t.Helper()
	b, err := pkcs12.Modern.Encode(k, c, []*x509.Certificate{ca.cert}, pw)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func jks(t *testing.T, alias string, c *x509.Certificate, k *ecdsa.PrivateKey, pw, keyPw string, trusted ...*x509.Certificate) []byte {
	t.Helper()
	ks := keystore.New()
	if c != nil {
		der, _ := x509.MarshalPKCS8PrivateKey(k)
		if err := ks.SetPrivateKeyEntry(alias, keystore.PrivateKeyEntry{CreationTime: t0, PrivateKey: der,
			CertificateChain: []keystore.Certificate{{Type: "X509", Content: c.Raw}}}, []byte(keyPw)); err != nil {
			t.Fatal(err)
		}
	}
	for i, tc := range trusted {
		ks.SetTrustedCertificateEntry("ca"+string(rune('a'+i)), keystore.TrustedCertificateEntry{CreationTime: t0, Certificate: keystore.Certificate{Type: "X509", Content: tc.Raw}})
	}
	var b bytes.Buffer
	if err := ks.Store(&b, []byte(pw)); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func now() time.Time { return t0 }

func keysOf(store, typ, pw string) Keys {
	return Keys{Store: store, Type: typ, Password: pw, Names: SpringNames("server.ssl", false)}
}

func TestLoadsEachStoreType(t *testing.T) {
	dir := t.TempDir()
	ca := newCA(t, "ca")
	c, k := ca.valid(t, "goreka")
	crt := write(t, filepath.Join(dir, "tls.crt"), certPEM(c, ca.cert))
	key := write(t, filepath.Join(dir, "tls.key"), keyPEM(k))
	for name, keys := range map[string]Keys{
		"pem":        {Store: crt, PrivateKey: key, Names: SpringNames("server.ssl", false)},
		"pem in one": keysOf(write(t, filepath.Join(dir, "both.pem"), append(certPEM(c), keyPEM(k)...)), "PEM", ""),
		"pkcs12":     keysOf(write(t, filepath.Join(dir, "ks.p12"), p12(t, c, k, ca, "secret")), "PKCS12", "secret"),
		"jks by ext": keysOf(write(t, filepath.Join(dir, "ks.jks"), jks(t, "goreka", c, k, "storepw", "storepw")), "", "storepw"),
	} {
		t.Run(name, func(t *testing.T) {
			got, err := loadKeys(keys, t0)
			if err != nil {
				t.Fatal(err)
			}
			if !got.Leaf.Equal(c) {
				t.Fatalf("leaf %v, want %v", got.Leaf.Subject, c.Subject)
			}
		})
	}
	for name, tr := range map[string]Trust{
		"pem":    {Store: write(t, filepath.Join(dir, "ca.pem"), certPEM(ca.cert))},
		"jks":    {Store: write(t, filepath.Join(dir, "trust.jks"), jks(t, "", nil, nil, "trustpw", "", ca.cert)), Password: "trustpw"},
		"pkcs12": {Store: write(t, filepath.Join(dir, "trust.p12"), mustTrust(t, ca.cert)), Type: "pkcs12", Password: "trustpw"},
	} {
		t.Run("trust "+name, func(t *testing.T) {
			tr.Names = SpringNames("server.ssl", true)
			got, err := loadTrust(tr)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 || !got[0].Equal(ca.cert) {
				t.Fatalf("trust %d certificates", len(got))
			}
		})
	}
}

func mustTrust(t *testing.T, cs ...*x509.Certificate) []byte {
	b, err := pkcs12.Modern.EncodeTrustStore(cs, "trustpw")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Each bad input names the property to fix and says what is wrong.
func TestBadMaterialNamesTheProperty(t *testing.T) {
	dir := t.TempDir()
	ca := newCA(t, "ca")
	c, k := ca.valid(t, "goreka")
	other, otherKey := ca.valid(t, "other")
	_ = other
	expired, ek := ca.leaf(t, "old", t0.Add(-48*time.Hour), t0.Add(-time.Hour))
	early, yk := ca.leaf(t, "early", t0.Add(time.Hour), t0.Add(48*time.Hour))
	p12f := write(t, filepath.Join(dir, "ks.p12"), p12(t, c, k, ca, "secret"))
	jksf := write(t, filepath.Join(dir, "ks.jks"), jks(t, "goreka", c, k, "storepw", "keypw"))
	crt := write(t, filepath.Join(dir, "tls.crt"), certPEM(c))
	for _, tc := range []struct {
		name     string
		keys     Keys
		prop     string
		contains string
	}{
		{"wrong pkcs12 password", keysOf(p12f, "PKCS12", "nope"), "server.ssl.key-store-password", "keystore password was incorrect"},
		{"wrong jks password", keysOf(jksf, "JKS", "nope"), "server.ssl.key-store-password", "keystore password was incorrect"},
		{"wrong jks key password", Keys{Store: jksf, Type: "JKS", Password: "storepw", KeyPassword: "nope", Names: SpringNames("server.ssl", false)}, "server.ssl.key-password", "key entry"},
		{"missing jks alias", Keys{Store: jksf, Type: "JKS", Password: "storepw", KeyPassword: "keypw", Alias: "missing", Names: SpringNames("server.ssl", false)}, "server.ssl.key-alias", "does not contain alias 'missing'"},
		{"missing pkcs12 alias", Keys{Store: p12f, Type: "PKCS12", Password: "secret", Alias: "missing", Names: SpringNames("server.ssl", false)}, "server.ssl.key-alias", "does not contain alias 'missing' (it holds no named key entry)"},
		{"unknown type", keysOf(p12f, "BKS", "secret"), "server.ssl.key-store-type", `unknown store type "BKS"`},
		{"missing file", keysOf(filepath.Join(dir, "none.p12"), "PKCS12", "x"), "server.ssl.key-store", "no such file"},
		{"key does not match", Keys{Store: crt, PrivateKey: write(t, filepath.Join(dir, "other.key"), keyPEM(otherKey)), Names: SpringNames("server.ssl", false)}, "server.ssl.key-store", "does not match"},
		{"expired", Keys{Store: write(t, filepath.Join(dir, "old.crt"), certPEM(expired)), PrivateKey: write(t, filepath.Join(dir, "old.key"), keyPEM(ek)), Names: SpringNames("server.ssl", false)}, "server.ssl.key-store", "expired at"},
		{"not yet valid", Keys{Store: write(t, filepath.Join(dir, "early.crt"), certPEM(early)), PrivateKey: write(t, filepath.Join(dir, "early.key"), keyPEM(yk)), Names: SpringNames("server.ssl", false)}, "server.ssl.key-store", "not valid yet"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewServer(ServerConfig{Keys: tc.keys, Now: now})
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("err %v (%T), want *Error", err, err)
			}
			if e.Property != tc.prop || !strings.Contains(e.Problem, tc.contains) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("got %q, want property %s and %q", err, tc.prop, tc.contains)
			}
		})
	}
}

func TestProtocolsAndCiphers(t *testing.T) {
	for _, tc := range []struct {
		protocols, ciphers []string
		min, max           uint16
		suites             int
		err                string
	}{
		{nil, nil, tls.VersionTLS12, tls.VersionTLS13, 0, ""},
		{[]string{"TLSv1.2"}, nil, tls.VersionTLS12, tls.VersionTLS12, 0, ""},
		{[]string{"TLSv1.3"}, nil, tls.VersionTLS13, tls.VersionTLS13, 0, ""},
		{nil, []string{"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", "tls_ecdhe_rsa_with_aes_256_gcm_sha384"}, tls.VersionTLS12, tls.VersionTLS12, 2, ""},
		{[]string{"TLSv1.2"}, []string{"SSL_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"}, tls.VersionTLS12, tls.VersionTLS12, 1, ""},
		{nil, tls13Suites, tls.VersionTLS13, tls.VersionTLS13, 0, ""},
		{[]string{"SSLv3"}, nil, 0, 0, 0, "server.ssl.enabled-protocols: unknown"},
		{[]string{"TLSv1", "TLSv1.3"}, nil, 0, 0, 0, "gap"},
		{nil, []string{"TLS_FOO_WITH_BAR"}, 0, 0, 0, `server.ssl.ciphers: unknown cipher "TLS_FOO_WITH_BAR"`},
		{nil, []string{"TLS_RSA_WITH_RC4_128_SHA"}, 0, 0, 0, "insecure"},
		{nil, []string{"TLS_AES_128_GCM_SHA256"}, 0, 0, 0, "all TLS 1.3 suites or none"},
		{[]string{"TLSv1.2", "TLSv1.3"}, []string{"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"}, 0, 0, 0, "no TLS 1.3 suite"},
	} {
		c := &tls.Config{}
		err := protocolConfig(c, tc.protocols, tc.ciphers, "server.ssl.enabled-protocols", "server.ssl.ciphers")
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%v %v: err %v, want %q", tc.protocols, tc.ciphers, err, tc.err)
			}
			continue
		}
		if err != nil || c.MinVersion != tc.min || c.MaxVersion != tc.max || len(c.CipherSuites) != tc.suites {
			t.Errorf("%v %v: %x-%x %d suites, err %v", tc.protocols, tc.ciphers, c.MinVersion, c.MaxVersion, len(c.CipherSuites), err)
		}
	}
}

// rig is a server on a TLS listener with its files in a directory laid out
// as a Kubernetes Secret volume: dir/tls.crt -> ..data/tls.crt, ..data ->
// ..<version>.
type rig struct {
	t    *testing.T
	dir  string
	ca   *testCA
	srv  *Server
	ln   net.Listener
	logs *bytes.Buffer
	n    int
	// trust is the ca.crt publish writes: the rig's CA unless a test sets it.
	trust []byte
}

func newRig(t *testing.T, clientAuth string) *rig {
	r := &rig{t: t, dir: t.TempDir(), ca: newCA(t, "ca"), logs: &bytes.Buffer{}}
	c, k := r.ca.valid(t, "first")
	r.publish(certPEM(c), keyPEM(k))
	for _, f := range []string{"tls.crt", "tls.key", "ca.crt"} {
		if err := os.Symlink(filepath.Join("..data", f), filepath.Join(r.dir, f)); err != nil {
			t.Fatal(err)
		}
	}
	srv, err := NewServer(ServerConfig{
		Keys:       Keys{Store: filepath.Join(r.dir, "tls.crt"), PrivateKey: filepath.Join(r.dir, "tls.key"), Names: SpringNames("server.ssl", false)},
		Trust:      Trust{Store: filepath.Join(r.dir, "ca.crt"), Names: SpringNames("server.ssl", true)},
		ClientAuth: clientAuth, Now: now, Logger: slog.New(slog.NewTextHandler(r.logs, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	r.srv = srv
	r.ln, err = tls.Listen("tcp", "127.0.0.1:0", srv.TLSConfig())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.ln.Close() })
	go func() {
		for {
			conn, err := r.ln.Accept()
			if err != nil {
				return
			}
			go io.Copy(conn, conn) // echo
		}
	}()
	return r
}

// publish swaps the files in as kubelet does: a new version directory,
// then the ..data symlink renamed over the old one.
func (r *rig) publish(crt, key []byte) {
	r.n++
	v := filepath.Join(r.dir, "..v"+string(rune('0'+r.n)))
	if err := os.Mkdir(v, 0o755); err != nil {
		r.t.Fatal(err)
	}
	write(r.t, filepath.Join(v, "tls.crt"), crt)
	write(r.t, filepath.Join(v, "tls.key"), key)
	trust := r.trust
	if trust == nil {
		trust = certPEM(r.ca.cert)
	}
	write(r.t, filepath.Join(v, "ca.crt"), trust)
	tmp := filepath.Join(r.dir, "..data_tmp")
	if err := os.Symlink(filepath.Base(v), tmp); err != nil {
		r.t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(r.dir, "..data")); err != nil {
		r.t.Fatal(err)
	}
}

func (r *rig) dial(cert *tls.Certificate) (*tls.Conn, error) {
	cfg := &tls.Config{RootCAs: pool([]*x509.Certificate{r.ca.cert}), ServerName: "localhost", Time: now}
	if cert != nil {
		cfg.Certificates = []tls.Certificate{*cert}
	}
	c, err := tls.Dial("tcp", r.ln.Addr().String(), cfg)
	if err != nil {
		return nil, err
	}
	if _, err := c.Write([]byte("x")); err != nil {
		return nil, err
	}
	_, err = io.ReadFull(c, make([]byte, 1)) // the handshake's client-auth verdict arrives with the first read in TLS 1.3
	return c, err
}

func (r *rig) served() string {
	c, err := r.dial(r.clientCert())
	if err != nil {
		r.t.Fatal(err)
	}
	defer c.Close()
	return c.ConnectionState().PeerCertificates[0].Subject.CommonName
}

func (r *rig) clientCert() *tls.Certificate {
	c, k := r.ca.valid(r.t, "client")
	return &tls.Certificate{Certificate: [][]byte{c.Raw}, PrivateKey: k, Leaf: c}
}

func TestRotationOfASecretVolume(t *testing.T) {
	r := newRig(t, ClientAuthNeed)
	if got := r.served(); got != "first" {
		t.Fatalf("served %s", got)
	}
	open, err := r.dial(r.clientCert())
	if err != nil {
		t.Fatal(err)
	}
	defer open.Close()
	if r.srv.Check() {
		t.Fatal("Check reports a change before any")
	}

	c, k := r.ca.valid(t, "second")
	r.publish(certPEM(c), keyPEM(k))
	if !r.srv.Check() {
		t.Fatal("the swapped Secret was not seen")
	}
	if got := r.served(); got != "second" {
		t.Fatalf("after the swap served %s, want second", got)
	}
	// The connection opened before the swap is still served.
	if _, err := open.Write([]byte("y")); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(open, make([]byte, 1)); err != nil {
		t.Fatalf("open connection dropped: %v", err)
	}
	if exp := r.srv.Expiry()["server"]; !exp.Equal(c.NotAfter) {
		t.Fatalf("expiry %v, want %v", exp, c.NotAfter)
	}

	// A broken new file keeps the old certificate and is logged once.
	_, otherKey := r.ca.valid(t, "third")
	c3, _ := r.ca.valid(t, "third")
	r.publish(certPEM(c3), keyPEM(otherKey))
	if r.srv.Check() || r.srv.Check() {
		t.Fatal("a key that does not match was taken")
	}
	if got := r.served(); got != "second" {
		t.Fatalf("after a bad swap served %s, want second", got)
	}
	if n := strings.Count(r.logs.String(), "refused"); n != 1 {
		t.Fatalf("%d refusal logs, want 1:\n%s", n, r.logs)
	}
	// An expired one too.
	old, ok := r.ca.leaf(t, "old", t0.Add(-48*time.Hour), t0.Add(-time.Hour))
	r.publish(certPEM(old), keyPEM(ok))
	if r.srv.Check() {
		t.Fatal("an expired certificate was taken")
	}
}

func TestClientAuthNeedRefusesAClientWithoutCertificate(t *testing.T) {
	r := newRig(t, ClientAuthNeed)
	if _, err := r.dial(nil); err == nil {
		t.Fatal("a client without a certificate was served")
	}
	other := newCA(t, "other")
	c, k := other.valid(t, "stranger")
	if _, err := r.dial(&tls.Certificate{Certificate: [][]byte{c.Raw}, PrivateKey: k}); err == nil {
		t.Fatal("a client certificate of another CA was accepted")
	}
	w := newRig(t, ClientAuthWant)
	if _, err := w.dial(nil); err != nil {
		t.Fatalf("want: a client without a certificate was refused: %v", err)
	}
}

func TestClientVerifiesTheHostAndRotatesTrust(t *testing.T) {
	r := newRig(t, ClientAuthNone)
	dir := t.TempDir()
	trust := write(t, filepath.Join(dir, "trust.pem"), certPEM(newCA(t, "unrelated").cert))
	cli, err := NewClient(ClientConfig{Trust: Trust{Store: trust, Names: SpringNames("eureka.client.tls", true)}, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	dial := func(name string) error {
		c, err := tls.Dial("tcp", r.ln.Addr().String(), cli.ConfigFor(name))
		if err == nil {
			c.Close()
		}
		return err
	}
	if err := dial("localhost"); err == nil {
		t.Fatal("a server of an untrusted CA was accepted")
	}
	write(t, trust, certPEM(r.ca.cert))
	if !cli.Check() {
		t.Fatal("the new trust store was not seen")
	}
	for _, host := range []string{"localhost", "127.0.0.1"} {
		if err := dial(host); err != nil {
			t.Fatalf("after the trust rotation, %s: %v", host, err)
		}
	}
	for _, host := range []string{"not-the-host.example", "127.0.0.2"} {
		if err := dial(host); err == nil {
			t.Fatalf("the host name %s was not verified", host)
		}
	}
}

// A rotated trust store verifies the next handshakes: clients of the new CA
// get in, the old CA's no longer.
func TestServerTrustRotation(t *testing.T) {
	r := newRig(t, ClientAuthNeed)
	next := newCA(t, "next CA")
	nc, nk := next.valid(t, "next-client")
	nextCert := &tls.Certificate{Certificate: [][]byte{nc.Raw}, PrivateKey: nk}
	if _, err := r.dial(nextCert); err == nil {
		t.Fatal("a client of an untrusted CA got in")
	}
	c, k := r.ca.valid(t, "same")
	r.trust = certPEM(next.cert)
	r.publish(certPEM(c), keyPEM(k))
	if !r.srv.Check() {
		t.Fatal("the new trust store was not taken")
	}
	if _, err := r.dial(nextCert); err != nil {
		t.Fatalf("a client of the new CA: %v", err)
	}
	if _, err := r.dial(r.clientCert()); err == nil {
		t.Fatal("a client of the old CA still got in")
	}
	if exp := r.srv.Expiry()["server-trust"]; !exp.Equal(next.cert.NotAfter) {
		t.Fatalf("server-trust expiry %v, want %v", exp, next.cert.NotAfter)
	}
}

// A keytool PKCS12 keystore that holds its CA as a trusted entry beside the
// key (testdata/keytool-with-ca.p12: keytool -genkeypair -alias web, then
// -importcert -alias zz-ca; valid 2026-01-01 to 2035) opens by key-alias,
// and a wrong alias is named with the store's key entries.
func TestPKCS12KeyAliasBesideATrustedEntry(t *testing.T) {
	store := filepath.Join("testdata", "keytool-with-ca.p12")
	keys := Keys{Store: store, Type: "PKCS12", Password: "changeit", Alias: "WEB", Names: SpringNames("server.ssl", false)}
	got, err := loadKeys(keys, t0)
	if err != nil {
		t.Fatal(err)
	}
	if got.Leaf.Subject.CommonName != "web" {
		t.Fatalf("leaf %v", got.Leaf.Subject)
	}
	keys.Alias = "tomcat"
	_, err = loadKeys(keys, t0)
	var e *Error
	if !errors.As(err, &e) || e.Property != "server.ssl.key-alias" || !strings.Contains(e.Problem, "keystore "+store+" does not contain alias 'tomcat'") || !strings.Contains(e.Problem, "(its key entries: web)") {
		t.Fatalf("wrong alias: %v", err)
	}
}

// A keytool PKCS12 keystore with two key entries (testdata/keytool-two-keys.p12:
// web, self-signed, and api, signed by a CA whose certificate came in the
// reply) gives the entry key-alias names, with its chain; without an alias,
// or with one it does not hold, start-up stops naming the property.
func TestPKCS12KeyAliasPicksOneOfSeveral(t *testing.T) {
	keys := Keys{Store: filepath.Join("testdata", "keytool-two-keys.p12"), Password: "changeit", Alias: "api", Names: SpringNames("server.ssl", false)}
	got, err := loadKeys(keys, t0)
	if err != nil {
		t.Fatal(err)
	}
	if got.Leaf.Subject.CommonName != "api" || len(got.Certificate) != 2 {
		t.Fatalf("leaf %v, chain of %d", got.Leaf.Subject, len(got.Certificate))
	}
	if ca, _ := x509.ParseCertificate(got.Certificate[1]); ca == nil || ca.Subject.CommonName != "keytool test CA" {
		t.Fatalf("chain %v", ca)
	}
	keys.Alias = "web"
	if got, err = loadKeys(keys, t0); err != nil || got.Leaf.Subject.CommonName != "web" || len(got.Certificate) != 1 {
		t.Fatalf("web: %v %v", err, got)
	}
	for alias, want := range map[string][2]string{
		"":       {"server.ssl.key-store", "no key alias names the one"},
		"tomcat": {"server.ssl.key-alias", "keystore testdata/keytool-two-keys.p12 does not contain alias 'tomcat' (its key entries: api, web)"},
	} {
		keys.Alias = alias
		_, err := loadKeys(keys, t0)
		var e *Error
		if !errors.As(err, &e) || e.Property != want[0] || !strings.Contains(e.Problem, want[1]) {
			t.Errorf("alias %q: %v", alias, err)
		}
	}
}

// A PKCS12 file whose first certificate is the CA, not the key's: the
// key's certificate is served as the leaf.
func TestPKCS12LeafIsTheKeysCertificate(t *testing.T) {
	ca := newCA(t, "ca")
	c, k := ca.valid(t, "goreka")
	b, err := pkcs12.Modern.Encode(k, ca.cert, []*x509.Certificate{c}, "pw")
	if err != nil {
		t.Fatal(err)
	}
	got, err := loadKeys(keysOf(write(t, filepath.Join(t.TempDir(), "ca-first.p12"), b), "PKCS12", "pw"), t0)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Leaf.Equal(c) {
		t.Fatalf("leaf %v", got.Leaf.Subject)
	}
}
