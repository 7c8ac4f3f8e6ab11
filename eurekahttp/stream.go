package eurekahttp

import (
	"context"
	"errors"
	"io"
	"net/http"
)

// StreamApplications GETs the full registry (apps/) as JSON and hands its
// inflated body to read as it arrives, so that a caller decodes while the
// bytes come instead of holding a whole registry (1.1 GB of JSON at 1M
// instances) first. hdr is added to the request (nil: none). Every wait
// for bytes is under the read timeout, as for GetApplications; the whole
// call only under ctx. Anything but 200 is a *StatusError and read is not
// called; read's error is returned wrapped (a body longer than
// MaxDocument is an ErrBadResponse).
func (c *Client) StreamApplications(ctx context.Context, ep Endpoint, hdr http.Header, read func(io.Reader) error) error {
	path := Full.path()
	ok := is(http.StatusOK)
	if c.cfg.AcceptAny2xx {
		ok = is2xx
	}
	code, _, err := c.doWith(ctx, ep, http.MethodGet, path, nil, false, MaxDocument, ok, hdr, read, nil)
	if err != nil {
		return err
	}
	if !ok(code) {
		return &StatusError{Method: http.MethodGet, URL: ep.URL + path, Code: code}
	}
	return nil
}

// errTooLong ends a streamed body at its limit.
var errTooLong = errors.New("body too long")

// limitedReader is io.LimitReader that fails, instead of ending, past n.
type limitedReader struct {
	r    io.Reader
	n    int64
	over bool
}

func (l *limitedReader) Read(p []byte) (int, error) {
	if l.n < 0 {
		l.over = true
		return 0, errTooLong
	}
	if int64(len(p)) > l.n+1 {
		p = p[:l.n+1]
	}
	n, err := l.r.Read(p)
	l.n -= int64(n)
	if l.n < 0 {
		l.over = true
		return n, errTooLong
	}
	return n, err
}
