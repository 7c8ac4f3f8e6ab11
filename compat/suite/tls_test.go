//go:build compat

package suite

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/goreka/goreka/internal/proctest"
)

// TestCompatTLS is issue 29 against real consumers: a private CA and keystores made here with openssl
// and the JDK's keytool (PKCS12 and JKS); Spring Boot 3 and 4 agents with the unchanged Eureka client and
// eureka.client.tls.* keystores against goreka with client-auth=need; a goreka <-> stock Java server
// pair (both lines) over mutual TLS both ways; a certificate rotated under 100 heartbeating clients;
// openssl s_client against enabled-protocols and ciphers. The parts run in parallel.
//
//	go test -tags compat -count=1 -v -run TestCompatTLS ./compat/suite
func TestCompatTLS(t *testing.T) {
	for _, tool := range []string{"openssl", "keytool"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s not found (the JDK and openssl are the compat suite's tools)", tool)
		}
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	out := os.Getenv("COMPAT_OUT")
	if out == "" {
		out = filepath.Join(root, "compat", "suite", "out")
	}
	out = filepath.Join(out, "tls")
	_ = os.RemoveAll(out)
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	s := &suite{root: root, out: out, ps: &procs{}, targets: map[string]*target{}}
	t.Cleanup(s.ps.killAll)
	pki := newPKI(t, filepath.Join(out, "pki"))
	bin, err := proctest.Build(filepath.Join(out, "bin"))
	if err != nil {
		t.Fatal(err)
	}
	x := &tlsRun{t: t, s: s, pki: pki, bin: bin}
	// Every certificate and keystore before the parallel parts (the CA's serial file and t are shared).
	for _, cn := range []string{"goreka-stock-server", "goreka-stock5-server", "goreka-sclient"} {
		pki.opensslP12(cn)
	}
	for _, cn := range []string{"tester", "before-rotation", "after-rotation"} {
		pki.opensslLeaf(cn)
	}
	// keytool is a JVM per call: the stores are made at once (each its own files and serial). goreka
	// serves from keytool's PKCS12 (which holds the CA as a trusted entry too) and JKS keystores.
	var kwg sync.WaitGroup
	for cn, typ := range map[string]string{"tls-boot3": "PKCS12", "tls-boot4": "JKS", "stock-peer": "PKCS12", "goreka-peer": "PKCS12",
		"goreka-boot3": "PKCS12", "goreka-boot4": "JKS"} {
		kwg.Go(func() { pki.keytoolStore(cn, typ) })
	}
	kwg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	// The Java builds first, one at a time (2 cores); the runs then go in parallel.
	builds := map[string]error{}
	for _, c := range []string{"spring-boot3", "spring-boot4"} {
		builds[c] = runBuild(filepath.Join(root, "compat", "agents", c, "build.sh"), filepath.Join(out, "build-"+c+".log"), 15*time.Minute)
	}
	for _, line := range []string{"stock", "stock5"} {
		if _, err := s.target(t, line); err != nil {
			builds[line] = err
		}
	}
	// The parts run at once (JVM start-ups dominate), not bounded by -parallel: t.Run from goroutines.
	var wg sync.WaitGroup
	part := func(name string, needs []string, f func(t *testing.T)) {
		wg.Go(func() {
			t.Run(name, func(t *testing.T) {
				for _, n := range needs {
					if builds[n] != nil {
						t.Fatalf("%s: %v", n, builds[n])
					}
				}
				f(t)
			})
		})
	}
	for _, a := range springTLSAgents {
		part(a.client+" agents, client-auth=need", []string{a.client}, func(t *testing.T) { x.agents(t, a) })
	}
	for _, line := range []string{"stock", "stock5"} {
		part("mutual TLS with "+line, []string{line}, func(t *testing.T) { x.mixed(t, line) })
	}
	part("rotation under 100 heartbeating clients", nil, x.rotation)
	part("openssl s_client sees only the enabled protocols and ciphers", nil, x.sClient)
	wg.Wait()
}

// pki is a private CA and the files made from it, with openssl and keytool.
type pki struct {
	t   *testing.T
	dir string
}

const storePass = "changeit"

func newPKI(t *testing.T, dir string) *pki {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := &pki{t: t, dir: dir}
	p.write("ext.cnf", "subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth\nkeyUsage=critical,digitalSignature\n")
	p.run("openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", "ca.key", "-out", "ca.crt",
		"-days", "2", "-subj", "/CN=compat TLS CA", "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign")
	for _, typ := range []string{"PKCS12", "JKS"} {
		p.run("keytool", "-importcert", "-noprompt", "-alias", "compat-ca", "-file", "ca.crt", "-keystore", "trust."+ext(typ), "-storetype", typ, "-storepass", storePass)
	}
	return p
}

func ext(typ string) string {
	if typ == "JKS" {
		return "jks"
	}
	return "p12"
}

func (p *pki) path(name string) string { return filepath.Join(p.dir, name) }

func (p *pki) write(name, content string) {
	if err := os.WriteFile(p.path(name), []byte(content), 0o600); err != nil {
		p.t.Fatal(err)
	}
}

// run runs a tool in the PKI directory; a failure fails the test (Errorf: run may be called from
// goroutines) and the calls after it are skipped.
func (p *pki) run(name string, args ...string) {
	p.t.Helper()
	if p.t.Failed() {
		return
	}
	cmd := exec.Command(name, args...)
	cmd.Dir = p.dir
	if b, err := cmd.CombinedOutput(); err != nil {
		p.t.Errorf("%s %s: %v\n%s", name, strings.Join(args, " "), err, b)
	}
}

var serialNo atomic.Int64

// serial is a fresh certificate serial (openssl's -CAcreateserial file is not safe for concurrent signing).
func serial() string { return strconv.FormatInt(time.Now().UnixNano()+serialNo.Add(1), 10) }

// opensslLeaf makes cn.key and cn.crt (signed by the CA, for localhost and 127.0.0.1) with openssl.
func (p *pki) opensslLeaf(cn string) (crt, key string) {
	p.run("openssl", "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", cn+".key", "-out", cn+".csr", "-subj", "/CN="+cn)
	p.run("openssl", "x509", "-req", "-in", cn+".csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-set_serial", serial(), "-out", cn+".crt", "-days", "1", "-extfile", "ext.cnf")
	return p.path(cn + ".crt"), p.path(cn + ".key")
}

// opensslP12 is opensslLeaf exported as a PKCS12 keystore by openssl pkcs12 -export.
func (p *pki) opensslP12(cn string) string {
	p.opensslLeaf(cn)
	p.run("openssl", "pkcs12", "-export", "-inkey", cn+".key", "-in", cn+".crt", "-certfile", "ca.crt", "-name", cn, "-out", cn+".openssl.p12", "-passout", "pass:"+storePass)
	return p.path(cn + ".openssl.p12")
}

// keytoolStore makes a keystore of typ (PKCS12 or JKS) the JDK's way: keytool -genkeypair, a request
// signed by the CA with openssl, the CA and the reply imported.
func (p *pki) keytoolStore(cn, typ string) string {
	ks := cn + "." + ext(typ)
	p.run("keytool", "-genkeypair", "-alias", cn, "-keyalg", "EC", "-groupname", "secp256r1", "-dname", "CN="+cn, "-validity", "2",
		"-storetype", typ, "-keystore", ks, "-storepass", storePass, "-keypass", storePass)
	p.run("keytool", "-certreq", "-alias", cn, "-keystore", ks, "-storepass", storePass, "-file", cn+".kt.csr")
	p.run("openssl", "x509", "-req", "-in", cn+".kt.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-set_serial", serial(), "-out", cn+".kt.crt", "-days", "1", "-extfile", "ext.cnf")
	p.run("keytool", "-importcert", "-noprompt", "-alias", "compat-ca", "-file", "ca.crt", "-keystore", ks, "-storepass", storePass)
	p.run("keytool", "-importcert", "-alias", cn, "-file", cn+".kt.crt", "-keystore", ks, "-storepass", storePass)
	return p.path(ks)
}

// client is a Go HTTPS client with a certificate of the CA (cn, made before), or none when cn is "".
// Safe in parallel subtests: it reads files only, and a missing one panics (a bug of the test).
func (p *pki) client(cn string, keepAlive bool) *http.Client {
	ca, err := os.ReadFile(p.path("ca.crt"))
	if err != nil {
		panic(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca)
	tc := &tls.Config{RootCAs: roots}
	if cn != "" {
		c, err := tls.LoadX509KeyPair(p.path(cn+".crt"), p.path(cn+".key"))
		if err != nil {
			panic(err)
		}
		tc.Certificates = []tls.Certificate{c}
	}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: tc, DisableKeepAlives: !keepAlive, MaxIdleConnsPerHost: 4}}
}

type tlsRun struct {
	t   *testing.T
	s   *suite
	pki *pki
	bin string
}

// goreka starts a goreka on a free port with args; it returns its base URL (https://localhost:port) and
// its log path once GET apps/ answers with the tester's certificate.
func (x *tlsRun) goreka(t *testing.T, name string, port int, args ...string) (base, log string, p *proc) {
	t.Helper()
	log = filepath.Join(x.s.out, name+".log")
	argv := append(append([]string{x.bin, "--server.port=" + strconv.Itoa(port), "--server.address=127.0.0.1"}, shortTimings...), args...)
	p, err := x.s.ps.start(name, log, x.s.root, nil, argv...)
	if err != nil {
		t.Fatal(err)
	}
	base = fmt.Sprintf("https://localhost:%d", port)
	hc := x.pki.client("tester", true)
	if err := waitFor(120*time.Second, name+" answers over TLS", func() (bool, string) {
		if p.exited() {
			return true, "exited"
		}
		code, body := get(hc, base+"/eureka/apps/")
		return code == 200, fmt.Sprintf("%d %s", code, body)
	}); err != nil || p.exited() {
		t.Fatalf("%s: %v\n%s", name, err, tail(log, 30))
	}
	return base, log, p
}

func get(hc *http.Client, u string) (int, string) {
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	req.Header.Set("Accept", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// apps returns the instance ids per app of GET apps/ on base.
func apps(hc *http.Client, base string) (map[string][]string, string) {
	code, body := get(hc, base+"/eureka/apps/")
	if code != 200 {
		return nil, fmt.Sprintf("%d %s", code, body)
	}
	var doc struct {
		Applications struct {
			Application []struct {
				Name     string `json:"name"`
				Instance []struct {
					InstanceID string `json:"instanceId"`
				} `json:"instance"`
			} `json:"application"`
		} `json:"applications"`
	}
	if err := json.Unmarshal([]byte(body), &doc); err != nil {
		return nil, err.Error()
	}
	out := map[string][]string{}
	for _, a := range doc.Applications.Application {
		for _, i := range a.Instance {
			out[a.Name] = append(out[a.Name], i.InstanceID)
		}
	}
	return out, body
}

func register(hc *http.Client, base, app, id string) error { return registerFor(hc, base, app, id, 90) }

// registerFor registers with a lease of secs seconds (no heartbeats follow) and the app's name in lower
// case as its VIP address, which Spring's DiscoveryClient.getInstances looks up, as a Spring app's.
func registerFor(hc *http.Client, base, app, id string, secs int) error {
	body := fmt.Sprintf(`{"instance":{"instanceId":%q,"hostName":"localhost","app":%q,"ipAddr":"127.0.0.1","status":"UP","port":{"$":8080,"@enabled":"true"},`+
		`"vipAddress":%q,"leaseInfo":{"renewalIntervalInSecs":30,"durationInSecs":%d},"dataCenterInfo":{"@class":"com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo","name":"MyOwn"}}}`,
		id, app, strings.ToLower(app), secs)
	req, _ := http.NewRequest(http.MethodPost, base+"/eureka/apps/"+app, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 204 {
		return fmt.Errorf("register %s/%s: %d", app, id, resp.StatusCode)
	}
	return nil
}

func logHas(path, re string) bool {
	b, _ := os.ReadFile(path)
	return regexp.MustCompile(re).Match(b)
}

// serverTLS are goreka's server.ssl arguments: an openssl-made PKCS12 keystore, keytool's JKS truststore.
func (x *tlsRun) serverTLS(cn, clientAuth string) []string {
	return x.serverStores(x.pki.path(cn+".openssl.p12"), "PKCS12", "", "trust.jks", "JKS", clientAuth)
}

// serverStores are goreka's server.ssl arguments for a keystore (alias: key-alias, "" for none) and a
// truststore of the PKI directory.
func (x *tlsRun) serverStores(keyStore, keyType, alias, trust, trustType, clientAuth string) []string {
	args := []string{"--server.ssl.key-store=" + keyStore, "--server.ssl.key-store-type=" + keyType, "--server.ssl.key-store-password=" + storePass,
		"--server.ssl.trust-store=" + x.pki.path(trust), "--server.ssl.trust-store-type=" + trustType, "--server.ssl.trust-store-password=" + storePass,
		"--server.ssl.client-auth=" + clientAuth}
	if alias != "" {
		args = append(args, "--server.ssl.key-alias="+alias)
	}
	return args
}

// testerUser makes the tests' own client certificate (CN=tester) an admin, users[0].
var testerUser = []string{"--goreka.security.users[0].name=tester", "--goreka.security.users[0].certificate-subject=tester", "--goreka.security.users[0].roles=admin"}

// springTLS are the eureka.client.tls.* arguments of a Spring app (Spring Cloud Netflix's names).
func springTLS(keyStore, keyType, trustStore, trustType string) []string {
	args := []string{"--eureka.client.tls.enabled=true", "--eureka.client.tls.trust-store=file:" + trustStore,
		"--eureka.client.tls.trust-store-type=" + trustType, "--eureka.client.tls.trust-store-password=" + storePass}
	if keyStore != "" {
		args = append(args, "--eureka.client.tls.key-store=file:"+keyStore, "--eureka.client.tls.key-store-type="+keyType,
			"--eureka.client.tls.key-store-password="+storePass, "--eureka.client.tls.key-password="+storePass)
	}
	return args
}

type tlsAgent struct {
	app  string
	port int
	p    *proc
	log  string
}

// startTLSAgent runs a client agent straight against eurekaURL (no proxy: the TLS is the client's).
func (x *tlsRun) startTLSAgent(t *testing.T, client, app, eurekaURL string, args []string) *tlsAgent {
	t.Helper()
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(x.s.root, "compat", "agents", client)
	log := filepath.Join(x.s.out, app+".log")
	env := []string{"APP_NAME=" + app, "PORT=" + strconv.Itoa(port), "EUREKA_URL=" + eurekaURL}
	p, err := x.s.ps.start(app, log, dir, env, append([]string{"bash", filepath.Join(dir, "run.sh")}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	return &tlsAgent{app: app, port: port, p: p, log: log}
}

func (a *tlsAgent) seen(svc string) (int, string) {
	code, body := get(agentHTTP, fmt.Sprintf("http://127.0.0.1:%d/seen/%s/count", a.port, svc))
	if code != 200 {
		return -1, fmt.Sprintf("%d %s", code, body)
	}
	n, err := strconv.Atoi(strings.TrimSpace(body))
	if err != nil {
		return -1, body
	}
	return n, body
}

// springTLSAgent is one Spring Boot line of the agents part: its agent's keystore (made by keytool) and
// the keystores of the goreka it registers with (keytool's too, opened by key-alias).
type springTLSAgent struct {
	client, app, storeType string // compat/agents/<client>, its app and keystore's name (a CN of the PKI)
	server                 string // goreka's keystore (a CN), of storeType
}

var springTLSAgents = []springTLSAgent{
	{client: "spring-boot3", app: "tls-boot3", storeType: "PKCS12", server: "goreka-boot3"},
	{client: "spring-boot4", app: "tls-boot4", storeType: "JKS", server: "goreka-boot4"},
}

// agents: a Spring Boot agent (3: keytool PKCS12 keystore and truststore; 4: keytool JKS) registers,
// fetches, follows deltas and cancels over mutual TLS, as the goreka user its certificate names; the same
// app without a certificate is refused in the handshake. Each line has a goreka of its own, so that what
// goreka counts and logs is that line's client's: it serves from a keytool keystore of the same type,
// opened by key-alias (keytool's PKCS12 holds the CA as a trusted entry beside the key), and verifies
// clients with keytool's truststore of that type.
func (x *tlsRun) agents(t *testing.T, a springTLSAgent) {
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	store, trust := x.pki.path(a.server+"."+ext(a.storeType)), "trust."+ext(a.storeType)
	appUpper := strings.ToUpper(a.app)
	args := append(append(x.serverStores(store, a.storeType, a.server, trust, a.storeType, "need"), testerUser...),
		"--eureka.client.service-url.defaultZone=https://localhost:"+strconv.Itoa(port)+"/eureka/",
		"--goreka.security.users[1].name="+a.app, "--goreka.security.users[1].certificate-subject="+a.app, "--goreka.security.users[1].apps="+appUpper)
	base, glog, _ := x.goreka(t, "goreka-"+a.client, port, args...)
	eu := base + "/eureka/"
	tester := x.pki.client("tester", true)
	// An instance there before the agent: its first fetch (a full one) brings it.
	if err := registerFor(tester, base, "TLS-EARLY", "early-1", 3600); err != nil {
		t.Fatal(err)
	}
	ag := x.startTLSAgent(t, a.client, a.app, eu, springTLS(x.pki.path(a.app+"."+ext(a.storeType)), a.storeType, x.pki.path(trust), a.storeType))
	none := x.startTLSAgent(t, a.client, a.app+"-nocert", eu, springTLS("", "", x.pki.path(trust), a.storeType))
	defer func() {
		for _, p := range []*tlsAgent{ag, none} {
			_ = p.p.stop(syscall.SIGTERM, 10*time.Second)
		}
	}()
	if err := waitFor(420*time.Second, a.app+" registered", func() (bool, string) {
		got, last := apps(tester, base)
		return len(got[appUpper]) == 1, last
	}); err != nil {
		t.Fatalf("%v\n%s\n%s", err, tail(glog, 20), tail(ag.log, 30))
	}
	seen := func(app string, n int) {
		t.Helper()
		if err := waitFor(60*time.Second, fmt.Sprintf("%s sees %d of %s", a.app, n, app), func() (bool, string) {
			got, last := ag.seen(app)
			return got == n, last
		}); err != nil {
			t.Fatalf("%v\n%s", err, tail(ag.log, 30))
		}
	}
	seen("tls-early", 1)
	// Deltas: an instance registered, then cancelled, reaches the agent; the delta fetches goreka answered
	// are this agent's (the tester reads apps/ only, the agent without a certificate reads nothing).
	deltas := func() float64 {
		_, m := get(tester, base+"/metrics")
		var sum float64
		for _, mm := range regexp.MustCompile(`goreka_registry_fetches_total\{[^}]*kind="delta"[^}]*\} ([0-9.e+]+)`).FindAllStringSubmatch(m, -1) {
			v, _ := strconv.ParseFloat(mm[1], 64)
			sum += v
		}
		return sum
	}
	before := deltas()
	if err := registerFor(tester, base, "TLS-LATE", "late-1", 3600); err != nil {
		t.Fatal(err)
	}
	seen("tls-late", 1)
	req, _ := http.NewRequest(http.MethodDelete, base+"/eureka/apps/TLS-LATE/late-1", nil)
	if resp, err := tester.Do(req); err != nil || resp.StatusCode != 200 {
		t.Fatalf("cancel late-1: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	seen("tls-late", 0)
	if after := deltas(); after <= before {
		t.Fatalf("no delta fetch answered while %s followed a registration and a cancel (%g, then %g)", a.app, before, after)
	}
	// No certificate: refused in the handshake, never registered.
	if err := waitFor(30*time.Second, "the agent without a certificate refused in the handshake", func() (bool, string) {
		return logHas(glog, `TLS handshake error .*(didn't provide a certificate|certificate required)`), tail(glog, 5)
	}); err != nil {
		t.Fatalf("%v\n%s", err, tail(none.log, 20))
	}
	if got, _ := apps(tester, base); len(got[appUpper+"-NOCERT"]) != 0 {
		t.Fatalf("the agent without a certificate registered: %v", got[appUpper+"-NOCERT"])
	}
	// Cancel: SIGTERM, the client's DELETE, over its certificate.
	if err := ag.p.stop(syscall.SIGTERM, 30*time.Second); err != nil {
		t.Logf("stop %s: %v", a.app, err)
	}
	if err := waitFor(15*time.Second, a.app+" cancelled", func() (bool, string) {
		return logHas(glog, `msg=cancelled app=`+appUpper+` .*replication=false`), tail(glog, 5)
	}); err != nil {
		t.Fatalf("%v\n%s", err, tail(ag.log, 20))
	}
	if err := waitFor(10*time.Second, a.app+" gone from apps/ (the read cache's interval is 1 s)", func() (bool, string) {
		got, last := apps(tester, base)
		return got != nil && len(got[appUpper]) == 0, fmt.Sprintf("%.300s", last)
	}); err != nil {
		t.Fatal(err)
	}
	// \b: the agent without a certificate's handshake errors name its source
	// port, and an ephemeral one like 40334 is no 403 (CI failed on it).
	if logHas(glog, `(?i)level=(ERROR|WARN) msg="[^"]*(\b403\b|refused)`) {
		t.Errorf("goreka refused something:\n%s", tail(glog, 30))
	}
}

// mixed: goreka and a stock Java server, each serving with client-auth=need and calling the other with
// its own keystore, verifying the other's certificate with the private CA: replication both ways and
// goreka's start-up sync from the stock server.
func (x *tlsRun) mixed(t *testing.T, line string) {
	st := x.s.targets[line]
	gPort, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	sPort, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	stockCN := "stock-peer"
	// The stock server: a keytool PKCS12 keystore and truststore, the same keys for its calls (Spring's
	// eureka.client.tls for its DiscoveryClient, the JVM's for its peer replication client).
	sks := x.pki.path(stockCN + ".p12")
	trust := x.pki.path("trust.p12")
	sArgs := append([]string{"--server.ssl.enabled=true", "--server.ssl.key-store=file:" + sks, "--server.ssl.key-store-type=PKCS12",
		"--server.ssl.key-store-password=" + storePass, "--server.ssl.key-alias=" + stockCN,
		"--server.ssl.trust-store=file:" + trust, "--server.ssl.trust-store-type=PKCS12", "--server.ssl.trust-store-password=" + storePass,
		"--server.ssl.client-auth=need"}, springTLS(sks, "PKCS12", trust, "PKCS12")...)
	// Eureka's Jersey replication client takes the JVM's key and trust stores only with
	// com.netflix.eureka.shouldSSLConnectionsUseSystemSocketFactory (Jersey3ReplicationClient).
	javaOpts := fmt.Sprintf("JAVA_OPTS=-Dcom.netflix.eureka.shouldSSLConnectionsUseSystemSocketFactory=true -Djavax.net.ssl.keyStore=%s -Djavax.net.ssl.keyStorePassword=%s -Djavax.net.ssl.keyStoreType=PKCS12 "+
		"-Djavax.net.ssl.trustStore=%s -Djavax.net.ssl.trustStorePassword=%s -Djavax.net.ssl.trustStoreType=PKCS12", sks, storePass, trust, storePass)
	sLog := filepath.Join(x.s.out, line+".log")
	sEnv := append([]string{"PORT=" + strconv.Itoa(sPort), "EUREKA_HOSTNAME=127.0.0.1", "PEER_MODE=true",
		fmt.Sprintf("PEER_URL=https://localhost:%d/eureka/", gPort), javaOpts}, st.lineEnv...)
	sp, err := x.s.ps.start(line, sLog, x.s.root, sEnv, append(st.argv(sPort), sArgs...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer sp.stop(syscall.SIGTERM, 20*time.Second)
	sBase := fmt.Sprintf("https://127.0.0.1:%d", sPort)

	// goreka: an openssl PKCS12 keystore to serve, keytool's PKCS12 keystore and JKS truststore to call.
	gks := x.pki.path("goreka-peer.p12")
	gArgs := append(append(x.serverTLS("goreka-"+line+"-server", "need"), testerUser...),
		"--eureka.client.service-url.defaultZone="+sBase+"/eureka/",
		"--eureka.client.tls.enabled=true", "--eureka.client.tls.key-store="+gks, "--eureka.client.tls.key-store-type=PKCS12",
		"--eureka.client.tls.key-store-password="+storePass, "--eureka.client.tls.trust-store="+x.pki.path("trust.jks"),
		"--eureka.client.tls.trust-store-type=JKS", "--eureka.client.tls.trust-store-password="+storePass,
		// The stock server's certificate is a peer user.
		"--goreka.security.users[1].name=stock", "--goreka.security.users[1].certificate-subject="+stockCN, "--goreka.security.users[1].roles=peer",
		"--eureka.server.wait-time-in-ms-when-sync-empty=0")
	gBase, gLog, gp := x.goreka(t, "goreka-"+line, gPort, gArgs...)
	tester := x.pki.client("tester", true)
	if err := waitFor(420*time.Second, line+" answers over TLS", func() (bool, string) {
		if sp.exited() {
			return true, "exited"
		}
		code, body := get(tester, sBase+"/eureka/apps/")
		return code == 200, fmt.Sprintf("%d %.200s", code, body)
	}); err != nil || sp.exited() {
		t.Fatalf("%v\n%s", err, tail(sLog, 40))
	}
	if err := register(tester, gBase, "MIXED-G", "g-1"); err != nil {
		t.Fatal(err)
	}
	if err := register(tester, sBase, "MIXED-S", "s-1"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ what, base, app, log string }{
		{"goreka -> " + line, sBase, "MIXED-G", sLog}, {line + " -> goreka", gBase, "MIXED-S", gLog},
	} {
		if err := waitFor(60*time.Second, "replication "+c.what, func() (bool, string) {
			a, last := apps(tester, c.base)
			return len(a[c.app]) == 1, fmt.Sprintf("%.300s", last)
		}); err != nil {
			t.Fatalf("%v\n--- goreka\n%s\n--- %s\n%s", err, tail(gLog, 20), line, tail(sLog, 30))
		}
	}
	// Each server registered itself with the other, over TLS with its certificate.
	if err := waitFor(60*time.Second, "the stock server registered with goreka", func() (bool, string) {
		a, last := apps(tester, gBase)
		return len(a["EUREKA-SERVER"]) >= 1, fmt.Sprintf("%.300s", last)
	}); err != nil {
		t.Fatal(err)
	}
	// Start-up sync: goreka restarts and copies the stock server's registry over mutual TLS.
	if err := gp.stop(syscall.SIGTERM, 20*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := register(tester, sBase, "MIXED-S", "s-2"); err != nil {
		t.Fatal(err)
	}
	_, gLog2, gp2 := x.goreka(t, "goreka-"+line+"-restarted", gPort, gArgs...)
	defer gp2.stop(syscall.SIGTERM, 20*time.Second)
	// g-1 was registered on goreka before its restart (no snapshot): it is back from the stock server's copy.
	if err := waitFor(30*time.Second, "goreka's start-up sync from "+line, func() (bool, string) {
		return logHas(gLog2, `msg="start-up sync with peers done" component=replication copied=[1-9]`) &&
			logHas(gLog2, `msg=registered app=MIXED-G instance=g-1 status=UP replication=true`), tail(gLog2, 10)
	}); err != nil {
		t.Fatal(err)
	}
	// And the stock server's queue delivers what it got while goreka was down.
	if err := waitFor(60*time.Second, "MIXED-S s-2 on goreka after its restart", func() (bool, string) {
		a, last := apps(tester, gBase)
		return len(a["MIXED-S"]) == 2, fmt.Sprintf("%.300s", last)
	}); err != nil {
		t.Fatal(err)
	}
}

// rotation: 100 clients register and heartbeat while the certificate of a Secret-volume-style directory
// is swapped (the ..data symlink); no request fails, and new connections get the new certificate. A broken
// version swapped in after it is logged and the certificate in use stays.
func (x *tlsRun) rotation(t *testing.T) {
	dir := filepath.Join(x.s.out, "secret")
	// publish swaps in a version with crtCN's certificate and keyCN's key (a broken one when they differ).
	publish := func(version, crtCN, keyCN string) {
		crt, key := x.pki.path(crtCN+".crt"), x.pki.path(keyCN+".key")
		v := filepath.Join(dir, "..v"+version)
		if err := os.MkdirAll(v, 0o755); err != nil {
			t.Fatal(err)
		}
		for src, dst := range map[string]string{crt: "tls.crt", key: "tls.key", x.pki.path("ca.crt"): "ca.crt"} {
			b, err := os.ReadFile(src)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(v, dst), b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		tmp := filepath.Join(dir, "..data_tmp")
		if err := os.Symlink(filepath.Base(v), tmp); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(dir, "..data")); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	publish("1", "before-rotation", "before-rotation")
	for _, f := range []string{"tls.crt", "tls.key", "ca.crt"} {
		if err := os.Symlink(filepath.Join("..data", f), filepath.Join(dir, f)); err != nil {
			t.Fatal(err)
		}
	}
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	base, log, _ := x.goreka(t, "goreka-rotation", port,
		"--eureka.client.service-url.defaultZone=https://localhost:"+strconv.Itoa(port)+"/eureka/",
		"--server.ssl.certificate="+filepath.Join(dir, "tls.crt"), "--server.ssl.certificate-private-key="+filepath.Join(dir, "tls.key"),
		"--server.ssl.trust-certificate="+filepath.Join(dir, "ca.crt"), "--server.ssl.client-auth=want",
		"--goreka.security.users[0].name=tester", "--goreka.security.users[0].certificate-subject=tester", "--goreka.security.users[0].roles=admin",
		"--goreka.tls.reload-interval=200ms")
	const clients = 100
	var failed, requests, rotatedSeen atomic.Int64
	var firstErr atomic.Value
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range clients {
		// Half keep their connection, half open a new one per request (they see the rotation).
		hc := x.pki.client("tester", i%2 == 0)
		id := fmt.Sprintf("hb-%03d", i)
		if err := register(hc, base, "ROTATION", id); err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				case <-time.After(100 * time.Millisecond):
				}
				req, _ := http.NewRequest(http.MethodPut, base+"/eureka/apps/ROTATION/"+id, nil)
				resp, err := hc.Do(req)
				requests.Add(1)
				if err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != 200 {
						err = fmt.Errorf("heartbeat %s: %d", id, resp.StatusCode)
					} else if resp.TLS.PeerCertificates[0].Subject.CommonName == "after-rotation" {
						rotatedSeen.Add(1)
					}
				}
				if err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
				}
			}
		})
	}
	if err := waitFor(30*time.Second, "5 heartbeats per client before the swap", func() (bool, string) {
		return requests.Load() >= 5*clients, fmt.Sprint(requests.Load())
	}); err != nil {
		t.Fatal(err)
	}
	publish("2", "after-rotation", "after-rotation")
	if err := waitFor(20*time.Second, "goreka reloaded the certificate", func() (bool, string) {
		return logHas(log, `server certificate reloaded`), tail(log, 5)
	}); err != nil {
		t.Fatal(err)
	}
	after := requests.Load()
	if err := waitFor(30*time.Second, "5 heartbeats per client after the reload, new connections on the new certificate", func() (bool, string) {
		return requests.Load() >= after+5*clients && rotatedSeen.Load() >= clients, fmt.Sprint(requests.Load()-after, " ", rotatedSeen.Load())
	}); err != nil {
		t.Error(err)
	}
	// A broken new version (the tester's key under after-rotation's certificate) is logged and refused;
	// the heartbeats go on over the certificate in use.
	publish("3", "after-rotation", "tester")
	if err := waitFor(20*time.Second, "goreka refused the broken certificate", func() (bool, string) {
		return logHas(log, `new server certificate refused; the old one stays in use`), tail(log, 5)
	}); err != nil {
		t.Fatal(err)
	}
	after = requests.Load()
	if err := waitFor(30*time.Second, "5 heartbeats per client after the refused swap", func() (bool, string) {
		return requests.Load() >= after+5*clients, fmt.Sprint(requests.Load() - after)
	}); err != nil {
		t.Error(err)
	}
	close(stop)
	wg.Wait()
	resp, err := x.pki.client("tester", false).Get(base + "/eureka/apps/ROTATION")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if cn := resp.TLS.PeerCertificates[0].Subject.CommonName; cn != "after-rotation" {
		t.Fatalf("a new connection after the swap got %s", cn)
	}
	t.Logf("rotation: %d heartbeats from %d clients, %d failed, %d over the new certificate", requests.Load(), clients, failed.Load(), rotatedSeen.Load())
	if failed.Load() != 0 || rotatedSeen.Load() == 0 {
		t.Fatalf("%d of %d heartbeats failed (first: %v); %d saw the new certificate", failed.Load(), requests.Load(), firstErr.Load(), rotatedSeen.Load())
	}
}

// sClient: with enabled-protocols=TLSv1.2 and one cipher, openssl s_client gets that protocol and cipher
// and nothing else (TLS 1.1 offered at OpenSSL's security level 0, so that its client does offer it).
func (x *tlsRun) sClient(t *testing.T) {
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	args := append(x.serverTLS("goreka-sclient", "none"), "--eureka.client.service-url.defaultZone=https://localhost:"+strconv.Itoa(port)+"/eureka/",
		"--server.ssl.enabled-protocols=TLSv1.2", "--server.ssl.ciphers=TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256")
	// The tester's certificate is not asked for (client-auth none), so the readiness check needs none either.
	x.goreka(t, "goreka-sclient", port, args...)
	connect := "127.0.0.1:" + strconv.Itoa(port)
	sc := func(args ...string) (bool, string) {
		cmd := exec.Command("openssl", append([]string{"s_client", "-connect", connect, "-servername", "localhost", "-CAfile", x.pki.path("ca.crt")}, args...)...)
		cmd.Stdin = strings.NewReader("Q\n")
		var b bytes.Buffer
		cmd.Stdout, cmd.Stderr = &b, &b
		err := cmd.Run()
		return err == nil && strings.Contains(b.String(), "Verify return code: 0 (ok)"), b.String()
	}
	ok, out := sc("-tls1_2", "-cipher", "ECDHE-ECDSA-AES128-GCM-SHA256")
	if !ok || !regexp.MustCompile(`Protocol *: TLSv1\.2`).MatchString(out) || !regexp.MustCompile(`Cipher *: ECDHE-ECDSA-AES128-GCM-SHA256`).MatchString(out) {
		t.Fatalf("the enabled protocol and cipher: %v\n%s", ok, out)
	}
	for _, refused := range [][]string{{"-tls1_3"}, {"-tls1_1", "-cipher", "DEFAULT:@SECLEVEL=0"}, {"-tls1_2", "-cipher", "ECDHE-ECDSA-AES256-GCM-SHA384"}, {"-tls1_2", "-cipher", "ECDHE-ECDSA-CHACHA20-POLY1305"}} {
		if ok, out := sc(refused...); ok || strings.Contains(out, "Cipher is ECDHE") {
			t.Errorf("s_client %v was served:\n%s", refused, out)
		}
	}
}
