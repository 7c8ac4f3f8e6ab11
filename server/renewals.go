package server

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
	"unsafe"

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
	buf, _ := renewBufs.Get().(*[]registry.RenewRequest)
	if buf == nil {
		buf = new([]registry.RenewRequest)
	}
	reqs, codes, fast := scanRenewals(body, (*buf)[:0])
	defer func() {
		if !fast {
			// The scan may have written into buf before it gave up.
			clear((*buf)[:cap(*buf)])
			renewBufs.Put(buf)
			return
		}
		if cap(reqs) <= maxPooledRenewals {
			clear(reqs) // the names point into this request's body
			*buf = reqs[:0]
			renewBufs.Put(buf)
		}
	}()
	if !fast {
		list, ok := decodeReplicationList(c, body)
		if !ok {
			return
		}
		reqs, codes = make([]registry.RenewRequest, len(list)), make([]uint16, len(list))
		for i := range list {
			it := &list[i]
			reqs[i], codes[i] = renewal(it.AppName, it.ID, string(it.Action), it.LastDirtyTimestamp, it.HasLastDirty)
		}
	}
	// The heartbeats are applied together (registry.RenewAll: one clock
	// read and read-lock round per chunk, each item with Renew's rules); an
	// item refused here keeps its code and is left out.
	if mayWrite != nil {
		for i := range reqs {
			if codes[i] == 0 && !mayWrite(reqs[i].App) {
				codes[i] = http.StatusForbidden
			}
		}
	}
	pass := reqs
	if slices.ContainsFunc(codes, func(c uint16) bool { return c != 0 }) {
		pass = make([]registry.RenewRequest, 0, len(reqs))
		for i := range reqs {
			if codes[i] == 0 {
				pass = append(pass, reqs[i])
			}
		}
	}
	next := 0 // the next item without a code: RenewAll answers in order
	s.reg.RenewAll(pass, func(_ int, err error) {
		for codes[next] != 0 {
			next++
		}
		codes[next] = uint16(peerbatch.Status(err))
		next++
	})
	out := append(make([]byte, 0, len(`{"responseList":[]}`)+len(codes)*len(`{"statusCode":200},`)), `{"responseList":[`...)
	for i, code := range codes {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, `{"statusCode":`...)
		out = strconv.AppendInt(out, int64(code), 10)
		out = append(out, '}')
	}
	c.Data(http.StatusOK, compat.ContentTypeJSON, append(out, "]}"...))
}

// renewBufs holds the requests slices of POST goreka/renewals, which a
// relay sends with thousands of items: allocated per request, they were a
// large share of what the core allocated in a relay tier's heartbeats, and
// the core's heap (the whole registry and its documents) makes every
// allocation during a GC cycle pay for marking it (bench/relays.sh PROFILE).
var renewBufs sync.Pool

// maxPooledRenewals bounds the slices renewBufs keeps (a relay's batch).
const maxPooledRenewals = 1 << 16

// renewal is one item of a relay's renewals as the registry's request,
// and its code when it is refused before it: an item that is not a
// Heartbeat is a 400.
func renewal(app, id, action string, dirty int64, hasDirty bool) (registry.RenewRequest, uint16) {
	req := registry.RenewRequest{App: app, ID: id}
	if hasDirty {
		req.LastDirtyTimestamp = time.UnixMilli(dirty)
	}
	if action != string(compat.ActionHeartbeat) {
		return req, http.StatusBadRequest
	}
	return req, 0
}

// scanRenewals reads the replication list as compat.AppendReplicationList
// writes it: no white space, members appName, id, lastDirtyTimestamp,
// overriddenStatus, status and action in any order, strings without
// escapes, no instanceInfo. The items' names are substrings of the body,
// which scanRenewals takes as a string without a copy: the caller never
// writes to body again (no allocation per item; a name a listener keeps,
// such as a replication task's, keeps the body alive until it is
// dropped). The requests are appended to into. For anything else it returns false, and the
// caller decodes the list in general, so that both paths answer the same.
func scanRenewals(body []byte, into []registry.RenewRequest) ([]registry.RenewRequest, []uint16, bool) {
	const head, tail = `{"replicationList":[`, `]}`
	s := unsafe.String(unsafe.SliceData(body), len(body))
	if !strings.HasPrefix(s, head) || !strings.HasSuffix(s, tail) {
		return nil, nil, false
	}
	s = s[len(head) : len(s)-len(tail)]
	if s == "" {
		return nil, nil, true
	}
	n := strings.Count(s, "}") // the items, or more (a '}' in a string): a capacity, counted by one fast byte count
	reqs, codes := slices.Grow(into[:0], n), make([]uint16, 0, n)
	for {
		if s == "" || s[0] != '{' {
			return nil, nil, false
		}
		s = s[1:]
		var it struct {
			app, id, action string
			dirty           int64
			hasDirty        bool
		}
		for {
			key, rest, ok := plainString(s)
			if !ok || rest == "" || rest[0] != ':' {
				return nil, nil, false
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
					return nil, nil, false
				}
				it.dirty, it.hasDirty, s = v, true, s[n:]
			} else {
				v, rest, ok := plainString(s)
				if !ok {
					return nil, nil, false
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
					return nil, nil, false
				}
				s = rest
			}
			if s == "" {
				return nil, nil, false
			}
			if s[0] == '}' {
				s = s[1:]
				break
			}
			if s[0] != ',' {
				return nil, nil, false
			}
			s = s[1:]
		}
		req, code := renewal(it.app, it.id, it.action, it.dirty, it.hasDirty)
		reqs, codes = append(reqs, req), append(codes, code)
		if s == "" {
			return reqs, codes, true
		}
		if s[0] != ',' {
			return nil, nil, false
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
