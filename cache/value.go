package cache

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"hash/crc32"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/klauspost/compress/flate"
)

// gzipLevel is the compression level of the stored gzip bytes and of every
// Segment, with github.com/klauspost/compress/flate, chosen by measurement.
//
// document's BenchmarkBuildAll (goreka-bench's fleet shape, registered on a
// fake clock so sizes repeat; 11 MB of JSON at 10k instances, built as chunks
// of 256+ instances), against the previous encoder, compress/gzip level 2
// over the whole document, on the shared 2-core build machine:
//
//	compressor                 gzip bytes, 10k    full build, 10k (same run)
//	compress/gzip 2, whole        594 KB             39 ms
//	klauspost 6, chunks           501 KB (0.84x)     50 ms
//	klauspost 7, chunks           ~8 % more than 6   68 ms
//	klauspost 8, chunks           467 KB (0.79x)     58 ms
//	klauspost 9, chunks           451 KB (0.76x)    135-163 ms
//
// Chunks compress a little worse than one stream (each starts without
// history); level 8 wins that back and 21 % more. In the scale ladder,
// level 6 chunks were 1.02x the Java server's bytes at 100k (level-6 zlib
// over one stream, 5034 KiB); level 8 is 7 % below level 6. A build of
// every chunk costs about 1.5x the old whole encode, but such builds are
// now rare (loading, a restart storm): after a change only the chunks that
// changed are compressed, 40x less work than the whole document at 100k.
const gzipLevel = 8

// Value is one cached response: the encoded payload, its gzip form and its ETag.
// A Value is immutable once built; readers share it and must not modify its slices.
type Value struct {
	// Plain is the encoded payload; nil when NotFound, and nil for a payload
	// larger than MaxPlainKept, which is kept gzipped only: use WritePlain.
	Plain []byte
	// PlainLen is the length of the encoded payload.
	PlainLen int
	// gz is the payload as one gzip member (nil when NotFound), kept as the
	// pieces it was built from, in order: a loader's segments are shared, not
	// copied, so a rebuild that keeps most of a document's segments allocates
	// what it re-encoded and not the whole document again (50 MB of gzip at
	// 1M instances, at every housekeeping refresh). WriteGzip writes them in
	// turn; Gzip joins them.
	gz [][]byte
	// gzLen is the member's length, the sum of gz's.
	gzLen int
	// ETag is a quoted strong entity tag, the xxhash of Plain ("" when NotFound).
	ETag string
	// NotFound records that the loader reported "no such application". Like Eureka, which
	// caches the empty payload, the answer is cached too, so the server answers 404 from cache.
	NotFound bool
	// Built is when the loader finished, by Config.Now.
	Built time.Time
	// Revision is the registry revision the payload is exactly, when its
	// loader said (RevisionWriter); 0 when unknown. A payload served while
	// its rebuild runs is the previous revision's, never a mix.
	Revision int64
	// revHeader is Revision as a header value, formatted once.
	revHeader []string
	// segmented: the payload holds a loader's kept segments (Cache.markAged).
	segmented bool
	// due: when the housekeeping refreshes a segmented payload, its earliest
	// segment's Segment.Due.
	due time.Time
}

// Due is when the housekeeping refreshes the payload for age: the earliest
// Segment.Due of its segments (a segment without one counts Reuse/2 after
// its Built). Zero for a payload without segments, which is rebuilt at
// AutoExpiration.
func (v *Value) Due() time.Time { return v.due }

// GzipLen is the length of the gzip member (Content-Length); 0 when NotFound.
func (v *Value) GzipLen() int { return v.gzLen }

// WriteGzip writes the gzip member to w, its pieces one after another: the
// bytes are those Gzip returns, without joining them. Pieces smaller than
// writeChunk are gathered into writes of up to writeChunk bytes (a pooled
// buffer): a response writer passes each write of a few KB to its socket
// as one system call, and a document's segments are about 12 KB each.
// It returns the bytes written and the first error.
func (v *Value) WriteGzip(w io.Writer) (int64, error) {
	if len(v.gz) == 1 {
		n, err := w.Write(v.gz[0])
		return int64(n), err
	}
	bp := writeBufs.Get().(*[]byte)
	defer writeBufs.Put(bp)
	buf := (*bp)[:0]
	var n int64
	flush := func() error {
		if len(buf) == 0 {
			return nil
		}
		m, err := w.Write(buf)
		n += int64(m)
		buf = buf[:0]
		return err
	}
	for _, p := range v.gz {
		if len(buf)+len(p) > writeChunk {
			if err := flush(); err != nil {
				return n, err
			}
		}
		if len(p) >= writeChunk {
			m, err := w.Write(p)
			n += int64(m)
			if err != nil {
				return n, err
			}
			continue
		}
		buf = append(buf, p...)
	}
	return n, flush()
}

// writeChunk is the size of WriteGzip's writes of gathered pieces. Each
// full fetch being written holds one such buffer for as long as its client
// is slow to read (the joined document it replaced was shared by every
// fetch): 64 KB keeps a thousand slow readers at 64 MB while still writing
// five or so ~12 KB segments per system call.
const writeChunk = 64 << 10

var writeBufs = sync.Pool{New: func() any { b := make([]byte, 0, writeChunk); return &b }}

// Gzip returns the gzip member as one slice: shared (do not modify) when it
// is one piece, a new copy otherwise. Serving uses WriteGzip; this is for
// tests and for a caller that needs the bytes whole. nil when NotFound.
func (v *Value) Gzip() []byte {
	switch len(v.gz) {
	case 0:
		return nil
	case 1:
		return v.gz[0]
	}
	b := make([]byte, 0, v.gzLen)
	for _, p := range v.gz {
		b = append(b, p...)
	}
	return b
}

// gzipReader reads the gzip member's bytes, piece after piece.
func (v *Value) gzipReader() io.Reader {
	if len(v.gz) == 1 {
		return bytes.NewReader(v.gz[0])
	}
	rs := make([]io.Reader, len(v.gz))
	for i, p := range v.gz {
		rs[i] = bytes.NewReader(p)
	}
	return io.MultiReader(rs...)
}

// RevisionHeader is Revision formatted as a header's values (shared: do
// not modify), nil when unknown, so that serving it allocates nothing.
func (v *Value) RevisionHeader() []string { return v.revHeader }

// RevisionWriter is implemented by the writer the cache hands a
// StreamLoader: a loader that builds a payload from one registry view
// (document's full registry and delta) records that view's revision.
type RevisionWriter interface {
	SetRevision(int64)
}

// NotModified reports whether the If-None-Match request header value matches the value's
// ETag, so the server may answer 304 Not Modified. It uses the weak comparison of RFC 9110
// §13.1.2 (a W/ prefix is ignored) and accepts a comma-separated list and "*".
// A NotFound value never matches.
func (v *Value) NotModified(ifNoneMatch string) bool {
	if v == nil || v.NotFound || v.ETag == "" {
		return false
	}
	for tag := range strings.SplitSeq(ifNoneMatch, ",") {
		tag = strings.TrimSpace(tag)
		if tag == "*" {
			return true
		}
		tag = strings.TrimPrefix(tag, "W/")
		if tag == v.ETag {
			return true
		}
	}
	return false
}

// etagOf is the quoted hex xxhash of payload.
func etagOf(payload []byte) string {
	return etagFromSum(xxhash.Sum64(payload))
}

// etagFromSum formats an xxhash sum as a quoted strong ETag.
func etagFromSum(h uint64) string {
	var buf [2 + 16]byte
	b := append(buf[:0], '"')
	const hexdigits = "0123456789abcdef"
	for shift := 60; shift >= 0; shift -= 4 {
		b = append(b, hexdigits[(h>>uint(shift))&0xf])
	}
	b = append(b, '"')
	return string(b)
}

// MaxPlainKept is the largest payload kept uncompressed beside its gzip
// form. The full registry and the delta after a burst are ten to fifteen
// times larger than their gzip bytes (about 9 MiB plain at 10k instances,
// 90 MiB at 100k), and every client that matters asks for gzip: Spring's
// RestTemplate/RestClient transports, Node and Python clients. Keeping only
// the gzip bytes of those payloads divides the cache's memory by about ten;
// the rare client without Accept-Encoding: gzip (the Netflix Jersey 3 client,
// curl) gets the payload decompressed as it is sent.
const MaxPlainKept = 256 << 10

// WritePlain writes the uncompressed payload to w.
func (v *Value) WritePlain(w io.Writer) error {
	if v.Plain != nil || v.NotFound {
		_, err := w.Write(v.Plain)
		return err
	}
	zr, err := gzip.NewReader(v.gzipReader())
	if err != nil {
		return err
	}
	_, err = io.Copy(w, zr)
	return err
}

// buildValue turns a loader result into a Value, compressing at level.
func buildValue(payload []byte, found bool, level int, now time.Time) (*Value, error) {
	return streamValue(func(w io.Writer) (bool, error) {
		if !found {
			return false, nil
		}
		_, err := w.Write(payload)
		return true, err
	}, level, func() time.Time { return now }, 0, 0, false)
}

// valueWriter receives a payload as a stream of plain bytes and
// precompressed segments: it writes one gzip member (plain pieces
// compressed as they come, segments copied in), keeps the CRC-32, the
// length and the ETag hash, and keeps the plain bytes up to MaxPlainKept.
//
// The ETag of a payload written as plain bytes only is the xxhash of those
// bytes; a segment contributes its own xxhash and length instead of its
// bytes, which keeps the tag strong (it changes whenever a byte does)
// without the plain bytes at hand.
type valueWriter struct {
	out     bytes.Buffer // the member's bytes since the last segment
	parts   [][]byte     // the member's bytes before that, in order
	size    int          // total length of parts
	level   int
	fw      *flate.Writer // nil until plain bytes come
	pending bool          // fw holds plain bytes not yet flushed
	crc     uint32
	hash    *xxhash.Digest
	plain   []byte
	keep    bool
	segs    bool // a segment was written
	n       int64
	oldest  time.Time // oldest segment's Built
	due     time.Time // earliest segment's Due
	now     func() time.Time
	reuse   time.Duration
	rev     int64 // SetRevision's
	// change: a rebuild after a change (ChangeWriter), with maxAge the age
	// up to which a segment may be kept in this build.
	change bool
	maxAge time.Duration
}

// ForChange implements ChangeWriter.
func (vw *valueWriter) ForChange() (time.Duration, bool) { return vw.maxAge, vw.change }

// SetRevision implements RevisionWriter.
func (vw *valueWriter) SetRevision(rev int64) { vw.rev = rev }

// Now implements SegmentWriter.
func (vw *valueWriter) Now() time.Time { return vw.now() }

// Reuse implements SegmentWriter.
func (vw *valueWriter) Reuse() time.Duration { return vw.reuse }

func (vw *valueWriter) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	vw.n += int64(len(p))
	vw.hash.Write(p)
	vw.crc = crc32.Update(vw.crc, crc32.IEEETable, p)
	if vw.keep {
		if len(vw.plain)+len(p) <= MaxPlainKept {
			vw.plain = append(vw.plain, p...)
		} else {
			vw.keep, vw.plain = false, nil
		}
	}
	if vw.fw == nil {
		vw.fw = getFlate(&vw.out, vw.level)
	} else if !vw.pending {
		// After a segment: start over without history, the bytes before
		// are not the compressor's.
		vw.fw.Reset(&vw.out)
	}
	vw.pending = true
	return vw.fw.Write(p)
}

// WriteSegment implements SegmentWriter.
func (vw *valueWriter) WriteSegment(s *Segment) error {
	if s.Len == 0 {
		return nil
	}
	if vw.pending {
		if err := vw.fw.Flush(); err != nil {
			return err
		}
		vw.pending = false
	}
	// Segments are immutable: keep a reference, copy once in close.
	if vw.out.Len() > 0 {
		vw.parts = append(vw.parts, bytes.Clone(vw.out.Bytes()))
		vw.size += vw.out.Len()
		vw.out.Reset()
	}
	vw.parts = append(vw.parts, s.Deflate)
	vw.size += len(s.Deflate)
	vw.crc = crc32Combine(vw.crc, s.CRC, s.Len)
	var tag [16]byte
	binary.LittleEndian.PutUint64(tag[:8], s.Hash)
	binary.LittleEndian.PutUint64(tag[8:], uint64(s.Len))
	vw.hash.Write(tag[:])
	vw.n += s.Len
	vw.segs, vw.keep, vw.plain = true, false, nil
	if vw.oldest.IsZero() || s.Built.Before(vw.oldest) {
		vw.oldest = s.Built
	}
	due := s.Due
	if due.IsZero() {
		due = s.Built.Add(vw.reuse / 2)
	}
	// Whatever the loader says, a segment is due by the age this build may
	// keep it to, so the AutoExpiration bound (Cache.markAged) does not
	// rest on each loader's Due coming early enough.
	if by := s.Built.Add(vw.maxAge); vw.maxAge > 0 && by.Before(due) {
		due = by
	}
	if vw.due.IsZero() || due.Before(vw.due) {
		vw.due = due
	}
	return nil
}

// close ends the member and returns its pieces in order and their total
// length. The segments are shared, not copied: a rebuild that keeps most
// of a document allocates only what it encoded. A member smaller than
// joinBelow is joined into one piece (cheap, and one write per read).
func (vw *valueWriter) close() ([][]byte, int, error) {
	if vw.pending {
		if err := vw.fw.Close(); err != nil {
			return nil, 0, err
		}
	} else {
		vw.out.Write(finalBlock)
	}
	if vw.fw != nil {
		putFlate(vw.fw, vw.level)
		vw.fw = nil
	}
	last := appendGzipTrailer(vw.out.Bytes(), vw.crc, vw.n)
	size := vw.size + len(last)
	if len(vw.parts) == 0 {
		return [][]byte{last}, size, nil
	}
	if size < joinBelow {
		gz := make([]byte, 0, size)
		for _, p := range vw.parts {
			gz = append(gz, p...)
		}
		return [][]byte{append(gz, last...)}, size, nil
	}
	// The tail is a few bytes in a buffer that may have grown for a larger
	// piece before: keep a copy of its length.
	return append(vw.parts, bytes.Clone(last)), size, nil
}

// joinBelow is the size under which a segmented gzip member is kept as
// one slice.
const joinBelow = 64 << 10

// release returns the compressor of an abandoned payload.
func (vw *valueWriter) release() {
	if vw.fw != nil {
		putFlate(vw.fw, vw.level)
		vw.fw = nil
	}
}

// streamValue builds a Value from what write writes, compressing at level;
// now is read once the payload is complete. A payload with segments is as
// old as its oldest segment (Value.Built), so the cache's expiry bounds the
// age of every piece.
//
// autoExpiration is the cache's; 0 lets a loader reuse no segment. change
// marks a rebuild after a change, maxAge the age up to which the build may
// keep a segment (ChangeWriter).
func streamValue(write func(io.Writer) (bool, error), level int, now func() time.Time, autoExpiration, maxAge time.Duration, change bool) (*Value, error) {
	vw := &valueWriter{level: level, hash: xxhash.New(), keep: true, now: now, reuse: autoExpiration * 3 / 4, change: change, maxAge: maxAge}
	vw.out.Write(gzipHeader)
	found, err := write(vw)
	if err != nil || !found {
		vw.release()
		if err != nil {
			return nil, err
		}
		return &Value{NotFound: true, Built: now()}, nil
	}
	gz, gzLen, err := vw.close()
	if err != nil {
		return nil, err
	}
	plain := vw.plain
	if plain == nil && vw.keep {
		plain = []byte{}
	}
	v := &Value{gz: gz, gzLen: gzLen}
	if vw.segs && vw.n <= MaxPlainKept {
		// Small enough to keep plain: read it back.
		zr, err := gzip.NewReader(v.gzipReader())
		if err != nil {
			return nil, err
		}
		if plain, err = io.ReadAll(zr); err != nil {
			return nil, err
		}
	}
	built := now()
	if !vw.oldest.IsZero() && vw.oldest.Before(built) {
		built = vw.oldest
	}
	v.Plain, v.PlainLen, v.ETag, v.Built, v.Revision, v.segmented, v.due = plain, int(vw.n), etagFromSum(vw.hash.Sum64()), built, vw.rev, vw.segs, vw.due
	if vw.rev > 0 {
		v.revHeader = []string{strconv.FormatInt(vw.rev, 10)}
	}
	return v, nil
}

// String returns the entity's name as Eureka spells it.
func (e Entity) String() string {
	switch e {
	case Application:
		return "Application"
	case VIP:
		return "VIP"
	case SVIP:
		return "SVIP"
	}
	return "Entity(" + strconv.Itoa(int(e)) + ")"
}
