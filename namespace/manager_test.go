package namespace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// ns is what the test namespaces hold.
type ns struct {
	name              string
	started, prepared bool
	running           bool
}

// errBoom is the failure of the fixture's New.
var errBoom = errors.New("boom")

// fixture is a Manager of *ns whose New counts its calls and may block.
type fixture struct {
	m     *Manager[*ns]
	news  atomic.Int32
	gate  chan struct{} // when set, New waits for it
	fail  string        // New fails for this name
	mu    sync.Mutex
	order []string // hook calls
}

func newFixture(t *testing.T, cfg Config[*ns]) *fixture {
	t.Helper()
	f := &fixture{}
	cfg.Default = &ns{name: Default}
	cfg.New = func(name string) (*ns, error) {
		f.news.Add(1)
		if f.gate != nil {
			<-f.gate
		}
		if name == f.fail {
			return nil, fmt.Errorf("%w", errBoom)
		}
		return &ns{name: name}, nil
	}
	if cfg.Max == 0 {
		cfg.Max = 100
	}
	m, err := NewManager(cfg)
	if err != nil {
		t.Fatal(err)
	}
	f.m = m
	return f
}

func (f *fixture) start(ctx context.Context) {
	f.m.Start(ctx, Hooks[*ns]{
		Start:   func(name string, v *ns) { f.record("start " + name); v.started, v.running = true, true },
		Prepare: func(name string, v *ns) { f.record("prepare " + name); v.prepared = true },
		Run:     func(name string, v *ns) { f.record("run " + name); v.running = true },
	})
}

func (f *fixture) record(s string) {
	f.mu.Lock()
	f.order = append(f.order, s)
	f.mu.Unlock()
}

func TestManagerAllowed(t *testing.T) {
	f := newFixture(t, Config[*ns]{Allowed: []string{"test", "dev"}})
	if got := f.m.Names(); !slices.Equal(got, []string{"default", "dev", "test"}) {
		t.Fatalf("Names = %v", got)
	}
	f.start(t.Context())
	if !slices.Equal(f.order, []string{"start dev", "start test"}) {
		t.Fatalf("hooks: %v", f.order)
	}
	for _, name := range []string{"dev", "test"} {
		v, err := f.m.Get(name, true)
		if err != nil || v.name != name || !v.started {
			t.Fatalf("Get(%s) = %+v, %v", name, v, err)
		}
	}
	if v, err := f.m.Get(Default, false); err != nil || v.name != Default {
		t.Fatalf("Get(default) = %+v, %v", v, err)
	}
	if v, ok := f.m.Lookup(""); !ok || v.name != Default {
		t.Fatalf("Lookup(\"\") = %+v, %v", v, ok)
	}
	if _, ok := f.m.Lookup("qa"); ok {
		t.Fatal("Lookup(qa) found one")
	}
	if l := f.m.List(); len(l) != 2 || l[0].name != "dev" || l[1].name != "test" {
		t.Fatalf("List = %v", l)
	}
	// Auto-create off: unknown, naming the setting; nothing created.
	_, err := f.m.Get("staging", true)
	if !errors.Is(err, ErrUnknown) || err.Error() != `unknown namespace "staging": it is not in goreka.namespaces.allowed and goreka.namespaces.auto-create is off` {
		t.Fatalf("Get(staging) = %v", err)
	}
	if _, err := f.m.Get("staging", false); !errors.Is(err, ErrUnknown) || err.Error() != `unknown namespace "staging"` {
		t.Fatalf("Get(staging, false) = %v", err)
	}
	if f.news.Load() != 2 {
		t.Fatalf("New called %d times, want 2", f.news.Load())
	}
}

func TestManagerAllowedOverMax(t *testing.T) {
	_, err := NewManager(Config[*ns]{Allowed: []string{"a", "b", "c"}, Max: 2, New: func(string) (*ns, error) { return &ns{}, nil }})
	if err == nil || !strings.Contains(err.Error(), "goreka.namespaces.max=2") {
		t.Fatalf("NewManager: %v", err)
	}
}

func TestManagerNewFails(t *testing.T) {
	_, err := NewManager(Config[*ns]{Allowed: []string{"a"}, Max: 2, New: func(string) (*ns, error) { return nil, errors.New("boom") }})
	if err == nil || err.Error() != "boom" {
		t.Fatalf("NewManager: %v", err)
	}
	var logged bytes.Buffer
	f := newFixture(t, Config[*ns]{AutoCreate: true, Log: slog.New(slog.NewTextHandler(&logged, nil))})
	f.fail = "bad"
	f.start(t.Context())
	_, err = f.m.Get("bad", true)
	if err == nil || err.Error() != `namespace "bad" not created: boom` || errors.Is(err, ErrUnknown) {
		t.Fatalf("Get(bad) = %v", err)
	}
	// A failed creation is its own kind, whatever it wraps (a registry
	// error must not turn the router's 500 into a 404), and is logged once
	// with the namespace's name.
	if !errors.Is(err, ErrCreate) || errors.Is(err, errBoom) {
		t.Fatalf("Get(bad) = %v: want ErrCreate, not the cause", err)
	}
	if got := logged.String(); strings.Count(got, "namespace not created") != 1 || !strings.Contains(got, "namespace=bad") || !strings.Contains(got, "boom") {
		t.Fatalf("log: %q", got)
	}
	if got := f.m.Names(); !slices.Equal(got, []string{"default"}) {
		t.Fatalf("Names after a failed creation: %v", got)
	}
}

// With auto-create the namespaces that have a snapshot file exist from
// start-up, beside the allowed ones and within max.
func TestManagerSnapshotNamespaces(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "registry.snapshot")
	for _, name := range []string{"qa", "dev", "zz"} {
		if err := os.WriteFile(SnapshotPath(path, name), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	f := newFixture(t, Config[*ns]{Allowed: []string{"dev"}, AutoCreate: true, Max: 2, SnapshotPath: path})
	if got := f.m.Names(); !slices.Equal(got, []string{"default", "dev", "qa"}) {
		t.Fatalf("Names = %v, want default, dev and qa (max 2)", got)
	}
	f = newFixture(t, Config[*ns]{AutoCreate: false, SnapshotPath: path})
	if got := f.m.Names(); !slices.Equal(got, []string{"default"}) {
		t.Fatalf("without auto-create: %v", got)
	}
}

// Concurrent first requests of one new name share one creation;
// concurrent creations of different names stop at Max exactly (those
// being created count); the hooks run in order.
func TestManagerCreateConcurrent(t *testing.T) {
	f := newFixture(t, Config[*ns]{AutoCreate: true, Max: 4})
	if _, err := f.m.Get("early", true); !errors.Is(err, ErrClosed) {
		t.Fatalf("Get before Start: %v", err)
	}
	f.start(t.Context())
	f.gate = make(chan struct{})
	var wg sync.WaitGroup
	got := make([]*ns, 8)
	for i := range got {
		wg.Go(func() {
			v, err := f.m.Get("same", true)
			if err != nil {
				t.Errorf("Get(same): %v", err)
			}
			got[i] = v
		})
	}
	for f.news.Load() == 0 {
		runtime.Gosched() // until the one creation is in New
	}
	close(f.gate)
	wg.Wait()
	f.gate = nil
	for _, v := range got {
		if v == nil || v != got[0] || !v.prepared || !v.running {
			t.Fatalf("concurrent first requests got %+v and %+v", v, got[0])
		}
	}
	if f.news.Load() != 1 || !slices.Equal(f.order, []string{"prepare same", "run same"}) {
		t.Fatalf("New %d times, hooks %v", f.news.Load(), f.order)
	}
	var created, refused atomic.Int32
	for i := range 8 {
		wg.Go(func() {
			_, err := f.m.Get(fmt.Sprintf("n%d", i), true)
			switch {
			case err == nil:
				created.Add(1)
			case errors.Is(err, ErrLimit) && strings.Contains(err.Error(), "maximum of 4 namespaces (goreka.namespaces.max)"):
				refused.Add(1)
			default:
				t.Errorf("Get(n%d): %v", i, err)
			}
		})
	}
	wg.Wait()
	if created.Load() != 3 || refused.Load() != 5 || len(f.m.Names()) != 5 {
		t.Fatalf("created %d, refused %d, namespaces %v; want 3, 5 and default+4", created.Load(), refused.Load(), f.m.Names())
	}
}

// Once Close was called, or Start's context ended, nothing is created
// (ErrClosed, before the limit); a creation under way is dropped before
// it runs; existing namespaces are still served.
func TestManagerClosed(t *testing.T) {
	f := newFixture(t, Config[*ns]{AutoCreate: true, Max: 1, Allowed: []string{"dev"}})
	f.start(t.Context())
	f.m.Close()
	if _, err := f.m.Get("dev", true); err != nil {
		t.Fatalf("an existing namespace after Close: %v", err)
	}
	_, err := f.m.Get("late", true)
	if !errors.Is(err, ErrClosed) || err.Error() != `namespace "late" not created: the server is not running` {
		t.Fatalf("Get after Close: %v", err)
	}

	f = newFixture(t, Config[*ns]{AutoCreate: true})
	ctx, cancel := context.WithCancel(t.Context())
	f.start(ctx)
	f.gate = make(chan struct{})
	done := make(chan error)
	go func() {
		_, err := f.m.Get("slow", true)
		done <- err
	}()
	for f.news.Load() == 0 {
		runtime.Gosched() // until the creation is in New
	}
	f.m.Close()
	close(f.gate)
	if err := <-done; !errors.Is(err, ErrClosed) {
		t.Fatalf("a creation that outlived Close: %v", err)
	}
	if slices.Contains(f.order, "run slow") || len(f.m.Names()) != 1 {
		t.Fatalf("the dropped creation ran: %v, %v", f.order, f.m.Names())
	}
	cancel()
	if _, err := f.m.Get("after", true); !errors.Is(err, ErrClosed) {
		t.Fatalf("Get after the context ended: %v", err)
	}
}
