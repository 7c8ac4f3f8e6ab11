package server

import (
	"bytes"
	"fmt"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/goreka/goreka/compat"

	"github.com/goreka/goreka/registry"
)

// A relay's aggregated heartbeats are applied as the instances' own client
// heartbeats: renewed, counted by the renews meter self-preservation
// reads, passed to OnRenew as not from a peer (so replication sends them on
// as ordinary heartbeats), and answered per item in order: an unknown
// instance 404 (the relay registers it again), an item that is not a
// heartbeat 400.
func TestRenewalsAreClientHeartbeats(t *testing.T) {
	f := newFixture(t)
	var renewals []registry.Renewal
	f.reg = registry.New(registry.Options{Now: f.clock.Now, OnRenew: func(rn registry.Renewal) { renewals = append(renewals, rn) }})
	f.srv = New(Config{}, Deps{Registry: f.reg, Now: f.clock.Now})
	f.reg.StartRenewsMeter(f.clock.Now())
	for _, id := range []string{"a1", "a2"} {
		if _, err := f.reg.Register(&registry.Instance{InstanceID: id, HostName: id, App: "APP", IPAddr: "10.0.0.1", Status: registry.StatusUp,
			DataCenterInfo: registry.DataCenterInfo{Name: registry.DataCenterMyOwn}}, false); err != nil {
			t.Fatal(err)
		}
	}
	body := `{"replicationList":[` +
		`{"appName":"APP","id":"a1","status":"UP","action":"Heartbeat"},` +
		`{"appName":"APP","id":"gone","status":"UP","action":"Heartbeat"},` +
		`{"appName":"APP","id":"a2","status":"UP","action":"Cancel"},` +
		`{"appName":"APP","id":"a2","status":"UP","action":"Heartbeat"}]}`
	w := f.do(t, "POST", "/eureka/goreka/renewals", body, map[string]string{"Content-Type": "application/json"})
	if got, want := w.Body.String(), `{"responseList":[{"statusCode":200},{"statusCode":404},{"statusCode":400},{"statusCode":200}]}`; w.Code != 200 || got != want {
		t.Fatalf("renewals = %d %s, want 200 %s", w.Code, got, want)
	}
	if len(renewals) != 2 || renewals[0].FromPeer || renewals[1].FromPeer {
		t.Fatalf("renewals seen by listeners = %+v, want two client heartbeats", renewals)
	}
	if _, ok := f.reg.Get("APP", "a2"); !ok {
		t.Fatal("a Cancel item inside renewals was applied")
	}
	if w := f.do(t, "POST", "/eureka/goreka/renewals", `{"replicationList":[]}`, map[string]string{"Content-Type": "application/json"}); w.Code != 200 {
		t.Fatalf("empty renewals (the relay's probe) = %d", w.Code)
	}
	if w := f.do(t, "POST", "/eureka/goreka/renewals", `not json`, map[string]string{"Content-Type": "application/json"}); w.Code != 400 {
		t.Fatalf("a body that is no list = %d, want 400", w.Code)
	}
}

// renewalsBody is the body a relay posts for n instances of benchServer.
func renewalsBody(n int) []byte {
	items := make([]compat.ReplicationItem, n)
	for i := range items {
		app := fmt.Sprintf("APP-%03d", i%200)
		items[i] = compat.ReplicationItem{AppName: app, ID: fmt.Sprintf("host-%05d:%s:8080", i, app), Status: "UP",
			Action: compat.ActionHeartbeat, LastDirtyTimestamp: 1700000000000 + int64(i), HasLastDirty: i%2 == 0}
	}
	return compat.AppendReplicationList(nil, items)
}

// The body a relay writes takes the scanning path, and an item of it costs
// no allocation at the core: a request of 1,000 items allocates about as
// often as one of 10.
func TestRenewalItemDoesNotAllocate(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop items at random (make test runs this once without it)")
	}
	if _, _, ok := scanRenewals(renewalsBody(3), nil); !ok {
		t.Fatal("the relay's renewals body is not read by scanRenewals")
	}
	srv, _ := benchServer(t, 1000)
	allocs := func(n int) float64 {
		body := renewalsBody(n)
		return testing.AllocsPerRun(20, func() {
			req := httptest.NewRequest("POST", "/eureka/"+compat.RenewalsPath, bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			w := httptest.NewRecorder()
			srv.ServeHTTP(w, req)
			if w.Code != 200 || strings.Contains(w.Body.String(), "404") {
				t.Fatalf("renewals = %d %.200s", w.Code, w.Body)
			}
		})
	}
	// An allocation per item would add ~990; the answer's buffer growing with
	// the response adds a few (its doublings).
	if small, big := allocs(10), allocs(1000); big > small+50 {
		t.Fatalf("renewals allocate %.0f times for 10 items and %.0f for 1,000: an item allocates", small, big)
	}
}

// FuzzScanRenewals: whatever scanRenewals reads, the general decoder reads
// the same way (so the answers do not depend on the path), and the
// relay's own bodies are read by it.
func FuzzScanRenewals(f *testing.F) {
	f.Add(renewalsBody(3))
	f.Add([]byte(`{"replicationList":[]}`))
	f.Add([]byte(`{"replicationList":[{"appName":"APP","id":"a1","status":"UP","action":"Heartbeat"},{"appName":"APP","id":"a2","status":"UP","action":"Cancel"}]}`))
	for _, body := range []string{
		`{"replicationList":[{"appName":"A\"B","id":"a1","action":"Heartbeat"}]}`,
		`{"replicationList":[ {"appName":"A","id":"a1","action":"Heartbeat"}]}`,
		`{"replicationList":[{"appName":"A","id":"a1","action":"Heartbeat","lastDirtyTimestamp":007}]}`,
		`{"replicationList":[{"appName":"A","id":"a1","action":"Heartbeat","lastDirtyTimestamp":-5}]}`,
		`{"replicationList":[{"appName":"A","id":"a1","action":"Heartbeat","lastDirtyTimestamp":1.5}]}`,
		`{"replicationList":[{"appName":"A","id":"a1","action":"Heartbeat","lastDirtyTimestamp":"12"}]}`,
		`{"replicationList":[{"AppName":"A","id":"a1","action":"Heartbeat"}]}`,
		`{"replicationList":[{"appName":"A","id":null,"action":"Heartbeat"}]}`,
		`{"replicationList":[{"appName":"A","id":"a1","action":"Heartbeat","instanceInfo":null}]}`,
		`{"replicationList":[{}]}`,
		`{"replicationList":[{"appName":"A","id":"a1","id":"a2","action":"Heartbeat"}]}`,
		`{"replicationList":[{"appName":"A","id":"a1"},]}`,
		`{"replicationList":[{"appName":"A","id":"a1"}],"x":[]}`,
	} {
		f.Add([]byte(body))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		got, codes, ok := scanRenewals(slices.Clone(body), nil)
		if !ok {
			return
		}
		list, err := compat.DecodeReplicationList(body)
		if err != nil {
			t.Fatalf("scanRenewals read %q, which does not decode: %v", body, err)
		}
		if len(list) != len(got) || len(codes) != len(got) {
			t.Fatalf("scanRenewals read %d items of %q, the decoder %d", len(got), body, len(list))
		}
		for i, it := range list {
			want, code := renewal(it.AppName, it.ID, string(it.Action), it.LastDirtyTimestamp, it.HasLastDirty)
			if got[i] != want || codes[i] != code {
				t.Fatalf("item %d of %q: scanRenewals %+v (%d), the decoder %+v (%d)", i, body, got[i], codes[i], want, code)
			}
		}
	})
}
