package snapshot

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"sync"
	"time"

	"github.com/goreka/goreka/registry"
)

// DefaultInterval is how often the snapshot is checked and, when the
// registry changed, written (goreka.snapshot.interval).
const DefaultInterval = 5 * time.Second

// Registry is what a Store needs of the registry.
type Registry interface {
	Export() registry.Snapshot
	Restore(registry.Snapshot) int
}

var _ Registry = (*registry.Registry)(nil)

// Config configures a Store.
type Config struct {
	// Path is the snapshot file (goreka.snapshot.path).
	Path string
	// Interval is how often the registry is checked for changes and
	// written; 0 means DefaultInterval.
	Interval time.Duration
	// MaxAge is the age beyond which a snapshot is not restored
	// (goreka.snapshot.max-age); 0 restores any age. An unchanged registry
	// is still rewritten every MaxAge/10 (at least every Interval), so
	// that the file of a server that crashed stays restorable.
	MaxAge time.Duration
	// Server is written into the file: the writing server's instance id.
	Server string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Logger; nil discards.
	Logger *slog.Logger
}

// Store saves a registry to its snapshot file and restores it from there.
// Its methods are safe for concurrent use; writes are serialised.
type Store struct {
	cfg     Config
	reg     Registry
	refresh time.Duration
	log     *slog.Logger

	mu      sync.Mutex
	last    registry.Snapshot // the state last written
	lastAt  time.Time
	wrote   bool
	failing bool
}

// New returns a Store for reg. It does not touch the file.
func New(reg Registry, cfg Config) *Store {
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Store{cfg: cfg, reg: reg, log: cfg.Logger}
	if cfg.MaxAge > 0 {
		s.refresh = max(cfg.MaxAge/10, cfg.Interval)
	}
	return s
}

// Restore loads the snapshot file into the registry and returns the number
// of instances restored. It never fails: a missing file means starting
// empty (quietly), a file older than MaxAge is ignored and left in place
// (the next write replaces it), and a foreign, truncated or damaged file is
// moved aside to path.corrupt-<time>; each of the last two logs one line.
func (s *Store) Restore() int {
	p := s.cfg.Path
	now := s.cfg.Now()
	f, err := ReadFile(p)
	var fe *FormatError
	switch {
	case errors.Is(err, fs.ErrNotExist):
		s.log.Debug("no registry snapshot, starting empty", "path", p)
		return 0
	case errors.As(err, &fe):
		to, merr := moveAside(p, now)
		if merr != nil {
			s.log.Error("registry snapshot unreadable and could not be moved aside; starting empty",
				"path", p, "reason", fe.Error(), "move_err", merr)
			return 0
		}
		s.log.Warn("registry snapshot unreadable, moved aside; starting empty", "path", p, "reason", fe.Error(), "moved_to", to)
		return 0
	case err != nil:
		s.log.Error("cannot read registry snapshot; starting empty", "path", p, "err", err)
		return 0
	}
	age := now.Sub(f.Written)
	if s.cfg.MaxAge > 0 && age > s.cfg.MaxAge {
		s.log.Warn("registry snapshot too old, ignored; starting empty", "path", p,
			"written", f.Written, "age", age.Round(time.Second), "max_age", s.cfg.MaxAge, "count", len(f.Snapshot.Instances))
		return 0
	}
	n := s.reg.Restore(f.Snapshot)
	s.log.Info("registry restored from snapshot", "path", p, "count", n, "written", f.Written,
		"age", age.Round(time.Millisecond), "server", f.Server)
	return n
}

// Run writes the snapshot every Interval when the registry changed since
// the last write (renewals do not count), or when the last write is older
// than the refresh period. The first tick always writes. Write errors are
// logged, once until a write succeeds again. Run returns nil when ctx is
// done, without a final write: call Flush once the server has stopped
// taking requests.
func (s *Store) Run(ctx context.Context) error {
	t := time.NewTicker(s.cfg.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			s.save(false)
		}
	}
}

// Flush writes the snapshot now, changed or not (on graceful shutdown). A
// write error is logged as in Run and also returned.
func (s *Store) Flush() error { return s.save(true) }

func (s *Store) save(force bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	snap := s.reg.Export()
	now := s.cfg.Now()
	if !force && s.wrote && snap.SameState(s.last) && (s.refresh <= 0 || now.Sub(s.lastAt) < s.refresh) {
		return nil
	}
	data := Marshal(snap, now, s.cfg.Server)
	if err := WriteFile(s.cfg.Path, data); err != nil {
		if !s.failing {
			s.log.Error("cannot write registry snapshot", "path", s.cfg.Path, "err", err)
			s.failing = true
		}
		return err
	}
	if s.failing {
		s.log.Info("registry snapshot written again", "path", s.cfg.Path)
		s.failing = false
	}
	s.last, s.lastAt, s.wrote = snap, now, true
	s.log.Debug("registry snapshot written", "path", s.cfg.Path, "count", len(snap.Instances), "bytes", len(data))
	return nil
}
