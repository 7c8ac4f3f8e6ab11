//go:build browser

package server_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/goreka/goreka/internal/proctest"
)

// adsClient opens an ADS stream to addr as node n, takes the clusters and
// ACKs them; once a second request is answered, the ACK is recorded (the
// server handles a stream's requests in order). It returns the ACKed
// version and a function that closes the stream.
func adsClient(t *testing.T, ctx context.Context, addr string, n *core.Node) (string, func()) {
	t.Helper()
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithCancel(ctx)
	st, err := discovery.NewAggregatedDiscoveryServiceClient(cc).StreamAggregatedResources(sctx)
	if err != nil {
		t.Fatal(err)
	}
	closeAll := func() { cancel(); cc.Close() }
	t.Cleanup(closeAll)
	rt := func(req *discovery.DiscoveryRequest) *discovery.DiscoveryResponse {
		t.Helper()
		if err := st.Send(req); err != nil {
			t.Fatal(err)
		}
		resp, err := st.Recv()
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	cds := rt(&discovery.DiscoveryRequest{Node: n, TypeUrl: resource.ClusterType})
	if err := st.Send(&discovery.DiscoveryRequest{TypeUrl: resource.ClusterType, VersionInfo: cds.GetVersionInfo(), ResponseNonce: cds.GetNonce()}); err != nil {
		t.Fatal(err)
	}
	rt(&discovery.DiscoveryRequest{TypeUrl: resource.EndpointType, ResourceNames: []string{"orders"}})
	return cds.GetVersionInfo(), closeAll
}

// The dashboard of a goreka serving xDS lists the connected xDS clients,
// a hostile node id as text, and follows them on its live refresh: a
// client that connects shows up, one that leaves goes.
func TestBrowserXDSClients(t *testing.T) {
	browser := chromium(t)
	xdsPort := proctest.Port(t)
	base := startGoreka(t, "--goreka.xds.enabled=true", "--goreka.xds.address=127.0.0.1", "--goreka.xds.port="+strconv.Itoa(xdsPort))
	register(t, base, reg{app: "ORDERS", id: "orders-1", status: "UP", statusPage: "http://orders-1.svc.local:8080/info", metadata: map[string]string{"zone": "zone-a"}})

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	addr := fmt.Sprintf("127.0.0.1:%d", xdsPort)
	ver, closeEnvoy := adsClient(t, ctx, addr, &core.Node{Id: "edge-envoy-1", Locality: &core.Locality{Zone: "zone-a"}})

	c := startBrowser(t, browser, t.TempDir())
	eval := func(expr string, out any) {
		t.Helper()
		if err := c.eval(ctx, expr, out); err != nil {
			t.Fatal(err)
		}
	}
	rows := func() (out []string) {
		// node, kind, namespace, zone, ACKed versions; then "connected" must be filled in
		eval(`[...document.querySelectorAll('#xdsClients tbody tr')].map(r => [...r.cells].slice(0, 5).map(c => c.textContent).join('|') +
			(r.cells.length === 8 && r.cells[5].textContent.includes(' ago)') ? '' : ' (no connection time)'))`, &out)
		return out
	}
	waitRows := func(what string, want ...string) {
		t.Helper()
		var got []string
		defer func() {
			if t.Failed() {
				t.Logf("rows: %q", got)
			}
		}()
		waitUntil(t, 20*time.Second, what, func() bool {
			got = rows()
			return strings.Join(got, "\n") == strings.Join(want, "\n")
		})
	}
	if err := c.call(ctx, "Page.navigate", map[string]any{"url": base + "/"}, nil); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 15*time.Second, "the page and its first live refresh", func() bool {
		var ok bool
		return c.eval(ctx, `document.readyState === 'complete' && !!document.querySelector('#live.ok')`, &ok) == nil && ok
	})
	var h1 []string
	eval(`[...document.querySelectorAll('h1')].map(h => h.textContent)`, &h1)
	if !strings.Contains(strings.Join(h1, "|"), "|xDS clients|") {
		t.Errorf("h1 = %q, want an xDS clients section", h1)
	}
	envoyRow := "edge-envoy-1|envoy|default|zone-a|cds=" + ver
	waitRows("the Envoy's row", envoyRow)

	// A gRPC client whose node id carries markup connects; a registry
	// change makes the page refresh (it watches the change stream).
	evil := `<img src=x onerror="window.__pwned=7">`
	gver, _ := adsClient(t, ctx, addr, &core.Node{Id: evil, UserAgentName: "gRPC Go"})
	register(t, base, reg{app: "ORDERS", id: "orders-2", status: "UP", statusPage: "http://orders-2.svc.local:8080/info", metadata: map[string]string{}})
	waitRows("the gRPC client's row after the live refresh", evil+"|grpc|default||cds="+gver, envoyRow)
	noInjection(t, c, ctx, "Eureka")

	// The Envoy leaves: its row goes at the next refresh.
	closeEnvoy()
	register(t, base, reg{app: "ORDERS", id: "orders-3", status: "UP", statusPage: "http://orders-3.svc.local:8080/info", metadata: map[string]string{}})
	waitRows("the Envoy's row gone", evil+"|grpc|default||cds="+gver)
}
