package server

import (
	"errors"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/goreka/goreka/namespace"
	"github.com/goreka/goreka/registry"
)

// statusOf maps a registry operation's outcome to the HTTP status Eureka
// answers it with. It is the only place that does: the REST handlers and
// the replication batch both use it.
//
//   - nil: 200
//   - registry.ErrNotFound (and ErrNewerCopy, which is one): 404, which makes
//     a renewing client or peer register again
//   - *registry.ConflictError: 409, the sender adopts the stored copy
//   - *registry.ValidationError: 400 (Eureka answers some of these with 500,
//     a caller's mistake is a 400 here so the sender's logs say what is wrong)
//   - *registry.LimitError: 403 with the reason (goreka.namespaces.max-instances)
//
// and the namespace package's refusals, which the /ns/{name}/ router
// answers with their reason (serveNamespace):
//
//   - namespace.ErrInvalidName: 400
//   - namespace.ErrUnknown: 404
//   - namespace.ErrLimit: 403 (goreka.namespaces.max)
//   - namespace.ErrClosed: 503, the server is shutting down
//
// Anything else is a 500.
func statusOf(err error) int {
	if err == nil {
		return http.StatusOK
	}
	return errorStatus(err)
}

// errorStatus is statusOf for an error. It is a function of its own because
// the targets of errors.As escape to the heap: the success path of a
// heartbeat must not pay for them.
func errorStatus(err error) int {
	var (
		conflict *registry.ConflictError
		invalid  *registry.ValidationError
		limit    *registry.LimitError
	)
	switch {
	case errors.Is(err, registry.ErrNotFound):
		return http.StatusNotFound
	case errors.As(err, &conflict):
		return http.StatusConflict
	case errors.As(err, &invalid):
		return http.StatusBadRequest
	case errors.As(err, &limit):
		return http.StatusForbidden
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

// answer writes the outcome of a write operation as Eureka does: no body,
// except a plain-text reason for a 400 and the stored instance for a 409.
func (s *Server) answer(c *gin.Context, err error) {
	if err == nil {
		c.Status(http.StatusOK)
		return
	}
	s.answerError(c, err)
}

func (s *Server) answerError(c *gin.Context, err error) {
	code := errorStatus(err)
	var conflict *registry.ConflictError
	switch {
	case code == http.StatusBadRequest:
		badRequest(c, "%s", err.Error())
	case code == http.StatusForbidden:
		c.Data(code, "text/plain; charset=UTF-8", []byte(err.Error()))
	case errors.As(err, &conflict):
		s.writeInstance(c, http.StatusConflict, conflict.Stored)
	case code == http.StatusInternalServerError:
		s.log.Error("registry operation failed", "method", c.Request.Method, "path", c.Request.URL.Path, "err", err)
		c.Status(code)
	default:
		c.Status(code)
	}
}
