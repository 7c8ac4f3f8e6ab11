package region

import (
	"cmp"
	"maps"
	"reflect"
	"slices"
	"time"

	"github.com/goreka/goreka/registry"
)

// Update is one change of the region's registry that its server reported
// ahead of its documents (a goreka server's watch, GET
// /goreka/api/v1/watch): the instance after the change, or its removal, at
// the server's registry revision Revision.
type Update struct {
	Revision int64
	App, ID  string // App upper case
	// View is the instance after the change (View.Instance set), unless
	// Deleted.
	View    registry.LeaseView
	Deleted bool
}

// aheadEntry is an update no fetched document holds yet.
type aheadEntry struct {
	rev  int64
	view registry.LeaseView // Instance nil: removed
}

// Revision is the registry revision the copy holds every change up to:
// that of the last fetched document (the X-Goreka-Revision of a goreka
// server's full registry and delta), or of the last update applied after
// it; 0 when the documents name none (a stock server, a relay).
func (r *Remote) Revision() int64 {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.fetched == nil {
		return 0
	}
	rev := r.fetched.Revision
	if rev > 0 {
		for _, e := range r.ahead {
			rev = max(rev, e.rev)
		}
	}
	return rev
}

// Apply puts updates, in revision order, into the copy served at once,
// ahead of the fetched documents, and tells OnChange what changed: a
// registration at the region's server reaches the copy as its watch
// reports it, instead of after the server's next delta rebuild and the
// next fetch. The fetches go on as before and stay the copy's check: a
// fetched document applies to the fetched copy, its reconcile hash is
// checked there (a mismatch fetches the full registry), and an update
// stays on top of it only until a document of its revision or a later one
// holds the change; a document of no revision, or of an older one than
// the last (the server restarted, or a full registry older than the last
// delta), drops every update on top.
//
// Updates of revisions the fetched copy holds already are skipped. Apply
// returns false, and applies nothing, while the copy has no revision to
// order updates against (no fetch yet, or documents without
// X-Goreka-Revision), or when epoch, the sequence the updates' revisions
// count in (the watch's X-Goreka-Epoch), is not the fetched copy's (the
// watch and the fetches reached two servers behind one address, or a
// restarted one): revisions of two sequences do not compare, so the caller
// fetches instead.
func (r *Remote) Apply(epoch string, ups []Update) bool {
	r.pubMu.Lock()
	defer r.pubMu.Unlock()
	r.mu.Lock()
	if r.fetched == nil || r.fetched.Revision <= 0 || epoch == "" || epoch != r.fetched.Epoch {
		r.mu.Unlock()
		return false
	}
	if r.ahead == nil {
		r.ahead = map[[2]string]aheadEntry{}
	}
	set := map[[2]string]*registry.LeaseView{}
	for _, u := range ups {
		if u.Revision <= r.fetched.Revision || !u.Deleted && u.View.Instance == nil {
			continue
		}
		k := [2]string{u.App, u.ID}
		if e, ok := r.ahead[k]; ok && e.rev > u.Revision {
			continue
		}
		e := aheadEntry{rev: u.Revision}
		if !u.Deleted {
			e.view = u.View
		}
		r.ahead[k] = e
		set[k] = nil
		if v := e.view; v.Instance != nil {
			set[k] = &v
		}
	}
	if len(set) == 0 {
		r.mu.Unlock()
		return true
	}
	next, changed := patch(r.apps, set)
	r.apps = next
	r.gen++
	r.mu.Unlock()
	if r.cfg.OnChange != nil && len(changed) > 0 {
		r.cfg.OnChange(Change{Region: r.cfg.Name, Instances: changed})
	}
	return true
}

// prune drops the updates the document doc holds (those of its revision
// or older) and returns their keys: all of them when doc has no revision or
// counts in another epoch than the updates (they were taken under prev's,
// the last document's: a restarted server, or another one behind the same
// address). A document older than the last of the same epoch (an unread
// full registry, kept up to an update interval, after a newer delta) keeps
// the updates newer than it on top. r.mu is held.
func (r *Remote) prune(prev, doc *registry.Applications) [][2]string {
	var out [][2]string
	rev := doc.Revision
	all := rev <= 0 || doc.Epoch == "" || prev != nil && prev.Epoch != doc.Epoch
	for k, e := range r.ahead {
		if all || e.rev <= rev {
			delete(r.ahead, k)
			out = append(out, k)
		}
	}
	return out
}

// overlay is fetched with the updates of ahead on top.
func overlay(fetched *registry.Applications, ahead map[[2]string]aheadEntry) *registry.Applications {
	set := make(map[[2]string]*registry.LeaseView, len(ahead))
	for k, e := range ahead {
		set[k] = nil
		if v := e.view; v.Instance != nil {
			set[k] = &v
		}
	}
	out, _ := patch(fetched, set)
	return out
}

// patch returns a copy of apps (sorted by name and id, as the JSON decoder
// leaves every fetched document) with each key of set stored (nil: removed),
// sharing every application it does not change, and the instances that
// changed (both versions of a modified one). The hash is kept from apps's
// counts.
func patch(apps *registry.Applications, set map[[2]string]*registry.LeaseView) (*registry.Applications, []*registry.Instance) {
	byApp := map[string][]string{}
	for k := range set {
		byApp[k[0]] = append(byApp[k[0]], k[1])
	}
	out := &registry.Applications{VersionDelta: apps.VersionDelta, Revision: apps.Revision, Apps: slices.Clone(apps.Apps)}
	counts := map[registry.Status]int{}
	registry.ParseHashCode(apps.HashCode, counts)
	var changed []*registry.Instance
	for name, ids := range byApp {
		i, found := slices.BinarySearchFunc(out.Apps, name, func(a registry.Application, n string) int { return cmp.Compare(a.Name, n) })
		var vs []registry.LeaseView
		if found {
			vs = slices.Clone(out.Apps[i].Instances)
		}
		for _, id := range ids {
			v := set[[2]string{name, id}]
			j, had := slices.BinarySearchFunc(vs, id, func(v registry.LeaseView, id string) int { return cmp.Compare(v.Instance.ID(), id) })
			switch {
			case v == nil && had:
				counts[vs[j].Instance.Status]--
				changed = append(changed, vs[j].Instance)
				vs = slices.Delete(vs, j, j+1)
			case v == nil:
			case had:
				if reflect.DeepEqual(vs[j].Instance, v.Instance) {
					vs[j] = *v
					continue
				}
				counts[vs[j].Instance.Status]--
				counts[v.Instance.Status]++
				changed = append(changed, vs[j].Instance, v.Instance)
				vs[j] = *v
			default:
				counts[v.Instance.Status]++
				changed = append(changed, v.Instance)
				vs = slices.Insert(vs, j, *v)
			}
		}
		switch {
		case found && len(vs) == 0:
			out.Apps = slices.Delete(out.Apps, i, i+1)
		case found:
			out.Apps[i] = registry.Application{Name: name, Instances: vs}
		case len(vs) > 0:
			out.Apps = slices.Insert(out.Apps, i, registry.Application{Name: name, Instances: vs})
		}
	}
	out.HashCode = registry.HashCode(counts)
	return out, changed
}

// servedChanges is what changed between two copies served, prev and next,
// among the instances that changed in the fetched copy (changed) and
// those whose updates a document now holds (pruned). An update's version
// of an instance and the document's differ in what the watch does not
// carry as a document does (the precision of timestamps, empty maps, the
// delta's action): Equivalent ones are no change.
func servedChanges(prev, next *registry.Applications, changed []*registry.Instance, pruned [][2]string) []*registry.Instance {
	keys := map[[2]string]bool{}
	for _, in := range changed {
		keys[[2]string{in.App, in.ID()}] = false
	}
	for _, k := range pruned {
		keys[k] = true
	}
	pi, ni := indexOf(prev), indexOf(next)
	var out []*registry.Instance
	for k, wasAhead := range keys {
		o, n := pi.get(k), ni.get(k)
		switch {
		case o == nil && n == nil:
		case o == nil:
			out = append(out, n)
		case n == nil:
			out = append(out, o)
		case wasAhead && Equivalent(o, n), !wasAhead && reflect.DeepEqual(o, n):
		default:
			out = append(out, o, n)
		}
	}
	return out
}

// appIndex finds instances of a copy by application and id, indexing an
// application when first asked.
type appIndex struct {
	apps map[string]*registry.Application
	ids  map[string]map[string]*registry.Instance
}

func indexOf(apps *registry.Applications) *appIndex {
	x := &appIndex{apps: map[string]*registry.Application{}, ids: map[string]map[string]*registry.Instance{}}
	if apps != nil {
		for i := range apps.Apps {
			x.apps[apps.Apps[i].Name] = &apps.Apps[i]
		}
	}
	return x
}

func (x *appIndex) get(k [2]string) *registry.Instance {
	m, ok := x.ids[k[0]]
	if !ok {
		if a := x.apps[k[0]]; a != nil {
			m = make(map[string]*registry.Instance, len(a.Instances))
			for _, v := range a.Instances {
				m[v.Instance.ID()] = v.Instance
			}
		}
		x.ids[k[0]] = m
	}
	return m[k[1]]
}

// Equivalent reports whether two versions of an instance describe the
// same thing as a Eureka document writes it: timestamps to the
// millisecond, a nil map as an empty one, the action type aside.
func Equivalent(a, b *registry.Instance) bool {
	if a == b {
		return true
	}
	na, nb := normalized(a), normalized(b)
	return reflect.DeepEqual(&na, &nb)
}

func normalized(in *registry.Instance) registry.Instance {
	c := *in
	c.ActionType = ""
	ms := func(t time.Time) time.Time {
		if t.IsZero() {
			return time.Time{}
		}
		return time.UnixMilli(t.UnixMilli()).UTC()
	}
	c.LastUpdatedTimestamp, c.LastDirtyTimestamp = ms(c.LastUpdatedTimestamp), ms(c.LastDirtyTimestamp)
	if len(c.Metadata) == 0 {
		c.Metadata = nil
	} else {
		c.Metadata = maps.Clone(c.Metadata)
	}
	if len(c.DataCenterInfo.Metadata) == 0 {
		c.DataCenterInfo.Metadata = nil
	}
	return c
}

// Reset drops every update Apply put on top of the fetched copy (the
// watch's revisions broke: its server no longer had the copy's revision,
// restarted, or lost its history), so that the copy served is the fetched
// documents' alone until the next fetch, which the caller wakes.
func (r *Remote) Reset() {
	r.pubMu.Lock()
	defer r.pubMu.Unlock()
	r.mu.Lock()
	if len(r.ahead) == 0 || r.fetched == nil {
		r.mu.Unlock()
		return
	}
	prev := r.apps
	var pruned [][2]string
	for k := range r.ahead {
		pruned = append(pruned, k)
	}
	clear(r.ahead)
	r.apps = r.fetched
	r.gen++
	served := r.apps
	r.mu.Unlock()
	changed := servedChanges(prev, served, nil, pruned)
	if r.cfg.OnChange != nil && len(changed) > 0 {
		r.cfg.OnChange(Change{Region: r.cfg.Name, Instances: changed})
	}
}
