package cache

import (
	"bytes"
	"compress/gzip"
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
	// Plain is the encoded payload; nil when NotFound.
	Plain []byte
	// Gzip is Plain compressed with compress/gzip at load time; nil when NotFound.
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
	var buf [2 + 16]byte
	b := append(buf[:0], '"')
	h := xxhash.Sum64(payload)
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

func compress(payload []byte, level int) ([]byte, error) {
	p, ok := gzipWriters.Load(level)
	if !ok {
		p, _ = gzipWriters.LoadOrStore(level, &sync.Pool{})
	}
	pool := p.(*sync.Pool)
	var buf bytes.Buffer
	// Registry JSON and XML compress well; one eighth avoids most regrowth at BestSpeed.
	buf.Grow(len(payload)/8 + 64)
	zw, _ := pool.Get().(*gzip.Writer)
	if zw == nil {
		var err error
		if zw, err = gzip.NewWriterLevel(&buf, level); err != nil {
			return nil, err
		}
	} else {
		zw.Reset(&buf)
	}
	if _, err := zw.Write(payload); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	pool.Put(zw)
	return buf.Bytes(), nil
}

// buildValue turns a loader result into a Value, compressing at level.
func buildValue(payload []byte, found bool, level int, now time.Time) (*Value, error) {
	if !found {
		return &Value{NotFound: true, Built: now}, nil
	}
	gz, err := compress(payload, level)
	if err != nil {
		return nil, err
	}
	return &Value{Plain: payload, Gzip: gz, ETag: etagOf(payload), Built: now}, nil
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
