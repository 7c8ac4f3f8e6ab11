package server

import (
	"io"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/goreka/goreka/cache"
	"github.com/goreka/goreka/compat"
	"github.com/goreka/goreka/region"
	"github.com/goreka/goreka/registry"
)

// Regions are the remote regions merged into reads (package region).
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

func (rg Regions) on() bool { return rg.Set.Len() > 0 }

func (rg Regions) fallback() bool { return rg.on() && !rg.DisableTransparentFallback }

// noRegions is the Key.Regions of a read that asked for regions none of
// which is configured: local only, but not the plain key (which may merge
// every region in).
const noRegions = "-"

// regionsKey normalises ?regions= into a cache key part: the configured
// regions it names, sorted, comma-joined; noRegions when it names none of
// them. Unknown names are dropped, which keeps the number of cache keys
// bounded by the configured regions (Eureka skips them when it builds the
// document: the same bytes).
func (rg Regions) regionsKey(raw string) string {
	var known []string
	for _, r := range region.ParseRegions(raw) {
		if rg.Set.Get(r) != nil && (len(known) == 0 || known[len(known)-1] != r) {
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

// NewRegionLoader is NewCodecLoader with remote regions merged into the
// registry documents as Eureka's ResponseCacheImpl.generatePayload does:
// keys with regions are built whole from the local registry and the named
// regions' copies (getApplicationsFromMultipleRegions,
// getApplicationDeltasFromMultipleRegions, with their own versions__delta
// counter); plain keys merge every region while transparent fallback is on
// (the full registry from chunks, the remote-only applications in a segment
// of their own, so a local change re-encodes no remote application).
func NewRegionLoader(reg *registry.Registry, codecs compat.Codecs, rg Regions) cache.StreamLoader {
	if !rg.on() {
		return NewCodecLoader(reg, codecs)
	}
	fr := newFragments(reg, codecs)
	base := newCodecLoader(reg, codecs, fr)
	var regionDeltaVersion atomic.Int64 // versionDeltaWithRegions
	return func(k cache.Key, w io.Writer) (bool, error) {
		f := compat.XML
		if k.JSON {
			f = compat.JSON
		}
		switch {
		case k.Regions != "" && k.Name == cache.AllApps:
			apps := rg.Set.Full(reg.Applications(), splitRegionsKey(k.Regions))
			return true, codecs.WriteApplications(w, f, k.Compact, apps)
		case k.Regions != "" && k.Name == cache.AllAppsDelta:
			apps := rg.Set.Delta(reg.Delta(), splitRegionsKey(k.Regions), regionDeltaVersion.Add(1))
			return true, codecs.WriteApplications(w, f, k.Compact, apps)
		case !rg.fallback():
			return base(k, w)
		case k.Entity == cache.VIP || k.Entity == cache.SVIP:
			apps := rg.Set.VIP(reg.VIP(k.Name, k.Entity == cache.SVIP), k.Name, k.Entity == cache.SVIP)
			return true, codecs.WriteApplications(w, f, k.Compact, apps)
		case k.Name == cache.AllApps:
			ov := rg.overlay()
			if ov == nil {
				return base(k, w)
			}
			if sw, ok := w.(cache.SegmentWriter); ok {
				return true, fr.write(sw, false, f, k.Compact, ov)
			}
			return true, codecs.WriteApplications(w, f, k.Compact, rg.Set.Full(reg.Applications(), rg.Set.Names()))
		case k.Name == cache.AllAppsDelta:
			if !rg.anyCopy() {
				return base(k, w)
			}
			apps := rg.Set.FallbackDelta(reg.Delta(), func(app string) bool { _, ok := reg.Application(app); return ok })
			return true, codecs.WriteApplications(w, f, k.Compact, apps)
		default:
			if _, ok := reg.Application(k.Name); ok {
				return base(k, w)
			}
			app, ok := rg.Set.Application(k.Name)
			if !ok {
				return false, nil
			}
			_, err := w.Write(codecs.AppendApplication(nil, f, k.Compact, &app))
			return true, err
		}
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

// regionsParam returns the cache key part of a registry read's ?regions=
// ("" when absent or empty, as Eureka treats both) and whether regions were
// asked for.
func (s *Server) regionsParam(c *gin.Context) (string, bool) {
	raw, _ := queryValue(c.Request.URL.RawQuery, "regions")
	if raw == "" {
		return "", false
	}
	if !s.regions.on() {
		// Nothing to merge: the same bytes as the plain read.
		return "", true
	}
	return s.regions.regionsKey(raw), true
}

// regionsReady is shouldAllowAccess(true)'s part about regions: a read that
// asks for regions is refused while any configured region has never
// answered, whichever it names.
func (s *Server) regionsReady() bool { return s.regions.Set.Ready() }

// remoteInstance is the fallback of the single-instance reads.
func (s *Server) remoteInstance(app, id string) (registry.LeaseView, bool) {
	if !s.regions.on() {
		return registry.LeaseView{}, false
	}
	if app != "" {
		return s.regions.Set.Instance(strings.ToUpper(app), id)
	}
	return s.regions.Set.InstanceByID(id)
}

// regionViews are the dashboard's rows of the remote regions.
func regionViews(rg Regions, now time.Time) []regionView {
	var out []regionView
	for _, st := range rg.Set.Statuses() {
		v := regionView{Name: st.Name, URL: st.URL, Apps: st.Apps, Instances: st.Instances, LastSuccess: "never", LastError: st.LastError}
		switch {
		case !st.Ready:
			v.State = "never answered"
		case st.LastError != "":
			v.State = "failing (last copy served)"
		default:
			v.State, v.Healthy = "fetching", true
		}
		if !st.LastSuccess.IsZero() {
			v.LastSuccess = st.LastSuccess.Format(leaseTimeFormat) + " (" + formatAgo(now.Sub(st.LastSuccess)) + " ago)"
		}
		out = append(out, v)
	}
	return out
}
