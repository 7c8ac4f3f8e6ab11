package server

import (
	"errors"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/goreka/goreka/peerbatch"
	"github.com/goreka/goreka/registry"
)

// statusOf maps a registry operation's outcome to the HTTP status Eureka
// answers it with: peerbatch.ErrorStatus, the one mapping of the registry's
// errors, which the replication batch and the test peer share with the
// REST handlers. (The namespace package's refusals are answered only where
// namespaces are: namespaceStatus, server/namespaces.go.)
func statusOf(err error) int {
	if err == nil {
		return http.StatusOK
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
	code := peerbatch.ErrorStatus(err)
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
