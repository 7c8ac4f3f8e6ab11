package eurekahttp

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	kgzip "github.com/klauspost/compress/gzip"

	"github.com/goreka/goreka/compat"
	"github.com/goreka/goreka/registry"
)

// Limits on what is read of an answer (inflated). A longer body is an
// ErrBadResponse.
const (
	// MaxBody caps an answer of Do and PostBatch.
	MaxBody = 256 << 20
	// MaxDocument caps a registry document (GetApplications): about
	// 1.1 GB of JSON at 1M instances.
	MaxDocument = 4 << 30
	// maxPresize caps the buffer sized from an answer's Content-Length
	// (times 24 for gzip) before its bytes arrive: a registry of 100k
	// instances (110 MB of JSON) fits it, a larger or false length grows
	// it with what comes instead of allocating up to MaxDocument at once.
	maxPresize = 128 << 20
	// maxDiscard is what is read (and dropped) of an answer the call
	// refuses by its status, so that its connection may be kept.
	maxDiscard = 64 << 10
)

// Config configures a Client. Zero fields take the defaults listed.
type Config struct {
	// ConnectTimeout bounds the dial and the TLS handshake (default 1 s).
	ConnectTimeout time.Duration
	// ReadTimeout is Java's socket read timeout: the longest wait for the
	// next bytes of an answer, its headers or any read of its body, once the
	// request is written (default 5 s). It bounds the write of the request
	// too: a request (headers, each 32 KiB of the body) that makes no
	// progress for this long, a peer that stops reading, fails the call.
	// Nothing here bounds a whole call; the caller's context does.
	ReadTimeout time.Duration
	// MaxIdleConnsPerHost bounds kept-alive connections per server (0:
	// net/http's default, 2).
	MaxIdleConnsPerHost int
	// IdleConnTimeout closes a kept-alive connection unused this long
	// (default 30 s).
	IdleConnTimeout time.Duration
	// TLSClientConfig configures https calls (nil: Go's defaults).
	TLSClientConfig *tls.Config
	// TLSConfigFor, when set, configures each new https connection to a
	// host (tlsconf.Client.ConfigFor: the current certificate and trust,
	// so that rotated files reach the next connection); it takes
	// precedence over TLSClientConfig. The handshake is bounded by
	// ConnectTimeout.
	TLSConfigFor func(host string) *tls.Config
	// UserAgent is sent with every call (default goreka).
	UserAgent string
	// AcceptGzip asks for gzip answers (Accept-Encoding: gzip). A gzip
	// answer is inflated either way.
	AcceptGzip bool
	// AcceptAny2xx makes GetApplications take a registry from any 2xx
	// answer, not only a 200 (region: its fetch always did).
	AcceptAny2xx bool
	// CompressBatches gzips PostBatch bodies
	// (eureka.server.enable-replicated-request-compression).
	CompressBatches bool
	// HTTPClient replaces the client built from the connection fields above
	// (tests, custom transports). The read timeout still applies to the
	// body, to the request's body as its transport reads it, and to the
	// rest of the write and the headers when its transport reports getting
	// a connection and writing the request (httptrace GotConn and
	// WroteRequest, as http.Transport does).
	HTTPClient *http.Client
}

// Client calls Eureka servers. It is safe for concurrent use.
type Client struct {
	cfg Config
	hc  *http.Client
	// afterFunc starts the read timeout's timer (time.AfterFunc; tests
	// inject a clock).
	afterFunc func(time.Duration, func()) timer
}

// timer is the part of *time.Timer the watchdog uses.
type timer interface {
	Reset(time.Duration) bool
	Stop() bool
}

func realAfterFunc(d time.Duration, f func()) timer { return time.AfterFunc(d, f) }

// New returns a Client for cfg.
func New(cfg Config) *Client {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&cfg.ConnectTimeout, time.Second)
	def(&cfg.ReadTimeout, 5*time.Second)
	def(&cfg.IdleConnTimeout, 30*time.Second)
	if cfg.UserAgent == "" {
		cfg.UserAgent = "goreka"
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = NewHTTPClient(cfg)
	}
	return &Client{cfg: cfg, hc: hc, afterFunc: realAfterFunc}
}

// NewHTTPClient is the HTTP client New builds when cfg.HTTPClient is nil:
// cfg's connect timeout, idle connections and TLS (TLSConfigFor, else
// TLSClientConfig), no transparent gzip, no redirects. A caller that wraps
// the transport (a relay adds its chain header) starts from this one, so
// that every client of another Eureka server dials the same way.
func NewHTTPClient(cfg Config) *http.Client {
	d := &net.Dialer{Timeout: cfg.ConnectTimeout, KeepAlive: 30 * time.Second}
	hc := &http.Client{
		Transport: &http.Transport{
			Proxy:               http.ProxyFromEnvironment,
			DialContext:         d.DialContext,
			TLSClientConfig:     cfg.TLSClientConfig,
			TLSHandshakeTimeout: cfg.ConnectTimeout,
			MaxIdleConnsPerHost: cfg.MaxIdleConnsPerHost,
			IdleConnTimeout:     cfg.IdleConnTimeout,
			// gzip is asked for (or not) explicitly: AcceptGzip.
			DisableCompression: true,
		},
		// Never follow a redirect to another host with our credentials.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	if cfg.TLSConfigFor != nil {
		hc.Transport.(*http.Transport).DialTLSContext = tlsDial(d, cfg.TLSConfigFor, cfg.ConnectTimeout)
	}
	return hc
}

// StatusError is an answer with a status the call does not accept.
type StatusError struct {
	Method string
	URL    string // without credentials
	Code   int
}

func (e *StatusError) Error() string {
	if e.Method == "" {
		return fmt.Sprintf("%s answered %d", e.URL, e.Code)
	}
	return fmt.Sprintf("%s %s answered %d", e.Method, e.URL, e.Code)
}

// ErrBadResponse marks an answer that could not be used: a body that is
// not what the call expects, broken gzip, a body over the limit.
var ErrBadResponse = errors.New("unusable response")

// ErrReadTimeout is a call's error when no bytes arrived within the read
// timeout. It is a net.Error with Timeout() true, and not
// context.DeadlineExceeded.
var ErrReadTimeout error = readTimeoutError{}

type readTimeoutError struct{}

func (readTimeoutError) Error() string   { return "read timed out" }
func (readTimeoutError) Timeout() bool   { return true }
func (readTimeoutError) Temporary() bool { return true }

// Fetch names a registry document.
type Fetch uint8

// Registry documents.
const (
	Full  Fetch = iota // GET apps/
	Delta              // GET apps/delta
)

func (f Fetch) path() string {
	if f == Delta {
		return "apps/delta"
	}
	return "apps/"
}

// RevisionHeader is the header in which a goreka server names the registry
// revision a document is exactly (server.RevisionHeader).
const RevisionHeader = compat.RevisionHeader

// EpochHeader names the sequence RevisionHeader counts in (server.EpochHeader).
const EpochHeader = compat.EpochHeader

// NoAnswerError is GetApplications' error when the server sent no response
// headers (refused, reset, timed out before answering), as opposed to one
// that broke off while the body came: a caller with another endpoint moves
// on at once rather than asking this one for a larger document. Its text is
// Err's.
type NoAnswerError struct{ Err error }

func (e *NoAnswerError) Error() string { return e.Err.Error() }
func (e *NoAnswerError) Unwrap() error { return e.Err }

// GetApplications fetches the full registry or the delta as JSON. Anything
// but 200 (any 2xx with AcceptAny2xx) is a *StatusError; an undecodable
// body an ErrBadResponse. The document's Revision is the answer's
// RevisionHeader (a goreka server's registry revision), 0 without one (a
// stock server, a relay's union documents), and its Epoch the answer's
// EpochHeader (the sequence the revision counts in).
func (c *Client) GetApplications(ctx context.Context, ep Endpoint, f Fetch) (*registry.Applications, error) {
	path := f.path()
	ok := is(http.StatusOK)
	if c.cfg.AcceptAny2xx {
		ok = is2xx
	}
	var rev int64
	var epoch string
	answered := false
	code, b, err := c.doWith(ctx, ep, http.MethodGet, path, nil, false, MaxDocument, ok, nil, nil, func(h http.Header) {
		answered = true
		rev, _ = strconv.ParseInt(h.Get(RevisionHeader), 10, 64)
		epoch = h.Get(EpochHeader)
	})
	if err != nil {
		if !answered {
			return nil, &NoAnswerError{Err: err}
		}
		return nil, err
	}
	if !ok(code) {
		return nil, &StatusError{Method: http.MethodGet, URL: ep.URL + path, Code: code}
	}
	apps, err := compat.DecodeApplications(b, compat.JSON)
	if err != nil {
		return nil, fmt.Errorf("GET %s%s: %w: %v", ep.URL, path, ErrBadResponse, err)
	}
	apps.Revision = max(rev, 0)
	if apps.Revision > 0 {
		apps.Epoch = epoch
	}
	return apps, nil
}

// PostBatch sends a replication batch (POST peerreplication/batch/) and
// returns the peer's answers, one per item. A status outside 2xx is a
// *StatusError; an undecodable body an ErrBadResponse.
func (c *Client) PostBatch(ctx context.Context, ep Endpoint, items []compat.ReplicationItem) ([]compat.ReplicationResponse, error) {
	const path = "peerreplication/batch/"
	body := compat.AppendReplicationList(nil, items)
	code, b, err := c.do(ctx, ep, http.MethodPost, path, body, c.cfg.CompressBatches, MaxBody, is2xx)
	if err != nil {
		return nil, err
	}
	if code < 200 || code > 299 {
		return nil, &StatusError{Method: http.MethodPost, URL: ep.URL + path, Code: code}
	}
	rs, err := compat.DecodeReplicationResponses(b)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadResponse, err)
	}
	return rs, nil
}

// Register registers an instance as its own client does (POST
// apps/{APP}); anything but 204 is a *StatusError.
func (c *Client) Register(ctx context.Context, ep Endpoint, v *registry.LeaseView) error {
	path := "apps/" + url.PathEscape(v.Instance.App)
	code, _, err := c.do(ctx, ep, http.MethodPost, path, compat.AppendInstance(nil, compat.JSON, v), false, MaxBody, is(http.StatusNoContent))
	if err != nil {
		return err
	}
	if code != http.StatusNoContent {
		return &StatusError{Method: http.MethodPost, URL: ep.URL + path, Code: code}
	}
	return nil
}

// Renew sends an instance's heartbeat as its own client does (PUT
// apps/{APP}/{id}?status=...&lastDirtyTimestamp=...). found is false when
// the server answered 404 (register again); any other status but 200 is a
// *StatusError.
func (c *Client) Renew(ctx context.Context, ep Endpoint, in *registry.Instance) (found bool, err error) {
	q := url.Values{"status": {string(in.Status)},
		"lastDirtyTimestamp": {strconv.FormatInt(in.LastDirtyTimestamp.UnixMilli(), 10)}}
	path := instancePath(in.App, in.ID())
	code, _, err := c.do(ctx, ep, http.MethodPut, path+"?"+q.Encode(), nil, false, MaxBody, is(http.StatusOK, http.StatusNotFound))
	switch {
	case err != nil:
		return false, err
	case code == http.StatusOK:
		return true, nil
	case code == http.StatusNotFound:
		return false, nil
	}
	return false, &StatusError{Method: http.MethodPut, URL: ep.URL + path, Code: code}
}

// Cancel removes an instance's registration (DELETE apps/{APP}/{id}); 200
// and 404 (already gone) succeed, anything else is a *StatusError.
func (c *Client) Cancel(ctx context.Context, ep Endpoint, app, id string) error {
	path := instancePath(app, id)
	code, _, err := c.do(ctx, ep, http.MethodDelete, path, nil, false, MaxBody, is(http.StatusOK, http.StatusNotFound))
	if err != nil {
		return err
	}
	if code != http.StatusOK && code != http.StatusNotFound {
		return &StatusError{Method: http.MethodDelete, URL: ep.URL + path, Code: code}
	}
	return nil
}

func instancePath(app, id string) string {
	return "apps/" + url.PathEscape(app) + "/" + url.PathEscape(id)
}

// Do sends one call to ep's URL + path (which may hold a query) with a
// JSON body (nil for none) and returns the status and the inflated body,
// at most MaxBody bytes. It accepts any status.
func (c *Client) Do(ctx context.Context, ep Endpoint, method, path string, body []byte) (int, []byte, error) {
	return c.do(ctx, ep, method, path, body, false, MaxBody, func(int) bool { return true })
}

// is accepts the codes given.
func is(codes ...int) func(int) bool {
	return func(code int) bool { return slices.Contains(codes, code) }
}

func is2xx(code int) bool { return code >= 200 && code <= 299 }

// do sends one call and returns the status and the inflated body, at most
// limit bytes. The body of an answer whose status accept refuses is not
// read (at most maxDiscard bytes are dropped): it is returned with a nil
// body and no error, for the caller's *StatusError.
func (c *Client) do(ctx context.Context, ep Endpoint, method, path string, body []byte, gz bool, limit int64, accept func(int) bool) (int, []byte, error) {
	return c.doWith(ctx, ep, method, path, body, gz, limit, accept, nil, nil, nil)
}

// doWith is do with extra request headers and, when sink is not nil, the
// accepted answer's inflated body handed to sink as it arrives (each read
// still under the read timeout) instead of being buffered; the returned
// body is then nil and sink's error is the call's. onHeader, when not nil,
// gets the answer's headers.
func (c *Client) doWith(ctx context.Context, ep Endpoint, method, path string, body []byte, gz bool, limit int64, accept func(int) bool, hdr http.Header, sink func(io.Reader) error, onHeader func(http.Header)) (int, []byte, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	w := &watchdog{d: c.cfg.ReadTimeout, cancel: cancel, afterFunc: c.afterFunc}
	defer w.stop()
	// Armed when a connection is got, the watchdog bounds the write of the
	// request too, as a socket timeout bounds a write: the headers and each
	// piece of the body (timedBody re-arms it) must leave within the read
	// timeout, so a peer that stops reading fails the call like one that
	// stops answering. It is disarmed whenever the transport gets a
	// connection, for a retry too (a GET on a kept-alive connection the
	// server closed): the dial and the TLS handshake are the connect
	// timeout's, not under the timer of the attempt before.
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		GetConn:      func(string) { w.disarm() },
		GotConn:      func(httptrace.GotConnInfo) { w.arm() },
		WroteRequest: func(httptrace.WroteRequestInfo) { w.arm() },
	})

	var rd io.Reader
	if body != nil {
		if gz {
			var buf bytes.Buffer
			zw := gzip.NewWriter(&buf)
			zw.Write(body) // writes to a bytes.Buffer cannot fail
			zw.Close()
			body = buf.Bytes()
		}
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, ep.URL+path, rd)
	if err != nil {
		return 0, nil, err
	}
	if body != nil {
		// Not a bytes.Reader, which the transport would write in one piece.
		req.Body = &timedBody{r: bytes.NewReader(body), w: w}
		req.GetBody = func() (io.ReadCloser, error) { return &timedBody{r: bytes.NewReader(body), w: w}, nil }
	}
	req.Header.Set("Accept", compat.ContentTypeJSON)
	if c.cfg.AcceptGzip {
		req.Header.Set("Accept-Encoding", "gzip")
	}
	req.Header.Set("User-Agent", c.cfg.UserAgent)
	// A Eureka server's identity (EurekaServerIdentity), which a peer's rate
	// limiter (eureka.server.rate-limiter-*) never throttles.
	req.Header.Set("DiscoveryIdentity-Name", "DefaultServer")
	req.Header.Set("DiscoveryIdentity-Version", "1.0")
	if body != nil {
		req.Header.Set("Content-Type", compat.ContentTypeJSON)
		if gz {
			req.Header.Set("Content-Encoding", "gzip")
		}
	}
	if ep.Authorization != "" {
		req.Header.Set("Authorization", ep.Authorization)
	}
	for k, vs := range hdr {
		req.Header[k] = vs
	}
	u := ep.URL + path
	resp, err := c.hc.Do(req)
	w.disarm()
	if err != nil {
		if w.fired.Load() {
			return 0, nil, fmt.Errorf("%s %s: %w", method, u, ErrReadTimeout)
		}
		return 0, nil, err
	}
	defer resp.Body.Close()
	if onHeader != nil {
		onHeader(resp.Header)
	}
	var r io.Reader = &timedReader{r: resp.Body, w: w}
	if !accept(resp.StatusCode) {
		io.Copy(io.Discard, io.LimitReader(r, maxDiscard))
		return resp.StatusCode, nil, nil
	}
	// A registry is ~20 times its gzip bytes (110 MB at 100k instances):
	// size the buffer once (up to maxPresize) instead of doubling it up to
	// there.
	guess := resp.ContentLength
	if strings.EqualFold(resp.Header.Get("Content-Encoding"), "gzip") {
		zr, err := kgzip.NewReader(r)
		if err != nil {
			if err = w.cause(err); err == ErrReadTimeout {
				return resp.StatusCode, nil, fmt.Errorf("%s %s: %w", method, u, err)
			}
			return resp.StatusCode, nil, fmt.Errorf("%s %s: %w: gzip: %v", method, u, ErrBadResponse, err)
		}
		defer zr.Close()
		r = zr
		guess *= 24
	}
	if sink != nil {
		lr := &limitedReader{r: r, n: limit}
		if err := sink(lr); err != nil {
			if lr.over {
				return resp.StatusCode, nil, fmt.Errorf("%s %s: %w: body larger than %d bytes", method, u, ErrBadResponse, limit)
			}
			return resp.StatusCode, nil, fmt.Errorf("%s %s: reading the body: %w", method, u, w.cause(err))
		}
		return resp.StatusCode, nil, nil
	}
	var buf bytes.Buffer
	if guess > 0 {
		buf.Grow(int(min(guess, limit+1, maxPresize) + bytes.MinRead))
	}
	if _, err := buf.ReadFrom(io.LimitReader(r, limit+1)); err != nil {
		return resp.StatusCode, nil, fmt.Errorf("%s %s: reading the body: %w", method, u, w.cause(err))
	}
	if int64(buf.Len()) > limit {
		return resp.StatusCode, nil, fmt.Errorf("%s %s: %w: body larger than %d bytes", method, u, ErrBadResponse, limit)
	}
	return resp.StatusCode, buf.Bytes(), nil
}

// watchdog is the read timeout of one call: armed while the call waits
// for bytes to leave or arrive (from the connection got to the headers,
// re-armed by each piece of the request body, and during each read of the
// answer's body), it cancels the call when it fires.
type watchdog struct {
	d         time.Duration
	cancel    context.CancelCauseFunc
	afterFunc func(time.Duration, func()) timer
	fired     atomic.Bool

	mu      sync.Mutex
	t       timer
	stopped bool
}

func (w *watchdog) arm() {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case w.stopped:
	case w.t == nil:
		w.t = w.afterFunc(w.d, w.fire)
	default:
		w.t.Reset(w.d)
	}
}

func (w *watchdog) disarm() {
	w.mu.Lock()
	if w.t != nil {
		w.t.Stop()
	}
	w.mu.Unlock()
}

func (w *watchdog) stop() {
	w.mu.Lock()
	w.stopped = true
	if w.t != nil {
		w.t.Stop()
	}
	w.mu.Unlock()
}

func (w *watchdog) fire() {
	w.fired.Store(true)
	w.cancel(ErrReadTimeout)
}

// cause is ErrReadTimeout for the error of a call the watchdog cancelled,
// else err.
func (w *watchdog) cause(err error) error {
	if w.fired.Load() {
		return ErrReadTimeout
	}
	return err
}

// timedReader holds each read of a body to the read timeout.
type timedReader struct {
	r io.Reader
	w *watchdog
}

func (t *timedReader) Read(p []byte) (int, error) {
	t.w.arm()
	n, err := t.r.Read(p)
	t.w.disarm()
	return n, err
}

// timedBody is a request body that re-arms the watchdog whenever the
// transport takes the next piece to write (at most 32 KiB): the previous
// piece has then left, so the timer measures a write without progress.
type timedBody struct {
	r *bytes.Reader
	w *watchdog
}

func (t *timedBody) Read(p []byte) (int, error) {
	t.w.arm()
	return t.r.Read(p[:min(len(p), 32<<10)])
}

func (t *timedBody) Close() error { return nil }

// tlsDial dials addr and makes the TLS handshake with the configuration
// configFor gives for its host, within timeout.
func tlsDial(d *net.Dialer, configFor func(string) *tls.Config, timeout time.Duration) func(context.Context, string, string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		raw, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		hctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		conn := tls.Client(raw, configFor(host))
		if err := conn.HandshakeContext(hctx); err != nil {
			raw.Close()
			return nil, err
		}
		return conn, nil
	}
}
