package server

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/goreka/goreka/cache"
	"github.com/goreka/goreka/compat"
	"github.com/goreka/goreka/peerbatch"
	"github.com/goreka/goreka/registry"
)

func (s *Server) allowed(c *gin.Context) bool {
	if s.gate != nil && !s.gate.AllowAccess() {
		c.Status(http.StatusForbidden)
		return false
	}
	return true
}

// serveCached answers a cacheable read: JSON iff Accept contains "json",
// compact on X-Eureka-Accept: compact, gzip bytes when the client accepts
// gzip, 304 on a matching If-None-Match.
func (s *Server) serveCached(c *gin.Context, e cache.Entity, name string) {
	s.serveCachedRegions(c, e, name, "")
}

// serveCachedRegions is serveCached of a key with regions (cache.Key.Regions).
func (s *Server) serveCachedRegions(c *gin.Context, e cache.Entity, name, regions string) {
	r := c.Request
	f := compat.FormatFromAccept(r.Header.Get("Accept"))
	k := cache.Key{Entity: e, Name: name, JSON: f == compat.JSON, Compact: compat.CompactFromHeader(r.Header.Get("X-Eureka-Accept")), Regions: regions}
	v, err := s.cache.Get(k)
	if err != nil {
		s.log.Error("encoding registry response", "key", k.String(), "err", err)
		c.Status(http.StatusInternalServerError)
		return
	}
	if v.NotFound {
		c.Status(http.StatusNotFound)
		return
	}
	h := c.Writer.Header()
	h["Content-Type"] = []string{f.ContentType()}
	if v.ETag != "" {
		h["Etag"] = []string{v.ETag}
		if inm := r.Header.Get("If-None-Match"); inm != "" && v.NotModified(inm) {
			c.Status(http.StatusNotModified)
			return
		}
	}
	h["Vary"] = []string{"Accept, Accept-Encoding, X-Eureka-Accept"}
	if rh := v.RevisionHeader(); rh != nil {
		h[RevisionHeader] = rh
		h[EpochHeader] = s.epochHeader
	}
	if acceptsGzip(r.Header.Get("Accept-Encoding")) {
		h["Content-Encoding"] = []string{"gzip"}
		h["Content-Length"] = []string{strconv.Itoa(v.GzipLen())}
		c.Status(http.StatusOK)
		if r.Method != http.MethodHead {
			v.WriteGzip(c.Writer) // its pieces in turn (a client gone is not an error to log)
		}
		return
	}
	h["Content-Length"] = []string{strconv.Itoa(v.PlainLen)}
	c.Status(http.StatusOK)
	if r.Method != http.MethodHead {
		if err := v.WritePlain(c.Writer); err != nil {
			s.log.Warn("writing registry response", "key", k.String(), "err", err)
		}
	}
}

func acceptsGzip(ae string) bool { return strings.Contains(ae, "gzip") }

func (s *Server) getApps(c *gin.Context) { s.serveRegistryDocument(c, cache.AllApps) }

func (s *Server) getDelta(c *gin.Context) {
	if s.cfg.DisableDelta {
		c.Status(http.StatusForbidden)
		return
	}
	s.serveRegistryDocument(c, cache.AllAppsDelta)
}

// serveRegistryDocument serves the full registry or the delta: 403 while
// access is not allowed yet (start-up) or, for ?regions=, while a remote
// region has never answered (Eureka's shouldAllowAccess(remoteRegionRequired)).
func (s *Server) serveRegistryDocument(c *gin.Context, name string) {
	regions, asked := s.regionsParam(c)
	if !s.allowed(c) {
		return
	}
	if asked && !s.regionsReady() {
		c.Status(http.StatusForbidden)
		return
	}
	if name == cache.AllApps && !asked && syncStreamAsked(c.Request) {
		s.serveSyncStream(c)
		return
	}
	s.serveCachedRegions(c, cache.Application, name, regions)
}

func (s *Server) getApp(c *gin.Context) {
	if s.allowed(c) {
		s.serveCached(c, cache.Application, strings.ToUpper(c.Param("app")))
	}
}

func (s *Server) getVIP(c *gin.Context) {
	if s.allowed(c) {
		s.serveCached(c, cache.VIP, c.Param("vip"))
	}
}

func (s *Server) getSVIP(c *gin.Context) {
	if s.allowed(c) {
		s.serveCached(c, cache.SVIP, c.Param("vip"))
	}
}

// visible hides a lease that has expired but not yet been evicted while
// lease expiration is enabled (getInstanceByAppAndId): peerbatch.Visible,
// the rule the replication batch applies too.
func (s *Server) visible(v registry.LeaseView) bool {
	return peerbatch.Visible(v, s.now(), s.expiry)
}

func (s *Server) writeInstance(c *gin.Context, status int, v registry.LeaseView) {
	f := compat.FormatFromAccept(c.GetHeader("Accept"))
	c.Data(status, f.ContentType(), compat.AppendInstanceResponse(nil, f, &v))
}

func (s *Server) getInstance(c *gin.Context) {
	v, ok := s.reg.Get(c.Param("app"), c.Param("id"))
	if !ok || !s.visible(v) {
		if v, ok = s.remoteInstance(c.Param("app"), c.Param("id")); !ok {
			c.Status(http.StatusNotFound)
			return
		}
	}
	s.writeInstance(c, http.StatusOK, v)
}

func (s *Server) getInstanceByID(c *gin.Context) {
	v, ok := s.reg.GetByID(c.Param("id"))
	if !ok || !s.visible(v) {
		if v, ok = s.remoteInstance("", c.Param("id")); !ok {
			c.Status(http.StatusNotFound)
			return
		}
	}
	s.writeInstance(c, http.StatusOK, v)
}

func (s *Server) statusOverrides(c *gin.Context) {
	m := s.reg.StatusOverrides()
	out := make(map[string]string, len(m))
	for id, st := range m {
		out[id] = string(st)
	}
	c.JSON(http.StatusOK, out)
}
