package main

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/goreka/goreka/server/api/wire"
)

// goreka ctl xds against running servers: with xDS on, a name's cluster
// and endpoints in the default namespace and in another one; with xDS
// off, exit 1 saying so.
func TestCtlXDS(t *testing.T) {
	xdsPort := freePort(t, "127.0.0.1")
	n := ctlNode(t, "ctl-xds", "--goreka.xds.enabled=true", "--goreka.xds.address=127.0.0.1",
		"--goreka.xds.port="+strconv.Itoa(xdsPort), "--goreka.namespaces.allowed=dev")
	register(t, n, "ORDERS", "o1", 30, 90)
	must(t, "POST", "http://"+n.addr()+"/ns/dev/eureka/apps/BILLING", instanceBody("BILLING", "b1", 30, 90), 204)
	srv := "-server=http://" + n.addr()
	// The xDS server follows the change stream on its own goroutine: wait
	// for the registrations to reach it.
	deadline := time.Now().Add(startWithin)
	for _, args := range [][]string{{srv, "xds", "orders"}, {srv, "-namespace", "dev", "xds", "billing"}} {
		for code, _, _ := ctlRun(t, nil, args...); code != 0; code, _, _ = ctlRun(t, nil, args...) {
			if time.Now().After(deadline) {
				t.Fatalf("%q: exit %d for %v", args, code, startWithin)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}

	code, out, stderr := ctlRun(t, nil, srv, "xds")
	if code != 0 || out != "NODE  KIND  NAMESPACE  ZONE  ACKED  LAST NACK\n(0 clients)\n" {
		t.Errorf("xds: exit %d %q %q", code, out, stderr)
	}
	code, out, stderr = ctlRun(t, nil, srv, "xds", "orders", "kind=grpc")
	if code != 0 || !strings.HasPrefix(out, "orders (grpc): cluster orders, listener orders, revision ") || !strings.Contains(out, "HEALTHY") ||
		!strings.HasSuffix(out, "(1 endpoints)\n") {
		t.Errorf("xds orders kind=grpc: exit %d\n%s%s", code, out, stderr)
	}
	var r wire.XDSResolution
	if code, out, _ = ctlRun(t, nil, srv, "-o", "json", "-namespace", "dev", "xds", "billing"); code != 0 || json.Unmarshal([]byte(out), &r) != nil ||
		r.Cluster != "billing" || r.Kind != "envoy" || len(r.Endpoints) != 1 {
		t.Errorf("-namespace dev xds billing: exit %d %q", code, out)
	}
	if code, _, stderr = ctlRun(t, nil, srv, "xds", "billing"); code != exitFailed || !strings.Contains(stderr, "HTTP 404") {
		t.Errorf("dev's name in the default namespace: exit %d %q, want 1 with a 404", code, stderr)
	}

	off := ctlNode(t, "ctl-no-xds")
	if code, _, stderr = ctlRun(t, nil, "-server=http://"+off.addr(), "xds"); code != exitFailed || !strings.Contains(stderr, "serves no xDS (goreka.xds.enabled=false)") {
		t.Errorf("xds with xDS off: exit %d %q", code, stderr)
	}
}
