package server

import (
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/goreka/goreka/compat"
	"github.com/goreka/goreka/registry"
)

// StatusInfo is the data of GET /eureka/status (Eureka's StatusInfo):
// general and application stats as ordered name/value pairs, and this
// server's own instance.
type StatusInfo struct {
	General     [][2]string
	Application [][2]string
	Instance    *registry.LeaseView
	// Healthy is set only when min-available-instances-for-peer-replication > -1.
	Healthy *bool
}

// ReplicaStats are the replica rows of /eureka/status and the dashboard's
// General Info, spelled as Eureka's StatusResource writes them: registered
// replicas joined by ", ", available and unavailable ones each followed by
// a comma (StatusUtil).
func ReplicaStats(registered, available, unavailable []string) [][2]string {
	trailing := func(urls []string) string {
		var b strings.Builder
		for _, u := range urls {
			b.WriteString(u)
			b.WriteByte(',')
		}
		return b.String()
	}
	return [][2]string{
		{"registered-replicas", strings.Join(registered, ", ")},
		{"available-replicas", trailing(available)},
		{"unavailable-replicas", trailing(unavailable)},
	}
}

// StatusSource supplies StatusInfo.
type StatusSource interface{ StatusInfo() StatusInfo }

func (s *Server) getStatus(c *gin.Context) {
	if s.status == nil {
		c.Status(http.StatusNotFound)
		return
	}
	st := s.status.StatusInfo()
	f := compat.FormatFromAccept(c.GetHeader("Accept"))
	c.Data(http.StatusOK, f.ContentType(), compat.AppendStatus(nil, f, &compat.Status{
		General: st.General, Application: st.Application, Instance: st.Instance, Healthy: st.Healthy}))
}
