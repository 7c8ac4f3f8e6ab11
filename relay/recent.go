package relay

import (
	"cmp"
	"reflect"
	"slices"
	"sync"
	"time"

	"github.com/goreka/goreka/region"
	"github.com/goreka/goreka/registry"
)

// deltaRetention is how long a change of the upstream copy stays in the
// relay's deltas: Eureka's retention-time-in-m-s-in-delta-queue (180 s),
// the window its clients' delta fetches are made for.
const deltaRetention = 3 * time.Minute

// recentChanges is the upstream copy's own recently-changed queue: every
// instance the copy served added, modified or removed in the last
// deltaRetention, at its latest state. The relay's deltas carry it rather
// than the last delta the copy was fetched with: that one is gone at the
// next fetch (a client fetching less often than the relay missed what it
// held), and after a full fetch it is the whole registry without the
// removals (Eureka's remote regions: every client of the relay then found
// its hash wrong and fetched everything).
type recentChanges struct {
	mu      sync.Mutex
	from    *region.Remote         // the copy the entries describe
	served  *registry.Applications // that copy as last noted
	entries map[key]recentEntry    // by application and instance id
	built   *registry.Applications // entries as a delta; nil: build again
}

type recentEntry struct {
	view registry.LeaseView // its Instance's ActionType says the change
	at   time.Time
}

// note records what changed in the copy served: ch's instances when the
// copy is the one noted before (from), else the difference between the two
// copies (the relay switched upstream endpoints).
func (c *recentChanges) note(from *region.Remote, ch region.Change, now time.Time) {
	if from == nil {
		return
	}
	apps, _ := from.Copy()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries = map[key]recentEntry{}
	}
	prev, prevFrom := c.served, c.from
	c.from, c.served = from, apps
	var keys []key
	switch {
	case prevFrom == from:
		for _, in := range ch.Instances {
			if in != nil {
				keys = append(keys, key{in.App, in.ID()})
			}
		}
	case prev != nil:
		keys = changedKeys(prev, apps)
	default:
		return // the first copy: clients get it by a full fetch, as the hash tells them
	}
	c.record(byName(apps), byName(prev), keys, now)
}

// shown records keys as changed in the copy noted last (instances it
// showed all along that the relay hid until now).
func (c *recentChanges) shown(keys []key, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.served == nil {
		return
	}
	if c.entries == nil {
		c.entries = map[key]recentEntry{}
	}
	c.record(byName(c.served), byName(nil), keys, now)
}

// record stores each key's latest state: as in cur (ADDED or MODIFIED),
// else DELETED as it was in before or in an earlier entry. c.mu is held.
func (c *recentChanges) record(cur, before *index, keys []key, now time.Time) {
	for _, k := range keys {
		if v, ok := lookup(cur, k); ok {
			in := v.Instance
			if in.ActionType != registry.ActionAdded && in.ActionType != registry.ActionModified {
				in = in.Clone()
				in.ActionType = registry.ActionModified
			}
			v.Instance = in
			c.entries[k] = recentEntry{view: v, at: now}
			continue
		}
		old, ok := lookup(before, k)
		if !ok {
			if e, had := c.entries[k]; had {
				old, ok = e.view, true
			}
		}
		if !ok {
			continue
		}
		in := old.Instance.Clone()
		in.ActionType = registry.ActionDeleted
		old.Instance = in
		c.entries[k] = recentEntry{view: old, at: now}
	}
	if len(keys) > 0 {
		c.built = nil
	}
}

// delta is the copy noted last and the entries of the last deltaRetention
// as a delta document (applications sorted by name, instances by id,
// without a hash): the two taken together, so that a delta's hash counts
// the copy whose changes it carries.
func (c *recentChanges) delta(now time.Time) (served, delta *registry.Applications) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.served, c.deltaLocked(now)
}

func (c *recentChanges) deltaLocked(now time.Time) *registry.Applications {
	for k, e := range c.entries {
		if now.Sub(e.at) > deltaRetention {
			delete(c.entries, k)
			c.built = nil
		}
	}
	if c.built != nil {
		return c.built
	}
	byApp := map[string][]registry.LeaseView{}
	for k, e := range c.entries {
		byApp[k.app] = append(byApp[k.app], e.view)
	}
	out := &registry.Applications{}
	for name, vs := range byApp {
		sortViews(vs)
		out.Apps = append(out.Apps, registry.Application{Name: name, Instances: vs})
	}
	slices.SortFunc(out.Apps, func(a, b registry.Application) int { return cmp.Compare(a.Name, b.Name) })
	c.built = out
	return out
}

// index finds instances of a copy by key, indexing only the applications
// asked for (a stock upstream's document need not be sorted): a change
// costs its own application's size, not the copy's.
type index struct {
	apps map[string]*registry.Application
	ids  map[string]map[string]registry.LeaseView
}

func byName(apps *registry.Applications) *index {
	ix := &index{apps: map[string]*registry.Application{}, ids: map[string]map[string]registry.LeaseView{}}
	if apps != nil {
		for i := range apps.Apps {
			ix.apps[apps.Apps[i].Name] = &apps.Apps[i]
		}
	}
	return ix
}

// lookup finds k's instance (none in a nil index).
func lookup(ix *index, k key) (registry.LeaseView, bool) {
	if ix == nil {
		return registry.LeaseView{}, false
	}
	m, ok := ix.ids[k.app]
	if !ok {
		if a := ix.apps[k.app]; a != nil {
			m = make(map[string]registry.LeaseView, len(a.Instances))
			for _, v := range a.Instances {
				m[v.Instance.ID()] = v
			}
		}
		ix.ids[k.app] = m
	}
	v, ok := m[k.id]
	return v, ok
}

// changedKeys are the instances that differ between two copies (by
// content: lease timestamps are not the instance's; see sameInstance).
func changedKeys(prev, next *registry.Applications) []key {
	var out []key
	seen := map[key]bool{}
	for _, in := range region.Diff(prev, next, sameInstance) {
		if k := (key{in.App, in.ID()}); !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	return out
}

// sameInstance compares two copies of an instance apart from what each
// server sets on its own: lastUpdatedTimestamp (the time the instance
// reached that server, by replication too) and the action of the delta it
// came in. Two nodes of one core group hold equal instances with
// different lastUpdatedTimestamps: after the relay switched between them,
// comparing those too made every instance a change for 3 minutes.
func sameInstance(a, b *registry.Instance) bool {
	if a == b {
		return true
	}
	ca, cb := *a, *b
	ca.LastUpdatedTimestamp, cb.LastUpdatedTimestamp = time.Time{}, time.Time{}
	ca.ActionType, cb.ActionType = "", ""
	return reflect.DeepEqual(&ca, &cb)
}
