package ctl

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// fake answers each path with a fixed status and body, and records the
// requests (method, URI, user).
type fake struct {
	mu     sync.Mutex
	routes map[string]func(w http.ResponseWriter, r *http.Request)
	got    []string
	srv    *httptest.Server
}

func newFake(t *testing.T) *fake {
	f := &fake{routes: map[string]func(http.ResponseWriter, *http.Request){}}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, _, _ := r.BasicAuth()
		f.mu.Lock()
		f.got = append(f.got, r.Method+" "+r.URL.RequestURI()+" "+user)
		h := f.routes[r.Method+" "+r.URL.Path]
		f.mu.Unlock()
		if h == nil {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		h(w, r)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fake) answer(route string, status int, body string) {
	f.routes[route] = func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(status)
		fmt.Fprint(w, body)
	}
}

func run(t *testing.T, env []string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Run(args, env, &out, &errb)
	return code, out.String(), errb.String()
}

const appsBody = `{"revision":7,"apps":[{"name":"BILLING","instances":1,"statuses":{"UP":1}},{"name":"ORDERS","instances":3,"statuses":{"UP":2,"DOWN":1}}]}`

func TestTables(t *testing.T) {
	f := newFake(t)
	f.answer("GET /goreka/api/v1/apps", 200, appsBody)
	f.answer("GET /goreka/api/v1/instances", 200, `{"revision":7,"instances":[`+
		`{"app":"ORDERS","id":"o1","hostName":"h1","status":"UP","overriddenStatus":"UNKNOWN","lifecycle":"up","port":80,"portEnabled":true},`+
		`{"app":"ORDERS","id":"o2","hostName":"h2","status":"OUT_OF_SERVICE","overriddenStatus":"OUT_OF_SERVICE","lifecycle":"held","securePort":443,"securePortEnabled":true,"static":true}]}`)
	f.answer("GET /eureka/status", 200, `{"generalStats":{"server-uptime":"00:01","environment":"test"},"applicationStats":{"registered-replicas":""}}`)
	srv := "-server=" + f.srv.URL + "/eureka/"

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"apps"}, "APP      INSTANCES  STATUSES\nBILLING  1          UP=1\nORDERS   3          DOWN=1 UP=2\n(revision 7)\n"},
		{[]string{"instances"}, "APP     ID  STATUS          LIFECYCLE  ADDRESS          FLAGS\n" +
			"ORDERS  o1  UP              up         h1:80            \n" +
			"ORDERS  o2  OUT_OF_SERVICE  held       h2:443 (secure)  static,override=OUT_OF_SERVICE\n" +
			"(2 instances, revision 7)\n"},
		{[]string{"status"}, "NAME                 VALUE\nserver               " + f.srv.URL + "\nrevision             7\napplications         2\ninstances            4\n" +
			"environment          test\nserver-uptime        00:01\nregistered-replicas  \n"},
		{[]string{"-o", "json", "status"}, `{
  "applicationStats": {
    "registered-replicas": ""
  },
  "apps": 2,
  "generalStats": {
    "environment": "test",
    "server-uptime": "00:01"
  },
  "instances": 4,
  "revision": 7,
  "server": "` + f.srv.URL + `"
}
`},
	} {
		code, out, stderr := run(t, nil, append([]string{srv}, tc.args...)...)
		if code != ExitOK || out != tc.want {
			t.Errorf("%q: exit %d, stderr %q, output\n%q\nwant\n%q", tc.args, code, stderr, out, tc.want)
		}
	}
}

// The exit code and message of each kind of failure.
func TestFailures(t *testing.T) {
	f := newFake(t)
	f.answer("GET /goreka/api/v1/apps", 401, "")
	f.answer("GET /goreka/api/v1/instances", 400, `{"error":"lifecycle: \"asleep\" is not a lifecycle (up, suspect, held)","parameter":"lifecycle"}`)
	f.answer("DELETE /ns/dev/eureka/apps/ORDERS/o1", 403, "")
	f.answer("PUT /eureka/apps/ORDERS/o1/status", 500, "boom\n")
	f.routes["GET /goreka/api/v1/changes"] = func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }
	u := f.srv.URL
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"apps"}, ExitUnreachable, "goreka ctl apps: GET " + u + "/goreka/api/v1/apps: HTTP 401: credentials missing or wrong"},
		{[]string{"instances", "lifecycle=asleep"}, ExitFailed, "goreka ctl instances: GET " + u + `/goreka/api/v1/instances?lifecycle=asleep: HTTP 400: lifecycle: "asleep" is not a lifecycle`},
		{[]string{"-namespace", "dev", "cancel", "orders", "o1"}, ExitUnreachable, "goreka ctl cancel: DELETE " + u + "/ns/dev/eureka/apps/ORDERS/o1: HTTP 403: refused: this user may not do that"},
		{[]string{"remove-override", "ORDERS", "o1"}, ExitFailed, "goreka ctl remove-override: DELETE " + u + "/eureka/apps/ORDERS/o1/status: HTTP 404: not registered"},
		{[]string{"override", "ORDERS", "o1", "down"}, ExitFailed, "HTTP 500: boom\n"},
		{[]string{"watch", "since=x"}, ExitFailed, `goreka ctl watch: since: "x" is not a revision`},
		{[]string{"-namespace", "Dev", "apps"}, ExitUsage, "goreka ctl: -namespace: namespace name \"Dev\" may only hold lower-case"},
		{[]string{"-server", "ftp://h", "apps"}, ExitUsage, `goreka ctl apps: server "ftp://h": not an http(s) URL`},
	} {
		code, _, stderr := run(t, nil, append([]string{"-server", u}, tc.args...)...)
		if code != tc.code || !strings.Contains(stderr, tc.msg) {
			t.Errorf("%q: exit %d, stderr %q; want %d and %q", tc.args, code, stderr, tc.code, tc.msg)
		}
	}
}

// The credentials of the URL win over -user, which wins over the
// environment; -namespace and GOREKA_NAMESPACE put /ns/NAME before the
// paths.
func TestCredentialsAndNamespace(t *testing.T) {
	f := newFake(t)
	f.answer("GET /goreka/api/v1/apps", 200, appsBody)
	f.answer("GET /ns/dev/goreka/api/v1/apps", 200, appsBody)
	host := strings.TrimPrefix(f.srv.URL, "http://")
	env := []string{"GOREKA_URL=" + f.srv.URL, "GOREKA_USER=env", "GOREKA_PASSWORD=x", "GOREKA_NAMESPACE=dev"}
	for _, args := range [][]string{{"apps"}, {"-user", "flag", "apps"}, {"-server", "http://url:pw@" + host + "/eureka/", "-user", "flag", "-namespace=default", "apps"}} {
		if code, _, stderr := run(t, env, args...); code != ExitOK {
			t.Fatalf("%q: %d %q", args, code, stderr)
		}
	}
	want := "GET /ns/dev/goreka/api/v1/apps env\nGET /ns/dev/goreka/api/v1/apps flag\nGET /goreka/api/v1/apps url"
	if got := strings.Join(f.got, "\n"); got != want {
		t.Errorf("requests:\n%s\nwant\n%s", got, want)
	}
}

// The watch prints one line per change, says when it resumes after a lag
// (and reconnects from the lagged revision), stops after -n changes, and
// starts from the current revision without since=.
func TestWatch(t *testing.T) {
	f := newFake(t)
	f.answer("GET /goreka/api/v1/apps", 200, appsBody)
	var conns []string
	f.routes["GET /goreka/api/v1/watch"] = func(w http.ResponseWriter, r *http.Request) {
		conns = append(conns, r.URL.Query().Get("since"))
		switch len(conns) {
		case 1:
			fmt.Fprint(w, "id: 8\nevent: change\ndata: {\"revision\":8,\"kind\":\"status-update\",\"app\":\"A\",\"id\":\"a1\",\"prevStatus\":\"UP\",\"instance\":{\"status\":\"DOWN\"},\"fromPeer\":true}\n\n"+
				": keep-alive\n\n"+
				"id: 20\nevent: lagged\ndata: {\"revision\":20,\"reason\":\"behind\"}\n\n")
		default:
			fmt.Fprint(w, "id: 20\nevent: snapshot\ndata: {\"revision\":20,\"instances\":[{},{}]}\n\n"+
				"id: 21\nevent: change\ndata: {\"revision\":21,\"kind\":\"register\",\"app\":\"A\",\"id\":\"a2\",\"instance\":{\"status\":\"UP\"}}\n\n"+
				"id: 22\nevent: change\ndata: {\"revision\":22,\"kind\":\"cancel\",\"app\":\"A\",\"id\":\"a2\",\"instance\":{\"status\":\"UP\"}}\n\n")
		}
	}
	code, out, stderr := run(t, nil, "-server", f.srv.URL, "watch", "-n", "2")
	want := "8\tstatus-update\tA/a1\tDOWN (was UP) from a peer\n20\tlagged\tresuming\n20\tsnapshot\t2 instances\n21\tregister\tA/a2\tUP\n"
	if code != ExitOK || out != want || strings.Join(conns, ",") != "7,20" {
		t.Fatalf("watch -n 2: exit %d %q, connections since %q, output\n%q\nwant\n%q", code, stderr, conns, out, want)
	}

	// Without -n the end of the stream is exit 3; -o json prints the events as sent.
	conns = nil
	code, out, stderr = run(t, nil, "-server", f.srv.URL, "-o", "json", "watch", "since=3")
	if code != ExitUnreachable || !strings.Contains(stderr, "goreka ctl watch: watch "+f.srv.URL+": the server ended the stream") ||
		!strings.HasPrefix(out, `{"event":"change","data":{"revision":8,`) || strings.Count(out, "\n") != 5 || strings.Join(conns, ",") != "3,20" {
		t.Fatalf("watch to the end: exit %d %q, connections %q, output\n%s", code, stderr, conns, out)
	}
}

// diff against two fakes: the rows, the JSON, and exit 1 for differences.
func TestDiff(t *testing.T) {
	a, b := newFake(t), newFake(t)
	a.answer("GET /goreka/api/v1/instances", 200, `{"revision":3,"instances":[{"app":"A","id":"1","status":"UP"},{"app":"A","id":"2","status":"UP"}]}`)
	b.answer("GET /goreka/api/v1/instances", 200, `{"revision":4,"instances":[{"app":"A","id":"1","status":"DOWN"},{"app":"B","id":"1","status":"UP"}]}`)
	code, out, _ := run(t, nil, "diff", a.srv.URL, b.srv.URL)
	want := "DIFF     APP  ID  " + a.srv.URL + "  " + b.srv.URL + "\n" +
		"status   A    1   UP" + strings.Repeat(" ", len(a.srv.URL)) + "DOWN\n" +
		"missing  A    2   UP" + strings.Repeat(" ", len(a.srv.URL)) + "-\n" +
		"extra    B    1   -" + strings.Repeat(" ", len(a.srv.URL)+1) + "UP\n" +
		fmt.Sprintf("(2 instances on %s, 2 on %s, 3 differences)\n", a.srv.URL, b.srv.URL)
	if code != ExitFailed || out != want {
		t.Errorf("diff: exit %d, output\n%q\nwant\n%q", code, out, want)
	}
}
