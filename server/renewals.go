package server

import (
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

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
//
// The body a relay writes (compat.AppendReplicationList of Heartbeat
// items) is read by scanRenewals without a decode per item; any other
// replication list goes through compat.DecodeReplicationList, with the
// same answers.
func (s *Server) renewals(c *gin.Context) {
	body, mayWrite, ok := s.replicationBody(c, "renewals")
	if !ok {
		return
	}
	items, fast := scanRenewals(body)
	if !fast {
		list, ok := decodeReplicationList(c, body)
		if !ok {
			return
		}
		items = make([]renewal, len(list))
		for i := range list {
			it := &list[i]
			items[i] = renewal{app: it.AppName, id: it.ID, action: string(it.Action), dirty: it.LastDirtyTimestamp, hasDirty: it.HasLastDirty}
		}
	}
	out := append(make([]byte, 0, len(`{"responseList":[]}`)+len(items)*len(`{"statusCode":200},`)), `{"responseList":[`...)
	for i := range items {
		it := &items[i]
		if i > 0 {
			out = append(out, ',')
		}
		var code int
		switch {
		case it.action != string(compat.ActionHeartbeat):
			code = http.StatusBadRequest
		case mayWrite != nil && !mayWrite(it.app):
			code = http.StatusForbidden
		default:
			req := registry.RenewRequest{App: it.app, ID: it.id}
			if it.hasDirty {
				req.LastDirtyTimestamp = time.UnixMilli(it.dirty)
			}
			code = peerbatch.Status(s.reg.Renew(req))
		}
		out = append(out, `{"statusCode":`...)
		out = strconv.AppendInt(out, int64(code), 10)
		out = append(out, '}')
	}
	c.Data(http.StatusOK, compat.ContentTypeJSON, append(out, "]}"...))
}

// renewal is one item of a relay's renewals: what the answer depends on.
type renewal struct {
	app, id, action string
	dirty           int64
	hasDirty        bool
}

// scanRenewals reads the replication list as compat.AppendReplicationList
// writes it: no white space, members appName, id, lastDirtyTimestamp,
// overriddenStatus, status and action in any order, strings without
// escapes, no instanceInfo. It copies the body into one string whose
// substrings are the items' names (no allocation per item; a name a
// listener keeps, such as a replication task's, keeps the body's string
// alive until it is dropped). For anything else it returns false, and the
// caller decodes the list in general, so that both paths answer the same.
func scanRenewals(body []byte) ([]renewal, bool) {
	const head, tail = `{"replicationList":[`, `]}`
	s := string(body)
	if !strings.HasPrefix(s, head) || !strings.HasSuffix(s, tail) {
		return nil, false
	}
	s = s[len(head) : len(s)-len(tail)]
	if s == "" {
		return nil, true
	}
	items := make([]renewal, 0, strings.Count(s, `"action":`))
	for {
		if s == "" || s[0] != '{' {
			return nil, false
		}
		s = s[1:]
		var it renewal
		for {
			key, rest, ok := plainString(s)
			if !ok || rest == "" || rest[0] != ':' {
				return nil, false
			}
			s = rest[1:]
			if key == "lastDirtyTimestamp" {
				n := 0
				for n < len(s) && (s[n] >= '0' && s[n] <= '9' || n == 0 && s[n] == '-') {
					n++
				}
				digits := strings.TrimPrefix(s[:n], "-")
				v, err := strconv.ParseInt(s[:n], 10, 64)
				if err != nil || len(digits) > 1 && digits[0] == '0' { // JSON has no leading zeros
					return nil, false
				}
				it.dirty, it.hasDirty, s = v, true, s[n:]
			} else {
				v, rest, ok := plainString(s)
				if !ok {
					return nil, false
				}
				switch key {
				case "appName":
					it.app = v
				case "id":
					it.id = v
				case "action":
					it.action = v
				case "status", "overriddenStatus":
				default:
					return nil, false
				}
				s = rest
			}
			if s == "" {
				return nil, false
			}
			if s[0] == '}' {
				s = s[1:]
				break
			}
			if s[0] != ',' {
				return nil, false
			}
			s = s[1:]
		}
		items = append(items, it)
		if s == "" {
			return items, true
		}
		if s[0] != ',' {
			return nil, false
		}
		s = s[1:]
	}
}

// plainString is the JSON string at the start of s when it has no escape
// or control character and is valid UTF-8 (its value is its text), and what follows it.
func plainString(s string) (v, rest string, ok bool) {
	if s == "" || s[0] != '"' {
		return "", "", false
	}
	ascii := true
	for i := 1; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"':
			// A decoder replaces invalid UTF-8.
			return s[1:i], s[i+1:], ascii || utf8.ValidString(s[1:i])
		case c == '\\' || c < 0x20:
			return "", "", false
		case c >= 0x80:
			ascii = false
		}
	}
	return "", "", false
}
