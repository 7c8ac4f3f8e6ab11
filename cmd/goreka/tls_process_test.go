package main

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	keystore "github.com/pavlo-v-chernykh/keystore-go/v4"
	pkcs12 "software.sslmate.com/src/go-pkcs12"
)

// tlsFiles is a private CA and the files made from it for one test.
type tlsFiles struct {
	t      *testing.T
	dir    string
	ca     *x509.Certificate
	caKey  *ecdsa.PrivateKey
	serial int64
}

func newTLSFiles(t *testing.T) *tlsFiles {
	t.Helper()
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tpl, tpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(der)
	return &tlsFiles{t: t, dir: t.TempDir(), ca: ca, caKey: k, serial: 1}
}

// leaf issues a certificate for 127.0.0.1 and localhost, valid from nb to na.
func (f *tlsFiles) leaf(cn string, nb, na time.Time) (*x509.Certificate, *ecdsa.PrivateKey) {
	f.t.Helper()
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	f.serial++
	tpl := &x509.Certificate{SerialNumber: big.NewInt(f.serial), Subject: pkix.Name{CommonName: cn}, NotBefore: nb, NotAfter: na,
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tpl, f.ca, &k.PublicKey, f.caKey)
	if err != nil {
		f.t.Fatal(err)
	}
	c, _ := x509.ParseCertificate(der)
	return c, k
}

func (f *tlsFiles) valid(cn string) (*x509.Certificate, *ecdsa.PrivateKey) {
	return f.leaf(cn, time.Now().Add(-time.Hour), time.Now().Add(12*time.Hour))
}

func (f *tlsFiles) write(name string, b []byte) string {
	f.t.Helper()
	p := filepath.Join(f.dir, name)
	if err := os.WriteFile(p, b, 0o600); err != nil {
		f.t.Fatal(err)
	}
	return p
}

func (f *tlsFiles) p12(name string, c *x509.Certificate, k *ecdsa.PrivateKey, pw string) string {
	b, err := pkcs12.Modern.Encode(k, c, []*x509.Certificate{f.ca}, pw)
	if err != nil {
		f.t.Fatal(err)
	}
	return f.write(name, b)
}

func (f *tlsFiles) jks(name, alias string, c *x509.Certificate, k *ecdsa.PrivateKey, pw string) string {
	ks := keystore.New()
	der, _ := x509.MarshalPKCS8PrivateKey(k)
	if err := ks.SetPrivateKeyEntry(alias, keystore.PrivateKeyEntry{CreationTime: time.Now(), PrivateKey: der,
		CertificateChain: []keystore.Certificate{{Type: "X509", Content: c.Raw}}}, []byte(pw)); err != nil {
		f.t.Fatal(err)
	}
	var b bytes.Buffer
	if err := ks.Store(&b, []byte(pw)); err != nil {
		f.t.Fatal(err)
	}
	return f.write(name, b.Bytes())
}

func (f *tlsFiles) pemPair(name string, c *x509.Certificate, k *ecdsa.PrivateKey) (crt, key string) {
	der, _ := x509.MarshalPKCS8PrivateKey(k)
	return f.write(name+".crt", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})),
		f.write(name+".key", pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
}

func (f *tlsFiles) caFile() string {
	return f.write("ca.pem", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: f.ca.Raw}))
}

// TestTLSConfigErrors: bad TLS material stops the start with exit 2 and
// one line that names the property and the problem, never a stack trace.
func TestTLSConfigErrors(t *testing.T) {
	f := newTLSFiles(t)
	c, k := f.valid("goreka")
	p12 := f.p12("ks.p12", c, k, "secret")
	jks := f.jks("ks.jks", "goreka", c, k, "storepw")
	oc, ok := f.leaf("old", time.Now().Add(-48*time.Hour), time.Now().Add(-time.Hour))
	oldCrt, oldKey := f.pemPair("old", oc, ok)
	yc, yk := f.leaf("early", time.Now().Add(time.Hour), time.Now().Add(48*time.Hour))
	earlyCrt, earlyKey := f.pemPair("early", yc, yk)
	goodCrt, _ := f.pemPair("good", c, k)
	_, otherKey := f.valid("other")
	_, wrongKey := f.pemPair("other", c, otherKey)
	oldP12 := f.p12("old.p12", oc, ok, "secret")
	earlyJKS := f.jks("early.jks", "goreka", yc, yk, "storepw")
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"wrong PKCS12 password", []string{"--server.ssl.key-store=" + p12, "--server.ssl.key-store-password=nope"}, []string{"server.ssl.key-store-password", "keystore password was incorrect", p12}},
		{"wrong JKS password", []string{"--server.ssl.key-store=" + jks, "--server.ssl.key-store-type=JKS", "--server.ssl.key-store-password=nope"}, []string{"server.ssl.key-store-password", "keystore password was incorrect"}},
		{"missing alias", []string{"--server.ssl.key-store=" + jks, "--server.ssl.key-store-password=storepw", "--server.ssl.key-alias=tomcat"}, []string{"server.ssl.key-alias", "does not contain alias 'tomcat'", "goreka"}},
		{"missing PKCS12 alias", []string{"--server.ssl.key-store=" + p12, "--server.ssl.key-store-password=secret", "--server.ssl.key-alias=tomcat"}, []string{"server.ssl.key-alias", "does not contain alias 'tomcat'"}},
		{"expired", []string{"--server.ssl.certificate=" + oldCrt, "--server.ssl.certificate-private-key=" + oldKey}, []string{"server.ssl.certificate", "expired at"}},
		{"not yet valid", []string{"--server.ssl.certificate=" + earlyCrt, "--server.ssl.certificate-private-key=" + earlyKey}, []string{"server.ssl.certificate", "not valid yet"}},
		{"key does not match", []string{"--server.ssl.certificate=" + goodCrt, "--server.ssl.certificate-private-key=" + wrongKey}, []string{"server.ssl.certificate", "does not match"}},
		{"unknown store type", []string{"--server.ssl.key-store=" + p12, "--server.ssl.key-store-type=BKS"}, []string{"server.ssl.key-store-type", `"BKS"`, "must be one of pkcs12, jks, pem (or empty)"}},
		{"unknown trust store type", []string{"--server.ssl.key-store=" + p12, "--server.ssl.key-store-password=secret", "--server.ssl.trust-store=" + p12, "--server.ssl.trust-store-type=JCEKS"},
			[]string{"server.ssl.trust-store-type", `"JCEKS"`}},
		{"expired in a PKCS12 keystore", []string{"--server.ssl.key-store=" + oldP12, "--server.ssl.key-store-password=secret"}, []string{"server.ssl.key-store", "CN=old expired at"}},
		{"not yet valid in a JKS keystore", []string{"--server.ssl.key-store=" + earlyJKS, "--server.ssl.key-store-password=storepw"}, []string{"server.ssl.key-store", "CN=early is not valid yet"}},
		{"expired client certificate", []string{"--eureka.client.tls.enabled=true", "--eureka.client.tls.key-store=" + oldP12, "--eureka.client.tls.key-store-password=secret"},
			[]string{"eureka.client.tls.key-store", "expired at"}},
		{"unknown cipher", []string{"--server.ssl.key-store=" + p12, "--server.ssl.key-store-password=secret", "--server.ssl.ciphers=TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,TLS_NO_SUCH_SUITE"}, []string{"server.ssl.ciphers", "TLS_NO_SUCH_SUITE"}},
		{"unknown protocol", []string{"--server.ssl.key-store=" + p12, "--server.ssl.key-store-password=secret", "--server.ssl.enabled-protocols=SSLv3"}, []string{"server.ssl.enabled-protocols", "SSLv3"}},
		{"bad client-auth", []string{"--server.ssl.key-store=" + p12, "--server.ssl.client-auth=sometimes"}, []string{"server.ssl.client-auth", "sometimes"}},
		{"unknown bundle", []string{"--server.ssl.bundle=web", "--spring.ssl.bundle.jks.api.keystore.location=" + jks}, []string{"server.ssl.bundle", `"web"`, "api"}},
		{"bundle wrong password", []string{"--server.ssl.bundle=web", "--spring.ssl.bundle.jks.web.keystore.location=" + jks, "--spring.ssl.bundle.jks.web.keystore.password=nope"},
			[]string{"spring.ssl.bundle.jks.web.keystore.password", "keystore password was incorrect"}},
		{"client trust store password", []string{"--eureka.client.tls.enabled=true", "--eureka.client.tls.trust-store=" + p12, "--eureka.client.tls.trust-store-password=nope"},
			[]string{"eureka.client.tls.trust-store-password", "keystore password was incorrect"}},
		{"client key store missing", []string{"--eureka.client.tls.enabled=true", "--eureka.client.tls.key-store=" + filepath.Join(f.dir, "absent.p12")},
			[]string{"eureka.client.tls.key-store", "absent.p12", "no such file"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, args := opsArgs(t, tc.args...)
			code, _, stderr := runToExit(t, 30*time.Second, args...)
			line := strings.TrimSuffix(stderr, "\n")
			if code != 2 || line == "" || strings.Contains(line, "\n") || strings.Contains(line, "goroutine") || !strings.HasPrefix(line, "goreka: invalid configuration: ") {
				t.Fatalf("exit %d, stderr %q; want exit 2 and one line", code, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(line, w) {
					t.Errorf("%q does not name %s", line, w)
				}
			}
		})
	}
}

// TestTLSMutualAuthServing: goreka on a PKCS12 keystore with
// client-auth=need and a certificate-subject user. A client certificate is
// that user (its app writable, another app 403); no certificate fails the
// handshake; a rotated keystore is served to new connections while an
// open one goes on.
func TestTLSMutualAuthServing(t *testing.T) {
	f := newTLSFiles(t)
	c, k := f.valid("first")
	ks := filepath.Join(f.dir, "server.p12")
	f.p12("server.p12", c, k, "changeit")
	ca := f.caFile()
	addr, a := serveOps(t, "--server.ssl.key-store="+ks, "--server.ssl.key-store-password=changeit", "--server.ssl.trust-certificate="+ca,
		"--server.ssl.client-auth=need", "--goreka.security.users[0].name=orders", "--goreka.security.users[0].certificate-subject=orders-client",
		"--goreka.security.users[0].apps=ORDERS")
	roots := x509.NewCertPool()
	roots.AddCert(f.ca)
	cc, ck := f.valid("orders-client")
	client := func(cert bool) *http.Client {
		tc := &tls.Config{RootCAs: roots}
		if cert {
			tc.Certificates = []tls.Certificate{{Certificate: [][]byte{cc.Raw}, PrivateKey: ck}}
		}
		hc := &http.Client{Transport: &http.Transport{TLSClientConfig: tc}, Timeout: 10 * time.Second}
		t.Cleanup(hc.CloseIdleConnections)
		return hc
	}
	withCert := client(true)
	post := func(app string) (*http.Response, string) {
		body := `{"instance":{"instanceId":"i-1","hostName":"h1","app":"` + app + `","ipAddr":"10.0.0.1","status":"UP","dataCenterInfo":{"@class":"com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo","name":"MyOwn"}}}`
		resp, err := withCert.Post("https://"+addr+"/eureka/apps/"+app, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, string(b)
	}
	if resp, b := post("ORDERS"); resp.StatusCode != 204 {
		t.Fatalf("register with the user's certificate: %d %s", resp.StatusCode, b)
	}
	if resp, b := post("PAYMENTS"); resp.StatusCode != 403 || !strings.Contains(b, `user "orders" may not register instances of application PAYMENTS`) {
		t.Fatalf("another app: %d %s", resp.StatusCode, b)
	}
	if resp, err := client(false).Get("https://" + addr + "/eureka/apps"); err == nil {
		resp.Body.Close()
		t.Fatalf("a client without a certificate was answered %d", resp.StatusCode)
	}

	// Rotation: a new keystore in place; the open connection (kept alive
	// in withCert) goes on, a new one sees the new certificate.
	c2, k2 := f.valid("second")
	f.p12("server.p12", c2, k2, "changeit")
	if !a.tlsIn.Check() {
		t.Fatal("the new keystore was not taken")
	}
	resp, err := withCert.Get("https://" + addr + "/eureka/apps")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := resp.TLS.PeerCertificates[0].Subject.CommonName; got != "first" {
		t.Fatalf("the kept-alive connection was replaced (serves %s)", got)
	}
	resp, err = client(true).Get("https://" + addr + "/eureka/apps")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := resp.TLS.PeerCertificates[0].Subject.CommonName; resp.StatusCode != 200 || got != "second" {
		t.Fatalf("new connection: %d, certificate %s", resp.StatusCode, got)
	}
	resp, err = withCert.Get("https://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	m, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	want := fmt.Sprintf(`goreka_tls_certificate_expiry_seconds{use="server"} %g`, float64(c2.NotAfter.Unix()))
	if !strings.Contains(string(m), want) || !strings.Contains(string(m), `goreka_tls_certificate_expiry_seconds{use="server-trust"}`) {
		t.Fatalf("metrics lack %s:\n%s", want, grepLines(string(m), "goreka_tls"))
	}
}

// TestTLSWantWithoutACertificateIs401: with client-auth=want and users
// configured, a client that sends no certificate completes the handshake
// and gets the usual 401 (reads and writes); a certificate of the trust
// store that names no user is no credential either; one of another CA
// fails the handshake (want verifies what is sent); the certificate user
// writes its app, and a password user without a certificate still works.
func TestTLSWantWithoutACertificateIs401(t *testing.T) {
	f := newTLSFiles(t)
	sc, sk := f.valid("server")
	crt, key := f.pemPair("server", sc, sk)
	addr, _ := serveOps(t, "--server.ssl.certificate="+crt, "--server.ssl.certificate-private-key="+key, "--server.ssl.trust-certificate="+f.caFile(),
		"--server.ssl.client-auth=want",
		"--goreka.security.users[0].name=orders", "--goreka.security.users[0].certificate-subject=orders-client", "--goreka.security.users[0].apps=ORDERS",
		"--goreka.security.users[1].name=pw", "--goreka.security.users[1].password=pw-pw", "--goreka.security.users[1].apps=PW")
	roots := x509.NewCertPool()
	roots.AddCert(f.ca)
	client := func(c *x509.Certificate, k *ecdsa.PrivateKey) *http.Client {
		tc := &tls.Config{RootCAs: roots}
		if c != nil {
			tc.Certificates = []tls.Certificate{{Certificate: [][]byte{c.Raw}, PrivateKey: k}}
		}
		hc := &http.Client{Transport: &http.Transport{TLSClientConfig: tc}, Timeout: 10 * time.Second}
		t.Cleanup(hc.CloseIdleConnections)
		return hc
	}
	call := func(hc *http.Client, method, app, auth string) (int, http.Header, error) {
		var body io.Reader
		u := "https://" + addr + "/eureka/apps"
		if method == http.MethodPost {
			u += "/" + app
			body = strings.NewReader(`{"instance":{"instanceId":"i-1","hostName":"h1","app":"` + app + `","ipAddr":"10.0.0.1","status":"UP","dataCenterInfo":{"@class":"com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo","name":"MyOwn"}}}`)
		}
		req, _ := http.NewRequest(method, u, body)
		req.Header.Set("Content-Type", "application/json")
		if auth != "" {
			u, p, _ := strings.Cut(auth, ":")
			req.SetBasicAuth(u, p)
		}
		resp, err := hc.Do(req)
		if err != nil {
			return 0, nil, err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode, resp.Header, nil
	}
	none := client(nil, nil)
	for _, m := range []string{http.MethodGet, http.MethodPost} {
		code, h, err := call(none, m, "ORDERS", "")
		if err != nil || code != 401 || h.Get("WWW-Authenticate") == "" {
			t.Fatalf("%s without a certificate: %d %v %v; want 401 with a challenge", m, code, h, err)
		}
	}
	if code, _, err := call(client(f.valid("stranger")), http.MethodGet, "", ""); err != nil || code != 401 {
		t.Fatalf("a certificate that names no user: %d %v", code, err)
	}
	if code, _, err := call(client(f.valid("orders-client")), http.MethodPost, "ORDERS", ""); err != nil || code != 204 {
		t.Fatalf("the certificate user: %d %v", code, err)
	}
	if code, _, err := call(none, http.MethodPost, "PW", "pw:pw-pw"); err != nil || code != 204 {
		t.Fatalf("a password user without a certificate: %d %v", code, err)
	}
	other := newTLSFiles(t)
	if code, _, err := call(client(other.valid("orders-client")), http.MethodGet, "", ""); err == nil {
		t.Fatalf("a certificate of another CA was answered %d", code)
	}
}

// TestTLSClientSideReachesRegionsAndRelayUpstream: goreka's other calls to
// a Eureka server take eureka.client.tls.* too. U serves with
// client-auth=need and knows the downstream servers' certificate as a peer
// user; L has U as a remote region and serves U's instance; R is a relay
// with U upstream and forwards its client's registration there. Both
// verify U's certificate (an IP SAN) against the truststore; a relay with
// a trust store of another CA never gets its registration through.
func TestTLSClientSideReachesRegionsAndRelayUpstream(t *testing.T) {
	f := newTLSFiles(t)
	uc, uk := f.valid("upstream")
	crt, key := f.pemPair("upstream", uc, uk)
	ca := f.caFile()
	dc, dk := f.valid("downstream")
	down := f.p12("downstream.p12", dc, dk, "changeit")
	ip := "127.0.0.1"
	up := freePort(t, ip)
	u := inProcessNode(t, "upstream", ip, up, standaloneArgs(ip, up, "--server.ssl.certificate="+crt, "--server.ssl.certificate-private-key="+key,
		"--server.ssl.trust-certificate="+ca, "--server.ssl.client-auth=need",
		"--goreka.security.users[0].name=tester", "--goreka.security.users[0].certificate-subject=tester", "--goreka.security.users[0].roles=admin",
		"--goreka.security.users[1].name=downstream", "--goreka.security.users[1].certificate-subject=downstream", "--goreka.security.users[1].roles=peer",
		"--eureka.server.response-cache-update-interval-ms=100")...)
	u.start()
	upURL := "https://" + hostPort(ip, up) + "/eureka/"
	clientTLS := func(trust string) []string {
		return []string{"--eureka.client.tls.enabled=true", "--eureka.client.tls.key-store=" + down, "--eureka.client.tls.key-store-password=changeit",
			"--eureka.client.tls.trust-store=" + trust, "--eureka.client.tls.trust-store-type=PEM"}
	}
	lp, rp, xp := freePort(t, ip), freePort(t, ip), freePort(t, ip)
	l := inProcessNode(t, "region-reader", ip, lp, standaloneArgs(ip, lp, append(clientTLS(ca),
		"--eureka.server.remote-region-urls-with-name.up="+upURL, "--eureka.server.remote-region-registry-fetch-interval=1")...)...)
	relayArgs := func(port int, trust string) []string {
		return standaloneArgs(ip, port, append(clientTLS(trust), "--goreka.relay.upstream="+upURL, "--goreka.relay.heartbeat-interval=1s",
			"--goreka.relay.fetch-interval=1s")...)
	}
	r := inProcessNode(t, "relay", ip, rp, relayArgs(rp, ca)...)
	stranger := newTLSFiles(t)
	x := inProcessNode(t, "relay-of-another-ca", ip, xp, relayArgs(xp, stranger.caFile())...)
	l.start()
	r.start()
	x.start()

	tc, tk := f.valid("tester")
	roots := x509.NewCertPool()
	roots.AddCert(f.ca)
	tester := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots,
		Certificates: []tls.Certificate{{Certificate: [][]byte{tc.Raw}, PrivateKey: tk}}}}}
	t.Cleanup(tester.CloseIdleConnections)
	upApps := func() string {
		req, _ := http.NewRequest(http.MethodGet, upURL+"apps/", nil)
		req.Header.Set("Accept", "application/json")
		resp, err := tester.Do(req)
		if err != nil {
			return err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	req, _ := http.NewRequest(http.MethodPost, upURL+"apps/UPAPP", strings.NewReader(instanceBody("UPAPP", "u1", 30, 90)))
	req.Header.Set("Content-Type", "application/json")
	resp, err := tester.Do(req)
	if err != nil || resp.StatusCode != 204 {
		t.Fatalf("register on the upstream: %v %v", resp, err)
	}
	resp.Body.Close()

	waitUntil(t, "the region reader serves the upstream's instance", 20*time.Second, func() (bool, string) {
		got, _, _, err := regionApps(l, "/apps?regions=up")
		return err == nil && slices.Contains(got, "UPAPP/u1"), fmt.Sprint(got, err)
	})
	register(t, r, "EDGE", "e1", 30, 90)
	register(t, x, "STRANGER", "s1", 30, 90)
	waitUntil(t, "the relay's registration on the upstream", 20*time.Second, func() (bool, string) {
		b := upApps()
		return strings.Contains(b, `"instanceId":"e1"`), b
	})
	if b := upApps(); strings.Contains(b, `"instanceId":"s1"`) {
		t.Fatalf("a relay that cannot verify the upstream got its registration through:\n%s", b)
	}
	if len(x.logs().grep("certificate signed by unknown authority")) == 0 {
		t.Errorf("the relay of another CA logs no verification failure:\n%s", x.logs())
	}
}

// TestTLSServesFromSSLBundles: server.ssl.bundle names a Spring Boot SSL
// bundle, a JKS one (keystore opened by key.alias, a PKCS12 truststore,
// client-auth need from server.ssl) or a PEM one, and goreka serves with it.
func TestTLSServesFromSSLBundles(t *testing.T) {
	f := newTLSFiles(t)
	c, k := f.valid("from-jks-bundle")
	jks := f.jks("web.jks", "web", c, k, "storepw")
	trust, err := pkcs12.Modern.EncodeTrustStore([]*x509.Certificate{f.ca}, "trustpw")
	if err != nil {
		t.Fatal(err)
	}
	trustFile := f.write("trust.p12", trust)
	pc, pk := f.valid("from-pem-bundle")
	crt, key := f.pemPair("pem-bundle", pc, pk)
	roots := x509.NewCertPool()
	roots.AddCert(f.ca)
	cc, ck := f.valid("client")
	for _, tc := range []struct {
		name, cn string
		cert     bool
		args     []string
	}{
		{"jks", "from-jks-bundle", true, []string{"--server.ssl.bundle=web", "--server.ssl.client-auth=need",
			"--spring.ssl.bundle.jks.web.keystore.location=file:" + jks, "--spring.ssl.bundle.jks.web.keystore.password=storepw",
			"--spring.ssl.bundle.jks.web.keystore.type=JKS", "--spring.ssl.bundle.jks.web.key.alias=web",
			"--spring.ssl.bundle.jks.web.truststore.location=" + trustFile, "--spring.ssl.bundle.jks.web.truststore.password=trustpw"}},
		{"pem", "from-pem-bundle", false, []string{"--server.ssl.bundle=mesh",
			"--spring.ssl.bundle.pem.mesh.keystore.certificate=" + crt, "--spring.ssl.bundle.pem.mesh.keystore.private-key=" + key}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr, _ := serveOps(t, tc.args...)
			cfg := &tls.Config{RootCAs: roots}
			if tc.cert {
				cfg.Certificates = []tls.Certificate{{Certificate: [][]byte{cc.Raw}, PrivateKey: ck}}
			}
			hc := &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}, Timeout: 10 * time.Second}
			defer hc.CloseIdleConnections()
			resp, err := hc.Get("https://" + addr + "/eureka/apps")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if got := resp.TLS.PeerCertificates[0].Subject.CommonName; resp.StatusCode != 200 || got != tc.cn {
				t.Fatalf("%d, served %s", resp.StatusCode, got)
			}
			if tc.cert {
				cfg.Certificates = nil
				hc := &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}, Timeout: 10 * time.Second}
				defer hc.CloseIdleConnections()
				if resp, err := hc.Get("https://" + addr + "/eureka/apps"); err == nil {
					resp.Body.Close()
					t.Fatal("client-auth=need with a bundle: a client without a certificate was answered")
				}
			}
		})
	}
}
