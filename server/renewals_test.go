package server

import (
	"testing"

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
