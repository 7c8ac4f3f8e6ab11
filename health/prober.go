package health

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"slices"
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
	// NotAllowed: the health URL leads to an address outside
	// goreka.health.probe.allowed-networks; nothing was sent. It is neither
	// a success nor a failure: the instance is judged as if never probed.
	NotAllowed
)

var outcomeNames = [...]string{"", "healthy", "unhealthy", "unreachable", "not-allowed"}

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
func (r Result) Failed() bool { return r.Outcome == Unhealthy || r.Outcome == Unreachable }

// Counts reports whether the probe is evidence at all (NotAllowed is not).
func (r Result) Counts() bool { return r.Outcome != NotAllowed }

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

// NewHTTPProber returns the prober goreka uses: with allowed not empty
// (goreka.health.probe.allowed-networks), its connections only go to
// those networks. The address is checked when the connection is made,
// after name resolution, so a host name cannot lead elsewhere, and
// redirects are never followed; a refused address is NotAllowed.
func NewHTTPProber(allowed []netip.Prefix) HTTPProber {
	if len(allowed) == 0 {
		return HTTPProber{}
	}
	return HTTPProber{Client: allowedClient(allowed)}
}

// errNotAllowed is the dialer's refusal of an address outside the allowed
// networks.
type errNotAllowed struct{ addr string }

func (e *errNotAllowed) Error() string {
	return "address " + e.addr + " not in goreka.health.probe.allowed-networks"
}

// allowedClient returns a client like defaultClient whose connections only
// go to the networks in allowed.
func allowedClient(allowed []netip.Prefix) *http.Client {
	d := &net.Dialer{Control: func(_, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return &errNotAllowed{address}
		}
		ip := ap.Addr().Unmap()
		for _, p := range allowed {
			if p.Contains(ip) {
				return nil
			}
		}
		return &errNotAllowed{ip.String()}
	}}
	return &http.Client{
		Transport:     &http.Transport{Proxy: nil, DialContext: d.DialContext, DisableKeepAlives: true},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
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
		if na := (*errNotAllowed)(nil); errors.As(err, &na) {
			return Result{NotAllowed, na.Error()}
		}
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
// answers for DOWN and OUT_OF_SERVICE), except a Spring 503 whose only
// non-UP part is the registry's own echo (see actuatorStatus).
func classify(code int, contentType string, body []byte) Result {
	s, echo := actuatorStatus(contentType, body)
	unhealthy := s == "DOWN" || s == "OUT_OF_SERVICE"
	if code == http.StatusServiceUnavailable && echo && !unhealthy {
		return Result{Healthy, "HTTP 503 only from the registry's own status (discoveryComposite/eureka); the rest " + s}
	}
	if code/100 != 2 {
		return Result{Unhealthy, fmt.Sprintf("HTTP %d", code)}
	}
	if unhealthy {
		return Result{Unhealthy, fmt.Sprintf("status %q", s)}
	}
	return Result{Healthy, fmt.Sprintf("HTTP %d", code)}
}

// actuatorDoc is a Spring actuator health document, components nested.
type actuatorDoc struct {
	Status     string                 `json:"status"`
	Components map[string]actuatorDoc `json:"components"`
}

// actuatorStatus is the top-level "status" of a JSON body, "" if there is
// none or the body is not JSON.
//
// Spring Cloud Netflix's "eureka" indicator (inside "discoveryComposite")
// reports the status the registry serves for the instance itself. A probe
// of the root health would see goreka's own DOWN verdict come back and keep
// the instance DOWN for ever; Spring's own EurekaHealthCheckHandler leaves
// that indicator out for the same reason (spring-cloud-netflix gh-643).
// When a DOWN or OUT_OF_SERVICE document shows its components
// (management.endpoint.health.show-components), the status is therefore
// aggregated again without it, as Spring aggregates (DOWN before
// OUT_OF_SERVICE before UP before UNKNOWN), and echo is true. Without
// components the echo cannot be told apart: the README says what to
// configure.
func actuatorStatus(contentType string, body []byte) (status string, echo bool) {
	b := strings.TrimSpace(string(body))
	if !strings.HasPrefix(b, "{") && !strings.Contains(contentType, "json") {
		return "", false
	}
	var doc actuatorDoc
	// A body cut at maxBody does not decode; Spring writes "status" first,
	// so look for it in the decoder's tokens instead of giving up.
	dec := json.NewDecoder(strings.NewReader(b))
	if err := dec.Decode(&doc); err == nil {
		top := strings.ToUpper(doc.Status)
		if top != "DOWN" && top != "OUT_OF_SERVICE" {
			return top, false // never judged worse than Spring's own aggregate
		}
		if s, ok := doc.withoutEcho(); ok {
			return s, true
		}
		return top, false
	}
	dec = json.NewDecoder(strings.NewReader(b))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return "", false
	}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return "", false
		}
		if k == "status" {
			var s string
			if dec.Decode(&s) == nil {
				return strings.ToUpper(s), false
			}
			return "", false
		}
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return "", false
		}
	}
	return "", false
}

// withoutEcho aggregates d's components without discoveryComposite's
// eureka indicator; ok is false when d has no such indicator.
func (d actuatorDoc) withoutEcho() (string, bool) {
	dc, ok := d.Components["discoveryComposite"]
	if _, echo := dc.Components["eureka"]; !ok || !echo {
		return "", false
	}
	var statuses []string
	for name, c := range d.Components {
		if name != "discoveryComposite" {
			statuses = append(statuses, strings.ToUpper(c.Status))
			continue
		}
		for n, cc := range c.Components {
			if n != "eureka" {
				statuses = append(statuses, strings.ToUpper(cc.Status))
			}
		}
	}
	for _, s := range []string{"DOWN", "OUT_OF_SERVICE", "UP"} {
		if slices.Contains(statuses, s) {
			return s, true
		}
	}
	return "UNKNOWN", true
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
