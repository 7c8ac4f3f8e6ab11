package replication

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/goreka/goreka/compat"
	"github.com/goreka/goreka/eurekahttp"
	"github.com/goreka/goreka/registry"
)

// SyncHeader is the request header of the start-up sync's GET apps/ that
// asks a goreka peer to stream its registry from one registry view as it
// encodes it (server: headers at once, whatever its cache holds), rather
// than serve its response cache, which may hold no built copy (a cold
// build of seconds at 1M instances, past the read timeout that bounds the
// wait for the headers) or an older one (instances cancelled since: ghosts
// on the joining node). A stock Eureka server ignores it and serves its
// cache, which its timer keeps built.
const SyncHeader = "X-Goreka-Sync"

// SyncStream is SyncHeader's value.
const SyncStream = "stream"

// SyncReadTimeoutHeader carries the joiner's peer read timeout in
// milliseconds with the start-up sync, which the server's keep-alive while
// it takes the registry view must beat (SyncKeepAlive). A header of its
// own, so that a server that knows only SyncStream still streams.
const SyncReadTimeoutHeader = "X-Goreka-Sync-Read-Timeout-Ms"

// SyncKeepAlive is how often a server streaming its registry to a joining
// peer sends white space until the registry view is taken, given
// SyncReadTimeoutHeader's value: a third of that read timeout (Spring
// configurations carry 200 ms), at most a second, at least 10 ms.
func SyncKeepAlive(readTimeoutMs string) time.Duration {
	const most, least = time.Second, 10 * time.Millisecond
	ms, err := strconv.ParseInt(strings.TrimSpace(readTimeoutMs), 10, 64)
	if err != nil || ms <= 0 || ms > int64(time.Hour/time.Millisecond) {
		return most
	}
	return min(most, max(least, time.Duration(ms)*time.Millisecond/3))
}

// syncHeaders are the start-up sync's headers for a joiner whose read
// timeout is d.
func syncHeaders(d time.Duration) http.Header {
	h := http.Header{SyncHeader: {SyncStream}}
	if ms := d.Milliseconds(); ms > 0 {
		h.Set(SyncReadTimeoutHeader, strconv.FormatInt(ms, 10))
	}
	return h
}

// syncBatch is how many instances of a peer's registry go into the
// registry in one RegisterAll: the write lock is taken once per batch.
const syncBatch = 1024

// appStreamer is a peer client that decodes a peer's registry while it
// arrives; the HTTP client is one, test fakes need not be (fetchApps).
type appStreamer interface {
	streamApps(ctx context.Context, p *Peer, batch func([]*registry.Instance) error) error
}

func (h *httpClient) streamApps(ctx context.Context, p *Peer, batch func([]*registry.Instance) error) error {
	ctx, cancel := context.WithTimeout(ctx, syncTimeout)
	defer cancel()
	hdr := syncHeaders(h.readTimeout)
	return h.c.StreamApplications(ctx, p.endpoint(), hdr, func(r io.Reader) error {
		return decodeAppsStream(r, syncBatch, batch)
	})
}

// syncStreamFrom registers a peer's registry batch by batch as it is
// decoded; see syncFrom. Registering runs beside the decode (one batch
// ahead at most), so that a join takes the longer of the two, not the sum.
func (r *Replicator) syncStreamFrom(ctx context.Context, s appStreamer, p *peerState, copied map[registry.InstanceKey]bool) (int, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	batches := make(chan []*registry.Instance, 1)
	n := 0
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ins := range batches {
			res := r.reg.RegisterAll(ins, true)
			for _, f := range res.Refused {
				p.log.Debug("skipping synced instance", "app", ins[f.Index].App, "err", f.Err)
			}
			for _, stored := range res.Stored {
				copied[registry.InstanceKey{App: strings.ToUpper(stored.App), ID: stored.ID()}] = true
			}
			n += len(res.Stored)
		}
	}()
	err := s.streamApps(ctx, &p.peer, func(ins []*registry.Instance) error {
		select {
		case batches <- ins:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	close(batches)
	<-done
	return n, err
}

// decodeAppsStream reads a JSON registry document ({"applications":
// {"application":[{"name":..,"instance":[..]},..], ..}}, members in any
// order, a single object where an array belongs and null for none, as
// compat's lenient decoder takes them) from r and hands its instances to
// emit in batches of up to size, decoding each with compat.DecodeInstance
// while the rest of the document is still arriving. Each instance's
// leaseInfo durations are in its LeaseInfo (a registration's). A malformed
// document is an eurekahttp.ErrBadResponse; emit's error stops the decode
// and is returned as it is.
//
// The document is walked by a small scanner of its own (jsonStream) that
// finds each instance's bytes without decoding them: encoding/json's
// Decoder spent a third of a join's CPU finding them.
func decodeAppsStream(r io.Reader, size int, emit func([]*registry.Instance) error) error {
	d := &appsDecoder{s: &jsonStream{r: r, buf: make([]byte, 0, 256<<10)}, size: size, emit: emit}
	if err := d.document(); err != nil {
		var ee emitError
		if errors.As(err, &ee) {
			return ee.err
		}
		return fmt.Errorf("%w: registry document: %v", eurekahttp.ErrBadResponse, err)
	}
	return d.flush()
}

// emitError carries emit's error through the decoder unchanged.
type emitError struct{ err error }

func (e emitError) Error() string { return e.err.Error() }

type appsDecoder struct {
	s     *jsonStream
	size  int
	emit  func([]*registry.Instance) error
	batch []*registry.Instance
	buf   []byte
}

func (d *appsDecoder) flush() error {
	if len(d.batch) == 0 {
		return nil
	}
	err := d.emit(d.batch)
	d.batch = make([]*registry.Instance, 0, d.size) // emit owns the last one
	return err
}

// object walks the members of the object that is next, calling member for
// each key (which must consume the value).
func (d *appsDecoder) object(member func(key string) error) error {
	if err := d.s.expect('{'); err != nil {
		return err
	}
	if c, err := d.s.peek(); err != nil {
		return err
	} else if c == '}' {
		d.s.i++
		return nil
	}
	for {
		key, err := d.s.key()
		if err != nil {
			return err
		}
		if err := d.s.expect(':'); err != nil {
			return err
		}
		if err := member(key); err != nil {
			return err
		}
		c, err := d.s.peek()
		if err != nil {
			return err
		}
		d.s.i++
		switch c {
		case ',':
		case '}':
			return nil
		default:
			return fmt.Errorf("%q after an object member", c)
		}
	}
}

// many reads one value that is an array of objects, a single object or
// null, calling elem for each object.
func (d *appsDecoder) many(elem func() error) error {
	c, err := d.s.peek()
	if err != nil {
		return err
	}
	switch c {
	case 'n':
		_, err := d.s.value()
		return err
	case '{':
		return elem()
	case '[':
	default:
		return fmt.Errorf("%q where an array belongs", c)
	}
	d.s.i++
	if c, err := d.s.peek(); err != nil {
		return err
	} else if c == ']' {
		d.s.i++
		return nil
	}
	for {
		if err := elem(); err != nil {
			return err
		}
		c, err := d.s.peek()
		if err != nil {
			return err
		}
		d.s.i++
		switch c {
		case ',':
		case ']':
			return nil
		default:
			return fmt.Errorf("%q after an array element", c)
		}
	}
}

func (d *appsDecoder) skip() error {
	_, err := d.s.value()
	return err
}

func (d *appsDecoder) document() error {
	if err := d.object(func(key string) error {
		if !strings.EqualFold(key, "applications") {
			return d.skip()
		}
		return d.object(func(key string) error {
			if !strings.EqualFold(key, "application") {
				return d.skip()
			}
			return d.many(d.application)
		})
	}); err != nil {
		return err
	}
	if c, err := d.s.peek(); err != io.EOF {
		return fmt.Errorf("%q after the document (%v)", c, err)
	}
	return nil
}

func (d *appsDecoder) application() error {
	return d.object(func(key string) error {
		if !strings.EqualFold(key, "instance") {
			return d.skip()
		}
		return d.many(d.instance)
	})
}

// instance decodes one instance object through compat.DecodeInstance (the
// register body's decoder, as lenient), wrapped as a register body.
func (d *appsDecoder) instance() error {
	if c, err := d.s.peek(); err != nil {
		return err
	} else if c != '{' {
		return fmt.Errorf("%q where an instance belongs", c)
	}
	raw, err := d.s.value()
	if err != nil {
		return err
	}
	d.buf = append(append(append(d.buf[:0], `{"instance":`...), raw...), '}')
	in, err := compat.DecodeInstance(d.buf, compat.JSON)
	if err != nil {
		return err
	}
	d.batch = append(d.batch, in)
	if len(d.batch) >= d.size {
		if err := d.flush(); err != nil {
			return emitError{err}
		}
	}
	return nil
}

// jsonStream finds JSON values in a stream without decoding them: the
// bytes of a value (checked only for balance and strings; its decoder
// checks the rest), object keys, and the punctuation between.
type jsonStream struct {
	r   io.Reader
	buf []byte // unread bytes are buf[i:]
	i   int
	err error // the reader's, once it failed or ended
}

// fill reads more, keeping buf[i:]; false once the reader is done.
func (s *jsonStream) fill() bool {
	if s.err != nil {
		return false
	}
	if s.i > 0 {
		n := copy(s.buf, s.buf[s.i:])
		s.buf, s.i = s.buf[:n], 0
	}
	if len(s.buf) == cap(s.buf) {
		s.buf = append(s.buf, make([]byte, len(s.buf))...)[:len(s.buf)]
	}
	for {
		n, err := s.r.Read(s.buf[len(s.buf):cap(s.buf)])
		s.buf = s.buf[:len(s.buf)+n]
		if err != nil {
			s.err = err
		}
		if n > 0 || err != nil {
			return n > 0
		}
	}
}

// end is the error of a document that stops short.
func (s *jsonStream) end() error {
	if s.err == nil || s.err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return s.err
}

// peek skips white space and returns the next byte without consuming it;
// io.EOF at a clean end of the stream.
func (s *jsonStream) peek() (byte, error) {
	for {
		for s.i < len(s.buf) {
			switch c := s.buf[s.i]; c {
			case ' ', '\t', '\n', '\r':
				s.i++
			default:
				return c, nil
			}
		}
		if !s.fill() {
			if s.err == io.EOF {
				return 0, io.EOF
			}
			return 0, s.end()
		}
	}
}

func (s *jsonStream) expect(c byte) error {
	got, err := s.peek()
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	if err != nil {
		return err
	}
	if got != c {
		return fmt.Errorf("%q where %q belongs", got, c)
	}
	s.i++
	return nil
}

// key reads an object key.
func (s *jsonStream) key() (string, error) {
	if c, err := s.peek(); err != nil {
		return "", s.end()
	} else if c != '"' {
		return "", fmt.Errorf("%q where a key belongs", c)
	}
	raw, err := s.value()
	if err != nil {
		return "", err
	}
	if !bytes.ContainsRune(raw, '\\') {
		return string(raw[1 : len(raw)-1]), nil
	}
	var k string
	err = json.Unmarshal(raw, &k)
	return k, err
}

// value returns the bytes of the next value, valid until the next call.
func (s *jsonStream) value() ([]byte, error) {
	first, err := s.peek()
	if err != nil {
		return nil, s.end()
	}
	depth, inStr, esc := 0, false, false
	j := s.i
	for {
		if j >= len(s.buf) {
			off := j - s.i
			if !s.fill() {
				if depth == 0 && !inStr && first != '"' && s.err == io.EOF {
					break // a scalar at the very end
				}
				return nil, s.end()
			}
			j = s.i + off
			continue
		}
		c := s.buf[j]
		if inStr {
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				inStr = false
				if depth == 0 {
					j++
					goto done
				}
			}
			j++
			continue
		}
		switch c {
		case '"':
			inStr = true
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				goto done // ends a scalar
			}
			depth--
			if depth == 0 {
				j++
				goto done
			}
		case ',', ' ', '\t', '\n', '\r':
			if depth == 0 {
				goto done
			}
		}
		j++
	}
done:
	if j == s.i {
		return nil, fmt.Errorf("no value at %q", first)
	}
	raw := s.buf[s.i:j]
	s.i = j
	return raw, nil
}
