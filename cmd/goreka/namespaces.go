package main

import (
	"context"
	"slices"
	"sync"

	"github.com/goreka/goreka/namespace"
	"github.com/goreka/goreka/replication"
	"github.com/goreka/goreka/server"
)

// newNamespaces builds the manager of the registries served at /ns/{name}/
// (docs/DESIGN.md "Namespaces"): the namespace package decides which
// exist, when one is created and when none may be; each is a stack of its
// own (newStack), replicating with its peers among the default namespace's.
func (a *app) newNamespaces() (*namespace.Manager[*stack], error) {
	nc := a.cfg.Goreka.Namespaces
	return namespace.NewManager(namespace.Config[*stack]{
		Default:      a.stack,
		Allowed:      nc.Allowed,
		AutoCreate:   nc.AutoCreate,
		Max:          nc.Max,
		SnapshotPath: a.cfg.Goreka.Snapshot.Path,
		New:          func(name string) (*stack, error) { return a.newStack(name, a.peers()) },
		Log:          a.log,
	})
}

// startNamespaces runs the namespaces that exist on run's contexts and
// wait groups, and those created later when they are created: restored
// without the manager's lock, their loops started under it (so that none
// joins a wait group after shutdown began), their reads opened after their
// own start-up sync, which the request that created one does not wait for.
func (a *app) startNamespaces(ctx, replCtx context.Context, wg, replWG *sync.WaitGroup) {
	a.ns.Start(ctx, namespace.Hooks[*stack]{
		Start:   func(_ string, s *stack) { s.startLoops(a, ctx, replCtx, wg, replWG) },
		Prepare: func(_ string, s *stack) { s.restored = s.restore() },
		Run: func(name string, s *stack) {
			if base := a.peers(); !slices.Equal(base, s.basePeers) { // applyPeers ran meanwhile
				s.repl.SetPeers(a.namespacePeers(name, base))
			}
			a.log.Info("namespace created", "namespace", name, "peers", len(s.repl.Peers()))
			s.runLoops(a, ctx, replCtx, wg, replWG)
			wg.Go(func() { a.open(ctx, s) })
		},
	})
}

// openNamespaces is the start-up sync of every namespace that existed at
// start (from the goreka peers, concurrently), then opens each for reads.
func (a *app) openNamespaces(ctx context.Context) {
	var wg sync.WaitGroup
	for _, s := range a.ns.List() {
		wg.Go(func() { a.open(ctx, s) })
	}
	wg.Wait()
}

// peers is the default namespace's peer list (applyPeers).
func (a *app) peers() []replication.Peer {
	a.peersMu.Lock()
	defer a.peersMu.Unlock()
	return a.defaultPeers
}

// namespacePeers are the peers namespace name replicates with.
func (a *app) namespacePeers(name string, base []replication.Peer) []replication.Peer {
	return replication.NamespacePeers(name, base, a.cfg.Goreka.Namespaces.StockPeers, a.log)
}

// namespaceServers is server.Namespaces: each namespace's HTTP handler.
type namespaceServers struct{ m *namespace.Manager[*stack] }

func (n namespaceServers) Namespace(name string, create bool) (*server.Server, error) {
	s, err := n.m.Get(name, create)
	if err != nil {
		return nil, err
	}
	return s.srv, nil
}
