package server

import (
	"errors"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/goreka/goreka/namespace"
)

// NamespacePrefix starts the path of every namespace but the default one:
// /ns/{name}/eureka/... is Eureka's API of namespace name, and so is every
// other route of a Server under /ns/{name}/ (the tool API, the dashboard).
// A stock client uses a namespace by its service URL alone
// (defaultZone: http://host:8761/ns/dev/eureka/).
const NamespacePrefix = "/ns/"

// Namespaces finds the Server of a namespace (SetNamespaces).
type Namespaces interface {
	// Namespace returns the server of the named namespace (a valid name,
	// namespace.Validate), creating it when create is set and that is
	// allowed. Its error says why not: one of the namespace package's
	// refusals (namespace.ErrUnknown for an unknown name without create),
	// which namespaceStatus maps to its status.
	Namespace(name string, create bool) (*Server, error)
}

// SetNamespaces makes the server answer /ns/{name}/... by handing the
// request, with the prefix taken off, to the namespace's own Server. Call
// it before serving. Without it /ns/... is an unknown path, as before.
func (s *Server) SetNamespaces(ns Namespaces) { s.namespaces = ns }

// serveNamespace routes one /ns/ request (path normalised by ServeHTTP).
// Health probes (/ns/{name}/actuator/health*) need no credentials, as at
// the root, and go only to a namespace that exists.
// Unauthenticated requests get the default namespace's 401 before any
// lookup, so that names cannot be probed without credentials, and a user
// scoped to other namespaces gets its 403 before any lookup too; the
// namespace's own Server then authenticates again with the users scoped
// to it.
func (s *Server) serveNamespace(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	name, rest, _ := strings.Cut(r.URL.Path[len(NamespacePrefix):], "/")
	if isHealth("/" + rest) {
		// Probes never need credentials (as /actuator/health*), and
		// they create no namespace: an unknown one is a 404.
		if err := namespace.Validate(name); err != nil {
			s.namespaceError(w, r, err, start)
			return
		}
		ns, err := s.namespaces.Namespace(name, false)
		if err != nil {
			s.namespaceError(w, r, err, start)
			return
		}
		r.URL.Path = "/" + rest
		r.URL.RawPath = ""
		ns.ServeHTTP(w, r)
		return
	}
	p, ok := s.ops.authenticated(w, r)
	if !ok {
		s.ops.record(r, s.ops.unmatched, http.StatusUnauthorized, 0, time.Since(start))
		return
	}
	if err := namespace.Validate(name); err != nil {
		s.namespaceError(w, r, err, start)
		return
	}
	// A user scoped to other namespaces is refused before any lookup: it
	// creates nothing, and its 403 is the same whether name exists or not.
	if p != nil && p.namespaces != nil && !slices.Contains(p.namespaces, name) {
		s.namespaceRefused(w, r, http.StatusForbidden, "user "+p.name+" may not use namespace "+name, start)
		return
	}
	ns, err := s.namespaces.Namespace(name, true)
	if err != nil {
		s.namespaceError(w, r, err, start)
		return
	}
	if rest == "" && r.Method == http.MethodGet && !strings.HasSuffix(requestPath(r), "/") {
		// /ns/dev: the namespace's dashboard links relative to /ns/dev/.
		http.Redirect(w, r, NamespacePrefix+name+"/", http.StatusFound)
		return
	}
	r.URL.Path = "/" + rest
	r.URL.RawPath = ""
	ns.ServeHTTP(w, r)
}

// namespaceError answers a refusal of the namespace package (or a failed
// creation, a 500) with its status (namespaceStatus) and its reason.
func (s *Server) namespaceError(w http.ResponseWriter, r *http.Request, err error, start time.Time) {
	s.namespaceRefused(w, r, namespaceStatus(err), err.Error(), start)
}

// namespaceStatus maps the namespace package's refusals to HTTP statuses,
// where namespaces are answered (the /ns/ router, the dashboard's
// selector); anything else, a failed creation (namespace.ErrCreate)
// included, whatever it wraps, is a 500:
//
//   - namespace.ErrInvalidName: 400
//   - namespace.ErrUnknown: 404
//   - namespace.ErrLimit: 403 (goreka.namespaces.max)
//   - namespace.ErrClosed: 503, the server is shutting down
func namespaceStatus(err error) int {
	switch {
	case errors.Is(err, namespace.ErrInvalidName):
		return http.StatusBadRequest
	case errors.Is(err, namespace.ErrUnknown):
		return http.StatusNotFound
	case errors.Is(err, namespace.ErrLimit):
		return http.StatusForbidden
	case errors.Is(err, namespace.ErrClosed):
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// namespaceRefused answers a request the namespace router refuses. Its
// answers, which no route saw, are recorded as gin's 404s are: under the
// unmatched route (route="unmatched", method="other") of the default
// namespace's metrics, with a line in the access log.
func (s *Server) namespaceRefused(w http.ResponseWriter, r *http.Request, code int, msg string, start time.Time) {
	w.Header().Set("Content-Type", "text/plain; charset=UTF-8")
	w.WriteHeader(code)
	_, _ = w.Write([]byte(msg))
	s.ops.record(r, s.ops.unmatched, code, len(msg), time.Since(start))
}
