package health

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"time"

	"github.com/goreka/goreka/registry"
)

// Outcome is what one probe found.
type Outcome uint8

// The outcomes of a probe. Unhealthy and Unreachable are failures.
const (
	// Healthy: a 2xx answer whose body, if it is a Spring actuator health
	// document, does not say DOWN or OUT_OF_SERVICE.
	Healthy Outcome = iota + 1
	// Unhealthy: the instance answered, but 503, another non-2xx status, or
	// an actuator body with "status":"DOWN" / "OUT_OF_SERVICE".
	Unhealthy
	// Unreachable: no answer (connection refused, timeout, reset, DNS).
	Unreachable
)

var outcomeNames = [...]string{"", "healthy", "unhealthy", "unreachable"}

func (o Outcome) String() string {
	if int(o) < len(outcomeNames) {
		return outcomeNames[o]
	}
	return fmt.Sprintf("Outcome(%d)", o)
}

// Result is one probe's outcome with a short human reason ("HTTP 503",
// "connection refused", "timeout after 2s", `status "DOWN"`).
type Result struct {
	Outcome Outcome
	Detail  string
}

// Failed reports whether the probe counts as a failure.
func (r Result) Failed() bool { return r.Outcome != Healthy }

// Prober probes one health URL. It returns within ctx's deadline. The real
// one is HTTPProber; tests may use any other.
type Prober interface {
	Probe(ctx context.Context, url string) Result
}

// HTTPProber is the HTTP GET prober. The zero value uses a client that does
// not keep connections to the probed instances alive (a registry probing
// thousands of hosts must not hold thousands of idle sockets) and follows
// no redirects (a health endpoint answers itself: a redirect is an answer,
// and not a 2xx one).
type HTTPProber struct {
	// Client, if set, replaces the default client.
	Client *http.Client
}

// maxBody is how much of an answer is read to find an actuator status: the
// top-level "status" comes first in Spring's documents.
const maxBody = 16 << 10

var defaultClient = &http.Client{
	Transport: &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{}).DialContext,
		DisableKeepAlives:   true,
		TLSHandshakeTimeout: 0, // bounded by the probe's context
	},
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

// Probe GETs url within ctx and classifies the answer.
func (p HTTPProber) Probe(ctx context.Context, url string) Result {
	c := p.Client
	if c == nil {
		c = defaultClient
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return Result{Unreachable, "bad health URL: " + err.Error()}
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "goreka-health-probe")
	resp, err := c.Do(req)
	if err != nil {
		return Result{Unreachable, reachError(ctx, err)}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil && len(body) == 0 && resp.StatusCode/100 == 2 {
		return Result{Unreachable, reachError(ctx, err)}
	}
	return classify(resp.StatusCode, resp.Header.Get("Content-Type"), body)
}

// classify is the verdict on an answer: 2xx is healthy unless an actuator
// body says otherwise; every other status is unhealthy (503 is what Spring
// answers for DOWN and OUT_OF_SERVICE).
func classify(code int, contentType string, body []byte) Result {
	if code/100 != 2 {
		return Result{Unhealthy, fmt.Sprintf("HTTP %d", code)}
	}
	if s := actuatorStatus(contentType, body); s == "DOWN" || s == "OUT_OF_SERVICE" {
		return Result{Unhealthy, fmt.Sprintf("status %q", s)}
	}
	return Result{Healthy, fmt.Sprintf("HTTP %d", code)}
}

// actuatorStatus is the top-level "status" of a JSON body, "" if there is
// none or the body is not JSON.
func actuatorStatus(contentType string, body []byte) string {
	b := strings.TrimSpace(string(body))
	if !strings.HasPrefix(b, "{") && !strings.Contains(contentType, "json") {
		return ""
	}
	var doc struct {
		Status string `json:"status"`
	}
	// A body cut at maxBody does not decode; Spring writes "status" first,
	// so look for it in the decoder's tokens instead of giving up.
	dec := json.NewDecoder(strings.NewReader(b))
	if err := dec.Decode(&doc); err == nil {
		return strings.ToUpper(doc.Status)
	}
	dec = json.NewDecoder(strings.NewReader(b))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return ""
	}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return ""
		}
		if k == "status" {
			var s string
			if dec.Decode(&s) == nil {
				return strings.ToUpper(s)
			}
			return ""
		}
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return ""
		}
	}
	return ""
}

// reachError names why there was no answer, in a few words.
func reachError(ctx context.Context, err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded) ||
		(errors.As(err, &ne) && ne.Timeout()):
		return "timeout"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset"
	}
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return "DNS: " + dns.Err
	}
	return err.Error()
}

// URL returns the health URL goreka probes for in: healthCheckUrl, or
// secureHealthCheckUrl when only the secure port is enabled (or when only
// it is given). "" means the instance is never probed: it has neither, or
// the URL is not http(s).
func URL(in *registry.Instance) string {
	u := in.HealthCheckURL
	if (in.SecurePort.Enabled && !in.Port.Enabled && in.SecureHealthCheckURL != "") || u == "" {
		u = in.SecureHealthCheckURL
	}
	if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
		return ""
	}
	return u
}

// timeoutDetail names a timeout with its length.
func timeoutDetail(d time.Duration) string { return "timeout after " + d.String() }
