package document

import (
	"io"
	"strings"

	"github.com/goreka/goreka/cache"
	"github.com/goreka/goreka/region"
	"github.com/goreka/goreka/registry"
)

// Regions are the remote regions merged into the documents (package region).
type Regions struct {
	// Set is the remote regions; nil or empty: none.
	Set *region.Set
	// DisableTransparentFallback is
	// eureka.server.disable-transparent-fallback-to-other-region: plain
	// reads (no ?regions=) serve the local registry only. While false
	// (Eureka's default) plain GET apps merges every region in, GET
	// apps/delta adds the regions' applications that have no local
	// instance, and single-application, VIP and instance reads fall back to
	// the regions.
	DisableTransparentFallback bool
}

// On reports whether any remote region is configured.
func (rg Regions) On() bool { return rg.Set.Len() > 0 }

func (rg Regions) fallback() bool { return rg.On() && !rg.DisableTransparentFallback }

// noRegions is the Key.Regions of a read that asked for regions none of
// which is configured: local only, but not the plain key (which may merge
// every region in).
const noRegions = "-"

// RegionsKey is the cache.Key.Regions of a registry read whose ?regions= is
// raw (not empty): the configured regions it names, sorted, comma-joined;
// "-" when it names none of them; "" when no region is configured (nothing
// to merge: the plain read's bytes). Unknown names are dropped, which keeps
// the number of cache keys bounded by the configured regions (Eureka skips
// them when it builds the document: the same bytes).
func (b *Builder) RegionsKey(raw string) string {
	if !b.regions.On() {
		return ""
	}
	var known []string
	for _, r := range region.ParseRegions(raw) {
		if b.regions.Set.Get(r) != nil && (len(known) == 0 || known[len(known)-1] != r) {
			known = append(known, r)
		}
	}
	if len(known) == 0 {
		return noRegions
	}
	return strings.Join(known, ",")
}

func splitRegionsKey(k string) []string {
	if k == noRegions || k == "" {
		return nil
	}
	return strings.Split(k, ",")
}

// regionOverlay is a region.Overlay and the copies it was made from.
type regionOverlay struct {
	*region.Overlay
	from []*registry.Applications
}

// overlay is what transparent fallback merges into the plain full
// registry: every region, whitelisted; nil when that is nothing.
func (rg Regions) overlay() *regionOverlay {
	names := rg.Set.Names()
	ov := rg.Set.Overlay(names)
	if ov.Empty() {
		return nil
	}
	// The key of the kept segment is the copies the overlay read, not a
	// second read of them, which a fetch in between would make newer than
	// the segment's content.
	return &regionOverlay{Overlay: ov, from: ov.From}
}

// loadRegions is Load with remote regions configured.
func (b *Builder) loadRegions(k cache.Key, w io.Writer) (bool, error) {
	rg, reg, codecs := b.regions, b.reg, b.codecs
	f := format(k)
	switch {
	case k.Regions != "" && k.Name == cache.AllApps:
		apps := rg.Set.Full(reg.Applications(), splitRegionsKey(k.Regions))
		return true, codecs.WriteApplications(w, f, k.Compact, apps)
	case k.Regions != "" && k.Name == cache.AllAppsDelta:
		apps := rg.Set.Delta(reg.Delta(), splitRegionsKey(k.Regions), b.regionDeltaVersion.Add(1))
		return true, codecs.WriteApplications(w, f, k.Compact, apps)
	case !rg.fallback():
		return b.loadLocal(k, w)
	case k.Entity == cache.VIP || k.Entity == cache.SVIP:
		apps := rg.Set.VIP(reg.VIP(k.Name, k.Entity == cache.SVIP), k.Name, k.Entity == cache.SVIP)
		return true, codecs.WriteApplications(w, f, k.Compact, apps)
	case k.Name == cache.AllApps:
		ov := rg.overlay()
		if ov == nil {
			return b.loadLocal(k, w)
		}
		if sw, ok := w.(cache.SegmentWriter); ok {
			return true, b.fr.write(sw, false, f, k.Compact, ov)
		}
		return true, codecs.WriteApplications(w, f, k.Compact, rg.Set.Full(reg.Applications(), rg.Set.Names()))
	case k.Name == cache.AllAppsDelta:
		if !rg.anyCopy() {
			return b.loadLocal(k, w)
		}
		apps := rg.Set.FallbackDelta(reg.Delta(), func(app string) bool { _, ok := reg.Application(app); return ok })
		return true, codecs.WriteApplications(w, f, k.Compact, apps)
	default:
		if _, ok := reg.Application(k.Name); ok {
			return b.loadLocal(k, w)
		}
		app, ok := rg.Set.Application(k.Name)
		if !ok {
			return false, nil
		}
		_, err := w.Write(codecs.AppendApplication(nil, f, k.Compact, &app))
		return true, err
	}
}

// anyCopy reports whether some region's copy or last delta holds anything.
func (rg Regions) anyCopy() bool {
	for _, r := range rg.Set.Remotes() {
		apps, delta := r.Copy()
		if (apps != nil && len(apps.Apps) > 0) || (delta != nil && len(delta.Apps) > 0) {
			return true
		}
	}
	return false
}
