package replication

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"

	"github.com/goreka/goreka/compat"
	"github.com/goreka/goreka/eurekahttp"
	"github.com/goreka/goreka/registry"
)

// peerClient is what the sender needs from a peer; the real one speaks
// HTTP, tests use fakes.
type peerClient interface {
	sendBatch(ctx context.Context, p *Peer, items []compat.ReplicationItem) ([]compat.ReplicationResponse, error)
	fetchApps(ctx context.Context, p *Peer) (*registry.Applications, error)
}

// StatusError is a peer's answer with an unexpected HTTP status.
type StatusError = eurekahttp.StatusError

// errBadResponse marks a body the sender could not use.
var errBadResponse = eurekahttp.ErrBadResponse

// httpClient is the peer client: eurekahttp's, with the peer timeouts.
// Its read timeout bounds every wait for progress on the socket
// (eurekahttp): each piece of a batch's write, the wait for the headers,
// each read of the body. A batch to a peer that stops reading or answering
// fails after one read timeout without progress, however large the batch;
// nothing bounds a batch in all (as in Java), so one that keeps moving,
// and a whole registry that keeps streaming, go to their end.
type httpClient struct {
	c           *eurekahttp.Client
	readTimeout time.Duration // PeerNodeReadTimeout, sent with the start-up sync (SyncHeader)
}

// syncTimeout bounds the start-up sync's GET apps/ of one peer in all: 50 MB
// of gzip that inflate to 1.1 GB of JSON at 1M instances stream for a
// while, but not for ever. The start-up context cancels it too.
const syncTimeout = 10 * time.Minute

func newHTTPClient(cfg *Config) *httpClient {
	return &httpClient{c: eurekahttp.New(eurekahttp.Config{
		ConnectTimeout:      cfg.PeerNodeConnectTimeout,
		ReadTimeout:         cfg.PeerNodeReadTimeout,
		MaxIdleConnsPerHost: cfg.PeerNodeMaxIdleConnsPerHost,
		IdleConnTimeout:     cfg.PeerNodeConnectionIdleTimeout,
		UserAgent:           cfg.UserAgent,
		AcceptGzip:          true,
		CompressBatches:     cfg.EnableReplicatedRequestCompression,
		HTTPClient:          cfg.HTTPClient,
		TLSConfigFor:        cfg.TLSConfigFor,
	}), readTimeout: cfg.PeerNodeReadTimeout}
}

// endpoint is where calls to p go, with p's credentials.
func (p *Peer) endpoint() eurekahttp.Endpoint {
	return eurekahttp.Endpoint{URL: p.BaseURL, Authorization: p.auth}
}

func (h *httpClient) sendBatch(ctx context.Context, p *Peer, items []compat.ReplicationItem) ([]compat.ReplicationResponse, error) {
	return h.c.PostBatch(ctx, p.endpoint(), items)
}

func (h *httpClient) fetchApps(ctx context.Context, p *Peer) (*registry.Applications, error) {
	ctx, cancel := context.WithTimeout(ctx, syncTimeout)
	defer cancel()
	return h.c.GetApplications(ctx, p.endpoint(), eurekahttp.Full)
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
