package cache

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"io"
	"sync"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/klauspost/compress/flate"
)

// Segment is a piece of a payload compressed on its own, so that a loader
// can keep the compressed pieces of what did not change and build a new
// payload by re-compressing only what did (see SegmentWriter).
//
// Deflate is raw deflate ending on a byte boundary with a sync flush and no
// final block, compressed without history: any number of segments,
// concatenated, are one valid deflate stream, and the cache frames them as
// one gzip member with the CRC-32 combined from the segments' (as pigz and
// other parallel gzip tools do). Every gzip reader reads that stream, Java's
// GZIPInputStream, zlib (Node, Python) and Go's included.
type Segment struct {
	Deflate []byte
	CRC     uint32    // CRC-32 (IEEE) of the plain bytes
	Len     int64     // length of the plain bytes
	Hash    uint64    // xxhash of the plain bytes
	Built   time.Time // when the plain bytes were encoded (their renewal timestamps' age)
	// Due is when the loader means to encode the segment again for fresh
	// renewal timestamps (zero: Reuse/2 after Built). A payload is due for
	// the housekeeping's refresh at its earliest segment's (Value.Due), so an
	// idle registry is rebuilt only when some segment needs it.
	Due time.Time
}

// NewSegment compresses plain into a Segment at the cache's gzip level.
func NewSegment(plain []byte, built time.Time) *Segment {
	var buf bytes.Buffer
	buf.Grow(len(plain)/8 + 64)
	fw := getFlate(&buf, gzipLevel)
	fw.Write(plain) // writes to a bytes.Buffer cannot fail
	fw.Flush()
	putFlate(fw, gzipLevel)
	return &Segment{
		Deflate: bytes.Clone(buf.Bytes()),
		CRC:     crc32.ChecksumIEEE(plain),
		Len:     int64(len(plain)),
		Hash:    xxhash.Sum64(plain),
		Built:   built,
	}
}

// SegmentWriter is implemented by the writer the cache hands a StreamLoader:
// besides plain bytes (Write), the loader may write precompressed segments,
// in payload order. The payload is the concatenation of everything written.
//
// A payload is as old as its oldest segment (Value.Built), and the cache
// rebuilds payloads older than AutoExpiration, so a loader keeps a segment
// only while it is younger than Reuse (in a change's rebuild, than
// ChangeWriter's maxAge), and builds new ones stamped Now.
type SegmentWriter interface {
	io.Writer
	WriteSegment(*Segment) error
	// Now is the cache's clock (Config.Now).
	Now() time.Time
	// Reuse is the age up to which a segment may go into a new payload:
	// three quarters of AutoExpiration, so that the pieces refreshed by an
	// expiry are not all due again at the next one.
	Reuse() time.Duration
}

// ChangeWriter is implemented by the writer the cache hands a StreamLoader.
// ForChange reports whether the build is a rebuild after a change (not a
// load on a miss nor the housekeeping's refresh of due payloads), and the
// age up to which a segment may still be kept in this build (maxAge):
//
//   - for a change, AutoExpiration less one housekeeping tick
//     (UpdateInterval/16): a loader keeps every segment that did not change
//     and is younger, so that a change waits for the re-encoding of what
//     changed and not for renewal timestamps coming due;
//   - for a refresh (the housekeeping's, at the first tick after the
//     payload's Value.Due), AutoExpiration less two ticks: a loader that
//     bounds how much it refreshes at once (document's budget) re-encodes
//     segments that old whatever its bound, so that the next refresh, at
//     most a tick later, finds none past the change's maxAge.
//
// Together they keep every byte served at most AutoExpiration old, plus
// whatever the refresh gap exceeds a tick by in a storm and one rebuild's
// duration (Cache.markAged). A load on a miss reports maxAge as for a
// refresh, with ok false. BuildValue and BuildValueForChange, for loaders'
// tests, report AutoExpiration itself.
type ChangeWriter interface {
	ForChange() (maxAge time.Duration, ok bool)
}

// flateWriters keeps raw deflate compressors per level: one holds several
// hundred KB of state, and reusing it makes a build's garbage mostly its
// output.
var flateWriters sync.Map // int level -> *sync.Pool of *flate.Writer

func getFlate(w io.Writer, level int) *flate.Writer {
	p, ok := flateWriters.Load(level)
	if !ok {
		p, _ = flateWriters.LoadOrStore(level, &sync.Pool{})
	}
	if fw, _ := p.(*sync.Pool).Get().(*flate.Writer); fw != nil {
		fw.Reset(w)
		return fw
	}
	fw, err := flate.NewWriter(w, level)
	if err != nil {
		panic(err) // levels are constants of this package
	}
	return fw
}

func putFlate(fw *flate.Writer, level int) {
	fw.Reset(io.Discard)
	p, _ := flateWriters.Load(level)
	p.(*sync.Pool).Put(fw)
}

// gzipHeader is a gzip member header: deflate, no name, no mtime, OS unknown
// (what compress/gzip writes).
var gzipHeader = []byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff}

// finalBlock is an empty final deflate block (fixed Huffman, end of block).
var finalBlock = []byte{0x03, 0x00}

// appendGzipTrailer appends the CRC-32 and the length mod 2^32.
func appendGzipTrailer(b []byte, crc uint32, n int64) []byte {
	b = binary.LittleEndian.AppendUint32(b, crc)
	return binary.LittleEndian.AppendUint32(b, uint32(n))
}

// BuildValue builds a Value from what write writes, as the cache does on a
// load or a refresh (clock now, segments reused up to 3/4 of
// autoExpiration, ForChange's maxAge autoExpiration): for loaders' tests and
// benchmarks.
func BuildValue(write func(io.Writer) (bool, error), now func() time.Time, autoExpiration time.Duration) (*Value, error) {
	return streamValue(write, gzipLevel, now, autoExpiration, autoExpiration, false)
}

// BuildValueForChange is BuildValue for a rebuild after a change
// (ChangeWriter): for loaders' tests and benchmarks.
func BuildValueForChange(write func(io.Writer) (bool, error), now func() time.Time, autoExpiration time.Duration) (*Value, error) {
	return streamValue(write, gzipLevel, now, autoExpiration, autoExpiration, true)
}
