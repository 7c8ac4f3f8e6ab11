package ctl

import (
	"strings"
	"testing"
)

const xdsClientsBody = `{"enabled":true,"clients":[` +
	`{"node":"web-7f9c","kind":"grpc","namespace":"default","zone":"z2","acked":{"rds":"12","lds":"12","eds":"13","cds":"12"},"lastNack":{"type":"eds","rejected":"14","detail":"duplicate endpoint","at":"2026-11-30T21:14:30Z"}},` +
	`{"node":"edge","kind":"envoy","namespace":"default","acked":{}}]}`

const xdsResolveBody = `{"name":"echo","kind":"grpc","zone":"z1","cluster":"echo","http2":true,"listener":"echo","revision":13,"endpoints":[` +
	`{"hostName":"e2.local","address":"127.0.0.2","port":9001,"health":"DRAINING","weight":10,"zone":"z2","subZone":"e2","priority":1,"localityWeight":10},` +
	`{"hostName":"e1.local","address":"127.0.0.1","port":9000,"health":"HEALTHY","weight":90,"zone":"z1","subZone":"e1","priority":0,"localityWeight":90},` +
	`{"address":"::1","port":9002,"health":"UNKNOWN","weight":1,"priority":1,"localityWeight":1}]}`

// xds lists the clients, or one name's cluster and endpoints, lowest
// priority first; kind and zone go to the server as given.
func TestXDS(t *testing.T) {
	f := newFake(t)
	f.answer("GET /goreka/api/v1/xds/clients", 200, xdsClientsBody)
	f.answer("GET /goreka/api/v1/xds/resolve", 200, xdsResolveBody)
	srv := "-server=" + f.srv.URL
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"xds"}, "NODE      KIND   NAMESPACE  ZONE  ACKED                        LAST NACK\n" +
			"edge      envoy  default    -     -                            -\n" +
			"web-7f9c  grpc   default    z2    cds=12 eds=13 lds=12 rds=12  eds 14: duplicate endpoint\n(2 clients)\n"},
		{[]string{"xds", "echo", "kind=grpc", "zone=z1"}, "echo (grpc, node zone z1): cluster echo (HTTP/2), listener echo, revision 13\n" +
			"ENDPOINT        HEALTH    WEIGHT  ZONE  PRIORITY  LOCALITY-WEIGHT  INSTANCE/HOST\n" +
			"127.0.0.1:9000  HEALTHY   90      z1    0         90               e1\n" +
			"[::1]:9002      UNKNOWN   1       -     1         1                -\n" +
			"127.0.0.2:9001  DRAINING  10      z2    1         10               e2\n(3 endpoints)\n"},
	} {
		code, out, stderr := run(t, nil, append([]string{srv}, tc.args...)...)
		if code != ExitOK || out != tc.want {
			t.Errorf("%q: exit %d, stderr %q, output\n%s\nwant\n%s", tc.args, code, stderr, out, tc.want)
		}
	}
	if code, out, _ := run(t, nil, srv, "-o", "json", "xds", "echo"); code != ExitOK || !strings.Contains(out, `"localityWeight": 90`) {
		t.Errorf("-o json: exit %d, output\n%s", code, out)
	}
	want := "GET /goreka/api/v1/xds/clients \nGET /goreka/api/v1/xds/resolve?kind=grpc&name=echo&zone=z1 \nGET /goreka/api/v1/xds/resolve?name=echo "
	if got := strings.Join(f.got, "\n"); got != want {
		t.Errorf("requests:\n%s\nwant\n%s", got, want)
	}
}

// A server without xDS, a name not served and bad arguments have their
// exit codes.
func TestXDSFailures(t *testing.T) {
	f := newFake(t)
	f.answer("GET /goreka/api/v1/xds/clients", 200, `{"enabled":false,"clients":[]}`)
	f.answer("GET /goreka/api/v1/xds/resolve", 404, `{"error":"no application or VIP address nothing is served over xDS here","parameter":"name"}`)
	u := f.srv.URL
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"xds"}, ExitFailed, "goreka ctl xds: " + u + " serves no xDS (goreka.xds.enabled=false)"},
		{[]string{"xds", "nothing"}, ExitFailed, "goreka ctl xds: GET " + u + "/goreka/api/v1/xds/resolve?name=nothing: HTTP 404: no application or VIP address nothing"},
		{[]string{"xds", "echo", "kind=istio"}, ExitUsage, `kind "istio": envoy or grpc`},
		{[]string{"xds", "echo", "cluster=x"}, ExitUsage, `filter "cluster=x": unknown`},
		{[]string{"xds", "kind=grpc"}, ExitUsage, "NAME first"},
		{[]string{"xds", "echo", "zone=a", "zone=b"}, ExitUsage, "at most once"},
	} {
		code, _, stderr := run(t, nil, append([]string{"-server", u}, tc.args...)...)
		if code != tc.code || !strings.Contains(stderr, tc.msg) {
			t.Errorf("%q: exit %d, stderr %q; want %d and %q", tc.args, code, stderr, tc.code, tc.msg)
		}
	}
	if len(f.got) != 2 {
		t.Errorf("bad arguments reached the server: %q", f.got)
	}
}
