package discovery

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"
)

// Source is one origin of peer URLs, asked again every Interval and on
// every value of Trigger.
type Source struct {
	Name     string // for logs: "dns goreka-headless...", "config"
	Interval time.Duration
	Trigger  <-chan struct{} // nil: the interval only (config uses SIGHUP)
	// Resolve returns the source's URLs now. On an error the source keeps
	// its last answer.
	Resolve func(ctx context.Context) ([]string, error)
}

// Watcher merges its sources' URLs (in source order, duplicates dropped)
// and calls Apply whenever the merged list changes. Apply calls never
// overlap.
type Watcher struct {
	Sources []Source
	Apply   func(urls []string)
	Logger  *slog.Logger

	mu      sync.Mutex
	last    [][]string // per source; nil before its first answer
	applied []string
	failing []bool // per source: the last attempt failed (logged once)
}

// Init asks every source once and applies the result (so that the start-up
// sync has peers); sources that fail count as empty until they answer.
func (w *Watcher) Init(ctx context.Context) []string {
	w.mu.Lock()
	w.last = make([][]string, len(w.Sources))
	w.failing = make([]bool, len(w.Sources))
	w.mu.Unlock()
	for i := range w.Sources {
		w.refresh(ctx, i, false)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.applied = w.mergedLocked()
	w.Apply(w.applied)
	return w.applied
}

// Run refreshes every source on its interval and trigger until ctx is done.
// Init must have been called.
func (w *Watcher) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	for i, s := range w.Sources {
		if s.Interval <= 0 && s.Trigger == nil {
			continue
		}
		wg.Go(func() {
			var tick <-chan time.Time
			if s.Interval > 0 {
				t := time.NewTicker(s.Interval)
				defer t.Stop()
				tick = t.C
			}
			for {
				select {
				case <-ctx.Done():
					return
				case <-tick:
				case <-s.Trigger:
				}
				w.refresh(ctx, i, true)
			}
		})
	}
	wg.Wait()
	return nil
}

func (w *Watcher) log() *slog.Logger {
	if w.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return w.Logger
}

// refresh asks source i and, when apply is set, applies a changed merge.
func (w *Watcher) refresh(ctx context.Context, i int, apply bool) {
	s := w.Sources[i]
	urls, err := s.Resolve(ctx)
	if ctx.Err() != nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if err != nil {
		if !w.failing[i] {
			w.log().Warn("peer source failing, keeping its last peers", "source", s.Name, "peers", len(w.last[i]), "err", err)
		}
		w.failing[i] = true
		return
	}
	if w.failing[i] {
		w.log().Info("peer source answers again", "source", s.Name, "peers", len(urls))
	}
	w.failing[i] = false
	if urls == nil {
		urls = []string{}
	}
	w.last[i] = urls
	if !apply {
		return
	}
	m := w.mergedLocked()
	if slices.Equal(m, w.applied) {
		return
	}
	w.applied = m
	w.Apply(m)
}

func (w *Watcher) mergedLocked() []string {
	var out []string
	for _, l := range w.last {
		for _, u := range l {
			if !slices.Contains(out, u) {
				out = append(out, u)
			}
		}
	}
	return out
}
