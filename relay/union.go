package relay

import (
	"cmp"
	"context"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/goreka/goreka/region"
	"github.com/goreka/goreka/registry"
)

// upstreamCopy is which endpoint's copy is served and when a fetch last
// succeeded.
type upstreamCopy struct {
	mu          sync.Mutex
	from        *region.Remote // the copy served; nil before a fetch succeeded
	lastSuccess time.Time
	lastErr     string

	notifyMu sync.Mutex // one OnCopyChange call at a time

	hc      *http.Client  // the upstream calls' client, for the watch
	wake    chan struct{} // a goreka upstream's watch asks for a fetch now
	changes atomic.Int64  // changes of the copy served (onRemoteChange)
}

func (c *upstreamCopy) init() { c.wake = make(chan struct{}, 1) }

// watchGap is how long after a wake the relay fetches: the upstream
// serves its delta from a cache rebuilt a little after a change (goreka:
// at least 200 ms apart), so the watch is ahead of it. Fetches the watch
// asks for are also at least the last fetch's duration apart, so that a
// storm of upstream changes (a fleet registering) takes at most half of
// the relay's time, however large the deltas. When a fetch still found
// the old delta, the relay fetches again, as far apart, until one brought
// a change and once more after that (a change the rebuild it saw did not
// hold yet), at most watchRetries times.
const (
	watchGap     = 200 * time.Millisecond
	watchRetries = 10
	// watchSwitchCheck is how often a watch checks that its endpoint is
	// still the one in use.
	watchSwitchCheck = time.Second
	// watchIdle ends a watch connection silent for three of a goreka
	// server's keep-alive comments (api.Config.KeepAlive's default 15 s,
	// which goreka's properties do not change): one cut without
	// a reset (a partition that healed, a NAT that forgot it) would block
	// until TCP gave up, the copy falling back to its fetch interval meanwhile.
	watchIdle = 45 * time.Second
)

// runFetch refreshes the copy every FetchInterval and, when the watch
// asks (watchUpstream: its changes could not go into the copy directly,
// or it resumed from a snapshot), soon after.
func (r *Relay) runFetch(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { r.watchUpstream(ctx) })
	t := time.NewTicker(r.cfg.FetchInterval)
	defer t.Stop()
	// again: fetches still owed to a wake (0: none); seen: one of them
	// brought a change.
	again, seen := 0, false
	for {
		before := r.cp.changes.Load()
		start := r.cfg.Now()
		r.FetchOnce(ctx)
		end := r.cfg.Now()
		gap := max(watchGap, end.Sub(start))
		if again > 0 {
			again--
			switch {
			case seen:
				again = 0 // the trailing fetch is done
			case r.cp.changes.Load() != before:
				seen, again = true, 1
			}
		}
		var retry <-chan time.Time
		var rt *time.Timer
		if again > 0 {
			rt = time.NewTimer(gap)
			retry = rt.C
		}
		woken := false
		select {
		case <-ctx.Done():
		case <-t.C:
		case <-retry:
		case <-r.cp.wake:
			woken = true
		}
		if rt != nil {
			rt.Stop()
		}
		if ctx.Err() != nil {
			return
		}
		if !woken {
			continue
		}
		again, seen = watchRetries, false
		now := r.cfg.Now()
		if wait := max(watchGap, end.Add(gap).Sub(now)); wait > 0 {
			w := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				w.Stop()
				return
			case <-w.C:
			}
		}
	}
}

// FetchOnce refreshes the upstream copy from the endpoint in use (the next
// ones when it does not answer); the last good copy is kept when none
// does. It returns the last error.
func (r *Relay) FetchOnce(ctx context.Context) error {
	var err error
	for range len(r.eps) {
		i := r.cur.Load()
		rm := r.remotes[i]
		r.m.requests.Add(1)
		if err = rm.FetchOnce(ctx); err == nil {
			r.cp.mu.Lock()
			switched := r.cp.from != rm
			r.cp.from, r.cp.lastSuccess, r.cp.lastErr = rm, r.cfg.Now(), ""
			r.cp.mu.Unlock()
			if switched {
				r.recent.note(rm, region.Change{Region: rm.Name()}, r.cfg.Now())
			}
			r.pruneRemoved()
			if switched {
				r.copyChanged(region.Change{Region: rm.Name()})
			}
			return nil
		}
		r.m.requestFailures.Add(1)
		if ctx.Err() != nil {
			break
		}
		next := (i + 1) % int32(len(r.eps))
		if r.cur.CompareAndSwap(i, next) && next != i {
			r.kind.Store(kindUnknown)
		}
	}
	r.cp.mu.Lock()
	r.cp.lastErr = err.Error()
	r.cp.mu.Unlock()
	r.warn("fetch", "fetching the upstream registry failed; serving the last copy", "upstream", r.Upstream(), "err", err)
	return err
}

// onRemoteChange passes a change of the copy served on.
func (r *Relay) onRemoteChange(ch region.Change) {
	if len(ch.Instances) == 0 {
		// Only the upstream's delta changed (region.Change.Delta): a relay
		// serves its own delta (recent.go), never the upstream's, so its
		// documents did not change (each fetch interval rebuilt them all).
		return
	}
	r.cp.mu.Lock()
	from := r.cp.from
	r.cp.mu.Unlock()
	served := from != nil && from.Name() == ch.Region
	if served {
		r.recent.note(from, ch, r.cfg.Now())
		r.cp.changes.Add(1)
	}
	if served {
		r.copyChanged(ch)
	}
}

// copyChanged calls OnCopyChange, one call at a time: the fetches and the
// watch's changes (watch.go) come from two goroutines.
func (r *Relay) copyChanged(ch region.Change) {
	if r.cfg.OnCopyChange == nil {
		return
	}
	r.cp.notifyMu.Lock()
	defer r.cp.notifyMu.Unlock()
	r.cfg.OnCopyChange(ch)
}

// removedRetention bounds how long an instance removed here stays hidden in
// the copy when the copy never drops it (the upstream lost the cancel, or
// the instance registered again elsewhere).
const removedRetention = 5 * time.Minute

// pruneRemoved forgets the removals the copy no longer shows, and those
// older than removedRetention (whose instance then shows again: the
// documents are rebuilt).
func (r *Relay) pruneRemoved() {
	apps, _ := r.copy()
	in := map[key]bool{}
	if apps != nil {
		for i := range apps.Apps {
			for _, v := range apps.Apps[i].Instances {
				in[key{apps.Apps[i].Name, v.Instance.ID()}] = true
			}
		}
	}
	now := r.cfg.Now()
	var expired []key
	r.fwd.mu.Lock()
	for k, at := range r.fwd.removed {
		switch {
		case !in[k]:
			delete(r.fwd.removed, k)
		case now.Sub(at) > removedRetention:
			delete(r.fwd.removed, k)
			expired = append(expired, k)
		}
	}
	r.fwd.mu.Unlock()
	if len(expired) > 0 {
		r.recent.shown(expired, now)
	}
	if len(expired) > 0 {
		r.copyChanged(region.Change{Region: "upstream"})
	}
}

// copy is the upstream copy served and its last delta (nil before the
// first fetch).
func (r *Relay) copy() (apps, delta *registry.Applications) {
	r.cp.mu.Lock()
	from := r.cp.from
	r.cp.mu.Unlock()
	if from == nil {
		return nil, nil
	}
	return from.Copy()
}

// shadow decides which of the copy's instances are not served: those of
// applications outside FetchApps, those the local registry has (a local
// instance wins over its echo) and those removed here that the copy still
// shows.
type shadow struct {
	r       *Relay
	removed map[key]time.Time
}

func (r *Relay) shadow() shadow {
	r.fwd.mu.Lock()
	rm := make(map[key]time.Time, len(r.fwd.removed))
	for k, v := range r.fwd.removed {
		rm[k] = v
	}
	r.fwd.mu.Unlock()
	return shadow{r: r, removed: rm}
}

func (s shadow) app(name string) bool { return s.r.apps == nil || s.r.apps[name] }

func (s shadow) hidden(app string, v *registry.LeaseView) bool {
	id := v.Instance.ID()
	if _, ok := s.removed[key{app, id}]; ok {
		return true
	}
	_, local := s.r.reg.Get(app, id)
	return local
}

// served is the copy's application a with the hidden instances left out.
func (s shadow) served(a *registry.Application) []registry.LeaseView {
	if !s.app(a.Name) {
		return nil
	}
	var out []registry.LeaseView
	for i := range a.Instances {
		if !s.hidden(a.Name, &a.Instances[i]) {
			out = append(out, a.Instances[i])
		}
	}
	return out
}

// Full is the union of local's full registry and the copy (document's
// Upstream).
func (r *Relay) Full(local *registry.Applications) *registry.Applications {
	apps, _ := r.copy()
	out := &registry.Applications{VersionDelta: local.VersionDelta, Revision: local.Revision, Apps: slices.Clone(local.Apps)}
	if apps != nil {
		out.Apps = join(out.Apps, apps, r.shadow())
	}
	out.HashCode = out.ReconcileHashCode()
	return out
}

// Delta is local's delta and the copy's recent changes (recentChanges),
// the hash that of the union's full registry (document's Upstream).
func (r *Relay) Delta(localDelta *registry.Applications) *registry.Applications {
	apps, delta := r.recent.delta(r.cfg.Now())
	out := &registry.Applications{VersionDelta: localDelta.VersionDelta, Revision: localDelta.Revision, Apps: slices.Clone(localDelta.Apps)}
	counts := map[registry.Status]int{}
	registry.ParseHashCode(localDelta.HashCode, counts)
	if apps != nil {
		sh := r.shadow()
		if delta != nil {
			out.Apps = join(out.Apps, delta, sh)
		}
		sh.count(apps, counts)
	}
	out.HashCode = registry.HashCode(counts)
	return out
}

// count adds the statuses of the copy's served instances to counts, as
// counting served of every application would, without building them:
// each delta document of a relay counts the whole copy (110,000
// instances at 10 relays x 10,000), and a per-instance lookup in the
// local registry and copy of its view was most of that document's build.
// An application that the local registry does not hold and no removal
// names hides nothing, so it is counted from its instances' statuses
// alone; only the others are looked at instance by instance.
func (s shadow) count(apps *registry.Applications, counts map[registry.Status]int) {
	mayHide := map[string]bool{}
	// Keyed upper-cased: hidden's registry lookup folds the name's case,
	// so a copy application spelled otherwise may still be hidden.
	for _, c := range s.r.reg.AppStatusCounts() {
		mayHide[strings.ToUpper(c.App)] = true
	}
	for k := range s.removed {
		mayHide[strings.ToUpper(k.app)] = true
	}
	for i := range apps.Apps {
		a := &apps.Apps[i]
		if !s.app(a.Name) {
			continue
		}
		hides := mayHide[strings.ToUpper(a.Name)]
		for j := range a.Instances {
			if !hides || !s.hidden(a.Name, &a.Instances[j]) {
				counts[a.Instances[j].Instance.Status]++
			}
		}
	}
}

// Application is local's application with the copy's instances
// (document's Upstream).
func (r *Relay) Application(name string, local registry.Application, found bool) (registry.Application, bool) {
	apps, _ := r.copy()
	if apps == nil {
		return local, found
	}
	i, ok := slices.BinarySearchFunc(apps.Apps, name, func(a registry.Application, n string) int { return cmp.Compare(a.Name, n) })
	if !ok {
		return local, found
	}
	extra := r.shadow().served(&apps.Apps[i])
	if len(extra) == 0 {
		return local, found
	}
	out := registry.Application{Name: name, Instances: append(slices.Clone(local.Instances), extra...)}
	sortViews(out.Instances)
	return out, true
}

// VIP is local's VIP read with the copy's instances of that address
// (document's Upstream).
func (r *Relay) VIP(local *registry.Applications, name string, secure bool) *registry.Applications {
	apps, _ := r.copy()
	if apps == nil {
		return local
	}
	sh := r.shadow()
	vip := &registry.Applications{}
	for i := range apps.Apps {
		a := registry.Application{Name: apps.Apps[i].Name}
		for _, v := range sh.served(&apps.Apps[i]) {
			addr := v.Instance.VIPAddress
			if secure {
				addr = v.Instance.SecureVIPAddress
			}
			if registry.VIPMatches(addr, name) {
				a.Instances = append(a.Instances, v)
			}
		}
		if len(a.Instances) > 0 {
			vip.Apps = append(vip.Apps, a)
		}
	}
	if len(vip.Apps) == 0 {
		return local
	}
	out := &registry.Applications{VersionDelta: local.VersionDelta, Revision: local.Revision,
		Apps: join(slices.Clone(local.Apps), vip, sh)}
	out.HashCode = out.ReconcileHashCode()
	return out
}

// join adds the served instances of from's applications to apps (merged
// by application name) and returns apps sorted by name.
func join(apps []registry.Application, from *registry.Applications, sh shadow) []registry.Application {
	idx := make(map[string]int, len(apps))
	for i := range apps {
		idx[apps[i].Name] = i
	}
	for i := range from.Apps {
		a := &from.Apps[i]
		extra := sh.served(a)
		if len(extra) == 0 {
			continue
		}
		k, ok := idx[a.Name]
		if !ok {
			k = len(apps)
			idx[a.Name] = k
			apps = append(apps, registry.Application{Name: a.Name})
		} else {
			apps[k].Instances = slices.Clone(apps[k].Instances)
		}
		apps[k].Instances = append(apps[k].Instances, extra...)
		sortViews(apps[k].Instances)
	}
	slices.SortStableFunc(apps, func(a, b registry.Application) int { return cmp.Compare(a.Name, b.Name) })
	return apps
}

func sortViews(vs []registry.LeaseView) {
	slices.SortStableFunc(vs, func(a, b registry.LeaseView) int { return cmp.Compare(a.Instance.ID(), b.Instance.ID()) })
}

// viewOf is the lease view a registration body describes.
func viewOf(in *registry.Instance) registry.LeaseView {
	li := in.LeaseInfo.WithDefaults()
	return registry.LeaseView{Instance: in, RenewalInterval: li.RenewalInterval, Duration: li.Duration}
}

// Instance is the copy's served instance of app (any when "") and id
// (document's Upstream), for the single-instance reads.
func (r *Relay) Instance(app, id string) (registry.LeaseView, bool) {
	apps, _ := r.copy()
	if apps == nil {
		return registry.LeaseView{}, false
	}
	sh := r.shadow()
	for i := range apps.Apps {
		a := &apps.Apps[i]
		if app != "" && a.Name != app {
			continue
		}
		for _, v := range sh.served(a) {
			if v.Instance.ID() == id {
				return v, true
			}
		}
	}
	return registry.LeaseView{}, false
}
