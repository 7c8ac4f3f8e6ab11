package replication

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/goreka/goreka/registry"
)

// StartupSync is the start-up sync goreka runs before serving: SyncUp with
// retries attempts (eureka.server.registry-sync-retries) and wait between
// them, but at least one attempt when there are peers (Spring's
// registry-sync-retries=0 makes none), so that a restarted node serves the
// whole registry from its first request. It logs the outcome and returns
// the number of instances copied; without peers it does nothing.
func (r *Replicator) StartupSync(ctx context.Context, retries int, wait time.Duration) int {
	if len(r.list()) == 0 {
		return 0
	}
	n, err := r.SyncUp(ctx, max(1, retries), wait)
	if err != nil {
		r.log.Warn("start-up sync with peers incomplete", "copied", n, "err", err)
	} else {
		r.log.Info("start-up sync with peers done", "copied", n)
	}
	return n
}

// SyncUp is Eureka's start-up sync: up to attempts tries (Eureka's
// eureka.server.registry-sync-retries, so 0 means no sync, as in Eureka),
// stopping after the first try in which a peer's whole registry was copied
// and something was, and sleeping wait between tries. A streamed copy cut
// short keeps what it registered but does not count as done: a node that
// opened on part of a registry would serve it and build self-preservation's
// expectation on it. Each try GETs {peer}apps/ from every peer and registers
// every instance as a replication, keeping its lease timings; where peers
// disagree the newer lastDirtyTimestamp wins, as for any registration.
// Eureka copies the one registry its embedded client fetched; asking every
// peer costs one request each and survives a peer that restarted empty.
//
// It returns the number of distinct instances copied, the count eviction
// opens for traffic with (StartupSync). The error joins the peers' fetch
// errors of the last try when no peer's registry was copied whole, or is
// ctx's error; the count is valid either way.
func (r *Replicator) SyncUp(ctx context.Context, attempts int, wait time.Duration) (int, error) {
	peers := r.list()
	if len(peers) == 0 {
		return 0, nil
	}
	copied := map[registry.InstanceKey]bool{}
	var lastErrs []error
	// done: a try copied some peer's registry to its end, and it held
	// instances (a peer that restarted empty answers whole with none, and
	// another cut short then still leaves the copy partial).
	done := false
	for i := 0; i < attempts && !done; i++ {
		if i > 0 {
			r.log.Info("registry sync incomplete, waiting", "attempt", i, "copied", len(copied), "wait", wait)
			if err := r.sleep(ctx, wait); err != nil {
				return len(copied), err
			}
		}
		lastErrs = lastErrs[:0]
		for _, p := range peers {
			if err := ctx.Err(); err != nil {
				return len(copied), err
			}
			n, err := r.syncFrom(ctx, p, copied)
			if err != nil {
				p.log.Warn("registry sync from peer failed", "err", err)
				lastErrs = append(lastErrs, fmt.Errorf("fetching registry from %s: %w", p.peer.URL, err))
				continue
			}
			done = done || n > 0
			p.log.Info("registry synced from peer", "count", n)
		}
	}
	if done || len(lastErrs) == 0 {
		return len(copied), nil // a peer's whole registry, or every peer answered an empty one
	}
	return len(copied), errors.Join(lastErrs...)
}

// syncFrom copies p's registry: streamed and registered in batches as it
// is decoded when the client can (syncStreamFrom), else fetched whole.
func (r *Replicator) syncFrom(ctx context.Context, p *peerState, copied map[registry.InstanceKey]bool) (int, error) {
	if s, ok := r.client.(appStreamer); ok {
		return r.syncStreamFrom(ctx, s, p, copied)
	}
	apps, err := r.client.fetchApps(ctx, &p.peer)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, app := range apps.Apps {
		for _, v := range app.Instances {
			if v.Instance == nil {
				continue
			}
			in := v.Instance.Clone()
			in.LeaseInfo = registry.LeaseInfo{RenewalInterval: v.RenewalInterval, Duration: v.Duration}
			stored, err := r.reg.Register(in, true)
			if err != nil {
				p.log.Debug("skipping synced instance", "app", app.Name, "err", err)
				continue
			}
			copied[registry.InstanceKey{App: strings.ToUpper(stored.App), ID: stored.ID()}] = true
			n++
		}
	}
	return n, nil
}
