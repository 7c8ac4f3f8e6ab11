package server

import (
	"testing"
	"time"

	"github.com/goreka/goreka/registry"
)

// expirySwitch is a server Expiry that says what the test sets.
type expirySwitch struct{ enabled bool }

func (e *expirySwitch) LeaseExpirationEnabled() bool { return e.enabled }

// A replicated StatusUpdate or DeleteStatusOverride for a lease that has
// expired and is not evicted yet is answered as the REST call is: 404 while
// lease expiration is enabled (the eviction limit holds the lease), applied
// while self-preservation disables expiration. Eureka's
// PeerReplicationResource calls InstanceResource.statusUpdate, which looks
// the instance up with getInstanceByAppAndId.
func TestBatchStatusChangeOfExpiredLease(t *testing.T) {
	exp := &expirySwitch{enabled: true}
	f := newFixture(t)
	f.srv = New(Config{}, Deps{Registry: f.reg, Expiry: exp, Now: f.clock.Now})
	in := &registry.Instance{InstanceID: "h1", HostName: "h1", App: "HELD", IPAddr: "10.0.0.1", Status: registry.StatusUp,
		DataCenterInfo: registry.DataCenterInfo{Name: registry.DataCenterMyOwn},
		LeaseInfo:      registry.LeaseInfo{Duration: time.Second}}
	if _, err := f.reg.Register(in, false); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(2 * time.Second)
	batch := `{"replicationList":[` +
		`{"appName":"HELD","id":"h1","status":"OUT_OF_SERVICE","action":"StatusUpdate"},` +
		`{"appName":"HELD","id":"h1","status":"UP","action":"DeleteStatusOverride"}]}`
	post := func() string {
		t.Helper()
		w := f.do(t, "POST", "/eureka/peerreplication/batch/", batch, map[string]string{"Content-Type": "application/json"})
		if w.Code != 200 {
			t.Fatalf("batch = %d %s", w.Code, w.Body.String())
		}
		return w.Body.String()
	}
	rest := func(method string) int {
		t.Helper()
		return f.do(t, method, "/eureka/apps/HELD/h1/status?value=OUT_OF_SERVICE", "", map[string]string{"X-Netflix-Discovery-Replication": "true"}).Code
	}
	if got, want := post(), `{"responseList":[{"statusCode":404},{"statusCode":404}]}`; got != want {
		t.Errorf("expired lease, expiration enabled: batch answered %s, want %s", got, want)
	}
	if put, del := rest("PUT"), rest("DELETE"); put != 404 || del != 404 {
		t.Errorf("the REST calls answered %d, %d; want 404, 404", put, del)
	}
	v, ok := f.reg.Get("HELD", "h1")
	if !ok || v.Instance.Status != registry.StatusUp || v.Instance.OverriddenStatus != registry.StatusUnknown || !v.IsExpired(f.clock.Now(), 0) {
		t.Fatalf("the 404s changed the lease: %+v %v", v, ok)
	}

	// Self-preservation holding: the lease is shown, and both are applied
	// (a status update renews the lease).
	exp.enabled = false
	if got, want := post(), `{"responseList":[{"statusCode":200},{"statusCode":200}]}`; got != want {
		t.Errorf("expired lease, expiration disabled: batch answered %s, want %s", got, want)
	}
	if v, _ := f.reg.Get("HELD", "h1"); v.IsExpired(f.clock.Now(), 0) {
		t.Error("the applied status update did not renew the lease")
	}
}
