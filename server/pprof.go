package server

import (
	"net/http/pprof"

	"github.com/gin-gonic/gin"
)

// The profiling routes (goreka.debug.pprof-enabled, Config.PProf): net/http/pprof's
// index at /debug/pprof/ (the trailing slash is optional, as everywhere)
// and its profiles under it.
const (
	routePprof     = "/debug/pprof"
	routePprofName = "/debug/pprof/*name"
)

// mountPprof serves net/http/pprof's handlers on the server's engine,
// behind the edge like every route, as an admin's route (route.admin):
// with authentication on, only an admin user (spring.security.user, or a
// user with the admin role) may read a profile, since profiles show the
// process's memory, its command line and its goroutines' stacks. A CPU
// profile or trace (?seconds=) must end within goreka.server.write-timeout.
func (s *Server) mountPprof() {
	serve := func(c *gin.Context) {
		switch c.Param("name") {
		case "/cmdline":
			pprof.Cmdline(c.Writer, c.Request)
		case "/profile":
			pprof.Profile(c.Writer, c.Request)
		case "/symbol":
			pprof.Symbol(c.Writer, c.Request)
		case "/trace":
			pprof.Trace(c.Writer, c.Request)
		default:
			// The index, and every named profile (heap, goroutine,
			// allocs, ...): Index reads the name from the path.
			pprof.Index(c.Writer, c.Request)
		}
	}
	s.engine.GET(routePprof, serve)
	s.engine.GET(routePprofName, serve)
	s.engine.POST(routePprofName, serve) // symbol lookups are POSTed
}
