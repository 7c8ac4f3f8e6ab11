package server

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/goreka/goreka/compat"
)

var fuzzMethods = []string{"GET", "POST", "PUT", "DELETE", "HEAD", "PATCH", "OPTIONS"}

// FuzzRouter sends random requests (method, path, raw path, query, content
// type, encoding, replication header, body) through the whole router
// against a populated registry. No request may panic or answer 5xx, a read
// may not change the registry, and whatever the writes did, the registry
// must still encode to a document that decodes.
func FuzzRouter(f *testing.F) {
	seeds := []struct {
		m                  uint8
		path, rawq, ctype  string
		body               string
		gz, repl, rawPathE bool
	}{
		{0, "/eureka/apps/", "", "", "", false, false, false},
		{0, "/eureka/v2/apps/delta", "", "", "", false, false, false},
		{0, "/eureka/apps/ORDER-SERVICE/host-a:order-service:8080", "", "", "", false, false, false},
		{0, "/eureka/vips/order-service", "", "", "", false, false, false},
		{1, "/eureka/apps/NEW", "", jsonCT, validNewJS, false, false, false},
		{1, "/eureka/apps/NEW/", "", xmlCT, validNewXML, false, true, false},
		{1, "/eureka/apps/NEW", "", jsonCT, validNewJS, true, false, false},
		{2, instA, "status=UP&lastDirtyTimestamp=1764500000000", "", "", false, false, false},
		{2, instA, "lastDirtyTimestamp=1764400000000&overriddenstatus=UNKNOWN", "", "", false, true, false},
		{2, instA + "/status", "value=OUT_OF_SERVICE", "", "", false, false, false},
		{3, instA + "/status", "value=UP", "", "", false, false, false},
		{2, instA + "/metadata", "a=b&c=%zz", "", "", false, false, false},
		{3, instA, "", "", "", false, false, false},
		{1, "/eureka/peerreplication/batch/", "", jsonCT, `{"replicationList":[{"appName":"ORDER-SERVICE","id":"host-a:order-service:8080","action":"Heartbeat","lastDirtyTimestamp":1764500000000},{"appName":"PAYMENT","id":"i-0abc","action":"Cancel"},{"action":"Explode"}]}`, false, true, false},
		{0, "/eureka/apps/ORDER%2FSERVICE/x", "", "", "", false, false, true},
		{5, "/eureka/apps/../apps/./NEW", "", "", "", false, false, false},
		{0, "/eureka/instances/i-0abc", "", "", "", false, false, false},
		{0, "/serverinfo/statusoverrides", "", "", "", false, false, false},
	}
	for _, s := range seeds {
		f.Add(s.m, s.path, s.rawq, s.ctype, []byte(s.body), s.gz, s.repl, s.rawPathE)
	}
	f.Fuzz(func(t *testing.T, m uint8, path, rawq, ctype string, body []byte, gz, repl, rawPathEscaped bool) {
		if len(body) > 64<<10 || len(path) > 4<<10 || len(rawq) > 4<<10 {
			return
		}
		fx := newFixture(t)
		fx.populate(t)
		before := string(compat.AppendApplications(nil, compat.JSON, false, fx.reg.Applications()))

		method := fuzzMethods[int(m)%len(fuzzMethods)]
		u := &url.URL{Path: path, RawQuery: rawq}
		if rawPathEscaped {
			u.RawPath = url.PathEscape(path)
		}
		if gz {
			body = gzipped(body)
		}
		r := &http.Request{
			Method: method, URL: u, RequestURI: u.RequestURI(), Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			Header: http.Header{}, Host: "localhost", Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body)),
		}
		if ctype != "" {
			r.Header.Set("Content-Type", ctype)
		}
		if gz {
			r.Header.Set("Content-Encoding", "gzip")
		}
		if repl {
			r.Header.Set("x-netflix-discovery-replication", "true")
		}
		w := httptest.NewRecorder()
		fx.srv.ServeHTTP(w, r)
		if w.Code >= 500 || w.Code < 200 {
			t.Fatalf("%s %q ?%q = %d %q", method, path, rawq, w.Code, w.Body.String())
		}
		after := compat.AppendApplications(nil, compat.JSON, false, fx.reg.Applications())
		if method == "GET" || method == "HEAD" || method == "OPTIONS" || w.Code >= 400 && w.Code != 409 {
			if string(after) != before {
				t.Fatalf("%s %q = %d changed the registry", method, path, w.Code)
			}
		}
		if _, err := compat.DecodeApplications(after, compat.JSON); err != nil {
			t.Fatalf("registry no longer encodes to a valid document after %s %q: %v\n%s", method, path, err, after)
		}
	})
}
