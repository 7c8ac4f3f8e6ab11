package server

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/goreka/goreka/compat"
	"github.com/goreka/goreka/registry"
)

// batch is POST /eureka/peerreplication/batch: every item is applied as a
// replicated operation (never re-replicated) and answered with one status,
// in order (PeerReplicationResource). A body that is not a replication list
// at all is a 400 for the whole batch, as the Java receiver answers.
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
	who := batchPrincipal(c)
	out := make([]compat.ReplicationResponse, len(items))
	for i := range items {
		if who != nil && !who.mayWrite(items[i].AppName) {
			out[i] = compat.ReplicationResponse{StatusCode: http.StatusForbidden}
			continue
		}
		out[i] = s.apply(&items[i])
	}
	c.Data(http.StatusOK, compat.ContentTypeJSON, compat.AppendReplicationResponses(nil, out))
}

func millis(it *compat.ReplicationItem) time.Time {
	if !it.HasLastDirty {
		return time.Time{}
	}
	return time.UnixMilli(it.LastDirtyTimestamp)
}

// apply runs one replicated item through the same registry operations the
// REST handlers call, and answers it through the same error mapping
// (statusOf). Only the item's own shape is checked here; what an
// operation accepts is the registry's to decide.
func (s *Server) apply(it *compat.ReplicationItem) compat.ReplicationResponse {
	err := s.applyItem(it)
	resp := compat.ReplicationResponse{StatusCode: statusOf(err)}
	var conflict *registry.ConflictError
	if errors.As(err, &conflict) {
		resp.Entity = &conflict.Stored
	}
	return resp
}

func (s *Server) applyItem(it *compat.ReplicationItem) error {
	switch it.Action {
	case compat.ActionRegister:
		if it.Instance == nil || it.Instance.Instance == nil {
			return &registry.ValidationError{Msg: "register item without an instance"}
		}
		in := it.Instance.Instance.Clone()
		if in.LeaseInfo.Duration <= 0 {
			in.LeaseInfo.Duration = it.Instance.Duration
		}
		if in.LeaseInfo.RenewalInterval <= 0 {
			in.LeaseInfo.RenewalInterval = it.Instance.RenewalInterval
		}
		_, err := s.reg.RegisterFor(it.AppName, in, true)
		return err
	case compat.ActionHeartbeat:
		override, err := registry.ParseStatusParam("overriddenStatus", it.OverriddenStatus, false)
		if err != nil {
			return err
		}
		return s.reg.Renew(registry.RenewRequest{App: it.AppName, ID: it.ID, FromPeer: true,
			LastDirtyTimestamp: millis(it), OverriddenStatus: override})
	case compat.ActionCancel:
		return s.reg.Cancel(it.AppName, it.ID, true)
	case compat.ActionStatusUpdate:
		st, err := registry.ParseStatusParam("status", it.Status, true)
		if err != nil {
			return err
		}
		return s.reg.StatusUpdate(it.AppName, it.ID, st, millis(it), true)
	case compat.ActionDeleteStatusOverride:
		st, err := registry.ParseStatusParam("status", it.Status, false)
		if err != nil {
			return err
		}
		return s.reg.DeleteStatusOverride(it.AppName, it.ID, st, millis(it), true)
	}
	return &registry.ValidationError{Msg: fmt.Sprintf("unknown replication action %q", it.Action)}
}
