package server

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/goreka/goreka/compat"
)

// The bad-input catalogue: every row is a request a broken or hostile client
// could send. Each must get its defined answer (a 4xx with a reason, or the
// status Eureka defines), leave the registry exactly as it was (the full
// JSON registry is compared byte for byte after every row), and leave no
// goroutine or memory behind. Grow the table when a new kind of bad input
// shows up; fuzz_test.go hunts for the ones nobody thought of.

// badInput is one row of the catalogue.
type badInput struct {
	name, method, path string
	body               []byte
	hdr                map[string]string
	want               int
	msg                string // substring of the body; "" means none is checked
}

const (
	instA       = "/eureka/apps/ORDER-SERVICE/host-a:order-service:8080"
	jsonCT      = "application/json"
	xmlCT       = "application/xml"
	validNewJS  = `{"instance":{"instanceId":"x","hostName":"h","app":"NEW","ipAddr":"1.2.3.4","status":"UP","port":{"$":8080,"@enabled":"true"},"dataCenterInfo":{"@class":"com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo","name":"MyOwn"}}}`
	validNewXML = `<instance><instanceId>x</instanceId><hostName>h</hostName><app>NEW</app><ipAddr>1.2.3.4</ipAddr><status>UP</status><port enabled="true">8080</port>` +
		`<dataCenterInfo class="com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo"><name>MyOwn</name></dataCenterInfo></instance>`
)

func ct(v string) map[string]string { return map[string]string{"Content-Type": v} }

func gzipped(b []byte) []byte {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	zw.Write(b)
	zw.Close()
	return buf.Bytes()
}

// batchOf builds a replication batch of n copies of item (a JSON object).
func batchOf(n int, item string) []byte {
	var b bytes.Buffer
	b.WriteString(`{"replicationList":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strings.ReplaceAll(item, "%d", fmt.Sprint(i)))
	}
	b.WriteString(`]}`)
	return b.Bytes()
}

// manyParams returns n query parameters k0=v&k1=v...
func manyParams(n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte('&')
		}
		fmt.Fprintf(&b, "k%d=v", i)
	}
	return b.String()
}

// badInputCatalogue is the table. Bodies are built once; the oversized ones
// are a few MiB.
func badInputCatalogue() []badInput {
	js, xml := ct(jsonCT), ct(xmlCT)
	rep := map[string]string{"Content-Type": jsonCT, "x-netflix-discovery-replication": "true"}
	replace := func(old, new string) []byte { return []byte(strings.Replace(validNewJS, old, new, 1)) }
	nestedJSON := `{"instance":{"hostName":` + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + `}}`
	nestedXML := "<instance>" + strings.Repeat("<a>", 200) + strings.Repeat("</a>", 200) + "</instance>"
	laughs := `<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">` +
		`<!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;"><!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">]>` +
		strings.Replace(validNewXML, "<hostName>h</hostName>", "<hostName>&lol3;</hostName>", 1)
	xxe := `<?xml version="1.0"?><!DOCTYPE x [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>` +
		strings.Replace(validNewXML, "<hostName>h</hostName>", "<hostName>&xxe;</hostName>", 1)
	bomb := gzipped(bytes.Repeat([]byte(" "), 8<<20)) // 8 MiB of blanks in ~8 KiB
	long := strings.Repeat("i", 64<<10)
	return []badInput{
		// JSON bodies.
		{"json malformed", "POST", "/eureka/apps/NEW", []byte(`{"instance":{`), js, 400, "cannot parse request body"},
		{"json truncated", "POST", "/eureka/apps/NEW", []byte(validNewJS[:len(validNewJS)/2]), js, 400, "cannot parse request body"},
		{"json empty body", "POST", "/eureka/apps/NEW", nil, js, 400, "cannot parse request body"},
		{"json null root", "POST", "/eureka/apps/NEW", []byte(`{"instance":null}`), js, 400, `missing root`},
		{"json array root", "POST", "/eureka/apps/NEW", []byte(`[` + validNewJS + `]`), js, 400, "cannot parse"},
		{"json wrong root", "POST", "/eureka/apps/NEW", []byte(`{"application":{}}`), js, 400, "cannot parse"},
		{"json deeply nested", "POST", "/eureka/apps/NEW", []byte(nestedJSON), js, 400, "cannot parse"},
		{"json instance not an object", "POST", "/eureka/apps/NEW", []byte(`{"instance":"x"}`), js, 400, "cannot parse"},
		{"json oversized", "POST", "/eureka/apps/NEW", []byte(`{"instance":{"app":"` + strings.Repeat("A", 2<<20) + `"}}`), js, 413, "larger than"},
		{"json gzip bomb", "POST", "/eureka/apps/NEW", bomb, map[string]string{"Content-Type": jsonCT, "Content-Encoding": "gzip"}, 413, "larger than"},
		{"json not gzip", "POST", "/eureka/apps/NEW", []byte(validNewJS), map[string]string{"Content-Type": jsonCT, "Content-Encoding": "gzip"}, 400, "bad gzip body"},
		{"json truncated gzip", "POST", "/eureka/apps/NEW", gzipped([]byte(validNewJS))[:20], map[string]string{"Content-Type": jsonCT, "Content-Encoding": "gzip"}, 400, "cannot read request body"},
		// XML bodies.
		{"xml malformed", "POST", "/eureka/apps/NEW", []byte(`<instance><app>`), xml, 400, "cannot parse request body"},
		{"xml truncated", "POST", "/eureka/apps/NEW", []byte(validNewXML[:len(validNewXML)/2]), xml, 400, "cannot parse request body"},
		{"xml deeply nested", "POST", "/eureka/apps/NEW", []byte(nestedXML), xml, 400, "nested too deeply"},
		{"xml entity expansion", "POST", "/eureka/apps/NEW", []byte(laughs), xml, 400, "cannot parse"},
		{"xml external entity", "POST", "/eureka/apps/NEW", []byte(xxe), xml, 400, "cannot parse"},
		{"xml utf-16 declared", "POST", "/eureka/apps/NEW", []byte(`<?xml version="1.0" encoding="UTF-16"?>` + validNewXML), xml, 400, "cannot parse"},
		{"xml wrong root", "POST", "/eureka/apps/NEW", []byte(`<application><name>NEW</name></application>`), xml, 400, "root element is"},
		{"xml oversized", "POST", "/eureka/apps/NEW", []byte("<instance><app>" + strings.Repeat("A", 2<<20) + "</app></instance>"), xml, 413, "larger than"},
		// Content types.
		{"text/plain", "POST", "/eureka/apps/NEW", []byte(validNewJS), ct("text/plain"), 415, "unsupported content type"},
		{"multipart", "POST", "/eureka/apps/NEW", []byte(validNewJS), ct("multipart/form-data; boundary=x"), 415, "unsupported content type"},
		{"unparseable content type", "POST", "/eureka/apps/NEW", []byte(validNewJS), ct("application/json; ;;=="), 415, "unsupported content type"},
		{"utf-16 charset", "POST", "/eureka/apps/NEW", []byte(validNewJS), ct("application/json; charset=utf-16"), 415, "charset"},
		{"json body labelled xml", "POST", "/eureka/apps/NEW", []byte(validNewJS), xml, 400, "malformed XML"},
		{"xml body labelled json", "POST", "/eureka/apps/NEW", []byte(validNewXML), js, 400, "malformed JSON"},
		{"missing content type, garbage", "POST", "/eureka/apps/NEW", []byte("\x00\x01garbage"), nil, 400, "cannot parse"},
		// Field values.
		{"port not a number", "POST", "/eureka/apps/NEW", replace(`"$":8080`, `"$":"eighty"`), js, 400, "cannot parse"},
		{"port object garbage", "POST", "/eureka/apps/NEW", replace(`"port":{"$":8080,"@enabled":"true"}`, `"port":[1,2]`), js, 400, "cannot parse"},
		{"lastDirtyTimestamp garbage", "POST", "/eureka/apps/NEW", replace(`"status":"UP"`, `"status":"UP","lastDirtyTimestamp":"yesterday"`), js, 400, "cannot parse"},
		{"missing instanceId and host", "POST", "/eureka/apps/NEW", replace(`"instanceId":"x","hostName":"h",`, ``), js, 400, "Missing"},
		{"missing dataCenterInfo", "POST", "/eureka/apps/NEW", replace(`"dataCenterInfo":{"@class":"com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo","name":"MyOwn"}`, `"countryId":1`), js, 400, "dataCenterInfo"},
		{"app mismatch", "POST", "/eureka/apps/OTHER", []byte(validNewJS), js, 400, "Mismatched appName"},
		{"renew bad timestamp", "PUT", instA + "?lastDirtyTimestamp=abc", nil, nil, 400, "lastDirtyTimestamp"},
		{"renew negative timestamp", "PUT", instA + "?lastDirtyTimestamp=-5", nil, nil, 400, "lastDirtyTimestamp"},
		{"renew overflowing timestamp", "PUT", instA + "?lastDirtyTimestamp=99999999999999999999999", nil, nil, 400, "lastDirtyTimestamp"},
		{"renew float timestamp", "PUT", instA + "?lastDirtyTimestamp=1.5e12", nil, nil, 400, "lastDirtyTimestamp"},
		{"renew bad overriddenstatus", "PUT", instA + "?overriddenstatus=up", nil, nil, 400, "overriddenstatus"},
		{"status lower case", "PUT", instA + "/status?value=up", nil, nil, 400, "invalid value"},
		{"status missing", "PUT", instA + "/status", nil, nil, 400, "missing value"},
		{"status empty", "PUT", instA + "/status?value=", nil, nil, 400, "missing value"},
		{"status bad timestamp", "PUT", instA + "/status?value=DOWN&lastDirtyTimestamp=x", nil, nil, 400, "lastDirtyTimestamp"},
		{"delete override bad value", "DELETE", instA + "/status?value=SIDEWAYS", nil, nil, 400, "invalid value"},
		{"metadata empty key", "PUT", instA + "/metadata?=v", nil, nil, 400, "empty metadata key"},
		{"metadata bad escape", "PUT", instA + "/metadata?color=%zz", nil, nil, 400, "invalid metadata query"},
		{"asg", "PUT", "/eureka/asg/my-asg/status?value=ENABLED", nil, nil, 400, "AWS"},
		// Paths: Eureka's ids never contain '/', and nothing is cleaned or
		// redirected, so these address nothing.
		{"encoded slash in id", "PUT", "/eureka/apps/ORDER-SERVICE/host-a%2Forder-service", nil, nil, 404, ""},
		{"encoded slash in app", "DELETE", "/eureka/apps/ORDER%2FSERVICE/host-a:order-service:8080", nil, nil, 404, ""},
		{"dot segments", "DELETE", "/eureka/apps/ORDER-SERVICE/../ORDER-SERVICE/host-a:order-service:8080", nil, nil, 404, ""},
		{"dot id", "DELETE", "/eureka/apps/ORDER-SERVICE/..", nil, nil, 404, ""},
		{"unicode id", "PUT", "/eureka/apps/ORDER-SERVICE/h%C3%B6st-%E2%9C%93", nil, nil, 404, ""},
		{"invalid utf-8 id", "DELETE", "/eureka/apps/ORDER-SERVICE/%FF%FE", nil, nil, 404, ""},
		{"nul in id", "DELETE", "/eureka/apps/ORDER-SERVICE/host-a%00", nil, nil, 404, ""},
		{"very long id", "PUT", "/eureka/apps/ORDER-SERVICE/" + long, nil, nil, 404, ""},
		{"very long app on register", "POST", "/eureka/apps/" + long, []byte(validNewJS), js, 400, "Mismatched appName"},
		{"unknown method", "PATCH", instA, nil, nil, 405, ""},
		{"register on delta", "POST", "/eureka/apps/delta", []byte(validNewJS), js, 405, ""},
		// Query strings with thousands of parameters: ignored where unused,
		// and a bad value among them is still found.
		{"renew 5000 params", "PUT", "/eureka/apps/ORDER-SERVICE/ghost?" + manyParams(5000), nil, nil, 404, ""},
		{"status 20000 params", "PUT", instA + "/status?" + manyParams(20000) + "&value=BOGUS", nil, nil, 400, ""},
		{"metadata 20000 params, empty key", "PUT", instA + "/metadata?" + manyParams(20000) + "&=x", nil, nil, 400, "invalid metadata query"},
		// Replication batches.
		{"batch garbage", "POST", "/eureka/peerreplication/batch", []byte(`[1,2`), rep, 400, "cannot parse"},
		{"batch list not an array", "POST", "/eureka/peerreplication/batch", []byte(`{"replicationList":"x"}`), rep, 400, "cannot parse"},
		{"batch gzip bomb", "POST", "/eureka/peerreplication/batch", gzipped(bytes.Repeat([]byte(" "), 40<<20)), map[string]string{"Content-Type": jsonCT, "Content-Encoding": "gzip"}, 413, "larger than"},
		{"batch 5000 unknown actions", "POST", "/eureka/peerreplication/batch", batchOf(5000, `{"appName":"ORDER-SERVICE","id":"host-a:order-service:8080","action":"Explode"}`), rep, 200, `{"statusCode":400}`},
		{"batch 5000 empty items", "POST", "/eureka/peerreplication/batch", batchOf(5000, `{}`), rep, 200, `{"statusCode":400}`},
		{"batch 5000 heartbeats for ghosts", "POST", "/eureka/peerreplication/batch", batchOf(5000, `{"appName":"ORDER-SERVICE","id":"ghost-%d","action":"Heartbeat"}`), rep, 200, `{"statusCode":404}`},
		{"batch 5000 cancels for ghosts", "POST", "/eureka/peerreplication/batch", batchOf(5000, `{"appName":"GHOST","id":"g-%d","action":"Cancel"}`), rep, 200, `{"statusCode":404}`},
		{"batch register without instance", "POST", "/eureka/peerreplication/batch", batchOf(3, `{"appName":"NEW","id":"n%d","action":"Register"}`), rep, 200, `{"statusCode":400}`},
		{"batch register app mismatch", "POST", "/eureka/peerreplication/batch", batchOf(1, `{"appName":"OTHER","id":"x","action":"Register","instanceInfo":`+validNewJS[len(`{"instance":`):len(validNewJS)-1]+`}`), rep, 200, `{"statusCode":400}`},
		{"batch heartbeat without id", "POST", "/eureka/peerreplication/batch", batchOf(2, `{"appName":"ORDER-SERVICE","action":"Heartbeat"}`), rep, 200, `{"statusCode":400}`},
		{"batch heartbeat bad override", "POST", "/eureka/peerreplication/batch", batchOf(2, `{"appName":"ORDER-SERVICE","id":"host-a:order-service:8080","overriddenStatus":"up","action":"Heartbeat"}`), rep, 200, `{"statusCode":400}`},
		{"batch status update bad status", "POST", "/eureka/peerreplication/batch", batchOf(2, `{"appName":"ORDER-SERVICE","id":"host-a:order-service:8080","status":"sideways","action":"StatusUpdate"}`), rep, 200, `{"statusCode":400}`},
	}
}

// settleGoroutines waits (bounded) for the goroutine count to come back to
// at most base, and fails with a dump of the survivors if it does not.
func settleGoroutines(t *testing.T, base int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		n := runtime.NumGoroutine()
		if n <= base {
			return
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			buf = buf[:runtime.Stack(buf, true)]
			t.Fatalf("goroutines: %d, want at most %d\n%s", n, base, buf)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func heapAfterGC() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// TestBadInputCatalogue runs the catalogue three times against one server:
// every row gets its answer, the registry never changes, and neither the
// goroutine count nor the live heap grows from round to round.
func TestBadInputCatalogue(t *testing.T) {
	f := newFixture(t)
	f.populate(t)
	// The registry is encoded directly: the fixture's response cache is not
	// invalidated by writes, so GET /eureka/apps could hide a change.
	snapshot := func() string {
		return string(compat.AppendApplications(nil, compat.JSON, false, f.reg.Applications()))
	}
	before := snapshot()
	rows := badInputCatalogue()
	names := map[string]bool{}
	for _, tc := range rows {
		if names[tc.name] {
			t.Fatalf("duplicate row %q", tc.name)
		}
		names[tc.name] = true
	}
	baseG := runtime.NumGoroutine()
	var heap [3]uint64
	for round := range 3 {
		for _, tc := range rows {
			t.Run(fmt.Sprintf("%d/%s", round, tc.name), func(t *testing.T) {
				r := httptest.NewRequest(tc.method, tc.path, bytes.NewReader(tc.body))
				for k, v := range tc.hdr {
					r.Header.Set(k, v)
				}
				w := httptest.NewRecorder()
				f.srv.ServeHTTP(w, r)
				body := w.Body.String()
				if w.Code != tc.want || !strings.Contains(body, tc.msg) {
					t.Fatalf("%s %.80s = %d %.300q, want %d containing %q", tc.method, tc.path, w.Code, body, tc.want, tc.msg)
				}
				if w.Code >= 400 && w.Code != 404 && w.Code != 405 && len(body) == 0 {
					t.Fatalf("%d without a reason", w.Code)
				}
				if after := snapshot(); after != before {
					t.Fatalf("registry changed:\nbefore %s\nafter  %s", before, after)
				}
			})
		}
		heap[round] = heapAfterGC()
	}
	settleGoroutines(t, baseG)
	// The first round warms pools and caches; the third must not hold more
	// live heap than the second beyond noise.
	if heap[2] > heap[1]+4<<20 {
		t.Fatalf("live heap grew from %d to %d bytes between rounds", heap[1], heap[2])
	}
	t.Logf("%d rows x 3 rounds; live heap after rounds: %v", len(rows), heap)
}

// TestBadInputReplicationClaimWithAuth: with authentication on, a request
// that says it is replication (x-netflix-discovery-replication: true) but
// carries no peer credentials is refused before it reaches the registry.
func TestBadInputReplicationClaimWithAuth(t *testing.T) {
	f := newFixture(t)
	f.populate(t)
	f.srv.EnableOps(OpsConfig{Auth: AuthConfig{User: "peer", Password: "s3cret", ReadOnlyUser: "viewer", ReadOnlyPassword: "look"}})
	get := func(string) string {
		return string(compat.AppendApplications(nil, compat.JSON, false, f.reg.Applications()))
	}
	peerAuth := "Basic cGVlcjpzM2NyZXQ=" // peer:s3cret
	before := get(peerAuth)
	replBody := batchOf(1, `{"appName":"NEW","id":"x","action":"Register","instanceInfo":`+validNewJS[len(`{"instance":`):len(validNewJS)-1]+`}`)
	cancelBody := batchOf(1, `{"appName":"ORDER-SERVICE","id":"host-a:order-service:8080","action":"Cancel"}`)
	rows := []struct {
		name, method, path, auth string
		body                     []byte
		want                     int
	}{
		{"batch register, no credentials", "POST", "/eureka/peerreplication/batch", "", replBody, 401},
		{"batch cancel, wrong password", "POST", "/eureka/peerreplication/batch", "Basic cGVlcjp3cm9uZw==", cancelBody, 401},
		{"batch cancel, not basic", "POST", "/eureka/peerreplication/batch", "Bearer abc", cancelBody, 401},
		{"batch cancel, bad base64", "POST", "/eureka/peerreplication/batch/", "Basic !!!", cancelBody, 401},
		{"batch cancel, read-only user", "POST", "/eureka/v2/peerreplication/batch", "Basic dmlld2VyOmxvb2s=", cancelBody, 403},
		{"replicated register, no credentials", "POST", "/eureka/apps/NEW", "", []byte(validNewJS), 401},
		{"replicated cancel, no credentials", "DELETE", instA, "", nil, 401},
		{"replicated status, read-only user", "PUT", instA + "/status?value=OUT_OF_SERVICE", "Basic dmlld2VyOmxvb2s=", nil, 403},
	}
	for _, tc := range rows {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(tc.method, tc.path, bytes.NewReader(tc.body))
			r.Header.Set("Content-Type", jsonCT)
			r.Header.Set("x-netflix-discovery-replication", "true")
			if tc.auth != "" {
				r.Header.Set("Authorization", tc.auth)
			}
			w := httptest.NewRecorder()
			f.srv.ServeHTTP(w, r)
			if w.Code != tc.want {
				t.Fatalf("%d, want %d", w.Code, tc.want)
			}
			if tc.want == 401 && !strings.HasPrefix(w.Header().Get("WWW-Authenticate"), "Basic ") {
				t.Fatalf("401 without a Basic challenge: %v", w.Header())
			}
			if after := get(peerAuth); after != before {
				t.Fatal("registry changed")
			}
		})
	}
	// The same batch with the peer's credentials is applied: the rows above
	// failed for their credentials, not their bodies.
	r := httptest.NewRequest("POST", "/eureka/peerreplication/batch", bytes.NewReader(cancelBody))
	r.Header.Set("Content-Type", jsonCT)
	r.Header.Set("Authorization", peerAuth)
	w := httptest.NewRecorder()
	f.srv.ServeHTTP(w, r)
	if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `{"statusCode":200}`) {
		t.Fatalf("authenticated batch: %d %s", w.Code, w.Body.String())
	}
}

// TestBadInputDefinedByEureka: inputs Eureka accepts with a defined meaning
// are accepted the same way, not refused.
func TestBadInputDefinedByEureka(t *testing.T) {
	f := newFixture(t)
	body := strings.Replace(validNewJS, `"status":"UP"`, `"status":"BOGUS"`, 1)
	if w := f.do(t, "POST", "/eureka/apps/NEW", body, ct(jsonCT)); w.Code != 204 {
		t.Fatalf("register with an unknown status: %d %s", w.Code, w.Body.String())
	}
	if v, ok := f.reg.Get("NEW", "x"); !ok || v.Instance.Status != "UNKNOWN" {
		t.Fatalf("an unknown status is UNKNOWN (InstanceStatus.toEnum): %+v %v", v.Instance, ok)
	}
	// Thousands of unused parameters on a fetch change nothing.
	if w := f.do(t, "GET", "/eureka/apps?"+manyParams(20000), "", nil); w.Code != 200 {
		t.Fatalf("fetch with 20000 parameters: %d", w.Code)
	}
}
