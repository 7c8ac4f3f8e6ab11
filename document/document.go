package document

import (
	"io"
	"sync/atomic"

	"github.com/goreka/goreka/cache"
	"github.com/goreka/goreka/compat"
	"github.com/goreka/goreka/registry"
)

// Config is what the documents are built from.
type Config struct {
	// Registry is the local registry; required.
	Registry *registry.Registry
	// Codecs write the full registry documents
	// (eureka.server.json-codec-name, xml-codec-name); the zero value is
	// Eureka's defaults.
	Codecs compat.Codecs
	// Regions are the remote regions merged into the documents; the zero
	// value has none.
	Regions Regions
	// Upstream is a relay's copy of its upstream registry (package relay),
	// joined with the local registry in every read; nil: none. It takes the
	// place of Regions.
	Upstream Upstream
}

// Builder builds the registry documents of one registry: it is the
// response cache's loader (Load) and keeps the chunks of the full registry
// and the delta between builds. It is safe for concurrent use.
type Builder struct {
	reg      *registry.Registry
	codecs   compat.Codecs
	regions  Regions
	upstream Upstream
	fr       *fragments
	// regionDeltaVersion is Eureka's versionDeltaWithRegions: the
	// versions__delta of the deltas with ?regions=, a counter of its own.
	regionDeltaVersion atomic.Int64
}

// New returns the Builder of cfg.Registry's documents.
func New(cfg Config) *Builder {
	return &Builder{reg: cfg.Registry, codecs: cfg.Codecs, regions: cfg.Regions, upstream: cfg.Upstream, fr: newFragments(cfg.Registry, cfg.Codecs)}
}

// Regions returns the remote regions the documents merge in (Config.Regions),
// for the reads that look in them outside the cache (single instances,
// readiness, the dashboard).
func (b *Builder) Regions() Regions { return b.regions }

// Load is the response cache's cache.StreamLoader: it encodes the document
// k names, streaming the registry documents (full, delta) to the cache in
// pieces so that a large registry is never held whole uncompressed. An
// unknown application is "not found" (cached, answered 404).
//
// With remote regions, the documents are merged as Eureka's
// ResponseCacheImpl.generatePayload does: keys with regions are built whole
// from the local registry and the named regions' copies
// (getApplicationsFromMultipleRegions,
// getApplicationDeltasFromMultipleRegions, with their own versions__delta
// counter); plain keys merge every region while transparent fallback is on
// (the full registry from chunks, the remote-only applications in a segment
// of their own, so a local change re-encodes no remote application).
func (b *Builder) Load(k cache.Key, w io.Writer) (bool, error) {
	if b.upstream != nil {
		return b.loadUpstream(k, w)
	}
	if !b.regions.On() {
		return b.loadLocal(k, w)
	}
	return b.loadRegions(k, w)
}

// loadLocal encodes a document of the local registry alone.
func (b *Builder) loadLocal(k cache.Key, w io.Writer) (bool, error) {
	f := format(k)
	var apps *registry.Applications
	switch {
	case k.Entity == cache.VIP || k.Entity == cache.SVIP:
		apps = b.reg.VIP(k.Name, k.Entity == cache.SVIP)
	case k.Name == cache.AllApps || k.Name == cache.AllAppsDelta:
		return true, b.fr.writeDocument(w, k.Name == cache.AllAppsDelta, f, k.Compact)
	default:
		app, ok := b.reg.Application(k.Name)
		if !ok {
			return false, nil
		}
		_, err := w.Write(b.codecs.AppendApplication(nil, f, k.Compact, &app))
		return true, err
	}
	return true, b.codecs.WriteApplications(w, f, k.Compact, apps)
}

func format(k cache.Key) compat.Format {
	if k.JSON {
		return compat.JSON
	}
	return compat.XML
}
