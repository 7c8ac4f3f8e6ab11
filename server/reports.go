package server

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/goreka/goreka/health"
)

// ReportsPath is where callers report instances they failed to reach.
const ReportsPath = "/goreka/api/v1/reports"

// maxReportBody caps a report body; maxReason the reason kept.
const (
	maxReportBody = 16 << 10
	maxReason     = 512
)

// Reporter takes a caller's report (a *health.Monitor): health.ReportLimited
// means the reporter is over its rate and the report is refused; err is
// registry.ErrNotFound for an unknown instance.
type Reporter interface {
	Report(app, id, reporter, reason string) (health.ReportOutcome, error)
}

// MountReports serves POST ReportsPath: {"app":…, "instanceId":…,
// "reason":…}. It answers 202 with {"outcome":…} (probing, coalesced,
// queued, counted, not-probeable), 400 naming what is wrong with the body,
// 404 for an unknown instance, 429 when the reporter (its address) sends
// too many. A report never changes the registry by itself.
func (s *Server) MountReports(r Reporter) {
	s.engine.POST(ReportsPath, func(c *gin.Context) { s.report(c, r) })
}

type reportBody struct {
	App        *string `json:"app"`
	InstanceID *string `json:"instanceId"`
	Reason     *string `json:"reason"`
}

func (s *Server) report(c *gin.Context, r Reporter) {
	body, err := io.ReadAll(http.MaxBytesReader(c.Writer, c.Request.Body, maxReportBody))
	if err != nil {
		badRequest(c, "report body larger than %d bytes", maxReportBody)
		return
	}
	var b reportBody
	dec := json.NewDecoder(strings.NewReader(string(body)))
	if err := dec.Decode(&b); err != nil {
		badRequest(c, "report body is not a JSON object {\"app\", \"instanceId\", \"reason\"}: %v", err)
		return
	}
	if dec.More() {
		badRequest(c, "report body has data after the JSON object")
		return
	}
	switch {
	case b.App == nil || strings.TrimSpace(*b.App) == "":
		badRequest(c, "missing app")
		return
	case b.InstanceID == nil || strings.TrimSpace(*b.InstanceID) == "":
		badRequest(c, "missing instanceId")
		return
	}
	reason := ""
	if b.Reason != nil {
		reason = *b.Reason
		if len(reason) > maxReason {
			reason = reason[:maxReason]
		}
	}
	// The reporter is the connection's address: a header would let one
	// caller spread a flood over made-up names.
	reporter, _, splitErr := net.SplitHostPort(c.Request.RemoteAddr)
	if splitErr != nil {
		reporter = c.Request.RemoteAddr
	}
	outcome, err := r.Report(*b.App, *b.InstanceID, reporter, reason)
	switch {
	case err != nil && statusOf(err) == http.StatusNotFound:
		c.Data(http.StatusNotFound, gin.MIMEPlain, fmt.Appendf(nil, "unknown instance %s/%s", strings.ToUpper(*b.App), *b.InstanceID))
	case err != nil:
		s.answer(c, err)
	case outcome == health.ReportLimited:
		c.Header("Retry-After", "1")
		c.Data(http.StatusTooManyRequests, gin.MIMEPlain, []byte("too many reports from "+reporter))
	default:
		c.JSON(http.StatusAccepted, gin.H{"outcome": string(outcome)})
	}
}
