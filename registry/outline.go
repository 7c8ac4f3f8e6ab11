package registry

import (
	"cmp"
	"slices"
	"time"
)

// AppOutline is one application in an Outline: its name, the revision of
// its last change and its size (instances in a full outline, instances with
// an entry in the recently-changed queue in a delta outline). Two outlines of one
// application with the same Revision and Count describe the same document
// content, apart from renewal timestamps (heartbeats are not changes).
type AppOutline struct {
	Name     string
	Revision int64
	Count    int
}

// Outline is a consistent, cheap description of a registry document (the
// full registry or the delta), for readers that keep encoded pieces per
// application and re-encode only what changed: the document's header
// fields, every application's AppOutline sorted by name, and views of the
// applications the reader picked.
type Outline struct {
	VersionDelta int64
	HashCode     string
	Revision     int64
	Apps         []AppOutline
	// Views is parallel to Apps: the picked applications are filled, exactly
	// as Applications (or Delta) would hold them; the others are zero.
	Views []Application
}

// OutlineApplications describes the full registry (Applications) under one
// read lock. pick is called under that lock with the sorted outline and
// returns which applications to copy (a nil pick or result: none); it must
// not call the registry.
func (r *Registry) OutlineApplications(pick func([]AppOutline) []bool) *Outline {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := &Outline{VersionDelta: 1, HashCode: hashCode(r.counts), Revision: r.rev}
	out.Apps = make([]AppOutline, 0, len(r.apps))
	for name, group := range r.apps {
		out.Apps = append(out.Apps, AppOutline{Name: name, Revision: r.appRev[name], Count: len(group)})
	}
	slices.SortFunc(out.Apps, func(a, b AppOutline) int { return cmp.Compare(a.Name, b.Name) })
	out.Views = make([]Application, len(out.Apps))
	var want []bool
	if pick != nil {
		want = pick(out.Apps)
	}
	for i, a := range out.Apps {
		if i < len(want) && want[i] {
			out.Views[i] = applicationOf(a.Name, r.apps[a.Name])
		}
	}
	return out
}

// OutlineDelta describes the delta (Delta) under one read lock, with pick
// as in OutlineApplications. Like Delta, every call takes a new
// versions__delta.
func (r *Registry) OutlineDelta(pick func([]AppOutline) []bool) *Outline {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := &Outline{VersionDelta: r.versionDelta.Add(1), HashCode: hashCode(r.counts), Revision: r.rev}
	out.Apps = make([]AppOutline, 0, len(r.recentCount))
	for name, n := range r.recentCount {
		out.Apps = append(out.Apps, AppOutline{Name: name, Revision: r.appRev[name], Count: n})
	}
	slices.SortFunc(out.Apps, func(a, b AppOutline) int { return cmp.Compare(a.Name, b.Name) })
	out.Views = make([]Application, len(out.Apps))
	var want []bool
	if pick != nil {
		want = pick(out.Apps)
	}
	picked := make(map[string]map[string]*lease)
	for i, a := range out.Apps {
		if i < len(want) && want[i] {
			picked[a.Name] = make(map[string]*lease, a.Count)
		}
	}
	if len(picked) == 0 {
		return out
	}
	for _, c := range r.recent {
		if c.l == nil {
			continue
		}
		if g := picked[c.l.inst.App]; g != nil {
			g[c.l.inst.ID()] = c.l
		}
	}
	for i, a := range out.Apps {
		if g := picked[a.Name]; g != nil {
			out.Views[i] = applicationOf(a.Name, g)
		}
	}
	return out
}

// noteRecentLocked appends a change to the recently-changed queue and
// clears the instance's earlier entry, if any: a delta lists each instance
// once, in its current state, so an older entry only kept its lease (and
// the instance it held) in memory until the retention dropped it. A
// registration burst that registers and cancels the same instances again
// and again then holds one entry per instance, not one per change. The
// entries are found by keyHash; an entry of another instance with the same
// hash is left as it is (it then costs memory, never a delta line).
func (r *Registry) noteRecentLocked(l *lease, now time.Time) {
	app, id := l.inst.App, l.inst.ID()
	h := r.keyHash(app, id)
	r.recent = append(r.recent, change{l, now})
	r.recentCount[app]++
	if seq, ok := r.recentSeq[h]; ok {
		if i := seq - r.recentBase; i >= 0 && i < int64(len(r.recent)-1) {
			if old := r.recent[i].l; old != nil && old.inst.App == app && old.inst.ID() == id {
				r.recent[i].l = nil
				r.forgetRecentLocked(app)
			}
		}
	}
	r.recentSeq[h] = r.recentBase + int64(len(r.recent)-1)
}

// forgetRecentLocked accounts for a queue entry of app being pruned, and
// forgets an application that has neither entries nor instances left.
func (r *Registry) forgetRecentLocked(app string) {
	if n := r.recentCount[app] - 1; n > 0 {
		r.recentCount[app] = n
		return
	}
	delete(r.recentCount, app)
	if len(r.apps[app]) == 0 {
		delete(r.appRev, app)
	}
}
