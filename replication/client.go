package replication

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	kgzip "github.com/klauspost/compress/gzip"

	"github.com/goreka/goreka/compat"
	"github.com/goreka/goreka/registry"
)

// maxResponseBytes caps what is read from a peer (a full registry of
// 100k instances is well below it).
const maxResponseBytes = 256 << 20

// maxRegistryBytes caps a peer's full registry (GET apps/, the start-up
// sync): about 1.1 GB of JSON at 1M instances, which maxResponseBytes cut
// short into "malformed JSON".
const maxRegistryBytes = 4 << 30

// peerClient is what the sender needs from a peer; the real one speaks
// HTTP, tests use fakes.
type peerClient interface {
	sendBatch(ctx context.Context, p *Peer, items []compat.ReplicationItem) ([]compat.ReplicationResponse, error)
	fetchApps(ctx context.Context, p *Peer) (*registry.Applications, error)
}

// StatusError is a peer's answer with an unexpected HTTP status.
type StatusError struct {
	Code int
	URL  string // scrubbed
}

func (e *StatusError) Error() string { return fmt.Sprintf("%s answered %d", e.URL, e.Code) }

// errBadResponse marks a body the sender could not use.
var errBadResponse = errors.New("unusable response")

type httpClient struct {
	c        *http.Client
	sync     *http.Client // GET apps/ of the start-up sync (newHTTPClient)
	ua       string
	compress bool
}

// syncTimeout bounds the start-up sync's GET apps/ in all. The peer's
// read timeout still bounds the wait for its headers (a hung peer costs one
// read timeout, as a batch would), but the whole call of a batch (connect +
// 2 x read) is far too short for a whole registry: 50 MB of gzip that
// inflate to 1.1 GB of JSON at 1M instances. The start-up context cancels
// it too.
const syncTimeout = 10 * time.Minute

// newHTTPClient builds the peer client. Java's socket read timeout has no
// exact Go twin: the read timeout bounds the wait for the response headers
// (where a slow peer spends its time), and the whole call is capped at
// connect + 2 x read so that a body that trickles in cannot hang a sender.
func newHTTPClient(cfg *Config) *httpClient {
	c := cfg.HTTPClient
	if c == nil {
		d := &net.Dialer{Timeout: cfg.PeerNodeConnectTimeout, KeepAlive: 30 * time.Second}
		c = &http.Client{
			Transport: &http.Transport{
				Proxy:                 http.ProxyFromEnvironment,
				DialContext:           d.DialContext,
				TLSHandshakeTimeout:   cfg.PeerNodeConnectTimeout,
				ResponseHeaderTimeout: cfg.PeerNodeReadTimeout,
				MaxIdleConnsPerHost:   cfg.PeerNodeMaxIdleConnsPerHost,
				IdleConnTimeout:       cfg.PeerNodeConnectionIdleTimeout,
				ForceAttemptHTTP2:     false,
			},
			Timeout: cfg.PeerNodeConnectTimeout + 2*cfg.PeerNodeReadTimeout,
			// Never follow a redirect to another host with our credentials.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
	}
	sync := c
	if cfg.HTTPClient == nil {
		sync = &http.Client{Transport: c.Transport, Timeout: syncTimeout, CheckRedirect: c.CheckRedirect}
	}
	return &httpClient{c: c, sync: sync, ua: cfg.UserAgent, compress: cfg.EnableReplicatedRequestCompression}
}

// do sends one request to a peer and returns the status and the
// (decompressed) body. A transport error is returned as is.
func (h *httpClient) do(ctx context.Context, p *Peer, method, path string, body []byte, gz bool) (int, []byte, error) {
	return h.doLimit(ctx, h.c, p, method, path, body, gz, maxResponseBytes)
}

// doLimit is do with client c, reading at most limit bytes of the
// (inflated) response.
func (h *httpClient) doLimit(ctx context.Context, c *http.Client, p *Peer, method, path string, body []byte, gz bool, limit int64) (int, []byte, error) {
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
	req, err := http.NewRequestWithContext(ctx, method, p.BaseURL+path, rd)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Accept", compat.ContentTypeJSON)
	req.Header.Set("Accept-Encoding", "gzip")
	req.Header.Set("User-Agent", h.ua)
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
	if p.auth != "" {
		req.Header.Set("Authorization", p.auth)
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	var r io.Reader = resp.Body
	// A peer's registry is ~20 times its gzip bytes (110 MB at 100k
	// instances): size the buffer once instead of doubling it up to there.
	guess := resp.ContentLength
	if resp.Header.Get("Content-Encoding") == "gzip" {
		// klauspost's reader inflates a start-up sync about twice as fast as
		// compress/gzip.
		zr, err := kgzip.NewReader(resp.Body)
		if err != nil {
			return resp.StatusCode, nil, fmt.Errorf("%w: gzip: %v", errBadResponse, err)
		}
		defer zr.Close()
		r = zr
		guess *= 24
	}
	var buf bytes.Buffer
	if guess > 0 {
		buf.Grow(int(min(guess, limit) + bytes.MinRead))
	}
	if _, err := buf.ReadFrom(io.LimitReader(r, limit)); err != nil {
		return resp.StatusCode, nil, err
	}
	return resp.StatusCode, buf.Bytes(), nil
}

func (h *httpClient) sendBatch(ctx context.Context, p *Peer, items []compat.ReplicationItem) ([]compat.ReplicationResponse, error) {
	body := compat.AppendReplicationList(nil, items)
	code, b, err := h.do(ctx, p, http.MethodPost, "peerreplication/batch/", body, h.compress)
	if err != nil {
		return nil, err
	}
	if code < 200 || code > 299 {
		return nil, &StatusError{Code: code, URL: p.URL}
	}
	rs, err := compat.DecodeReplicationResponses(b)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errBadResponse, err)
	}
	return rs, nil
}

func (h *httpClient) fetchApps(ctx context.Context, p *Peer) (*registry.Applications, error) {
	code, b, err := h.doLimit(ctx, h.sync, p, http.MethodGet, "apps/", nil, false, maxRegistryBytes)
	if err != nil {
		return nil, err
	}
	if code != http.StatusOK {
		return nil, &StatusError{Code: code, URL: p.URL + "apps/"}
	}
	apps, err := compat.DecodeApplications(b, compat.JSON)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errBadResponse, err)
	}
	return apps, nil
}

// failure classifies a failed batch as Eureka's ReplicationTaskProcessor
// does: congestion (503 or a timeout) and network errors are retried after
// a back-off; any other status and an unusable response drop the batch.
type failure uint8

const (
	failCongestion failure = iota + 1
	failNetwork
	failRejected
	failBadResponse
)

func (f failure) String() string {
	switch f {
	case failCongestion:
		return "congestion"
	case failNetwork:
		return "network"
	case failRejected:
		return "rejected"
	}
	return "bad response"
}

func (f failure) retry() bool { return f == failCongestion || f == failNetwork }

func classify(err error) failure {
	var se *StatusError
	if errors.As(err, &se) {
		if se.Code == http.StatusServiceUnavailable {
			return failCongestion
		}
		return failRejected
	}
	if errors.Is(err, errBadResponse) {
		return failBadResponse
	}
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		return failCongestion
	}
	return failNetwork
}
