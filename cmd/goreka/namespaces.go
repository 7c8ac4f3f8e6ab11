package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/goreka/goreka/replication"
	"github.com/goreka/goreka/server"
)

// namespaces are the registries served at /ns/{name}/ beside the default
// one (server.Namespaces). The allowed ones (goreka.namespaces.allowed)
// and those whose snapshot file is found at start-up exist from start-up;
// with goreka.namespaces.auto-create any valid name is created at its
// first request, up to goreka.namespaces.max. A namespace, once created,
// lives until the process ends.
type namespaces struct {
	a       *app
	allowed map[string]bool

	mu    sync.Mutex
	m     map[string]*stack
	peers []replication.Peer // the default namespace's peer list
	// creating are the namespaces being created (Namespace), built and
	// restored outside mu; a request for one of them waits for it.
	creating map[string]*creation
	// Set by start: the contexts and wait groups of run, for the loops
	// of namespaces created while serving.
	ctx, replCtx context.Context
	wg, replWG   *sync.WaitGroup
	// closed is set by close when shutdown begins: no namespace is created
	// after it, so that no loop is added to a wait group being waited.
	closed bool
}

// creation is a namespace being created; done is closed when srv or err
// is set.
type creation struct {
	done chan struct{}
	srv  *server.Server
	err  error
}

var _ server.Namespaces = (*namespaces)(nil)

func newNamespaces(a *app, peers []replication.Peer) (*namespaces, error) {
	nc := a.cfg.Goreka.Namespaces
	n := &namespaces{a: a, allowed: map[string]bool{}, m: map[string]*stack{}, creating: map[string]*creation{}, peers: peers}
	for _, name := range nc.Allowed {
		n.allowed[name] = true
	}
	if len(n.allowed) > nc.Max {
		return nil, fmt.Errorf("goreka.namespaces.allowed lists %d namespaces, more than goreka.namespaces.max=%d", len(n.allowed), nc.Max)
	}
	names := slices.Sorted(func(yield func(string) bool) {
		for k := range n.allowed {
			if !yield(k) {
				return
			}
		}
	})
	if nc.AutoCreate {
		// Warm restart of the auto-created namespaces: their snapshot
		// files name them.
		for _, name := range snapshotNamespaces(a.cfg.Goreka.Snapshot.Path) {
			if !n.allowed[name] && len(names) < nc.Max {
				names = append(names, name)
			}
		}
	}
	for _, name := range names {
		s, err := a.newStack(name, n.peersOf(name, peers))
		if err != nil {
			return nil, err
		}
		n.m[name] = s
	}
	return n, nil
}

// snapshotNamespaces lists the namespaces that have a snapshot file beside
// the default one's (path + ".ns-" + name).
func snapshotNamespaces(path string) []string {
	if path == "" {
		return nil
	}
	matches, _ := filepath.Glob(path + snapshotNamespaceSuffix + "*")
	var out []string
	for _, m := range matches {
		name := strings.TrimPrefix(m, path+snapshotNamespaceSuffix)
		if server.ValidateNamespace(name) == nil && name != defaultNamespace {
			if st, err := os.Stat(m); err == nil && st.Mode().IsRegular() {
				out = append(out, name)
			}
		}
	}
	sort.Strings(out)
	return out
}

// Namespace is server.Namespaces: the namespace's server, created when
// create is set and auto-create allows it. The stack is built and its
// snapshot restored without holding n.mu, so that other namespaces' requests
// do not wait for it; concurrent requests for the same new name wait for
// the one creation.
func (n *namespaces) Namespace(name string, create bool) (*server.Server, error) {
	if name == defaultNamespace {
		return n.a.srv, nil
	}
	n.mu.Lock()
	if s := n.m[name]; s != nil {
		n.mu.Unlock()
		return s.srv, nil
	}
	if c := n.creating[name]; c != nil && create {
		n.mu.Unlock()
		<-c.done
		return c.srv, c.err
	}
	nc := n.a.cfg.Goreka.Namespaces
	var refused error
	switch {
	case !create:
		refused = &server.NamespaceError{Status: http.StatusNotFound, Reason: "unknown namespace " + strconv.Quote(name)}
	case !nc.AutoCreate:
		refused = &server.NamespaceError{Status: http.StatusNotFound,
			Reason: "unknown namespace " + strconv.Quote(name) + ": it is not in goreka.namespaces.allowed and goreka.namespaces.auto-create is off"}
	case n.closed || n.ctx == nil || n.ctx.Err() != nil:
		refused = notRunning(name)
	case len(n.m)+len(n.creating) >= nc.Max:
		refused = &server.NamespaceError{Status: http.StatusForbidden,
			Reason: fmt.Sprintf("namespace %q not created: this server has the maximum of %d namespaces (goreka.namespaces.max)", name, nc.Max)}
	}
	if refused != nil {
		n.mu.Unlock()
		return nil, refused
	}
	c := &creation{done: make(chan struct{})}
	n.creating[name] = c
	peers := n.peers
	n.mu.Unlock()

	s, err := n.a.newStack(name, n.peersOf(name, peers))
	restored := 0
	if err == nil {
		restored = s.restore()
	}

	n.mu.Lock()
	delete(n.creating, name)
	switch {
	case err != nil:
		c.err = &server.NamespaceError{Status: http.StatusInternalServerError, Reason: "namespace " + strconv.Quote(name) + " not created: " + err.Error()}
	case n.closed || n.ctx.Err() != nil:
		// Shutdown began while it was built: its loops would be added
		// to wait groups being waited. Nothing of it runs yet.
		c.err = notRunning(name)
	default:
		if !slices.Equal(peers, n.peers) { // setPeers ran meanwhile
			s.repl.SetPeers(n.peersOf(name, n.peers))
		}
		n.m[name] = s
		n.a.log.Info("namespace created", "namespace", name, "peers", len(s.repl.Peers()))
		s.runLoops(n.a, n.ctx, n.replCtx, n.wg, n.replWG)
		// Its reads wait for its start-up sync (eviction's gate), the
		// request that created it does not.
		ctx := n.ctx
		n.wg.Go(func() { s.open(n.a.syncUp(ctx, s), restored) })
		c.srv = s.srv
	}
	n.mu.Unlock()
	close(c.done)
	return c.srv, c.err
}

func notRunning(name string) error {
	return &server.NamespaceError{Status: http.StatusServiceUnavailable, Reason: "namespace " + strconv.Quote(name) + " not created: the server is not running"}
}

// close makes Namespace create no more namespaces (shutdown began); the
// namespaces being created are dropped before their loops start.
func (n *namespaces) close() {
	n.mu.Lock()
	n.closed = true
	n.mu.Unlock()
}

// start runs the loops of the namespaces that exist, and lets those
// created later run theirs, on run's contexts and wait groups.
func (n *namespaces) start(ctx, replCtx context.Context, wg, replWG *sync.WaitGroup) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.ctx, n.replCtx, n.wg, n.replWG = ctx, replCtx, wg, replWG
	for _, s := range n.m {
		s.restored = s.startLoops(n.a, ctx, replCtx, wg, replWG)
	}
}

// openAll is the start-up sync of every namespace that existed at start
// (from the goreka peers, concurrently), then opens each for reads.
func (n *namespaces) openAll(ctx context.Context) {
	var wg sync.WaitGroup
	for _, s := range n.list() {
		wg.Go(func() { s.open(n.a.syncUp(ctx, s), s.restored) })
	}
	wg.Wait()
}

// list is every namespace but the default one, by name.
func (n *namespaces) list() []*stack {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make([]*stack, 0, len(n.m))
	for _, s := range n.m {
		out = append(out, s)
	}
	slices.SortFunc(out, func(x, y *stack) int { return strings.Compare(x.name, y.name) })
	return out
}

// names are the namespaces' names, the default one first.
func (n *namespaces) names() []string {
	out := []string{defaultNamespace}
	for _, s := range n.list() {
		out = append(out, s.name)
	}
	return out
}

// get returns a namespace's stack (the default one's for "" and
// "default"), or nil.
func (n *namespaces) get(name string) *stack {
	if name == "" || name == defaultNamespace {
		return n.a.stack
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.m[name]
}

// setPeers gives every namespace the new peer list.
func (n *namespaces) setPeers(peers []replication.Peer) {
	n.mu.Lock()
	n.peers = peers
	n.mu.Unlock()
	for _, s := range n.list() {
		s.repl.SetPeers(n.peersOf(s.name, peers))
	}
}

// peersOf are the peers a namespace replicates with: the goreka ones among
// the default namespace's peers, at their /ns/{name}/ URLs. A stock Java
// server (goreka.namespaces.stock-peers) has only the default namespace.
func (n *namespaces) peersOf(name string, peers []replication.Peer) []replication.Peer {
	var out []replication.Peer
	for _, p := range peers {
		if n.isStock(p) {
			continue
		}
		if q, ok := p.InNamespace(name); ok {
			out = append(out, q)
		} else {
			n.a.log.Warn("peer has no path for a namespace: it gets only the default namespace", "peer", p.URL, "namespace", name)
		}
	}
	return out
}

// isStock reports whether p is listed in goreka.namespaces.stock-peers, by
// host and port.
func (n *namespaces) isStock(p replication.Peer) bool {
	for _, s := range n.a.cfg.Goreka.Namespaces.StockPeers {
		host, port := s, ""
		if u, err := url.Parse(s); err == nil && u.Host != "" {
			host, port = u.Hostname(), u.Port()
			if port == "" {
				port = map[string]string{"https": "443"}[u.Scheme]
				if port == "" {
					port = "80"
				}
			}
		} else if h, pt, err := net.SplitHostPort(s); err == nil {
			host, port = h, pt
		}
		if strings.EqualFold(host, p.Host) && port == strconv.Itoa(p.Port) {
			return true
		}
	}
	return false
}
