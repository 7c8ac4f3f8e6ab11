package cache

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestCRC32Combine(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{0, 1, 2, 3, 7, 64, 1000, 65537, 1 << 20} {
		a := make([]byte, rng.IntN(5000))
		b := make([]byte, n)
		for i := range a {
			a[i] = byte(rng.Uint32())
		}
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		want := crc32.ChecksumIEEE(append(append([]byte(nil), a...), b...))
		if got := crc32Combine(crc32.ChecksumIEEE(a), crc32.ChecksumIEEE(b), int64(len(b))); got != want {
			t.Fatalf("len(a)=%d len(b)=%d: combined %08x, want %08x", len(a), n, got, want)
		}
	}
}

// segmentedPayload builds a payload of plain writes and segments, as the
// server's registry documents are written, and returns it with its bytes.
func segmentedPayload(t *testing.T, pieces int) (*Value, []byte) {
	t.Helper()
	rng := rand.New(rand.NewPCG(5, 6))
	var want bytes.Buffer
	var parts []func(SegmentWriter) error
	for i := range pieces {
		var p []byte
		switch i % 4 {
		case 0: // text: compressible, with back-references inside the piece
			p = []byte(strings.Repeat(fmt.Sprintf(`{"instanceId":"host-%d:svc:8080","status":"UP"},`, i), 1+rng.IntN(200)))
		case 1: // noise: stored blocks
			p = make([]byte, rng.IntN(70000))
			for j := range p {
				p[j] = byte(rng.Uint32())
			}
		case 2: // empty
		default: // one byte
			p = []byte{','}
		}
		want.Write(p)
		if i%3 == 0 {
			parts = append(parts, func(w SegmentWriter) error { _, err := w.Write(p); return err })
		} else {
			s := NewSegment(p, time.Unix(int64(1000+i), 0))
			parts = append(parts, func(w SegmentWriter) error { return w.WriteSegment(s) })
		}
	}
	v, err := streamValue(func(w io.Writer) (bool, error) {
		for _, p := range parts {
			if err := p(w.(SegmentWriter)); err != nil {
				return false, err
			}
		}
		return true, nil
	}, gzipLevel, func() time.Time { return time.Unix(5000, 0) }, time.Minute, time.Minute, false)
	if err != nil {
		t.Fatal(err)
	}
	return v, want.Bytes()
}

func TestSegmentsMakeOneGzipMember(t *testing.T) {
	v, want := segmentedPayload(t, 40)
	if v.PlainLen != len(want) {
		t.Fatalf("PlainLen = %d, want %d", v.PlainLen, len(want))
	}
	zr, err := gzip.NewReader(bytes.NewReader(v.Gzip()))
	if err != nil {
		t.Fatal(err)
	}
	zr.Multistream(false) // one member, not several glued together
	got, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("compress/gzip: %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("compress/gzip inflated other bytes")
	}
	if rest, _ := io.ReadAll(zr); len(rest) != 0 {
		t.Fatal("bytes after the member")
	}
	if !v.Built.Equal(time.Unix(1001, 0)) {
		t.Fatalf("Built = %v, want the oldest segment's", v.Built)
	}
	var out bytes.Buffer
	if err := v.WritePlain(&out); err != nil || !bytes.Equal(out.Bytes(), want) {
		t.Fatalf("WritePlain: %v", err)
	}
}

func TestSegmentETag(t *testing.T) {
	a, _ := segmentedPayload(t, 12)
	b, _ := segmentedPayload(t, 12)
	c, _ := segmentedPayload(t, 13)
	if a.ETag != b.ETag || a.ETag == c.ETag {
		t.Fatalf("ETags %s %s %s: equal payloads must match, different ones not", a.ETag, b.ETag, c.ETag)
	}
}

func TestSmallSegmentedPayloadKeepsPlain(t *testing.T) {
	s := NewSegment([]byte(`"b"`), time.Unix(1, 0))
	v, err := streamValue(func(w io.Writer) (bool, error) {
		w.Write([]byte(`["a",`))
		w.(SegmentWriter).WriteSegment(s)
		w.Write([]byte(`]`))
		return true, nil
	}, gzipLevel, time.Now, time.Minute, time.Minute, false)
	if err != nil {
		t.Fatal(err)
	}
	if string(v.Plain) != `["a","b"]` || v.PlainLen != 9 {
		t.Fatalf("Plain = %q (%d)", v.Plain, v.PlainLen)
	}
}

// TestSegmentedGzipRealReaders hands a segmented member to the gzip readers
// of the clients that fetch registries: gzip(1), Python's gzip, Node's zlib
// and Java's GZIPInputStream. Each must inflate exactly the payload; a tool
// missing from the machine is skipped, except under CI=true.
func TestSegmentedGzipRealReaders(t *testing.T) {
	v, want := segmentedPayload(t, 60)
	dir := t.TempDir()
	file := filepath.Join(dir, "payload.gz")
	if err := os.WriteFile(file, v.Gzip(), 0o600); err != nil {
		t.Fatal(err)
	}
	sum := fmt.Sprintf("%d %x", len(want), crc32.ChecksumIEEE(want))
	java, _ := filepath.Abs("testdata/GunzipCheck.java")
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"gzip", []string{"gzip", "-t", file}},
		{"python3", []string{"python3", "-c", `import gzip,sys,zlib
d=gzip.open(sys.argv[1]).read()
print(len(d), format(zlib.crc32(d), "x"))`, file}},
		{"node", []string{"node", "-e", `const zlib=require("zlib"),fs=require("fs");
const d=zlib.gunzipSync(fs.readFileSync(process.argv[1]));
let c=0xffffffff;for(const b of d){c^=b;for(let k=0;k<8;k++)c=(c>>>1)^(0xedb88320&-(c&1));}
console.log(d.length+" "+((c^0xffffffff)>>>0).toString(16))`, file}},
		{"java", []string{"java", java, file}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := exec.LookPath(tc.args[0]); err != nil {
				if os.Getenv("CI") == "true" {
					t.Fatalf("%s is not installed", tc.args[0])
				}
				t.Skipf("%s is not installed", tc.args[0])
			}
			out, err := exec.Command(tc.args[0], tc.args[1:]...).CombinedOutput()
			if err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			if tc.name != "gzip" && strings.TrimSpace(string(out)) != sum {
				t.Fatalf("%s inflated %q, want %q", tc.name, strings.TrimSpace(string(out)), sum)
			}
		})
	}
}

// TestSegmentedGzipIsServedAsItsPieces: a payload larger than joinBelow
// keeps the loader's segments as its pieces (shared, not copied: a refresh
// that keeps most of a document does not allocate it again), and what
// WriteGzip writes, piece after piece, is byte for byte the joined member
// (Gzip), of GzipLen bytes, that inflates to the payload; so is WritePlain.
func TestSegmentedGzipIsServedAsItsPieces(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	var want bytes.Buffer
	var segs []*Segment
	v, err := streamValue(func(w io.Writer) (bool, error) {
		sw := w.(SegmentWriter)
		sw.Write([]byte(`{"applications":[`))
		want.WriteString(`{"applications":[`)
		for i := range 50 {
			p := make([]byte, 2000+rng.IntN(4000))
			for j := range p {
				p[j] = 'a' + byte(rng.IntN(26))
			}
			if i == 25 { // a piece larger than WriteGzip's gathered writes (noise: stored blocks): written alone
				p = make([]byte, writeChunk+rng.IntN(writeChunk))
				for j := range p {
					p[j] = byte(rng.Uint32())
				}
			}
			want.Write(p)
			s := NewSegment(p, time.Unix(int64(1000+i), 0))
			segs = append(segs, s)
			if err := sw.WriteSegment(s); err != nil {
				return false, err
			}
			if i%10 == 9 { // plain bytes between segments
				sw.Write([]byte(`,`))
				want.WriteString(`,`)
			}
		}
		sw.Write([]byte(`]}`))
		want.WriteString(`]}`)
		return true, nil
	}, gzipLevel, func() time.Time { return time.Unix(5000, 0) }, time.Minute, time.Minute, false)
	if err != nil {
		t.Fatal(err)
	}
	if v.GzipLen() < joinBelow {
		t.Fatalf("GzipLen %d: the test needs a payload of more than %d bytes", v.GzipLen(), joinBelow)
	}
	if !slices.ContainsFunc(v.gz, func(p []byte) bool { return len(p) >= writeChunk }) {
		t.Fatal("no piece of writeChunk bytes or more")
	}
	if len(v.gz) < len(segs) {
		t.Fatalf("%d pieces for %d segments: the member was joined", len(v.gz), len(segs))
	}
	shared := 0
	for _, p := range v.gz {
		for _, s := range segs {
			if len(p) > 0 && &p[0] == &s.Deflate[0] {
				shared++
			}
		}
	}
	if shared != len(segs) {
		t.Fatalf("%d of %d segments' bytes are pieces of the payload, want all (not copies)", shared, len(segs))
	}
	joined := v.Gzip()
	if len(joined) != v.GzipLen() {
		t.Fatalf("Gzip() is %d bytes, GzipLen %d", len(joined), v.GzipLen())
	}
	var served bytes.Buffer
	n, err := v.WriteGzip(&served)
	if err != nil || n != int64(v.GzipLen()) || !bytes.Equal(served.Bytes(), joined) {
		t.Fatalf("WriteGzip wrote %d bytes (err %v), equal to Gzip(): %v", n, err, bytes.Equal(served.Bytes(), joined))
	}
	zr, err := gzip.NewReader(bytes.NewReader(joined))
	if err != nil {
		t.Fatal(err)
	}
	zr.Multistream(false)
	got, err := io.ReadAll(zr)
	if err != nil || !bytes.Equal(got, want.Bytes()) {
		t.Fatalf("the served member inflates to other bytes (err %v)", err)
	}
	var plain bytes.Buffer
	if err := v.WritePlain(&plain); err != nil || !bytes.Equal(plain.Bytes(), want.Bytes()) {
		t.Fatalf("WritePlain: %v, equal: %v", err, bytes.Equal(plain.Bytes(), want.Bytes()))
	}
	if v.PlainLen != want.Len() {
		t.Fatalf("PlainLen %d, want %d", v.PlainLen, want.Len())
	}
}

// TestShortWriterStopsWriteGzip: a writer that fails (a client gone) ends
// WriteGzip with its error and the bytes it took, for every point of
// failure (inside and between gathered writes, a piece written alone).
func TestShortWriterStopsWriteGzip(t *testing.T) {
	v, _ := segmentedPayload(t, 40)
	if len(v.gz) < 2 {
		t.Fatalf("%d piece(s): the test needs a payload of several", len(v.gz))
	}
	for _, limit := range []int{0, 1, len(v.gz[0]), writeChunk - 1, writeChunk, writeChunk + 7, v.GzipLen() - 1} {
		w := &failAfter{n: limit}
		n, err := v.WriteGzip(w)
		if err == nil || n != int64(limit) {
			t.Fatalf("writer failing after %d bytes: WriteGzip = %d, %v; want %d and its error", limit, n, err, limit)
		}
	}
	var all bytes.Buffer
	if n, err := v.WriteGzip(&all); err != nil || n != int64(v.GzipLen()) || !bytes.Equal(all.Bytes(), v.Gzip()) {
		t.Fatalf("WriteGzip = %d, %v; want %d bytes equal to Gzip()", n, err, v.GzipLen())
	}
}

// failAfter takes n bytes, then fails.
type failAfter struct{ n int }

func (f *failAfter) Write(p []byte) (int, error) {
	if len(p) > f.n {
		m := f.n
		f.n = 0
		return m, io.ErrShortWrite
	}
	f.n -= len(p)
	return len(p), nil
}
