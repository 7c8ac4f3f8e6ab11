package server

import (
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/goreka/goreka/compat"
	"github.com/goreka/goreka/peerbatch"
	"github.com/goreka/goreka/registry"
)

// renewals is POST /eureka/goreka/renewals (compat.RenewalsPath), where a
// relay (package relay) posts once per interval the heartbeats of every
// client it holds whose renewal changed nothing else: every item is applied as the
// instance's own client heartbeat (not a peer's: counted by
// self-preservation's renews, replicated to this server's peers as an
// ordinary heartbeat) and answered in order with the REST path's status
// (404: the relay registers that instance again). An item that is not a
// Heartbeat is a 400 for that item. A user restricted to some applications
// gets a 403 for each item of another one.
func (s *Server) renewals(c *gin.Context) {
	items, mayWrite, ok := s.replicationList(c, "renewals")
	if !ok {
		return
	}
	out := make([]compat.ReplicationResponse, len(items))
	for i := range items {
		it := &items[i]
		switch {
		case it.Action != compat.ActionHeartbeat:
			out[i].StatusCode = http.StatusBadRequest
		case mayWrite != nil && !mayWrite(it.AppName):
			out[i].StatusCode = http.StatusForbidden
		default:
			req := registry.RenewRequest{App: it.AppName, ID: it.ID}
			if it.HasLastDirty {
				req.LastDirtyTimestamp = time.UnixMilli(it.LastDirtyTimestamp)
			}
			out[i].StatusCode = peerbatch.Status(s.reg.Renew(req))
		}
	}
	c.Data(http.StatusOK, compat.ContentTypeJSON, compat.AppendReplicationResponses(nil, out))
}
