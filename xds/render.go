package xds

import (
	"bytes"
	"compress/flate"
	"fmt"
	"io"
	"slices"
	"sync"
	"unsafe"
	"weak"

	endpoint "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/protobuf/encoding/protowire"
)

// claBytes is a ClusterLoadAssignment held as the bytes of its parts, so
// that one copy of its endpoints serves every zone: a node's zone changes
// only the priority of each locality, so the assignment a zone
// gets is rendered when it is sent, from the zone-less assignment's
// fields and that zone's priorities.
//
// The wire form makes this exact. A ClusterLoadAssignment as goreka builds
// it has cluster_name (field 1) and its localities (field 2, repeated);
// each LocalityLbEndpoints has locality (1), lb_endpoints (2),
// load_balancing_weight (3) and priority (5), nothing after it, and a
// deterministic marshal writes fields in number order and leaves out a
// priority of 0. So the assignment's bytes are head (field 1), then per
// locality its tag, its length and its bytes without priority, followed
// by field 5 when the priority is not 0: what proto.Marshal writes for the
// message with those priorities (TestRenderIsTheMarshalledAssignment).
//
// The localities' bytes of a large assignment are kept deflated (raw is
// then their length): endpoints repeat their metadata keys, addresses and
// host names, and an assignment is read only to be sent.
type claBytes struct {
	head []byte // cluster_name, as marshalled
	buf  []byte // every locality's bytes without its priority, one after the other (deflated when raw > 0)
	raw  uint32
	locs []locPart

	// memo holds the renderings of c while anything still holds them (weak
	// pointers): a push of one change wakes every subscribed stream, and
	// they answer with the same bytes per zone, so one inflate and render
	// serves them all (a 10,000-endpoint application cost each of 100
	// streams 2 ms and 2 MB), while an idle assignment keeps only its
	// deflated parts.
	memoMu sync.Mutex
	memo   []memoEntry
}

// memoEntry is one zone's rendering of a claBytes, weakly held: a weak
// pointer to its first byte, which stays valid while any answer holds the
// bytes (a weak pointer names the object, the whole array).
type memoEntry struct {
	zone string
	p    weak.Pointer[byte]
	n    int
}

// deflateAbove is the size of localities' bytes past which they are kept
// deflated.
const deflateAbove = 1024

// locPart is one locality of a claBytes: where its bytes end in buf, and
// what its priority depends on.
type locPart struct {
	end    uint32
	zone   string
	remote bool
}

// splitCLA is cla (zone-less, as assignment builds it) in parts. It fails
// on a field render would not reproduce (none that assignment sets) and
// when a part cannot be marshalled (a string that is not UTF-8).
func splitCLA(cla *endpoint.ClusterLoadAssignment) (*claBytes, error) {
	if cla.GetPolicy() != nil || len(cla.GetNamedEndpoints()) > 0 {
		return nil, fmt.Errorf("xds: assignment %q has fields goreka does not render", cla.GetClusterName())
	}
	head, err := marshalOptions.Marshal(&endpoint.ClusterLoadAssignment{ClusterName: cla.GetClusterName()})
	if err != nil {
		return nil, fmt.Errorf("xds: marshalling %s: %w", typeName(resource.EndpointType), err)
	}
	c := &claBytes{head: head, locs: make([]locPart, 0, len(cla.GetEndpoints()))}
	for _, l := range cla.GetEndpoints() {
		if l.GetProximity() != nil || l.GetLbConfig() != nil || l.GetMetadata() != nil {
			return nil, fmt.Errorf("xds: assignment %q has locality fields goreka does not render", cla.GetClusterName())
		}
		part := &endpoint.LocalityLbEndpoints{Locality: l.GetLocality(), LbEndpoints: l.GetLbEndpoints(), LoadBalancingWeight: l.GetLoadBalancingWeight()}
		if c.buf, err = marshalOptions.MarshalAppend(c.buf, part); err != nil {
			return nil, fmt.Errorf("xds: marshalling %s: %w", typeName(resource.EndpointType), err)
		}
		c.locs = append(c.locs, locPart{end: uint32(len(c.buf)), zone: l.GetLocality().GetZone(), remote: l.GetLocality().GetRegion() != ""})
	}
	if len(c.buf) > deflateAbove {
		if d, err := deflate(c.buf); err == nil && len(d) < len(c.buf) {
			c.raw, c.buf = uint32(len(c.buf)), d
			return c, nil
		}
	}
	c.buf = bytes.Clone(c.buf) // no spare capacity kept
	return c, nil
}

var (
	deflaters = sync.Pool{New: func() any { w, _ := flate.NewWriter(nil, flate.BestSpeed); return w }}
	inflaters sync.Pool // io.ReadCloser implementing flate.Resetter
)

// deflate is b deflated (deterministic: equal bytes give equal output).
func deflate(b []byte) ([]byte, error) {
	var out bytes.Buffer
	out.Grow(len(b) / 3)
	w := deflaters.Get().(*flate.Writer)
	defer deflaters.Put(w)
	w.Reset(&out)
	if _, err := w.Write(b); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return bytes.Clone(out.Bytes()), nil
}

// localities is the localities' bytes, inflated if need be.
func (c *claBytes) localities() []byte {
	if c.raw == 0 {
		return c.buf
	}
	src := bytes.NewReader(c.buf)
	r, _ := inflaters.Get().(io.ReadCloser)
	if r == nil {
		r = flate.NewReader(src)
	} else {
		_ = r.(flate.Resetter).Reset(src, nil)
	}
	defer inflaters.Put(r)
	out := make([]byte, c.raw)
	if _, err := io.ReadFull(r, out); err != nil {
		panic(fmt.Sprintf("xds: inflating an assignment held deflated: %v", err)) // our own bytes
	}
	return out
}

// effective is the zone c is rendered for when a node in zone gets it:
// zone when a local locality is in it, else "" (zone priority then
// changes nothing: the node gets the zone-less assignment).
func (c *claBytes) effective(zone string) string {
	if zone == "" {
		return ""
	}
	for _, l := range c.locs {
		if !l.remote && l.zone == zone {
			return zone
		}
	}
	return ""
}

// priority is locality i's priority for a node in zone (effective):
// assignment's levels (own zone 0, other local zones 1, remote regions 2;
// without a zone local 0 and remote 2) renumbered without gaps.
func (c *claBytes) priorities(zone string) func(i int) uint32 {
	level := func(l locPart) int {
		switch {
		case l.remote:
			return 2
		case zone != "" && l.zone != zone:
			return 1
		}
		return 0
	}
	var present [3]bool
	for _, l := range c.locs {
		present[level(l)] = true
	}
	var rank [3]uint32
	for i, n := 0, uint32(0); i < len(present); i++ {
		rank[i] = n
		if present[i] {
			n++
		}
	}
	return func(i int) uint32 { return rank[level(c.locs[i])] }
}

// render is c's bytes for a node in zone (an effective zone), shared with
// every caller while they hold them: read-only.
func (c *claBytes) render(zone string) []byte {
	c.memoMu.Lock()
	defer c.memoMu.Unlock()
	for i, m := range c.memo {
		if m.zone != zone {
			continue
		}
		if p := m.p.Value(); p != nil {
			return unsafe.Slice(p, m.n)
		}
		c.memo = slices.Delete(c.memo, i, i+1)
		break
	}
	b := c.renderOnce(zone)
	if len(b) > 0 {
		c.memo = append(c.memo, memoEntry{zone: zone, p: weak.Make(&b[0]), n: len(b)})
	}
	return b[:len(b):len(b)] // shared: no caller may append into it
}

// renderOnce is render without the memo.
func (c *claBytes) renderOnce(zone string) []byte {
	prio := c.priorities(zone)
	size := len(c.head)
	start := uint32(0)
	for i, l := range c.locs {
		n := int(l.end - start)
		if p := prio(i); p != 0 {
			n += protowire.SizeTag(5) + protowire.SizeVarint(uint64(p))
		}
		size += protowire.SizeTag(2) + protowire.SizeBytes(n)
		start = l.end
	}
	out := make([]byte, 0, size)
	out = append(out, c.head...)
	buf := c.localities()
	start = 0
	for i, l := range c.locs {
		body := buf[start:l.end]
		p := prio(i)
		n := len(body)
		if p != 0 {
			n += protowire.SizeTag(5) + protowire.SizeVarint(uint64(p))
		}
		out = protowire.AppendTag(out, 2, protowire.BytesType)
		out = protowire.AppendVarint(out, uint64(n))
		out = append(out, body...)
		if p != 0 {
			out = protowire.AppendTag(out, 5, protowire.VarintType)
			out = protowire.AppendVarint(out, uint64(p))
		}
		start = l.end
	}
	return out
}

// equal tells whether c and d are the same assignment (the same parts).
func (c *claBytes) equal(d *claBytes) bool {
	if c == d {
		return true
	}
	if c == nil || d == nil || c.raw != d.raw || len(c.locs) != len(d.locs) || !bytes.Equal(c.head, d.head) || !bytes.Equal(c.buf, d.buf) {
		return false
	}
	for i := range c.locs {
		if c.locs[i] != d.locs[i] {
			return false
		}
	}
	return true
}
