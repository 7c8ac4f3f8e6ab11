package main

import (
	"context"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/goreka/goreka/cmd/goreka/config"
	"github.com/goreka/goreka/registry"
)

// applyStatic makes the registry's static registrations those of cfg and
// logs what changed.
func (a *app) applyStatic(cfg *config.Config) error {
	ins := make([]*registry.Instance, 0, len(cfg.Goreka.StaticInstances))
	for _, s := range cfg.Goreka.StaticInstances {
		ins = append(ins, s.Instance())
	}
	res, err := a.reg.SetStatic(ins)
	if err != nil {
		return err
	}
	if n := len(res.Added) + len(res.Changed) + len(res.Removed); n > 0 || len(res.Unchanged) > 0 {
		a.log.Info("static registrations applied", "added", len(res.Added), "changed", len(res.Changed),
			"removed", len(res.Removed), "unchanged", len(res.Unchanged))
	}
	return nil
}

// notifyHangup starts catching SIGHUP (whose default action ends the
// process) for reloadOnHangup; call it before the server serves.
func notifyHangup() (<-chan os.Signal, func()) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	return hup, func() { signal.Stop(hup) }
}

// reloadOnHangup reads the configuration again on every SIGHUP and applies
// its static registrations; load is config.Load with the process's
// arguments. A configuration that does not load is logged and changes
// nothing. Other properties need a restart.
func (a *app) reloadOnHangup(ctx context.Context, hup <-chan os.Signal, load func() (*config.Config, error), peers chan<- struct{}) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
		}
		select { // the peer watcher reads its service URLs itself
		case peers <- struct{}{}:
		default:
		}
		cfg, err := load()
		if err != nil {
			a.log.Error("SIGHUP: configuration not reloaded", "err", strings.ReplaceAll(err.Error(), "\n", "; "))
			continue
		}
		if err := a.applyStatic(cfg); err != nil {
			a.log.Error("SIGHUP: static registrations not reloaded", "err", err)
			continue
		}
		a.log.Info("SIGHUP: configuration reloaded (static registrations; other properties need a restart)")
	}
}
