package server

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
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
	out := make([]compat.ReplicationResponse, len(items))
	for i := range items {
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

// apply runs one replicated operation. Eureka answers a caller's mistake in
// an item (missing instance, bad status) with 500; goreka answers 400 so the
// sender's logs say what was wrong. Both are "failed" to a Java sender.
func (s *Server) apply(it *compat.ReplicationItem) compat.ReplicationResponse {
	resp := func(code int) compat.ReplicationResponse { return compat.ReplicationResponse{StatusCode: code} }
	switch it.Action {
	case compat.ActionRegister:
		if it.Instance == nil || it.Instance.Instance == nil {
			return resp(http.StatusBadRequest)
		}
		in := it.Instance.Instance.Clone()
		if in.LeaseInfo.Duration <= 0 {
			in.LeaseInfo.Duration = it.Instance.Duration
		}
		if in.LeaseInfo.RenewalInterval <= 0 {
			in.LeaseInfo.RenewalInterval = it.Instance.RenewalInterval
		}
		if it.AppName != "" && !strings.EqualFold(it.AppName, in.App) {
			return resp(http.StatusBadRequest)
		}
		if _, err := s.reg.Register(in, true); err != nil {
			return resp(http.StatusBadRequest)
		}
		return resp(http.StatusOK)
	case compat.ActionHeartbeat:
		if it.AppName == "" || it.ID == "" {
			return resp(http.StatusBadRequest)
		}
		override, ok := registry.ParseStatus(it.OverriddenStatus)
		if it.OverriddenStatus != "" && !ok {
			return resp(http.StatusBadRequest)
		}
		dirty := millis(it)
		if s.cfg.IgnoreDirtyTimestamps {
			dirty = time.Time{}
		}
		res, v := s.reg.Renew(registry.RenewRequest{App: it.AppName, ID: it.ID, Replication: true, LastDirtyTimestamp: dirty, OverriddenStatus: override})
		if res == registry.RenewConflict {
			return compat.ReplicationResponse{StatusCode: http.StatusConflict, Entity: &v}
		}
		return resp(int(res))
	case compat.ActionCancel:
		if err := s.reg.Cancel(it.AppName, it.ID, true); err != nil {
			return resp(http.StatusNotFound)
		}
		return resp(http.StatusOK)
	case compat.ActionStatusUpdate:
		st, ok := registry.ParseStatus(it.Status)
		if !ok {
			return resp(http.StatusBadRequest)
		}
		if err := s.reg.StatusUpdate(it.AppName, it.ID, st, millis(it), true); err != nil {
			return resp(http.StatusNotFound)
		}
		return resp(http.StatusOK)
	case compat.ActionDeleteStatusOverride:
		var st registry.Status
		if it.Status != "" {
			var ok bool
			if st, ok = registry.ParseStatus(it.Status); !ok {
				return resp(http.StatusBadRequest)
			}
		}
		if err := s.reg.DeleteStatusOverride(it.AppName, it.ID, st, millis(it), true); err != nil {
			return resp(http.StatusNotFound)
		}
		return resp(http.StatusOK)
	}
	return resp(http.StatusBadRequest)
}
