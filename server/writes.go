package server

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/goreka/goreka/compat"
	"github.com/goreka/goreka/peerbatch"
	"github.com/goreka/goreka/registry"
)

// badRequest answers 400 with a plain-text reason, as Eureka's validation
// does (clients never parse it; operators read it).
func badRequest(c *gin.Context, format string, args ...any) {
	c.Data(http.StatusBadRequest, "text/plain; charset=UTF-8", []byte(fmt.Sprintf(format, args...)))
}

// errBodyTooLarge is returned by readBody past the configured limit.
var errBodyTooLarge = errors.New("request body too large")

// readBody reads a request body within limit, gunzipping it when the sender
// used Content-Encoding: gzip (peers with enable-replicated-request-compression).
func readBody(r *http.Request, limit int64) ([]byte, error) {
	gzipped := strings.EqualFold(strings.TrimSpace(r.Header.Get("Content-Encoding")), "gzip")
	if n := r.ContentLength; n > 0 && n <= limit && !gzipped {
		// The usual case, a plain body of known length within the limit
		// (net/http's body ends at Content-Length): one allocation of its
		// size, no MaxBytesReader, no io.ReadAll doubling from 512 bytes.
		body, err := readAllSized(r.Body, n)
		if int64(len(body)) > limit {
			return nil, errBodyTooLarge
		}
		return body, err
	}
	var src io.Reader = http.MaxBytesReader(nil, r.Body, limit)
	if gzipped {
		zr, err := gzip.NewReader(src)
		if err != nil {
			return nil, fmt.Errorf("bad gzip body: %w", err)
		}
		defer zr.Close()
		src = zr
	}
	body, err := io.ReadAll(io.LimitReader(src, limit+1))
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) || int64(len(body)) > limit {
		return nil, errBodyTooLarge
	}
	return body, err
}

// readAllSized is io.ReadAll into a buffer sized for n bytes: one
// allocation when the body is as long as announced, growth as usual when
// it is longer (the limit is the caller's).
func readAllSized(r io.Reader, n int64) ([]byte, error) {
	buf := make([]byte, 0, n+1) // +1: the read that finds EOF needs room
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		m, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+m]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

// bodyFormat picks the decoder from Content-Type like Jersey's provider:
// a json subtype is JSON, any other application/* or text/xml subtype is XML;
// a missing type is sniffed from the first byte. Other types and charsets
// other than UTF-8 / ISO-8859-1 are refused (415).
func bodyFormat(contentType string, body []byte) (compat.Format, error) {
	switch strings.TrimSpace(contentType) {
	case "":
		return compat.SniffFormat(body), nil
	case compat.ContentTypeJSON:
		return compat.JSON, nil // what clients send, without ParseMediaType's map
	}
	mt, params, err := mime.ParseMediaType(contentType)
	if err != nil {
		return 0, fmt.Errorf("unsupported content type %q", contentType)
	}
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") && !strings.EqualFold(cs, "iso-8859-1") {
		return 0, fmt.Errorf("unsupported charset %q", cs)
	}
	typ, sub, _ := strings.Cut(mt, "/")
	switch {
	case strings.Contains(sub, "json"):
		return compat.JSON, nil
	case typ == "application" || typ == "*" || (typ == "text" && sub == "xml"):
		return compat.XML, nil
	}
	return 0, fmt.Errorf("unsupported content type %q: send application/json or application/xml", mt)
}

// decodeError answers an unparseable body the way Eureka's provider does,
// with the reason appended for operators.
func decodeError(c *gin.Context, f compat.Format, err error) {
	msg := "cannot parse request body"
	if err != nil {
		msg += ": " + err.Error()
	}
	if f == compat.XML {
		var b bytes.Buffer
		b.WriteString("<error><message>")
		xmlEscape(&b, msg)
		b.WriteString("</message></error>")
		c.Data(http.StatusBadRequest, compat.ContentTypeXML, b.Bytes())
		return
	}
	c.Data(http.StatusBadRequest, compat.ContentTypeJSON, fmt.Appendf(nil, `{"error":%q}`, msg))
}

func xmlEscape(b *bytes.Buffer, s string) {
	for _, r := range s {
		switch r {
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '&':
			b.WriteString("&amp;")
		default:
			b.WriteRune(r)
		}
	}
}

// readInstanceBody reads and decodes a registration body, answering the
// error itself; ok is false when it did.
func (s *Server) readInstanceBody(c *gin.Context) (*registry.Instance, bool) {
	body, err := readBody(c.Request, s.cfg.MaxBodyBytes)
	if errors.Is(err, errBodyTooLarge) {
		c.Data(http.StatusRequestEntityTooLarge, "text/plain; charset=UTF-8", fmt.Appendf(nil, "request body larger than %d bytes", s.cfg.MaxBodyBytes))
		return nil, false
	}
	if err != nil {
		badRequest(c, "cannot read request body: %v", err)
		return nil, false
	}
	f, err := bodyFormat(c.GetHeader("Content-Type"), body)
	if err != nil {
		c.Data(http.StatusUnsupportedMediaType, "text/plain; charset=UTF-8", []byte(err.Error()))
		return nil, false
	}
	in, err := compat.DecodeInstance(body, f)
	if err != nil {
		decodeError(c, f, err)
		return nil, false
	}
	return in, true
}

// register is POST /eureka/apps/{app}: 204 with no body on success (the Java
// client counts only 204 as a successful registration).
func (s *Server) register(c *gin.Context) {
	pathApp := c.Param("app")
	if strings.EqualFold(pathApp, "delta") {
		c.Status(http.StatusMethodNotAllowed)
		return
	}
	in, ok := s.readInstanceBody(c)
	if !ok {
		return
	}
	if _, err := s.reg.RegisterFor(pathApp, in, isReplication(c)); err != nil {
		s.answer(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}

// parseMillis reads an optional epoch-millis query parameter.
func parseMillis(c *gin.Context, name string) (time.Time, bool) {
	v, _ := queryValue(c.Request.URL.RawQuery, name)
	if v == "" {
		return time.Time{}, true
	}
	ms, err := strconv.ParseInt(v, 10, 64)
	if err != nil || ms < 0 {
		badRequest(c, "invalid %s %q: expected epoch milliseconds", name, v)
		return time.Time{}, false
	}
	return time.UnixMilli(ms), true
}

// parseStatus reads a status query parameter, exact upper case like
// InstanceStatus.valueOf (Eureka answers 500; a caller's mistake is a 400).
func (s *Server) parseStatus(c *gin.Context, name string, required bool) (registry.Status, bool) {
	v, _ := queryValue(c.Request.URL.RawQuery, name)
	st, err := registry.ParseStatusParam(name, v, required)
	if err != nil {
		s.answer(c, err)
		return "", false
	}
	return st, true
}

// renew is PUT /eureka/apps/{app}/{id}: 200, 404 (re-register) or, for a
// peer whose copy is older, 409 with ours. 200 and 404 carry no body.
func (s *Server) renew(c *gin.Context) {
	dirty, ok := parseMillis(c, "lastDirtyTimestamp")
	if !ok {
		return
	}
	override, ok := s.parseStatus(c, "overriddenstatus", false)
	if !ok {
		return
	}
	s.answer(c, s.reg.Renew(registry.RenewRequest{
		App: c.Param("app"), ID: c.Param("id"), FromPeer: isReplication(c),
		LastDirtyTimestamp: dirty, OverriddenStatus: override,
	}))
}

// cancel is DELETE /eureka/apps/{app}/{id}: 200 or 404, no body.
func (s *Server) cancel(c *gin.Context) {
	s.answer(c, s.reg.Cancel(c.Param("app"), c.Param("id"), isReplication(c)))
}

// exists answers 404 unless the addressed instance is registered and
// visible (peerbatch.LookUp, which the replication batch applies too).
func (s *Server) exists(c *gin.Context) bool {
	if err := peerbatch.LookUp(s.reg, c.Param("app"), c.Param("id"), s.now(), s.expiry); err != nil {
		c.Status(http.StatusNotFound)
		return false
	}
	return true
}

// statusUpdate is PUT /eureka/apps/{app}/{id}/status?value=S.
func (s *Server) statusUpdate(c *gin.Context) {
	if !s.exists(c) {
		return
	}
	st, ok := s.parseStatus(c, "value", true)
	if !ok {
		return
	}
	dirty, ok := parseMillis(c, "lastDirtyTimestamp")
	if !ok {
		return
	}
	s.answer(c, s.reg.StatusUpdate(c.Param("app"), c.Param("id"), st, dirty, isReplication(c)))
}

// deleteStatusOverride is DELETE /eureka/apps/{app}/{id}/status[?value=S].
func (s *Server) deleteStatusOverride(c *gin.Context) {
	if !s.exists(c) {
		return
	}
	st, ok := s.parseStatus(c, "value", false)
	if !ok {
		return
	}
	dirty, ok := parseMillis(c, "lastDirtyTimestamp")
	if !ok {
		return
	}
	s.answer(c, s.reg.DeleteStatusOverride(c.Param("app"), c.Param("id"), st, dirty, isReplication(c)))
}

// updateMetadata is PUT /eureka/apps/{app}/{id}/metadata?k=v...: merged into
// the instance and re-registered (first value of a repeated key wins).
func (s *Server) updateMetadata(c *gin.Context) {
	if !s.exists(c) {
		return
	}
	// Query() drops every parameter when the query has more than Go's
	// limit (10000); that request would otherwise be answered 200 unapplied.
	q, err := url.ParseQuery(c.Request.URL.RawQuery)
	if err != nil {
		badRequest(c, "invalid metadata query: %v", err)
		return
	}
	kv := make(map[string]string, len(q))
	for k, vs := range q {
		kv[k] = vs[0]
	}
	_, err = s.reg.UpdateMetadata(c.Param("app"), c.Param("id"), kv)
	s.answer(c, err)
}

// asgStatus answers as a Eureka server outside AWS does: ASGs are unknown.
func (s *Server) asgStatus(c *gin.Context) {
	badRequest(c, "ASG status is only supported by a Eureka server running on AWS")
}
