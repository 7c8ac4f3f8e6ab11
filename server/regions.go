package server

import (
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/goreka/goreka/document"
	"github.com/goreka/goreka/registry"
)

// The remote regions are merged into the registry documents by package
// document; the server reads them from its Builder (Deps.Docs) for
// what it decides itself: the cache key and the 403 of ?regions=, and the
// fallback of single-instance reads.

// regionsParam returns the cache key part of a registry read's ?regions=
// ("" when absent or empty, as Eureka treats both) and whether regions were
// asked for.
func (s *Server) regionsParam(c *gin.Context) (string, bool) {
	raw, _ := queryValue(c.Request.URL.RawQuery, "regions")
	if raw == "" {
		return "", false
	}
	return s.docs.RegionsKey(raw), true
}

// regionsReady is shouldAllowAccess(true)'s part about regions: a read that
// asks for regions is refused while any configured region has never
// answered, whichever it names.
func (s *Server) regionsReady() bool { return s.regions.Set.Ready() }

// remoteInstance is the fallback of the single-instance reads: a relay's
// upstream copy, or the remote regions.
func (s *Server) remoteInstance(app, id string) (registry.LeaseView, bool) {
	if up := s.docs.Upstream(); up != nil {
		return up.Instance(strings.ToUpper(app), id)
	}
	if !s.regions.On() {
		return registry.LeaseView{}, false
	}
	if app != "" {
		return s.regions.Set.Instance(strings.ToUpper(app), id)
	}
	return s.regions.Set.InstanceByID(id)
}

// regionViews are the dashboard's rows of the remote regions.
func regionViews(rg document.Regions, now time.Time) []regionView {
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
