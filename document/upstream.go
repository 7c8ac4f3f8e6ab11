package document

import (
	"io"

	"github.com/goreka/goreka/cache"
	"github.com/goreka/goreka/registry"
)

// Upstream is a relay's copy of the registry above it (package relay),
// served as a union with the local registry: every read, plain or not,
// holds the local instances and the copy's, a local instance winning over
// the copy's instance of the same application and id (its own echo). The
// implementation decides what of the copy is served; each method returns
// the whole document, its apps__hashcode over everything in it (the delta's
// over the union's full registry, so that a client applying deltas never
// falls back to a full fetch because of the relay).
type Upstream interface {
	// Full is local's full registry joined with the copy.
	Full(local *registry.Applications) *registry.Applications
	// Delta is local's delta joined with the copy's last delta (localDelta's
	// HashCode is the local registry's).
	Delta(localDelta *registry.Applications) *registry.Applications
	// Application is the application of that name: local's (found says
	// whether local has it) with the copy's instances; false when neither
	// has any.
	Application(name string, local registry.Application, found bool) (registry.Application, bool)
	// VIP is local's VIP (or secure VIP) read joined with the copy's
	// instances of that address.
	VIP(local *registry.Applications, name string, secure bool) *registry.Applications
	// Instance is the copy's instance of that application (upper case;
	// "" for any) and id, for the single-instance reads of an instance the
	// local registry does not have.
	Instance(app, id string) (registry.LeaseView, bool)
}

// Upstream returns the relay's upstream copy (Config.Upstream; nil: none),
// for the single-instance reads, which do not go through the cache.
func (b *Builder) Upstream() Upstream { return b.upstream }

// loadUpstream is Load with a relay's upstream copy.
func (b *Builder) loadUpstream(k cache.Key, w io.Writer) (bool, error) {
	up, reg, codecs := b.upstream, b.reg, b.codecs
	f := format(k)
	switch {
	case k.Entity == cache.VIP || k.Entity == cache.SVIP:
		secure := k.Entity == cache.SVIP
		return true, codecs.WriteApplications(w, f, k.Compact, up.VIP(reg.VIP(k.Name, secure), k.Name, secure))
	case k.Name == cache.AllApps:
		return true, codecs.WriteApplications(w, f, k.Compact, up.Full(reg.Applications()))
	case k.Name == cache.AllAppsDelta:
		return true, codecs.WriteApplications(w, f, k.Compact, up.Delta(reg.Delta()))
	default:
		local, found := reg.Application(k.Name)
		app, ok := up.Application(k.Name, local, found)
		if !ok {
			return false, nil
		}
		_, err := w.Write(codecs.AppendApplication(nil, f, k.Compact, &app))
		return true, err
	}
}
