package server

import (
	"bytes"
	"compress/gzip"
	"flag"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/goreka/goreka/cache"
	"github.com/goreka/goreka/registry"
	"github.com/goreka/goreka/registry/clocktest"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

type fixture struct {
	srv   *Server
	reg   *registry.Registry
	clock *clocktest.Clock
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	clk := clocktest.New(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	reg := registry.New(registry.Options{Now: clk.Now, ExpectedClients: 1, SelfID: "eureka-1"})
	cfg := cache.DefaultConfig()
	cfg.UseReadOnly = false
	cfg.Now = clk.Now
	srv := New(Config{}, Deps{Registry: reg, Cache: &cfg, Now: clk.Now})
	f := &fixture{srv: srv, reg: reg, clock: clk}
	return f
}

// populate registers a fixed registry: two apps, statuses UP, DOWN and
// OUT_OF_SERVICE (by override), an Amazon instance and empty metadata.
func (f *fixture) populate(t *testing.T) {
	t.Helper()
	bodies := []string{
		`{"instance":{"instanceId":"host-a:order-service:8080","hostName":"host-a","app":"ORDER-SERVICE","ipAddr":"10.0.0.11","status":"UP",
		  "port":{"$":8080,"@enabled":"true"},"securePort":{"$":443,"@enabled":"false"},"countryId":1,
		  "dataCenterInfo":{"@class":"com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo","name":"MyOwn"},
		  "leaseInfo":{"renewalIntervalInSecs":30,"durationInSecs":90},"metadata":{"management.port":"8080","zone":"z1"},
		  "homePageUrl":"http://host-a:8080/","statusPageUrl":"http://host-a:8080/actuator/info","healthCheckUrl":"http://host-a:8080/actuator/health",
		  "vipAddress":"order-service","secureVipAddress":"order-service","lastDirtyTimestamp":"1764500000000"}}`,
		`{"instance":{"instanceId":"host-b:order-service:8080","hostName":"host-b","app":"order-service","ipAddr":"10.0.0.12","status":"DOWN",
		  "port":{"$":8080,"@enabled":true},"securePort":{"$":8443,"@enabled":true},"countryId":1,
		  "dataCenterInfo":{"@class":"com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo","name":"MyOwn"},
		  "leaseInfo":{"renewalIntervalInSecs":10,"durationInSecs":30},"metadata":{"@class":"java.util.Collections$EmptyMap"},
		  "vipAddress":"order-service,orders","secureVipAddress":"secure-orders","lastDirtyTimestamp":1764500000001}}`,
		`{"instance":{"instanceId":"i-0abc","hostName":"ip-10-0-0-13.ec2.internal","app":"PAYMENT","ipAddr":"10.0.0.13","status":"UP",
		  "port":{"$":9090,"@enabled":"true"},"securePort":{"$":443,"@enabled":"false"},"countryId":1,
		  "dataCenterInfo":{"@class":"com.netflix.appinfo.AmazonInfo","name":"Amazon","metadata":{"instance-id":"i-0abc","availability-zone":"us-east-1a","ami-id":"ami-1"}},
		  "leaseInfo":{"renewalIntervalInSecs":30,"durationInSecs":90},"metadata":{"weight":"3"},
		  "vipAddress":"payment","secureVipAddress":"payment","asgName":"payment-asg","lastDirtyTimestamp":"1764500000002"}}`,
	}
	for i, b := range bodies {
		app := []string{"ORDER-SERVICE", "ORDER-SERVICE", "PAYMENT"}[i]
		w := f.do(t, "POST", "/eureka/apps/"+app, b, map[string]string{"Content-Type": "application/json"})
		if w.Code != 204 || w.Body.Len() != 0 {
			t.Fatalf("register %d: %d %q", i, w.Code, w.Body.String())
		}
		f.clock.Advance(time.Second)
	}
	if w := f.do(t, "PUT", "/eureka/apps/PAYMENT/i-0abc/status?value=OUT_OF_SERVICE", "", nil); w.Code != 200 {
		t.Fatalf("override: %d", w.Code)
	}
	f.clock.Advance(time.Second)
	if w := f.do(t, "PUT", "/eureka/apps/ORDER-SERVICE/host-a:order-service:8080", "", nil); w.Code != 200 {
		t.Fatalf("renew: %d", w.Code)
	}
}

func (f *fixture) do(t *testing.T, method, path, body string, hdr map[string]string) *httptest.ResponseRecorder {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	r := httptest.NewRequest(method, path, rd)
	for k, v := range hdr {
		r.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	f.srv.ServeHTTP(w, r)
	return w
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("..", "testdata", "golden", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./server -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from golden file (go test ./server -run %s -update rewrites it)\n got: %s\nwant: %s", name, t.Name(), got, want)
	}
}

func TestGoldenReads(t *testing.T) {
	f := newFixture(t)
	f.populate(t)
	endpoints := []struct{ name, path string }{
		{"apps", "/eureka/apps/"},
		{"delta", "/eureka/apps/delta"},
		{"app", "/eureka/apps/order-service"},
		{"vip", "/eureka/vips/order-service"},
		{"svip", "/eureka/svips/secure-orders"},
	}
	for _, ep := range endpoints {
		for _, format := range []string{"json", "xml"} {
			for _, compact := range []bool{false, true} {
				name := ep.name + "-" + format
				hdr := map[string]string{}
				if format == "json" {
					hdr["Accept"] = "application/json"
				}
				if compact {
					name += "-compact"
					hdr["X-Eureka-Accept"] = "compact"
				}
				t.Run(name, func(t *testing.T) {
					w := f.do(t, "GET", ep.path, "", hdr)
					if w.Code != 200 {
						t.Fatalf("status %d", w.Code)
					}
					if ct := w.Header().Get("Content-Type"); ct != "application/"+format {
						t.Fatalf("Content-Type %q", ct)
					}
					golden(t, name+"."+format, w.Body.Bytes())
				})
			}
		}
	}
	singles := []struct{ name, path string }{
		{"instance", "/eureka/apps/ORDER-SERVICE/host-b:order-service:8080"},
		{"instance-by-id", "/eureka/instances/i-0abc"},
		{"status", "/eureka/status"},
	}
	f.srv.status = fixedStatus{}
	for _, ep := range singles {
		for _, format := range []string{"json", "xml"} {
			t.Run(ep.name+"-"+format, func(t *testing.T) {
				hdr := map[string]string{}
				if format == "json" {
					hdr["Accept"] = "application/json"
				}
				w := f.do(t, "GET", ep.path, "", hdr)
				if w.Code != 200 {
					t.Fatalf("status %d", w.Code)
				}
				golden(t, ep.name+"."+format, w.Body.Bytes())
			})
		}
	}
	w := f.do(t, "GET", "/eureka/serverinfo/statusoverrides", "", nil)
	if w.Code != 200 || strings.TrimSpace(w.Body.String()) != `{"i-0abc":"OUT_OF_SERVICE"}` {
		t.Fatalf("statusoverrides: %d %s", w.Code, w.Body.String())
	}
}

type fixedStatus struct{}

func (fixedStatus) StatusInfo() StatusInfo {
	ok := true
	return StatusInfo{
		General:     [][2]string{{"environment", "test"}, {"num-of-cpus", "2"}},
		Application: [][2]string{{"registered-replicas", "http://peer:8762/eureka/"}, {"available-replicas", ""}},
		Healthy:     &ok,
	}
}

func TestPathVariants(t *testing.T) {
	f := newFixture(t)
	f.populate(t)
	for _, p := range []string{"/eureka/apps", "/eureka/apps/", "/eureka/v2/apps", "/eureka/v2/apps/", "/v2/apps/"} {
		if w := f.do(t, "GET", p, "", map[string]string{"Accept": "application/json"}); w.Code != 200 {
			t.Errorf("GET %s = %d", p, w.Code)
		}
	}
	if w := f.do(t, "POST", "/eureka/v2/apps/delta", "{}", nil); w.Code != 405 {
		t.Errorf("POST apps/delta = %d, want 405", w.Code)
	}
	if w := f.do(t, "GET", "/eureka/nope", "", nil); w.Code != 404 {
		t.Errorf("unknown path = %d", w.Code)
	}
}

func TestNegotiationAndGzip(t *testing.T) {
	f := newFixture(t)
	f.populate(t)
	w := f.do(t, "GET", "/eureka/apps/", "", map[string]string{"Accept": "*/*"})
	if !strings.HasPrefix(w.Body.String(), "<applications>") {
		t.Fatalf("*/* must answer XML: %.40s", w.Body.String())
	}
	w = f.do(t, "GET", "/eureka/apps/", "", map[string]string{"Accept": "application/json", "Accept-Encoding": "gzip, deflate"})
	if w.Header().Get("Content-Encoding") != "gzip" {
		t.Fatal("gzip not used")
	}
	zr, err := gzip.NewReader(w.Body)
	if err != nil {
		t.Fatal(err)
	}
	plain, _ := io.ReadAll(zr)
	if !bytes.HasPrefix(plain, []byte(`{"applications":`)) {
		t.Fatalf("gunzipped body %.40s", plain)
	}
	etag := w.Header().Get("ETag")
	if etag == "" {
		t.Fatal("no ETag")
	}
	w = f.do(t, "GET", "/eureka/apps/", "", map[string]string{"Accept": "application/json", "If-None-Match": etag})
	if w.Code != 304 || w.Body.Len() != 0 {
		t.Fatalf("If-None-Match: %d", w.Code)
	}
}

func TestWriteResponsesHaveNoBody(t *testing.T) {
	f := newFixture(t)
	f.populate(t)
	id := "/eureka/apps/ORDER-SERVICE/host-a:order-service:8080"
	tests := []struct {
		name, method, path string
		hdr                map[string]string
		want               int
	}{
		{"renew", "PUT", id + "?status=UP&lastDirtyTimestamp=1764500000000", nil, 200},
		{"renew client newer", "PUT", id + "?lastDirtyTimestamp=1764500000999", nil, 404},
		{"renew client older", "PUT", id + "?lastDirtyTimestamp=1764400000000", nil, 200},
		{"renew unknown", "PUT", "/eureka/apps/ORDER-SERVICE/nope", nil, 404},
		{"status unknown instance", "PUT", "/eureka/apps/ORDER-SERVICE/nope/status?value=UP", nil, 404},
		{"metadata", "PUT", id + "/metadata?color=blue", nil, 200},
		{"override", "PUT", id + "/status?value=OUT_OF_SERVICE&lastDirtyTimestamp=1764500000000", nil, 200},
		{"delete override", "DELETE", id + "/status?value=UP", nil, 200},
		{"cancel", "DELETE", id, nil, 200},
		{"cancel again", "DELETE", id, nil, 404},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := f.do(t, tc.method, tc.path, "", tc.hdr)
			if w.Code != tc.want {
				t.Fatalf("%s %s = %d, want %d (%s)", tc.method, tc.path, w.Code, tc.want, w.Body.String())
			}
			if w.Body.Len() != 0 || w.Header().Get("Content-Type") != "" {
				t.Fatalf("body %q content-type %q: Java clients need none", w.Body.String(), w.Header().Get("Content-Type"))
			}
		})
	}
	if v, _ := f.reg.Get("ORDER-SERVICE", "host-b:order-service:8080"); v.Instance == nil {
		t.Fatal("fixture instance missing")
	}
}

func TestReplicatedRenewConflict(t *testing.T) {
	f := newFixture(t)
	f.populate(t)
	w := f.do(t, "PUT", "/eureka/apps/ORDER-SERVICE/host-a:order-service:8080?lastDirtyTimestamp=1764400000000&overriddenstatus=UNKNOWN", "",
		map[string]string{"x-netflix-discovery-replication": "true", "Accept": "application/json"})
	if w.Code != 409 || !strings.HasPrefix(w.Body.String(), `{"instance":{"instanceId":"host-a:order-service:8080"`) {
		t.Fatalf("409 with the stored instance expected: %d %.80s", w.Code, w.Body.String())
	}
}

func TestBadInputLeavesRegistryAlone(t *testing.T) {
	f := newFixture(t)
	f.populate(t)
	before := f.do(t, "GET", "/eureka/apps", "", map[string]string{"Accept": "application/json"}).Body.String()
	valid := `{"instance":{"instanceId":"x","hostName":"h","app":"NEW","ipAddr":"1.2.3.4","dataCenterInfo":{"@class":"com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo","name":"MyOwn"}}}`
	tests := []struct {
		name, method, path, body string
		hdr                      map[string]string
		want                     int
		msg                      string
	}{
		{"malformed json", "POST", "/eureka/apps/NEW", `{"instance":{`, map[string]string{"Content-Type": "application/json"}, 400, "cannot parse request body"},
		{"malformed xml", "POST", "/eureka/apps/NEW", `<instance><app>`, map[string]string{"Content-Type": "application/xml"}, 400, "cannot parse request body"},
		{"wrong root", "POST", "/eureka/apps/NEW", `{"application":{}}`, map[string]string{"Content-Type": "application/json"}, 400, "cannot parse"},
		{"text/plain", "POST", "/eureka/apps/NEW", valid, map[string]string{"Content-Type": "text/plain"}, 415, "unsupported content type"},
		{"bad charset", "POST", "/eureka/apps/NEW", valid, map[string]string{"Content-Type": "application/json; charset=utf-16"}, 415, "charset"},
		{"app mismatch", "POST", "/eureka/apps/OTHER", valid, map[string]string{"Content-Type": "application/json"}, 400, "Mismatched appName, expecting OTHER but was NEW"},
		{"missing host", "POST", "/eureka/apps/NEW", strings.Replace(valid, `"hostName":"h",`, "", 1), map[string]string{"Content-Type": "application/json"}, 400, "Missing hostname"},
		{"missing ip", "POST", "/eureka/apps/NEW", strings.Replace(valid, `"ipAddr":"1.2.3.4",`, "", 1), map[string]string{"Content-Type": "application/json"}, 400, "Missing ip address"},
		{"oversized", "POST", "/eureka/apps/NEW", `{"instance":{"app":"` + strings.Repeat("A", 2<<20) + `"}}`, map[string]string{"Content-Type": "application/json"}, 413, "larger than"},
		{"bad status value", "PUT", "/eureka/apps/ORDER-SERVICE/host-a:order-service:8080/status?value=up", "", nil, 400, "invalid value"},
		{"missing status value", "PUT", "/eureka/apps/ORDER-SERVICE/host-a:order-service:8080/status", "", nil, 400, "missing value"},
		{"bad lastDirtyTimestamp", "PUT", "/eureka/apps/ORDER-SERVICE/host-a:order-service:8080?lastDirtyTimestamp=abc", "", nil, 400, "lastDirtyTimestamp"},
		{"bad overriddenstatus", "PUT", "/eureka/apps/ORDER-SERVICE/host-a:order-service:8080?overriddenstatus=BOGUS", "", nil, 400, "overriddenstatus"},
		{"asg", "PUT", "/eureka/asg/my-asg/status?value=ENABLED", "", nil, 400, "AWS"},
		{"batch garbage", "POST", "/eureka/peerreplication/batch/", `[1,2`, map[string]string{"Content-Type": "application/json"}, 400, "cannot parse"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := f.do(t, tc.method, tc.path, tc.body, tc.hdr)
			if w.Code != tc.want || !strings.Contains(w.Body.String(), tc.msg) {
				t.Fatalf("%d %q, want %d containing %q", w.Code, w.Body.String(), tc.want, tc.msg)
			}
		})
	}
	after := f.do(t, "GET", "/eureka/apps", "", map[string]string{"Accept": "application/json"}).Body.String()
	if before != after {
		t.Fatal("bad input changed the registry")
	}
}

func TestRegisterXMLAndGzipBody(t *testing.T) {
	f := newFixture(t)
	xml := `<instance><instanceId>x1</instanceId><hostName>h</hostName><app>xmlapp</app><ipAddr>1.2.3.4</ipAddr><status>UP</status>
<port enabled="true">8080</port><dataCenterInfo class="com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo"><name>MyOwn</name></dataCenterInfo></instance>`
	if w := f.do(t, "POST", "/eureka/apps/XMLAPP", xml, map[string]string{"Content-Type": "application/xml"}); w.Code != 204 {
		t.Fatalf("xml register %d %s", w.Code, w.Body.String())
	}
	var zb bytes.Buffer
	zw := gzip.NewWriter(&zb)
	zw.Write([]byte(`{"instance":{"instanceId":"z1","hostName":"h","app":"ZAPP","ipAddr":"1.2.3.4","dataCenterInfo":{"@class":"com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo","name":"MyOwn"}}}`))
	zw.Close()
	r := httptest.NewRequest("POST", "/eureka/apps/ZAPP", &zb)
	r.Header.Set("Content-Type", "application/json;charset=UTF-8")
	r.Header.Set("Content-Encoding", "gzip")
	w := httptest.NewRecorder()
	f.srv.ServeHTTP(w, r)
	if w.Code != 204 {
		t.Fatalf("gzip register %d %s", w.Code, w.Body.String())
	}
	if f.reg.Size() != 2 {
		t.Fatalf("size %d", f.reg.Size())
	}
}

func TestBatch(t *testing.T) {
	f := newFixture(t)
	f.populate(t)
	body := `{"replicationList":[
 {"appName":"NEWAPP","id":"n1","lastDirtyTimestamp":1764500000000,"status":"UP","action":"Register","instanceInfo":{"instanceId":"n1","hostName":"h","app":"NEWAPP","ipAddr":"1.1.1.1","status":"UP","dataCenterInfo":{"@class":"com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo","name":"MyOwn"},"leaseInfo":{"durationInSecs":40}}},
 {"appName":"ORDER-SERVICE","id":"host-a:order-service:8080","lastDirtyTimestamp":1764500000000,"status":"UP","action":"Heartbeat"},
 {"appName":"ORDER-SERVICE","id":"host-a:order-service:8080","lastDirtyTimestamp":1764400000000,"status":"UP","action":"Heartbeat"},
 {"appName":"ORDER-SERVICE","id":"ghost","lastDirtyTimestamp":1764500000000,"status":"UP","action":"Heartbeat"},
 {"appName":"ORDER-SERVICE","id":"host-b:order-service:8080","lastDirtyTimestamp":1764500000001,"status":"OUT_OF_SERVICE","action":"StatusUpdate"},
 {"appName":"ORDER-SERVICE","id":"host-b:order-service:8080","lastDirtyTimestamp":1764500000001,"status":"UP","action":"DeleteStatusOverride"},
 {"appName":"PAYMENT","id":"i-0abc","action":"Cancel"},
 {"appName":"PAYMENT","id":"i-0abc","action":"Cancel"},
 {"appName":"X","id":"y","action":"Explode"},
 {"appName":"X","id":"y","status":"sideways","action":"StatusUpdate"},
 {"appName":"ORDER-SERVICE","id":"host-a:order-service:8080","status":"sideways","action":"StatusUpdate"}
]}`
	w := f.do(t, "POST", "/eureka/peerreplication/batch/", body, map[string]string{"Content-Type": "application/json", "Accept": "application/json"})
	if w.Code != 200 {
		t.Fatalf("batch %d %s", w.Code, w.Body.String())
	}
	// The status of an instance that is not there is a 404 before its
	// status is read, as the REST call answers (InstanceResource.statusUpdate
	// looks the instance up first); a bad status of one that is, a 400.
	golden(t, "batch-response.json", w.Body.Bytes())
	v, ok := f.reg.Get("NEWAPP", "n1")
	if !ok || v.Duration != 40*time.Second {
		t.Fatalf("replicated register: %+v %v", v, ok)
	}
	if _, ok := f.reg.Get("PAYMENT", "i-0abc"); ok {
		t.Fatal("replicated cancel not applied")
	}
}

func TestQueryValue(t *testing.T) {
	tests := []struct {
		raw, key, want string
		ok             bool
	}{
		{"status=UP&lastDirtyTimestamp=123", "lastDirtyTimestamp", "123", true},
		{"a=1&a=2", "a", "1", true},
		{"x=1", "a", "", false},
		{"value=OUT%5FOF%5FSERVICE", "value", "OUT_OF_SERVICE", true},
		{"ov%65rriddenstatus=UP", "overriddenstatus", "UP", true},
		{"flag&b=2", "flag", "", true},
		{"", "a", "", false},
		{"a=%zz", "a", "%zz", true},
	}
	for _, tc := range tests {
		got, ok := queryValue(tc.raw, tc.key)
		if got != tc.want || ok != tc.ok {
			t.Errorf("queryValue(%q, %q) = %q, %v; want %q, %v", tc.raw, tc.key, got, ok, tc.want, tc.ok)
		}
	}
}
