package replication

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

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
	hdr := http.Header{SyncHeader: {SyncStream}}
	return h.c.StreamApplications(ctx, p.endpoint(), hdr, func(r io.Reader) error {
		return decodeAppsStream(r, syncBatch, batch)
	})
}

// syncStreamFrom registers a peer's registry batch by batch as it is
// decoded; see syncFrom.
func (r *Replicator) syncStreamFrom(ctx context.Context, s appStreamer, p *peerState, copied map[registry.InstanceKey]bool) (int, error) {
	n := 0
	err := s.streamApps(ctx, &p.peer, func(ins []*registry.Instance) error {
		res := r.reg.RegisterAll(ins, true)
		for _, f := range res.Refused {
			p.log.Debug("skipping synced instance", "app", ins[f.Index].App, "err", f.Err)
		}
		for _, stored := range res.Stored {
			copied[registry.InstanceKey{App: strings.ToUpper(stored.App), ID: stored.ID()}] = true
		}
		n += len(res.Stored)
		return ctx.Err()
	})
	return n, err
}

// decodeAppsStream reads a JSON registry document ({"applications":
// {"application":[{"name":..,"instance":[..]},..], ..}}, members in any
// order, a single object where an array belongs, as compat's lenient
// decoder takes it) from r and hands its instances to emit in batches of
// up to size, decoding each with compat.DecodeInstance while the rest of
// the document is still arriving. Each instance's leaseInfo durations are
// in its LeaseInfo (a registration's). A malformed document is an
// eurekahttp.ErrBadResponse; emit's error stops the decode and is returned.
func decodeAppsStream(r io.Reader, size int, emit func([]*registry.Instance) error) error {
	d := &appsDecoder{dec: json.NewDecoder(r), size: size, emit: emit}
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
	dec   *json.Decoder
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
	d.batch = make([]*registry.Instance, 0, d.size) // the registry owns the last one
	return err
}

// object walks the members of an object, whose '{' is next or, when
// opened, was read already, calling member for each key (which must
// consume the value).
func (d *appsDecoder) object(opened bool, member func(key string) error) error {
	if !opened {
		t, err := d.dec.Token()
		if err != nil {
			return err
		}
		if t != json.Delim('{') {
			return fmt.Errorf("%v where an object belongs", t)
		}
	}
	for d.dec.More() {
		t, err := d.dec.Token()
		if err != nil {
			return err
		}
		key, ok := t.(string)
		if !ok {
			return fmt.Errorf("object key %v", t)
		}
		if err := member(key); err != nil {
			return err
		}
	}
	_, err := d.dec.Token() // '}'
	return err
}

func (d *appsDecoder) skip() error {
	var raw json.RawMessage
	return d.dec.Decode(&raw)
}

// many reads one value that is an array of objects, a single object or
// null, calling elem for each object (opened: its '{' was read).
func (d *appsDecoder) many(elem func(opened bool) error) error {
	t, err := d.dec.Token()
	if err != nil {
		return err
	}
	switch t {
	case nil:
		return nil
	case json.Delim('{'):
		return elem(true)
	case json.Delim('['):
		for d.dec.More() {
			if err := elem(false); err != nil {
				return err
			}
		}
		_, err := d.dec.Token() // ']'
		return err
	}
	return fmt.Errorf("%v where an array belongs", t)
}

func (d *appsDecoder) document() error {
	return d.object(false, func(key string) error {
		if !strings.EqualFold(key, "applications") {
			return d.skip()
		}
		return d.object(false, func(key string) error {
			if !strings.EqualFold(key, "application") {
				return d.skip()
			}
			return d.many(d.application)
		})
	})
}

func (d *appsDecoder) application(opened bool) error {
	return d.object(opened, func(key string) error {
		if !strings.EqualFold(key, "instance") {
			return d.skip()
		}
		return d.many(d.instance)
	})
}

// instance decodes one instance object through compat.DecodeInstance (the
// register body's decoder, as lenient), wrapped as a register body.
func (d *appsDecoder) instance(opened bool) error {
	d.buf = append(d.buf[:0], `{"instance":`...)
	if opened {
		// A single instance where an array belongs: its members one by one.
		d.buf = append(d.buf, '{')
		n := 0
		err := d.object(true, func(key string) error {
			var raw json.RawMessage
			if err := d.dec.Decode(&raw); err != nil {
				return err
			}
			if n > 0 {
				d.buf = append(d.buf, ',')
			}
			n++
			k, _ := json.Marshal(key)
			d.buf = append(append(append(d.buf, k...), ':'), raw...)
			return nil
		})
		if err != nil {
			return err
		}
		d.buf = append(d.buf, '}')
	} else {
		var raw json.RawMessage
		if err := d.dec.Decode(&raw); err != nil {
			return err
		}
		d.buf = append(d.buf, raw...)
	}
	d.buf = append(d.buf, '}')
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
