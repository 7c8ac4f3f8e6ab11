package replication

import (
	"testing"
	"time"

	"github.com/goreka/goreka/compat"
	"github.com/goreka/goreka/registry"
)

// A Register event that reaches the replicator after the instance was
// cancelled (events are emitted outside the registry lock) must not be
// sent: it would arrive after the Cancel and leave the instance on the peer.
func TestRegisterAfterItsCancelIsNotReplicated(t *testing.T) {
	reg := registry.New(registry.Options{})
	r := New(Config{Logger: testLogger(t), Seed: 1}, reg, []Peer{mustPeer(t, "http://127.0.0.1:1/eureka/")})
	in, err := reg.Register(instance("APP", "x", time.UnixMilli(1000)), false)
	if err != nil {
		t.Fatal(err)
	}
	ev := registry.Event{Kind: registry.EventRegister, App: "APP", ID: "x", Instance: in}
	if it, ok := r.itemOf(ev); !ok || it.Action != compat.ActionRegister {
		t.Fatalf("a stored instance's Register must be replicated: %+v %v", it, ok)
	}
	if err := reg.Cancel("APP", "x", false); err != nil {
		t.Fatal(err)
	}
	if it, ok := r.itemOf(ev); ok {
		t.Fatalf("Register of a cancelled instance queued: %+v", it)
	}
}
