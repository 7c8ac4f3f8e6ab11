package server

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/goreka/goreka/compat"
	"github.com/goreka/goreka/peerbatch"
)

// batch is POST /eureka/peerreplication/batch: every item is applied as a
// replicated operation (never re-replicated) and answered with one status,
// in order (PeerReplicationResource), by peerbatch, which the test peer of
// the replication tests shares: through the registry operations and the
// error mapping of the REST handlers, with their visibility rule for status
// changes. A body that is not a replication list at all is a 400 for the
// whole batch, as the Java receiver answers.
func (s *Server) batch(c *gin.Context) {
	body, err := readBody(c.Request, s.cfg.MaxBatchBodyBytes)
	if errors.Is(err, errBodyTooLarge) {
		c.Data(http.StatusRequestEntityTooLarge, "text/plain; charset=UTF-8", fmt.Appendf(nil, "replication batch larger than %d bytes", s.cfg.MaxBatchBodyBytes))
		return
	}
	if err != nil {
		badRequest(c, "cannot read request body: %v", err)
		return
	}
	items, err := compat.DecodeReplicationList(body)
	if err != nil {
		decodeError(c, compat.JSON, err)
		return
	}
	// A peer user restricted to some apps (goreka.security.users) gets a
	// 403 for each item of another app, and that item changes nothing.
	var mayWrite func(app string) bool
	if who := batchPrincipal(c); who != nil {
		mayWrite = who.mayWrite
	}
	a := peerbatch.Applier{Registry: s.reg, Expiry: s.expiry, Now: s.now}
	c.Data(http.StatusOK, compat.ContentTypeJSON, compat.AppendReplicationResponses(nil, a.Batch(items, mayWrite)))
}
