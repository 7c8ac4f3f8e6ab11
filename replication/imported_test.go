package replication

import (
	"testing"
	"time"

	"github.com/goreka/goreka/registry"
	"github.com/goreka/goreka/replication/peertest"
)

// Every node imports from Kubernetes on its own: an imported instance's
// import, change and withdrawal queue nothing for the peers, and a
// start-up sync does not copy a peer's imported instances (they would be
// ordinary leases here that nobody renews).
func TestImportedNotReplicated(t *testing.T) {
	t.Parallel()
	peer := peertest.New(t)
	now := time.UnixMilli(1_700_000_000_000)
	in := instance("WEB", "web-0", now)
	in.Metadata = map[string]string{registry.MetaSource: "kubernetes"}
	if _, err := peer.Registry().Import(in); err != nil {
		t.Fatal(err)
	}
	peer.Registry().Register(instance("ORDERS", "o1", now), false)
	reg, rep := wired(t, Config{}, peer)
	n, err := rep.SyncUp(t.Context(), 1, time.Millisecond)
	if err != nil || n != 1 {
		t.Fatalf("SyncUp = %d, %v; want the ordinary instance only", n, err)
	}
	if _, ok := reg.Get("WEB", "web-0"); ok {
		t.Fatal("the peer's imported instance was copied")
	}
	mine := instance("WEB", "web-0", now)
	mine.Metadata = map[string]string{registry.MetaSource: "kubernetes"}
	if _, err := reg.Import(mine); err != nil {
		t.Fatal(err)
	}
	changed := instance("WEB", "web-0", now)
	changed.Status = registry.StatusOutOfService
	changed.Metadata = map[string]string{registry.MetaSource: "kubernetes"}
	if _, err := reg.Import(changed); err != nil {
		t.Fatal(err)
	}
	if err := reg.Withdraw("WEB", "web-0"); err != nil {
		t.Fatal(err)
	}
	if d := rep.Status()[0].QueueDepth; d != 0 {
		t.Errorf("%d tasks queued for an imported instance", d)
	}
}
