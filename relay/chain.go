package relay

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"

	"github.com/goreka/goreka/compat"
	"github.com/goreka/goreka/eurekahttp"
)

// ChainHeader carries the relays a write went through, comma-separated,
// the sender last. A relay adds its id to the chain an instance's
// registration arrived with when it forwards that instance's changes, and
// refuses a request whose chain holds its own id (508 Loop Detected).
const ChainHeader = "X-Goreka-Relay-Chain"

type chainKey struct{}

// withChain makes the calls made with ctx carry chain instead of the
// relay's id alone.
func withChain(ctx context.Context, chain string) context.Context {
	if chain == "" {
		return ctx
	}
	return context.WithValue(ctx, chainKey{}, chain)
}

// chainTransport sets ChainHeader on every call: the context's chain, or
// the relay's id.
type chainTransport struct {
	base http.RoundTripper
	id   string
}

func (t chainTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	chain, _ := req.Context().Value(chainKey{}).(string)
	if chain == "" {
		chain = t.id
	}
	req = req.Clone(req.Context())
	req.Header.Set(ChainHeader, chain)
	return t.base.RoundTrip(req)
}

// inChain reports whether id is one of chain's ids.
func inChain(chain, id string) bool {
	for c := range strings.SplitSeq(chain, ",") {
		if strings.TrimSpace(c) == id {
			return true
		}
	}
	return false
}

// extend is chain with id added last.
func extend(chain, id string) string {
	if chain == "" {
		return id
	}
	return chain + "," + id
}

// Handler wraps the server's handler: it refuses (508) a request whose
// chain holds this relay's id, remembers the chain a relayed registration
// arrived with (its changes are forwarded with this relay's id added), and
// in a read replica proxies every write to the upstream. A nil relay
// returns next.
func (r *Relay) Handler(next http.Handler) http.Handler {
	if r == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		chain := req.Header.Get(ChainHeader)
		if chain != "" && inChain(chain, r.cfg.ID) {
			r.m.loops.Add(1)
			r.warn("loop", "refused a request that went through this relay already: the relays' upstreams form a loop",
				"method", req.Method, "path", req.URL.Path, "chain", chain, "relay", r.cfg.ID)
			http.Error(w, "relay loop: "+ChainHeader+" "+chain+" holds this relay ("+r.cfg.ID+")", http.StatusLoopDetected)
			return
		}
		rel, ok := eurekaPath(req.URL.Path)
		if !ok || req.Method == http.MethodGet || req.Method == http.MethodHead {
			next.ServeHTTP(w, req)
			return
		}
		// What the relay does itself with a write (proxy it, note its
		// chain) waits for the server's own authentication, which runs
		// behind this handler.
		authed := r.cfg.Authenticate == nil || r.cfg.Authenticate(req)
		if r.cfg.ReadOnly && rel == compat.RenewalsPath {
			// A read replica keeps no leases to apply aggregated heartbeats
			// to: a relay below it is told it has no such endpoint and
			// sends each heartbeat, which is proxied.
			http.Error(w, "a read-only relay takes no aggregated heartbeats", http.StatusNotFound)
			return
		}
		if r.cfg.ReadOnly && strings.HasPrefix(rel, "apps/") {
			if !authed {
				w.Header().Set("WWW-Authenticate", `Basic realm="goreka", charset="UTF-8"`)
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			r.proxy(w, req, rel)
			return
		}
		if authed && chain != "" && len(chain) <= maxChain && req.Method == http.MethodPost && strings.HasPrefix(rel, "apps/") && strings.Count(rel, "/") == 1 {
			r.noteChain(req, rel, chain)
		}
		next.ServeHTTP(w, req)
	})
}

// maxChain is the longest relay chain kept for an instance (a chain
// longer than this is a loop or an attack, not a registry's depth).
const maxChain = 1024

// eurekaPath is a path of Eureka's API relative to its base (/eureka/,
// /eureka/v2/, /v2/), false for other paths (namespaces included).
func eurekaPath(p string) (string, bool) {
	for _, prefix := range []string{"/eureka/v2/", "/eureka/", "/v2/"} {
		if rest, ok := strings.CutPrefix(p, prefix); ok {
			return strings.TrimSuffix(rest, "/"), true
		}
	}
	return "", false
}

// noteChain reads a registration's instance id and keeps the chain it
// came with; the body is put back for the server.
func (r *Relay) noteChain(req *http.Request, rel, chain string) {
	body, err := io.ReadAll(io.LimitReader(req.Body, 1<<20+1))
	req.Body.Close()
	req.Body = io.NopCloser(bytes.NewReader(body))
	if err != nil {
		return
	}
	in, err := compat.DecodeInstance(body, compat.SniffFormat(body))
	if err != nil {
		return
	}
	r.fwd.setChain(key{strings.ToUpper(strings.TrimPrefix(rel, "apps/")), in.ID()}, chain)
}

// proxy sends a write to the upstream and answers with its status and
// body (a read replica keeps no leases). A registration body is sent as
// JSON whatever it came as.
func (r *Relay) proxy(w http.ResponseWriter, req *http.Request, rel string) {
	var body []byte
	if req.Method == http.MethodPost {
		b, err := io.ReadAll(io.LimitReader(req.Body, 1<<20+1))
		if err != nil || len(b) > 1<<20 {
			http.Error(w, "cannot read request body", http.StatusBadRequest)
			return
		}
		in, err := compat.DecodeInstance(b, compat.SniffFormat(b))
		if err != nil {
			http.Error(w, "cannot parse request body: "+err.Error(), http.StatusBadRequest)
			return
		}
		view := viewOf(in)
		body = compat.AppendInstance(nil, compat.JSON, &view)
	}
	path := rel
	if req.URL.RawQuery != "" {
		path += "?" + req.URL.RawQuery
	}
	ctx := withChain(req.Context(), extend(req.Header.Get(ChainHeader), r.cfg.ID))
	var code int
	var out []byte
	err := r.call(ctx, func(ep eurekahttp.Endpoint) error {
		var err error
		code, out, err = r.client.Do(ctx, ep, req.Method, path, body)
		if err == nil && code >= 500 {
			return &eurekahttp.StatusError{Method: req.Method, URL: ep.URL + rel, Code: code}
		}
		return err
	})
	if err != nil && code == 0 {
		r.warn("proxy", "proxying a write to the upstream failed", "upstream", r.Upstream(), "err", err)
		http.Error(w, "upstream unreachable: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	r.m.forwarded(actionOf(req.Method, rel)).Add(1)
	if len(out) > 0 {
		w.Header().Set("Content-Type", compat.ContentTypeJSON)
	}
	w.WriteHeader(code)
	w.Write(out)
}

// actionOf names a proxied write for goreka_relay_forwarded_total.
func actionOf(method, rel string) string {
	switch {
	case strings.HasSuffix(rel, "/status"):
		return actionStatus
	case strings.HasSuffix(rel, "/metadata"):
		return actionRegister
	case method == http.MethodPost:
		return actionRegister
	case method == http.MethodPut:
		return actionHeartbeat
	case method == http.MethodDelete:
		return actionCancel
	}
	return actionRegister
}
