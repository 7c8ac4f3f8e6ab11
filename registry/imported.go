package registry

import (
	"cmp"
	"slices"
	"strings"
)

// Imported registrations are instances an importer (the Kubernetes
// bridge) keeps from a source outside Eureka. They are lease-less, like
// static ones (static.go), and owned by the importer:
//
//   - they never expire and are never evicted, nobody heartbeats for them
//     and goreka does not renew them on anyone's behalf (a client's
//     heartbeat for one is answered as found and ignored), and they do
//     not count toward self-preservation's expected renewals (Renewing);
//   - nothing about them is replicated (their views carry Static, which
//     replication skips), and a peer's or a client's register, cancel or
//     metadata update over one is refused with a *ValidationError: every
//     node imports on its own; only Withdraw removes one;
//   - their views carry Source, the value of their metadata MetaSource,
//     which Import requires;
//   - Export keeps them, and Restore brings them back as imported (known by
//     MetaSource), so that a restarted server serves them until its
//     importer has reconciled (ImportedKeys, then Withdraw).
//
// A static registration of the same key wins: Import refuses it.

// MetaSource is the metadata key that names an imported instance's source
// (the Kubernetes bridge's kube.MetaSource).
const MetaSource = "goreka.source"

// reservedMeta refuses MetaSource in a registration's or a metadata
// update's metadata: only Import sets it. A snapshot restores an instance
// that carries it as imported, and a peer's copy of an imported instance
// (in the registry a start-up sync fetches) is not registered.
func reservedMeta(md map[string]string) error {
	if _, ok := md[MetaSource]; ok {
		return invalid("metadata %s is reserved for instances goreka imports", MetaSource)
	}
	return nil
}

// Import stores in as an imported registration of the source its metadata
// MetaSource names, in place of any ordinary lease of the same key, and
// reports whether anything changed: an instance the same as the one
// imported before (but for LastDirtyTimestamp) is no change and no event.
// The status is in's, unless an operator's override stands. The registry
// takes ownership of in. Errors: a *ValidationError (no MetaSource, an
// invalid instance, a static registration of that key), a *LimitError.
func (r *Registry) Import(in *Instance) (bool, error) {
	now := r.now()
	if err := r.prepare("", in, now); err != nil {
		return false, err
	}
	src := in.Metadata[MetaSource]
	if src == "" {
		return false, invalid("%s/%s: an imported instance needs the metadata %s", in.App, in.ID(), MetaSource)
	}
	k := InstanceKey{in.App, in.ID()}
	r.mu.Lock()
	l := r.apps[k.App][k.ID]
	switch {
	case l != nil && l.static && l.source == "":
		r.mu.Unlock()
		return false, errOwned(k.App, k.ID, "")
	case l == nil && r.maxN > 0 && r.size >= r.maxN:
		r.mu.Unlock()
		return false, &LimitError{Max: r.maxN}
	}
	if old, ok := r.imported[k]; ok && l != nil && l.source == src && sameStatic(old, in) {
		r.mu.Unlock()
		return false, nil
	}
	r.imported[k] = in
	r.registerStaticLocked(in.Clone(), src, now)
	r.mu.Unlock()
	r.deliver()
	return true, nil
}

// Withdraw removes an imported registration (an EventCancel); ErrNotFound
// if app/id is none.
func (r *Registry) Withdraw(app, id string) error {
	app = strings.ToUpper(app)
	now := r.now()
	r.mu.Lock()
	l := r.apps[app][id]
	if l == nil || l.source == "" {
		r.mu.Unlock()
		return ErrNotFound
	}
	delete(r.imported, InstanceKey{app, id})
	r.removeLocked(app, id, l, EventCancel, false, now)
	r.mu.Unlock()
	r.deliver()
	return nil
}

// ImportedKeys lists the imported registrations of source, sorted by
// application and id: what an importer reconciles against after a
// restart.
func (r *Registry) ImportedKeys(source string) []InstanceKey {
	r.mu.RLock()
	var ks []InstanceKey
	for k := range r.imported {
		if l := r.apps[k.App][k.ID]; l != nil && l.source == source {
			ks = append(ks, k)
		}
	}
	r.mu.RUnlock()
	slices.SortFunc(ks, func(a, b InstanceKey) int { return cmp.Or(cmp.Compare(a.App, b.App), cmp.Compare(a.ID, b.ID)) })
	return ks
}
