package cache

import (
	"bytes"
	"compress/gzip"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cespare/xxhash/v2"
)

// gzipLevel is the compression level of the stored gzip bytes, chosen by measurement.
//
// BenchmarkGzipLevel10MB, an 11.3 MB /eureka/apps JSON payload (10k instances, 500 apps), on
// the shared 2-core build machine (AMD EPYC, go1.26), median of three runs:
//
//	level            time per build   gzip size   bytes per full fetch
//	HuffmanOnly          60 ms          65.3 %        7.4 MB
//	BestSpeed (1)        33 ms           7.8 %        887 KB
//	2                    36 ms           6.9 %        782 KB
//	4                    70 ms           6.6 %        752 KB
//	Default (6)         129 ms           6.4 %        727 KB
//	BestCompression     249 ms           6.3 %        713 KB
//
// goreka rebuilds every invalidated readOnly key soon after a change, and one change
// invalidates ALL_APPS and ALL_APPS_DELTA in up to four variants (JSON/XML x full/compact), so
// the compression time is paid several times per rebuild, bounds how soon a change is visible
// and sets the adaptive refresh gap. Level 2 costs about a tenth more CPU than BestSpeed and
// sends 12 % fewer bytes to every polling client; the default level would add about 100 ms of
// CPU per key per rebuild to save another 7 %. (HuffmanOnly is slower here: it writes eight
// times the bytes.)
const gzipLevel = 2

// Value is one cached response: the encoded payload, its gzip form and its ETag.
// A Value is immutable once built; readers share it and must not modify its slices.
type Value struct {
	// Plain is the encoded payload; nil when NotFound, and nil for a payload
	// larger than MaxPlainKept, which is kept gzipped only: use WritePlain.
	Plain []byte
	// PlainLen is the length of the encoded payload.
	PlainLen int
	// Gzip is the payload compressed with compress/gzip at load time; nil when NotFound.
	Gzip []byte
	// ETag is a quoted strong entity tag, the xxhash of Plain ("" when NotFound).
	ETag string
	// NotFound records that the loader reported "no such application". Like Eureka, which
	// caches the empty payload, the answer is cached too, so the server answers 404 from cache.
	NotFound bool
	// Built is when the loader finished, by Config.Now.
	Built time.Time
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

// gzipWriters keeps compressors per level: a flate compressor holds about 1 MB of state, and
// reusing it makes a rebuild's garbage mostly the output itself.
var gzipWriters sync.Map // int level -> *sync.Pool of *gzip.Writer

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
	zr, err := gzip.NewReader(bytes.NewReader(v.Gzip))
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
	}, level, func() time.Time { return now })
}

// valueWriter receives a payload as a stream: it gzips and hashes every
// piece, counts the bytes and keeps them uncompressed up to MaxPlainKept.
type valueWriter struct {
	zw    *gzip.Writer
	hash  *xxhash.Digest
	plain []byte
	keep  bool
	n     int
}

func (vw *valueWriter) Write(p []byte) (int, error) {
	vw.n += len(p)
	vw.hash.Write(p)
	if vw.keep {
		if len(vw.plain)+len(p) <= MaxPlainKept {
			vw.plain = append(vw.plain, p...)
		} else {
			vw.keep, vw.plain = false, nil
		}
	}
	return vw.zw.Write(p)
}

// streamValue builds a Value from what write writes, compressing at level;
// now is read once the payload is complete.
func streamValue(write func(io.Writer) (bool, error), level int, now func() time.Time) (*Value, error) {
	p, ok := gzipWriters.Load(level)
	if !ok {
		p, _ = gzipWriters.LoadOrStore(level, &sync.Pool{})
	}
	pool := p.(*sync.Pool)
	var buf bytes.Buffer
	zw, _ := pool.Get().(*gzip.Writer)
	if zw == nil {
		var err error
		if zw, err = gzip.NewWriterLevel(&buf, level); err != nil {
			return nil, err
		}
	} else {
		zw.Reset(&buf)
	}
	vw := &valueWriter{zw: zw, hash: xxhash.New(), keep: true}
	found, err := write(vw)
	if err != nil || !found {
		// Keep the compressor (about 800 KB of state) for the next load.
		zw.Reset(io.Discard)
		pool.Put(zw)
		if err != nil {
			return nil, err
		}
		return &Value{NotFound: true, Built: now()}, nil
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	pool.Put(zw)
	plain := vw.plain
	if plain == nil && vw.keep {
		plain = []byte{}
	}
	return &Value{Plain: plain, PlainLen: vw.n, Gzip: buf.Bytes(), ETag: etagFromSum(vw.hash.Sum64()), Built: now()}, nil
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
