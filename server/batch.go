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
	items, mayWrite, ok := s.replicationList(c, "replication batch")
	if !ok {
		return
	}
	a := peerbatch.Applier{Registry: s.reg, Expiry: s.expiry, Now: s.now}
	c.Data(http.StatusOK, compat.ContentTypeJSON, compat.AppendReplicationResponses(nil, a.Batch(items, mayWrite)))
}

// replicationList reads the replication list of a batch or a relay's
// renewals (what names it in a 413), answering 413 or 400 itself (ok
// false). mayWrite is nil, or, for a user restricted to some apps
// (goreka.security.users), whether an item's app is one of them: an item
// of another app gets a 403 and changes nothing.
func (s *Server) replicationList(c *gin.Context, what string) (items []compat.ReplicationItem, mayWrite func(app string) bool, ok bool) {
	body, mayWrite, ok := s.replicationBody(c, what)
	if !ok {
		return nil, nil, false
	}
	items, ok = decodeReplicationList(c, body)
	return items, mayWrite, ok
}

// decodeReplicationList decodes a replication list, answering 400 itself
// (ok false) for a body that is not one.
func decodeReplicationList(c *gin.Context, body []byte) ([]compat.ReplicationItem, bool) {
	items, err := compat.DecodeReplicationList(body)
	if err != nil {
		decodeError(c, compat.JSON, err)
		return nil, false
	}
	return items, true
}

// replicationBody is replicationList's body, not decoded yet (a relay's
// renewals take a path of their own for the usual shape).
func (s *Server) replicationBody(c *gin.Context, what string) (body []byte, mayWrite func(app string) bool, ok bool) {
	body, err := readBody(c.Request, s.cfg.MaxBatchBodyBytes)
	if errors.Is(err, errBodyTooLarge) {
		c.Data(http.StatusRequestEntityTooLarge, "text/plain; charset=UTF-8", fmt.Appendf(nil, "%s larger than %d bytes", what, s.cfg.MaxBatchBodyBytes))
		return nil, nil, false
	}
	if err != nil {
		badRequest(c, "cannot read request body: %v", err)
		return nil, nil, false
	}
	if who := batchPrincipal(c); who != nil {
		mayWrite = who.mayWrite
	}
	return body, mayWrite, true
}
