package region

import (
	"cmp"
	"slices"

	"github.com/goreka/goreka/registry"
)

// The documents below are Eureka's (AbstractInstanceRegistry), each named
// after the Java method it follows. Region names a Set does not know are
// skipped, as Eureka logs "No remote registry available" and goes on.

// Overlay is the part of the remote regions merged into a full registry:
// the whitelisted instances of the regions, grouped by application (regions
// in order of the list), and their status counts.
type Overlay struct {
	ByApp map[string][]registry.LeaseView
	Names []string // the keys of ByApp, sorted
	// From are the regions' copies the overlay was made from, one per
	// region asked for (nil: none yet), each read once: a cache keyed by
	// them holds exactly this overlay, even while a fetch replaces a copy.
	From   []*registry.Applications
	counts map[registry.Status]int
}

// Empty reports whether the overlay adds nothing.
func (o *Overlay) Empty() bool { return o == nil || len(o.ByApp) == 0 }

// Overlay collects the whitelisted instances of the named regions
// (getApplicationsFromMultipleRegions' remote part).
func (s *Set) Overlay(regions []string) *Overlay {
	o := &Overlay{ByApp: map[string][]registry.LeaseView{}, counts: map[registry.Status]int{}}
	for _, name := range regions {
		r := s.Get(name)
		if r == nil {
			continue
		}
		apps, _ := r.Copy()
		o.From = append(o.From, apps)
		if apps == nil {
			continue
		}
		for i := range apps.Apps {
			a := &apps.Apps[i]
			if !s.Allowed(name, a.Name) || len(a.Instances) == 0 {
				continue
			}
			o.ByApp[a.Name] = append(o.ByApp[a.Name], a.Instances...)
			for _, v := range a.Instances {
				o.counts[v.Instance.Status]++
			}
		}
	}
	for n := range o.ByApp {
		o.Names = append(o.Names, n)
	}
	slices.Sort(o.Names)
	return o
}

// Hash is the apps__hashcode of a document holding what localHash counts
// plus the overlay's instances.
func (o *Overlay) Hash(localHash string) string {
	counts := map[registry.Status]int{}
	registry.ParseHashCode(localHash, counts)
	if o != nil {
		for st, n := range o.counts {
			counts[st] += n
		}
	}
	return registry.HashCode(counts)
}

// MergeApp returns local's instances with the overlay's of the same
// application (an instance of the same id replaced, as Application.addInstance
// does), sorted by id.
func (o *Overlay) MergeApp(local registry.Application) registry.Application {
	extra := o.ByApp[local.Name]
	if len(extra) == 0 {
		return local
	}
	out := registry.Application{Name: local.Name}
	ids := map[string]int{}
	for _, v := range local.Instances {
		ids[v.Instance.ID()] = len(out.Instances)
		out.Instances = append(out.Instances, v)
	}
	for _, v := range extra {
		if k, ok := ids[v.Instance.ID()]; ok {
			out.Instances[k] = v
			continue
		}
		ids[v.Instance.ID()] = len(out.Instances)
		out.Instances = append(out.Instances, v)
	}
	sortViews(out.Instances)
	return out
}

// Full is getApplicationsFromMultipleRegions: the local registry with the
// whitelisted instances of the named regions merged in by application,
// versions__delta 1, the hash over all of it.
func (s *Set) Full(local *registry.Applications, regions []string) *registry.Applications {
	o := s.Overlay(regions)
	out := &registry.Applications{VersionDelta: 1, Revision: local.Revision}
	seen := map[string]bool{}
	for _, a := range local.Apps {
		seen[a.Name] = true
		out.Apps = append(out.Apps, o.MergeApp(a))
	}
	for _, n := range o.Names {
		if !seen[n] {
			out.Apps = append(out.Apps, o.MergeApp(registry.Application{Name: n}))
		}
	}
	sortApps(out.Apps)
	out.HashCode = out.ReconcileHashCode()
	return out
}

// Delta is getApplicationDeltasFromMultipleRegions: the local delta with the
// whitelisted instances of the named regions' last deltas merged in by
// application; the hash is the one of Full over the same regions.
// localDelta is registry.Delta(), whose HashCode is the local registry's.
func (s *Set) Delta(localDelta *registry.Applications, regions []string, version int64) *registry.Applications {
	out := &registry.Applications{VersionDelta: version, Revision: localDelta.Revision}
	idx := map[string]int{}
	for _, a := range localDelta.Apps {
		idx[a.Name] = len(out.Apps)
		out.Apps = append(out.Apps, registry.Application{Name: a.Name, Instances: slices.Clone(a.Instances)})
	}
	for _, name := range regions {
		r := s.Get(name)
		if r == nil {
			continue
		}
		_, delta := r.Copy()
		if delta == nil {
			continue
		}
		for i := range delta.Apps {
			a := &delta.Apps[i]
			if !s.Allowed(name, a.Name) {
				continue
			}
			k, ok := idx[a.Name]
			if !ok {
				k = len(out.Apps)
				idx[a.Name] = k
				out.Apps = append(out.Apps, registry.Application{Name: a.Name})
			}
			out.Apps[k].Instances = append(out.Apps[k].Instances, a.Instances...)
		}
	}
	sortApps(out.Apps)
	out.HashCode = s.Overlay(regions).Hash(localDelta.HashCode)
	return out
}

// FallbackDelta is the plain delta while transparent fallback is on
// (Eureka's getApplicationDeltas): the local delta, then the last delta of
// every region's application that has no instance locally, whole and
// without whitelist; the hash is that of the local registry plus every
// region's applications that have no instance locally (the first region
// holding a name wins: getApplications(true)). local says whether an
// application has instances in the local registry.
func (s *Set) FallbackDelta(localDelta *registry.Applications, local func(app string) bool) *registry.Applications {
	out := &registry.Applications{VersionDelta: localDelta.VersionDelta, Revision: localDelta.Revision, Apps: slices.Clone(localDelta.Apps)}
	counts := map[registry.Status]int{}
	registry.ParseHashCode(localDelta.HashCode, counts)
	taken := map[string]bool{}
	for _, r := range s.Remotes() {
		apps, delta := r.Copy()
		if delta != nil {
			for _, a := range delta.Apps {
				if !local(a.Name) {
					out.Apps = append(out.Apps, a)
				}
			}
		}
		if apps != nil {
			for _, a := range apps.Apps {
				if len(a.Instances) == 0 || taken[a.Name] || local(a.Name) {
					continue
				}
				taken[a.Name] = true
				for _, v := range a.Instances {
					counts[v.Instance.Status]++
				}
			}
		}
	}
	out.HashCode = registry.HashCode(counts)
	return out
}

// Application is the fallback of a single-application read
// (getApplication(name, true)): the first region, by name, that holds the
// application, without whitelist.
func (s *Set) Application(name string) (registry.Application, bool) {
	for _, r := range s.Remotes() {
		if a, ok := find(r, name); ok {
			return *a, true
		}
	}
	return registry.Application{}, false
}

// Instance is the fallback of GET apps/{app}/{id}
// (getInstanceByAppAndId(app, id, true)): the instance of that id in the
// first region holding the application; none if that region's copy of the
// application has no such instance (Eureka does not look further).
func (s *Set) Instance(app, id string) (registry.LeaseView, bool) {
	for _, r := range s.Remotes() {
		if a, ok := find(r, app); ok {
			for _, v := range a.Instances {
				if v.Instance.ID() == id {
					return v, true
				}
			}
			return registry.LeaseView{}, false
		}
	}
	return registry.LeaseView{}, false
}

// InstanceByID is the fallback of GET instances/{id} (getInstancesById(id,
// true)): the first instance of that id in any region's copy.
func (s *Set) InstanceByID(id string) (registry.LeaseView, bool) {
	for _, r := range s.Remotes() {
		apps, _ := r.Copy()
		if apps == nil {
			continue
		}
		for i := range apps.Apps {
			for _, v := range apps.Apps[i].Instances {
				if v.Instance.ID() == id {
					return v, true
				}
			}
		}
	}
	return registry.LeaseView{}, false
}

// VIP adds to local (registry.VIP's answer) the whitelisted remote instances
// whose (secure) VIP address holds name, as getApplicationsForVip reads the
// registry through getApplications(), which merges every region while
// transparent fallback is on; the hash covers the result.
func (s *Set) VIP(local *registry.Applications, name string, secure bool) *registry.Applications {
	o := s.Overlay(s.Names())
	if o.Empty() {
		return local
	}
	byApp := map[string][]registry.LeaseView{}
	for app, vs := range o.ByApp {
		for _, v := range vs {
			addr := v.Instance.VIPAddress
			if secure {
				addr = v.Instance.SecureVIPAddress
			}
			if registry.VIPMatches(addr, name) {
				byApp[app] = append(byApp[app], v)
			}
		}
	}
	if len(byApp) == 0 {
		return local
	}
	sub := &Overlay{ByApp: byApp}
	out := &registry.Applications{VersionDelta: local.VersionDelta, Revision: local.Revision}
	seen := map[string]bool{}
	for _, a := range local.Apps {
		seen[a.Name] = true
		out.Apps = append(out.Apps, sub.MergeApp(a))
	}
	for app := range byApp {
		if !seen[app] {
			out.Apps = append(out.Apps, sub.MergeApp(registry.Application{Name: app}))
		}
	}
	sortApps(out.Apps)
	out.HashCode = out.ReconcileHashCode()
	return out
}

// Names returns the regions' names, sorted.
func (s *Set) Names() []string {
	var out []string
	for _, r := range s.Remotes() {
		out = append(out, r.Name())
	}
	return out
}

func find(r *Remote, app string) (*registry.Application, bool) {
	apps, _ := r.Copy()
	if apps == nil {
		return nil, false
	}
	i, ok := slices.BinarySearchFunc(apps.Apps, app, func(a registry.Application, n string) int { return cmp.Compare(a.Name, n) })
	if !ok || len(apps.Apps[i].Instances) == 0 {
		return nil, false
	}
	return &apps.Apps[i], true
}

func sortApps(apps []registry.Application) {
	slices.SortStableFunc(apps, func(a, b registry.Application) int { return cmp.Compare(a.Name, b.Name) })
}
