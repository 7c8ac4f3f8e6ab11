package registry

import (
	"cmp"
	"iter"
	"maps"
	"slices"
	"strings"
	"time"
)

// Get returns one instance with its lease.
func (r *Registry) Get(app, id string) (LeaseView, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	l := r.apps[strings.ToUpper(app)][id]
	if l == nil {
		return LeaseView{}, false
	}
	return l.view(), true
}

// GetByID returns the instance with this id in any application (the first
// application by name when several hold it).
func (r *Registry) GetByID(id string) (LeaseView, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var best *lease
	for name, group := range r.apps {
		if l := group[id]; l != nil && (best == nil || name < best.inst.App) {
			best = l
		}
	}
	if best == nil {
		return LeaseView{}, false
	}
	return best.view(), true
}

// IsExpired reports whether the view's lease has expired at now (plus extra),
// for readers that hide expired leases while lease expiration is enabled.
func (v LeaseView) IsExpired(now time.Time, extra time.Duration) bool {
	if !v.EvictionTimestamp.IsZero() {
		return true
	}
	if v.Static {
		return false
	}
	return now.After(v.LastRenewalTimestamp.Add(v.Duration + extra))
}

// Applications returns the full registry (versions__delta 1).
func (r *Registry) Applications() *Applications {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := &Applications{VersionDelta: 1, HashCode: hashCode(r.counts), Revision: r.rev}
	out.Apps = make([]Application, 0, len(r.apps))
	for name, group := range r.apps {
		out.Apps = append(out.Apps, applicationOf(name, group))
	}
	slices.SortFunc(out.Apps, func(a, b Application) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

func applicationOf(name string, group map[string]*lease) Application {
	app := Application{Name: name, Instances: make([]LeaseView, 0, len(group))}
	for _, l := range group {
		app.Instances = append(app.Instances, l.view())
	}
	sortViews(app.Instances)
	return app
}

func sortViews(vs []LeaseView) {
	slices.SortFunc(vs, func(a, b LeaseView) int { return cmp.Compare(a.Instance.ID(), b.Instance.ID()) })
}

// Application returns one application; false if it has no instances.
func (r *Registry) Application(name string) (Application, bool) {
	name = strings.ToUpper(name)
	r.mu.RLock()
	defer r.mu.RUnlock()
	group := r.apps[name]
	if len(group) == 0 {
		return Application{}, false
	}
	return applicationOf(name, group), true
}

// Delta returns the instances changed within the retention window, each in
// its current state, with the hash of the whole registry taken under the same
// lock, so a client that applies it reaches exactly that hash. Every call
// takes a new versions__delta (ResponseCacheImpl bumps it per generation).
func (r *Registry) Delta() *Applications {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := &Applications{VersionDelta: r.versionDelta.Add(1), HashCode: hashCode(r.counts), Revision: r.rev}
	byApp := make(map[string]map[string]*lease)
	for _, c := range r.recent {
		if c.l == nil {
			continue
		}
		in := c.l.inst
		g := byApp[in.App]
		if g == nil {
			g = make(map[string]*lease)
			byApp[in.App] = g
		}
		g[in.ID()] = c.l
	}
	for name, g := range byApp {
		out.Apps = append(out.Apps, applicationOf(name, g))
	}
	slices.SortFunc(out.Apps, func(a, b Application) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// VIP returns the instances whose vipAddress (secure: secureVipAddress)
// contains name as one of its comma-separated pieces, compared exactly
// (ResponseCacheImpl.getApplicationsForVip). versions__delta is -1 and the
// hash covers only the matched instances, as in Eureka.
func (r *Registry) VIP(name string, secure bool) *Applications {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := &Applications{VersionDelta: -1, Revision: r.rev}
	counts := make(map[Status]int)
	for appName, group := range r.apps {
		var app Application
		for _, l := range group {
			addr := l.inst.VIPAddress
			if secure {
				addr = l.inst.SecureVIPAddress
			}
			if !VIPMatches(addr, name) {
				continue
			}
			app.Instances = append(app.Instances, l.view())
			counts[l.inst.Status]++
		}
		if len(app.Instances) > 0 {
			app.Name = appName
			sortViews(app.Instances)
			out.Apps = append(out.Apps, app)
		}
	}
	slices.SortFunc(out.Apps, func(a, b Application) int { return cmp.Compare(a.Name, b.Name) })
	out.HashCode = hashCode(counts)
	return out
}

// VIPPieces yields the pieces of an instance's (secure) VIP address: the
// address is a comma-separated list, split at every comma and not trimmed,
// as Eureka's getApplicationsForVip splits it; "" has no pieces. A piece
// may be empty ("a,,b") or repeated. Every reader of VIP addresses (the
// /vips reads, the tool API's index, the cache's invalidation) splits them
// here.
func VIPPieces(addr string) iter.Seq[string] {
	return func(yield func(string) bool) {
		if addr == "" {
			return
		}
		for piece := range strings.SplitSeq(addr, ",") {
			if !yield(piece) {
				return
			}
		}
	}
}

// VIPMatches reports whether an instance's (secure) VIP address serves the
// VIP name: one of its VIPPieces is name, compared exactly.
func VIPMatches(addr, name string) bool {
	for piece := range VIPPieces(addr) {
		if piece == name {
			return true
		}
	}
	return false
}

// StatusOverrides returns a copy of the override map (id -> status).
func (r *Registry) StatusOverrides() map[string]Status {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return maps.Clone(r.overrides)
}

// HashCode returns the registry's apps__hashcode now.
func (r *Registry) HashCode() string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return hashCode(r.counts)
}

// Size returns the number of registered instances.
func (r *Registry) Size() int {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.size
}

// expiredChunk is about how many leases Expired checks in one hold of the
// read lock (1-8 ms at 100k-1M leases on two busy cores), after which
// waiting writers, and the readers queued behind them, go first.
const expiredChunk = 4096

// expiredPause, when set (tests), runs between two of Expired's chunks,
// while it holds no lock.
var expiredPause func()

// Expired lists the leases expired at now with the eviction job's lateness
// compensation extra (Lease.isExpired(additionalLeaseMs)), sorted by
// application and id.
//
// The walk takes the read lock for expiredChunk leases at a time and sorts
// outside it: at 1M leases one walk under one hold kept every registration
// waiting for seconds. A chunk may end inside an application, however
// large: the walk of its leases (a range over its map) is suspended while
// the lock is released and resumed once it is taken again, which the
// language defines whatever the writers did meanwhile (an entry removed
// before it is reached is not produced; one added may be or not) and the
// runtime supports (no concurrent access: every step of the walk holds the
// read lock). An id removed and added again meanwhile can be produced twice:
// the list is deduplicated when sorted. An application removed meanwhile
// (its map is dropped only once empty, placeLocked) yields no more leases;
// registered again, its new map's leases wait for the next walk. Each lease
// is checked within the hold that produced it.
//
// The list is therefore as weakly consistent as Eureka's, which iterates its
// concurrent map without a lock: an application registered during the walk
// is not listed, and a listed lease may have been renewed, cancelled or
// re-registered by the time the caller acts (EvictExpired checks again under
// the write lock).
func (r *Registry) Expired(now time.Time, extra time.Duration) []InstanceKey {
	r.mu.RLock()
	names := make([]string, 0, len(r.apps))
	for app := range r.apps {
		names = append(names, app)
	}
	r.mu.RUnlock()
	slices.Sort(names)

	var out []InstanceKey
	ends := make([]int, 0, len(names)) // end of each application's keys in out
	seen := 0
	r.mu.RLock()
	for _, name := range names {
		for id, l := range r.apps[name] { // nil: the application left meanwhile
			seen++
			if l.expired(now, extra) {
				out = append(out, InstanceKey{name, id})
			}
			if seen >= expiredChunk {
				// Possibly inside an application: its walk is suspended (above).
				r.mu.RUnlock()
				if expiredPause != nil {
					expiredPause()
				}
				r.mu.RLock()
				seen = 0
			}
		}
		ends = append(ends, len(out))
	}
	r.mu.RUnlock()
	// The applications come in name order: sorting each one's ids sorts the
	// list.
	sorted, start := out[:0], 0
	for _, end := range ends {
		part := out[start:end]
		start = end
		slices.SortFunc(part, func(a, b InstanceKey) int { return strings.Compare(a.ID, b.ID) })
		sorted = append(sorted, slices.Compact(part)...)
	}
	return sorted
}

// PruneRecentlyChanged drops changes older than retention from the head of
// the recently-changed queue (Eureka's delta retention task).
func (r *Registry) PruneRecentlyChanged(retention time.Duration) {
	cutoff := r.now().Add(-retention)
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for n < len(r.recent) && r.recent[n].at.Before(cutoff) {
		if l := r.recent[n].l; l != nil {
			r.forgetRecentLocked(l.inst.App)
			if h := r.keyHash(l.inst.App, l.inst.ID()); r.recentSeq[h] == r.recentBase+int64(n) {
				delete(r.recentSeq, h)
			}
		}
		n++
	}
	if n > 0 {
		r.recent = slices.Delete(r.recent, 0, n)
		r.recentBase += int64(n)
	}
}

// AppStatusCount is the number of instances of one application in one
// status.
type AppStatusCount struct {
	App    string
	Status Status
	Count  int
}

// AppStatusCounts returns the instances of every application per status
// (no zero counts), in no order: a copy of counts the registry keeps with
// every change, taken under the read lock in O(applications x statuses),
// for collectors that read them at scrape time.
func (r *Registry) AppStatusCounts() []AppStatusCount {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]AppStatusCount, 0, len(r.appCounts))
	for app, c := range r.appCounts {
		for st, n := range c {
			out = append(out, AppStatusCount{App: app, Status: st, Count: n})
		}
	}
	return out
}
