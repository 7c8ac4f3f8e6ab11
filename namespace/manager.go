package namespace

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
)

// Config configures a Manager of namespaces that each hold a T.
type Config[T any] struct {
	// Default is the default namespace's T, which Get and Lookup return
	// for Default.
	Default T
	// Allowed are goreka.namespaces.allowed: they exist from start-up.
	Allowed []string
	// AutoCreate is goreka.namespaces.auto-create: Get creates any valid
	// name at its first request, and the namespaces whose snapshot file
	// (SnapshotNames of SnapshotPath) is found exist from start-up.
	AutoCreate bool
	// Max is goreka.namespaces.max: the most namespaces besides the
	// default one, those being created included.
	Max int
	// SnapshotPath is goreka.snapshot.path; "" finds no snapshot files.
	SnapshotPath string
	// New builds namespace name, not running yet. It is called without
	// the manager's lock: by NewManager for the namespaces of start-up,
	// by Get for one it creates.
	New func(name string) (T, error)
	// Log gets the failure of a namespace Get creates, once per creation
	// (nil: slog.Default()).
	Log *slog.Logger
}

// Hooks run the namespaces of a Manager (Start). Start and Run are called
// under the manager's lock and must not call the Manager; a nil hook does
// nothing.
type Hooks[T any] struct {
	// Start runs a namespace that exists when Start is called, under the
	// manager's lock, by name.
	Start func(name string, v T)
	// Prepare readies a namespace Get created before it is kept (the
	// caller restores its snapshot there). It runs without the manager's
	// lock, so that requests of other namespaces do not wait for it.
	Prepare func(name string, v T)
	// Run runs a namespace Get created, once it is kept: under the
	// manager's lock, which Close takes too, so that nothing starts after
	// Close returned.
	Run func(name string, v T)
}

// Manager is the namespaces of one process beside the default one. A
// namespace, once created, lives until the process ends. It is safe for
// concurrent use.
type Manager[T any] struct {
	cfg     Config[T]
	allowed map[string]bool

	mu sync.Mutex
	m  map[string]T
	// creating are the namespaces Get is creating, built and prepared
	// outside mu; a request for one of them waits for it.
	creating map[string]*creation[T]
	// Set by Start; Get creates nothing before it, nor once ctx is done.
	ctx   context.Context
	hooks Hooks[T]
	// closed is set by Close: nothing is created after it.
	closed bool
}

// creation is a namespace being created; done is closed when v or err is
// set.
type creation[T any] struct {
	done chan struct{}
	v    T
	err  error
}

// NewManager builds the namespaces that exist from start-up: the allowed
// ones and, with AutoCreate, those that have a snapshot file, up to Max.
// It fails when more are allowed than Max, or when New fails.
func NewManager[T any](cfg Config[T]) (*Manager[T], error) {
	m := &Manager[T]{cfg: cfg, allowed: map[string]bool{}, m: map[string]T{}, creating: map[string]*creation[T]{}}
	for _, name := range cfg.Allowed {
		m.allowed[name] = true
	}
	if len(m.allowed) > cfg.Max {
		return nil, fmt.Errorf("goreka.namespaces.allowed lists %d namespaces, more than goreka.namespaces.max=%d", len(m.allowed), cfg.Max)
	}
	names := slices.Sorted(maps.Keys(m.allowed))
	if cfg.AutoCreate {
		// Warm restart of the auto-created namespaces: their snapshot
		// files name them.
		for _, name := range SnapshotNames(cfg.SnapshotPath) {
			if !m.allowed[name] && len(names) < cfg.Max {
				names = append(names, name)
			}
		}
	}
	for _, name := range names {
		v, err := cfg.New(name)
		if err != nil {
			return nil, err
		}
		m.m[name] = v
	}
	return m, nil
}

// Get returns namespace name (a valid name, Validate), creating it when
// create is set and AutoCreate allows it. A refusal wraps ErrUnknown (no
// such namespace: create unset, or AutoCreate off), ErrClosed (before
// Start, or after Close or the end of Start's context) or ErrLimit (Max
// reached); a failed New is logged (Config.Log) and returned as an
// ErrCreate, whatever it wraps. The new namespace is built
// and prepared without holding the manager's lock, so that other
// namespaces' requests do not wait for it; concurrent requests for the
// same new name wait for the one creation.
func (m *Manager[T]) Get(name string, create bool) (T, error) {
	var zero T
	if name == Default {
		return m.cfg.Default, nil
	}
	m.mu.Lock()
	if v, ok := m.m[name]; ok {
		m.mu.Unlock()
		return v, nil
	}
	if c := m.creating[name]; c != nil && create {
		m.mu.Unlock()
		<-c.done
		return c.v, c.err
	}
	var refused error
	switch {
	case !create:
		refused = Unknown(name)
	case !m.cfg.AutoCreate:
		refused = notAllowed(name)
	case m.closed || m.ctx == nil || m.ctx.Err() != nil:
		refused = closed(name)
	case len(m.m)+len(m.creating) >= m.cfg.Max:
		refused = overLimit(name, m.cfg.Max)
	}
	if refused != nil {
		m.mu.Unlock()
		return zero, refused
	}
	c := &creation[T]{done: make(chan struct{})}
	m.creating[name] = c
	hooks := m.hooks
	m.mu.Unlock()

	v, err := m.cfg.New(name)
	if err == nil && hooks.Prepare != nil {
		hooks.Prepare(name, v)
	}

	m.mu.Lock()
	delete(m.creating, name)
	switch {
	case err != nil:
		c.err = createFailed(name, err)
	case m.closed || m.ctx.Err() != nil:
		// Shutdown began while it was built: nothing of it runs yet.
		c.err = closed(name)
	default:
		m.m[name] = v
		if hooks.Run != nil {
			hooks.Run(name, v)
		}
		c.v = v
	}
	m.mu.Unlock()
	close(c.done)
	if err != nil {
		log := m.cfg.Log
		if log == nil {
			log = slog.Default()
		}
		log.Error("namespace not created", "namespace", name, "err", err)
	}
	return c.v, c.err
}

// Start runs the namespaces that exist (hooks.Start) and lets Get create
// namespaces, run by hooks.Prepare and hooks.Run, until ctx is done or
// Close is called.
func (m *Manager[T]) Start(ctx context.Context, hooks Hooks[T]) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.ctx, m.hooks = ctx, hooks
	if hooks.Start == nil {
		return
	}
	for _, name := range slices.Sorted(maps.Keys(m.m)) {
		hooks.Start(name, m.m[name])
	}
}

// Close makes Get create no more namespaces (shutdown began); those being
// created are dropped before they run. Existing namespaces are still
// returned.
func (m *Manager[T]) Close() {
	m.mu.Lock()
	m.closed = true
	m.mu.Unlock()
}

// List returns every namespace but the default one, by name.
func (m *Manager[T]) List() []T {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]T, 0, len(m.m))
	for _, name := range slices.Sorted(maps.Keys(m.m)) {
		out = append(out, m.m[name])
	}
	return out
}

// Names returns the namespaces' names, Default first, then by name.
func (m *Manager[T]) Names() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string{Default}, slices.Sorted(maps.Keys(m.m))...)
}

// Lookup returns an existing namespace (Default's for "" and Default); ok
// is false for any other name, which it does not create.
func (m *Manager[T]) Lookup(name string) (v T, ok bool) {
	if name == "" || name == Default {
		return m.cfg.Default, true
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok = m.m[name]
	return v, ok
}
