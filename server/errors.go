package server

import (
	"errors"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/goreka/goreka/namespace"
	"github.com/goreka/goreka/peerbatch"
	"github.com/goreka/goreka/registry"
)

// statusOf maps a registry operation's outcome to the HTTP status Eureka
// answers it with: peerbatch.Status, the one mapping of the registry's
// errors, which the replication batch and the test peer share with the
// REST handlers; beside it the namespace package's refusals, which the
// /ns/{name}/ router answers with their reason (serveNamespace):
//
//   - namespace.ErrInvalidName: 400
//   - namespace.ErrUnknown: 404
//   - namespace.ErrLimit: 403 (goreka.namespaces.max)
//   - namespace.ErrClosed: 503, the server is shutting down
//   - namespace.ErrCreate: 500, whatever the failure wraps
func statusOf(err error) int {
	if err == nil {
		return http.StatusOK
	}
	return errorStatus(err)
}

// errorStatus is statusOf for an error (a function of its own, as
// peerbatch.ErrorStatus: the targets of errors.As escape to the heap, the
// success path of a heartbeat must not pay for them).
func errorStatus(err error) int {
	switch {
	case errors.Is(err, namespace.ErrInvalidName):
		return http.StatusBadRequest
	case errors.Is(err, namespace.ErrUnknown):
		return http.StatusNotFound
	case errors.Is(err, namespace.ErrLimit):
		return http.StatusForbidden
	case errors.Is(err, namespace.ErrClosed):
		return http.StatusServiceUnavailable
	case errors.Is(err, namespace.ErrCreate):
		return http.StatusInternalServerError
	}
	return peerbatch.ErrorStatus(err)
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
