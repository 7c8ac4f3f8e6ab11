package relay

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/goreka/goreka/apiclient"
	"github.com/goreka/goreka/region"
	"github.com/goreka/goreka/registry"
	"github.com/goreka/goreka/server/api/wire"
)

// The time between two batches of watch events put into the copy is
// applyGapFactor times the last batch's, at most maxApplyGap: a single
// change after a quiet spell goes in at once, while a fleet registering
// upstream (thousands of events a second, each relay seeing every one) is
// taken in batches, each one copy of the applications it changed and one
// notice to the relay's documents, the batches taking at most a ninth of
// one core.
const (
	applyGapFactor = 8
	maxApplyGap    = 200 * time.Millisecond
)

// applyDirect is false only in BenchmarkUpstreamVisibility's comparison
// with the watch waking a fetch.
var applyDirect = true

// watchUpstream follows a goreka upstream's watch (GET
// /goreka/api/v1/watch from the revision the copy is at) and puts its
// changes into the copy at once (region.Remote.Apply): a registration at
// the upstream, or at another relay of it, reaches this relay's clients
// as soon as the upstream's watch reports it, instead of after the
// upstream's delta rebuild, a delta fetch and this relay's reconcile. The
// delta and hash fetches go on every FetchInterval as the copy's check.
// While the copy cannot order the watch's changes against its documents
// (no fetch yet, or an upstream whose documents name no revision: a
// relay), a change of an instance this relay did not send itself (and,
// with FetchApps, of an app it keeps) wakes runFetch instead, as does a
// snapshot (the watch resumed past what the upstream retains). A stock
// upstream, an upstream without the API and a broken stream are tried
// again every FetchInterval; the timed fetches go on meanwhile.
func (r *Relay) watchUpstream(ctx context.Context) {
	for {
		if k, _ := r.upstreamKind(ctx); k == kindGoreka {
			if r.watchOnce(ctx) {
				continue // the relay switched endpoints, or the connection went silent: watch again now
			}
		}
		t := time.NewTimer(r.cfg.FetchInterval)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// watchOnce is one watch of the endpoint in use, until it fails, ctx
// ends, or the relay switches to another endpoint. again: watch again at
// once (the relay switched, or the connection went silent: apiclient's
// ErrWatchIdle, which a new connection resumes).
func (r *Relay) watchOnce(ctx context.Context) (again bool) {
	i := r.cur.Load()
	// The stream of a silently partitioned endpoint can block for minutes
	// (no answer, no reset) after the fetches failed over to the next one:
	// the watch ends within a second of the switch and follows it.
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	wg.Go(func() {
		every(ctx, watchSwitchCheck, func() {
			if r.cur.Load() != i {
				cancel()
			}
		})
	})
	idle := false
	defer func() { again = r.cur.Load() != i || idle }()
	c, err := apiclient.New(r.cfg.Upstream[i], apiclient.WithHTTPClient(r.cp.hc), apiclient.WithWatchIdle(watchIdle))
	if err != nil {
		return
	}
	rm := r.remotes[i]
	since := rm.Revision()
	if since <= 0 {
		at, err := c.Apps(ctx)
		if err != nil {
			return
		}
		since = at.Revision
	}
	b := &watchBatch{ready: make(chan struct{}, 1)}
	wg.Go(func() { r.applyWatch(ctx, rm, b) })
	for ev, err := range c.Watch(ctx, since) {
		if err != nil || r.cur.Load() != i {
			idle = errors.Is(err, apiclient.ErrWatchIdle)
			return
		}
		switch {
		case ev.Change != nil:
			b.add(updateOf(ev.Change), ev.Epoch, false)
		case ev.Snapshot != nil:
			// The upstream no longer had the revision the copy is at (it
			// restarted, or the watch was away too long): what was put on
			// top of the copy may hide newer state, so it goes, and what
			// changed in between comes with the next fetch.
			b.add(region.Update{}, ev.Epoch, true)
		}
	}
	return
}

// watchBatch holds the watch's changes not yet put into the copy.
type watchBatch struct {
	mu      sync.Mutex
	pending []region.Update
	epoch   string        // the pending updates' (Remote.Apply)
	reset   bool          // a snapshot came, or the epoch changed: reset the copy's top and fetch
	ready   chan struct{} // something is pending
}

// add queues u, of the watch's epoch; reset (a snapshot) drops what is
// pending. Updates of another epoch than the pending ones' do too: the
// watch reached another server (or the same one restarted), whose
// revisions do not order against the copy's.
func (b *watchBatch) add(u region.Update, epoch string, reset bool) {
	b.mu.Lock()
	if epoch != b.epoch {
		reset = reset || b.epoch != "" || len(b.pending) > 0
		b.epoch = epoch
	}
	if reset {
		b.reset, b.pending = true, nil
	} else {
		b.pending = append(b.pending, u)
	}
	b.mu.Unlock()
	select {
	case b.ready <- struct{}{}:
	default:
	}
}

func (b *watchBatch) take() (ups []region.Update, epoch string, reset bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	ups, epoch, reset = b.pending, b.epoch, b.reset
	b.pending, b.reset = nil, false
	return ups, epoch, reset
}

// applyWatch puts the watch's changes into rm's copy, a batch at a time
// (maxApplyGap), and wakes runFetch when the copy cannot take
// them (Remote.Apply) or a snapshot came.
func (r *Relay) applyWatch(ctx context.Context, rm *region.Remote, b *watchBatch) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-b.ready:
		}
		ups, epoch, fetch := b.take()
		start := r.cfg.Now()
		if fetch {
			rm.Reset()
		}
		// Only the apps this relay keeps (goreka.relay.fetch-apps): the
		// others are not served, and would rebuild the union for nothing.
		ups = slices.DeleteFunc(ups, func(u region.Update) bool { return r.apps != nil && !r.apps[u.App] })
		if len(ups) > 0 && (!applyDirect || !rm.Apply(epoch, ups)) {
			for _, u := range ups {
				if r.wakesCopy(key{u.App, u.ID}) {
					fetch = true
					break
				}
			}
		}
		if fetch {
			select {
			case r.cp.wake <- struct{}{}:
			default:
			}
		}
		gap := min(applyGapFactor*r.cfg.Now().Sub(start), maxApplyGap)
		if gap <= 0 {
			continue
		}
		t := time.NewTimer(gap)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// wakesCopy is whether an upstream change of k is news for the copy: not
// an instance of this relay's own clients (the relay sent it), and one of
// an app it keeps.
func (r *Relay) wakesCopy(k key) bool {
	if r.apps != nil && !r.apps[k.app] {
		return false
	}
	r.fwd.mu.Lock()
	defer r.fwd.mu.Unlock()
	return !r.fwd.known[k]
}

// updateOf is a watch event as an update of the copy: the instance after
// the change as the upstream's documents write it (what the watch carries
// of it), or its removal.
func updateOf(ch *wire.Change) region.Update {
	u := region.Update{Revision: ch.Revision, App: ch.App, ID: ch.ID}
	if ch.Kind == wire.KindCancel || ch.Kind == wire.KindEvict {
		u.Deleted = true
		return u
	}
	w := &ch.Instance
	action := registry.ActionModified
	if ch.Kind == wire.KindRegister && ch.PrevStatus == "" {
		action = registry.ActionAdded
	}
	in := &registry.Instance{
		InstanceID: w.ID, HostName: w.HostName, App: ch.App, AppGroupName: w.AppGroupName, IPAddr: w.IPAddr,
		Status: w.Status, OverriddenStatus: w.OverriddenStatus,
		Port: registry.Port{Number: w.Port, Enabled: w.PortEnabled}, SecurePort: registry.Port{Number: w.SecurePort, Enabled: w.SecurePortOn},
		CountryID:      w.CountryID,
		DataCenterInfo: registry.DataCenterInfo{Name: w.DataCenter.Name, Metadata: w.DataCenter.Metadata},
		LeaseInfo: registry.LeaseInfo{RenewalInterval: time.Duration(w.Lease.RenewalIntervalSeconds) * time.Second,
			Duration: time.Duration(w.Lease.DurationSeconds) * time.Second},
		Metadata:    w.Metadata,
		HomePageURL: w.HomePageURL, StatusPageURL: w.StatusPageURL, HealthCheckURL: w.HealthCheckURL,
		SecureHealthCheckURL: w.SecureHealthURL, VIPAddress: w.VIPAddress, SecureVIPAddress: w.SecureVIPAddress,
		ASGName:              w.ASGName,
		LastUpdatedTimestamp: millis(w.LastUpdated), LastDirtyTimestamp: millis(w.LastDirty),
		ActionType: action,
	}
	u.View = registry.LeaseView{Instance: in, RegistrationTimestamp: millis(w.Lease.Registered),
		LastRenewalTimestamp: millis(w.Lease.LastHeartbeat), ServiceUpTimestamp: millis(w.Lease.ServiceUp),
		EvictionTimestamp: millis(w.Lease.Evicted), LastHeartbeat: millis(w.Lease.LastHeartbeat),
		RenewalInterval: in.LeaseInfo.RenewalInterval, Duration: in.LeaseInfo.Duration, Static: w.Static, Source: w.Source}
	return u
}

// millis reads a watch timestamp at a Eureka document's precision (zero
// when empty or unreadable).
func millis(s string) time.Time {
	if s == "" {
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}
	}
	return time.UnixMilli(t.UnixMilli())
}
