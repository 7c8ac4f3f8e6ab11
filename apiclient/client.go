package apiclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/goreka/goreka/namespace"
	"github.com/goreka/goreka/server/api/wire"
)

// DefaultNamespace is the name of the namespace served at the root
// (/eureka/): WithNamespace(DefaultNamespace) is no namespace at all.
const DefaultNamespace = namespace.Default

// namespacePrefix starts the path of every other namespace:
// /ns/{name}/eureka/... and /ns/{name}/goreka/api/v1/...
const namespacePrefix = "/ns/"

// Client reads one goreka server: its read API (/goreka/api/v1), its
// /eureka/status, and the three Eureka operations an operator needs by hand
// (status override, override removal, cancel). It is safe for concurrent
// use; it starts no goroutines.
type Client struct {
	base       string // scheme://host[:port][/path][/ns/NAME], no credentials, no trailing slash
	user, pass string
	namespace  string
	hc         *http.Client // one request
	stream     *http.Client // hc without its Timeout: the watch and the long poll last
	watchIdle  time.Duration
}

// An Option configures a Client.
type Option func(*Client)

// WithNamespace makes the client work on the named namespace (its paths
// under /ns/NAME/). "" and DefaultNamespace are the root namespace. New
// refuses a name the server would refuse.
func WithNamespace(name string) Option { return func(c *Client) { c.namespace = name } }

// WithCredentials sets the basic-auth user and password. Credentials in
// the server URL (http://user:pass@host/) take precedence.
func WithCredentials(user, password string) Option {
	return func(c *Client) { c.user, c.pass = user, password }
}

// WithHTTPClient sets the HTTP client (default http.DefaultClient). Its
// Timeout bounds each request but the watch and the long poll, which use a
// copy of it without one and are bounded by their context only.
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.hc = hc } }

// WithWatchIdle ends a watch's connection on which no byte arrived for d
// (no event, no keep-alive comment: goreka sends one every 15 s by
// default), with ErrWatchIdle: a connection cut silently (a partition that
// healed, a NAT that forgot it) otherwise blocks until TCP gives up,
// minutes later. Time the consumer spends in the loop's body counts as
// silence too. 0, the default, waits for as long as the context allows.
func WithWatchIdle(d time.Duration) Option { return func(c *Client) { c.watchIdle = d } }

// New returns a client of the goreka at serverURL: http(s)://[user:pass@]host[:port][/path],
// where a trailing /eureka (a Eureka service URL, as in a client's
// defaultZone) is dropped, so http://host:8761/eureka/ and
// http://host:8761/ns/dev/eureka/ work as they are; a URL without a scheme
// is http.
func New(serverURL string, opts ...Option) (*Client, error) {
	c := &Client{}
	for _, o := range opts {
		o(c)
	}
	if c.hc == nil {
		c.hc = http.DefaultClient
	}
	stream := *c.hc
	stream.Timeout = 0
	c.stream = &stream
	if c.namespace != "" && c.namespace != DefaultNamespace {
		if err := ValidateNamespace(c.namespace); err != nil {
			return nil, err
		}
	}
	raw := serverURL
	if !strings.Contains(raw, "://") {
		raw = "http://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("server %q: not an http(s) URL", raw)
	}
	if u.User != nil {
		c.user = u.User.Username()
		c.pass, _ = u.User.Password()
		u.User = nil
	}
	p := strings.TrimSuffix(u.Path, "/")
	p = strings.TrimSuffix(p, "/eureka")
	if c.namespace != "" && c.namespace != DefaultNamespace {
		p = strings.TrimSuffix(p, "/") + namespacePrefix + c.namespace
	}
	u.Path, u.RawQuery, u.Fragment = p, "", ""
	c.base = strings.TrimSuffix(u.String(), "/")
	return c, nil
}

// URL is the server's base URL as the client uses it, without credentials
// and without /eureka: the requests go to URL()+"/goreka/api/v1/...".
func (c *Client) URL() string { return c.base }

// ValidateNamespace checks a namespace name as the server does
// (namespace.Validate): a DNS label (RFC 1123) in lower case, 1 to 63
// letters, digits and '-', neither first nor last. The error says what is
// wrong.
func ValidateNamespace(name string) error { return namespace.Validate(name) }

// StatusError is an answer other than 2xx.
type StatusError struct {
	Method string
	URL    string // the request's URL, without credentials
	// StatusCode is the HTTP status: 401 missing or wrong credentials, 403
	// a read-only user writing, a user scoped to other namespaces, or a
	// server not open for reads yet, 404 not registered or unknown
	// namespace, 400 a parameter the API refuses (Parameter names it).
	StatusCode int
	// Message is the API's {"error": ...}, else the body's text (at most
	// 4 KiB, trimmed); it may be empty (Eureka's 404s are).
	Message   string
	Parameter string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("%s %s: HTTP %d: %s", e.Method, e.URL, e.StatusCode, e.Message)
}

// UnreachableError is a request that got no answer: the connection was
// refused or broken, the name did not resolve, the timeout of the HTTP
// client passed, or the context ended (errors.Is(err, context.Canceled)
// holds then).
type UnreachableError struct {
	Server  string // Client.URL
	Err     error  // the transport's error
	timeout bool
}

func (e *UnreachableError) Error() string {
	if e.timeout {
		return e.Server + ": no answer in time"
	}
	return fmt.Sprintf("%s unreachable: %v", e.Server, e.Err)
}

func (e *UnreachableError) Unwrap() error { return e.Err }

// Timeout reports whether the request timed out.
func (e *UnreachableError) Timeout() bool { return e.timeout }

// do sends one request to c.base+path and returns the response of a 2xx
// answer; the caller closes its body. Other answers are a *StatusError, no
// answer an *UnreachableError.
func (c *Client) do(ctx context.Context, hc *http.Client, method, path string) (*http.Response, error) {
	target := c.base + path
	req, err := http.NewRequestWithContext(ctx, method, target, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	if c.user != "" {
		req.SetBasicAuth(c.user, c.pass)
	}
	resp, err := hc.Do(req)
	if err != nil {
		var ne net.Error
		return nil, &UnreachableError{Server: c.base, Err: errors.Unwrap(err), timeout: errors.As(err, &ne) && ne.Timeout()}
	}
	if resp.StatusCode/100 == 2 {
		return resp, nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	e := &StatusError{Method: method, URL: target, StatusCode: resp.StatusCode, Message: strings.TrimSpace(string(b))}
	var ea wire.ErrorAnswer
	if json.Unmarshal(b, &ea) == nil && ea.Error != "" {
		e.Message, e.Parameter = ea.Error, ea.Parameter
	}
	return nil, e
}

// getJSON reads the JSON answer of GET path into v.
func (c *Client) getJSON(ctx context.Context, hc *http.Client, path string, v any) error {
	resp, err := c.do(ctx, hc, http.MethodGet, path)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		return fmt.Errorf("GET %s: not the answer of a goreka: %w", c.base+path, err)
	}
	return nil
}
