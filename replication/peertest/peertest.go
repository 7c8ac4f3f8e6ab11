// Package peertest provides a fake Eureka peer for tests: an httptest.Server
// backed by a real registry.Registry that serves the endpoints a peer uses
// (the replication batch, the full registry, register, heartbeat, cancel)
// under /eureka/, records what it received, and can be told to fail.
//
// Unless told otherwise it answers as goreka's server does: batch items
// through peerbatch, the apply goreka's batch handler uses, and the REST
// calls through peerbatch.Status, goreka's error mapping. Its registry has
// no eviction, so no lease is ever hidden as expired.
package peertest

import (
	"compress/gzip"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/goreka/goreka/compat"
	"github.com/goreka/goreka/peerbatch"
	"github.com/goreka/goreka/registry"
)

// Request is one request the peer received.
type Request struct {
	Method, Path, RawQuery string
	Header                 http.Header
}

// Responder decides the answer to one batch item; ok false means "apply it
// to the registry as a Eureka server would".
type Responder func(compat.ReplicationItem) (resp compat.ReplicationResponse, ok bool)

// Peer is a fake Eureka server.
type Peer struct {
	Server *httptest.Server
	reg    *registry.Registry
	apply  peerbatch.Applier // the batch items, answered as goreka's server answers them

	mu          sync.Mutex
	requests    []Request
	batches     [][]compat.ReplicationItem
	batchStatus int
	garbage     bool
	respond     Responder
	user, pass  string
}

// New starts a fake peer with an empty registry and closes it at the end of
// the test.
func New(t testing.TB) *Peer {
	p := &Peer{reg: registry.New(registry.Options{})}
	p.apply = peerbatch.Applier{Registry: p.reg}
	p.Server = httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(p.Server.Close)
	return p
}

// ServiceURL is the peer's service URL, http://127.0.0.1:port/eureka/.
func (p *Peer) ServiceURL() string { return p.Server.URL + "/eureka/" }

// Registry is the peer's registry.
func (p *Peer) Registry() *registry.Registry { return p.reg }

// RequireBasicAuth makes every request without these credentials answer 401.
func (p *Peer) RequireBasicAuth(user, pass string) {
	p.mu.Lock()
	p.user, p.pass = user, pass
	p.mu.Unlock()
}

// SetBatchStatus makes batch requests answer status with no body (0 restores
// normal answers).
func (p *Peer) SetBatchStatus(status int) {
	p.mu.Lock()
	p.batchStatus = status
	p.mu.Unlock()
}

// SetGarbage makes batch requests answer 200 with a body that is not a
// response list.
func (p *Peer) SetGarbage(on bool) {
	p.mu.Lock()
	p.garbage = on
	p.mu.Unlock()
}

// SetResponder overrides the answers to batch items (nil restores them).
func (p *Peer) SetResponder(r Responder) {
	p.mu.Lock()
	p.respond = r
	p.mu.Unlock()
}

// Requests returns the requests received so far.
func (p *Peer) Requests() []Request {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Request(nil), p.requests...)
}

// Batches returns the decoded batches received so far, including those it
// answered with a failure.
func (p *Peer) Batches() [][]compat.ReplicationItem {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([][]compat.ReplicationItem(nil), p.batches...)
}

// Items returns every batch item received so far, in order.
func (p *Peer) Items() []compat.ReplicationItem {
	var out []compat.ReplicationItem
	for _, b := range p.Batches() {
		out = append(out, b...)
	}
	return out
}

func (p *Peer) serve(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	p.requests = append(p.requests, Request{Method: r.Method, Path: r.URL.Path, RawQuery: r.URL.RawQuery, Header: r.Header.Clone()})
	user, pass := p.user, p.pass
	p.mu.Unlock()
	if user != "" {
		want := "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))
		if r.Header.Get("Authorization") != want {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
	}
	path, ok := strings.CutPrefix(r.URL.Path, "/eureka/")
	if !ok {
		http.NotFound(w, r)
		return
	}
	path = strings.TrimSuffix(path, "/")
	parts := strings.Split(path, "/")
	fromPeer := r.Header.Get("X-Netflix-Discovery-Replication") == "true"
	switch {
	case path == "peerreplication/batch" && r.Method == http.MethodPost:
		p.batch(w, r)
	case path == "apps" && r.Method == http.MethodGet:
		w.Header().Set("Content-Type", compat.ContentTypeJSON)
		w.Write(compat.AppendApplications(nil, compat.JSON, false, p.reg.Applications()))
	case len(parts) == 2 && parts[0] == "apps" && r.Method == http.MethodPost:
		body, err := readBody(r)
		in, derr := compat.DecodeInstance(body, compat.JSON)
		if err != nil || derr != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		if _, err := p.reg.RegisterFor(parts[1], in, fromPeer); err != nil {
			w.WriteHeader(peerbatch.ErrorStatus(err))
			return
		}
		w.WriteHeader(http.StatusNoContent)
	case len(parts) == 3 && parts[0] == "apps" && r.Method == http.MethodPut:
		req := registry.RenewRequest{App: parts[1], ID: parts[2], FromPeer: fromPeer}
		if s := r.URL.Query().Get("lastDirtyTimestamp"); s != "" {
			ms, err := strconv.ParseInt(s, 10, 64)
			if err != nil || ms < 0 {
				w.WriteHeader(http.StatusBadRequest)
				return
			}
			req.LastDirtyTimestamp = time.UnixMilli(ms)
		}
		override, err := registry.ParseStatusParam("overriddenstatus", r.URL.Query().Get("overriddenstatus"), false)
		if err == nil {
			req.OverriddenStatus = override
			err = p.reg.Renew(req)
		}
		w.WriteHeader(peerbatch.Status(err))
	case len(parts) == 3 && parts[0] == "apps" && r.Method == http.MethodDelete:
		w.WriteHeader(peerbatch.Status(p.reg.Cancel(parts[1], parts[2], fromPeer)))
	default:
		http.NotFound(w, r)
	}
}

func readBody(r *http.Request) ([]byte, error) {
	var rd io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			return nil, err
		}
		rd = zr
	}
	return io.ReadAll(rd)
}

func (p *Peer) batch(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(r)
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	items, err := compat.DecodeReplicationList(body)
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	p.mu.Lock()
	p.batches = append(p.batches, items)
	status, garbage, respond := p.batchStatus, p.garbage, p.respond
	p.mu.Unlock()
	if status != 0 {
		w.WriteHeader(status)
		return
	}
	w.Header().Set("Content-Type", compat.ContentTypeJSON)
	if garbage {
		w.Write([]byte(`<html>not a response list</html>`))
		return
	}
	rs := make([]compat.ReplicationResponse, len(items))
	for i := range items {
		if respond != nil {
			if resp, ok := respond(items[i]); ok {
				rs[i] = resp
				continue
			}
		}
		rs[i] = p.apply.Apply(&items[i])
	}
	w.Write(compat.AppendReplicationResponses(nil, rs))
}
