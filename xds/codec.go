package xds

import (
	"unicode/utf8"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc/encoding"
	grpcproto "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/anypb"
)

// shareMin is the size from which a resource's bytes are handed to the
// transport as they are rather than copied into the encoded message.
const shareMin = 512

// codec is the gRPC codec of the xDS port: gRPC's proto codec, except
// that a response is encoded around its resources' bytes instead of into
// a copy of them. A resource's bytes are the cache's (a cluster's) or a
// zone's rendering (an assignment's, shared by the streams that send it
// while any holds it, render.go); gRPC's codec copies every one into a
// buffer of the whole message per stream, which it holds until the
// client's flow-control window lets it out. At 100k instances a
// stream's first EDS answer is ~10 MB: 100 clients connecting at once
// held ~1 GB of copies (BENCHMARKS.md, xDS, the server's own memory).
// Here each resource's bytes are a piece of the message's buffer slice,
// between small runs of the fields around them; the bytes on the wire are
// proto.Marshal's (same fields, same order: TestCodecIsProtoMarshal).
//
// A state-of-the-world request's resource names are decoded as the
// server's copies of them (names, when set): an Envoy's every EDS ACK
// names every cluster (2,000 at 100k instances), and decoding each as a
// new string was 200k allocations per change for 100 clients, garbage
// that ACKs make on every push.
type codec struct {
	proto encoding.CodecV2
	names *nameTable
}

func newCodec(names *nameTable) codec { return codec{encoding.GetCodecV2(grpcproto.Name), names} }

func (c codec) Name() string { return c.proto.Name() }

func (c codec) Unmarshal(data mem.BufferSlice, v any) error {
	if req, ok := v.(*discovery.DiscoveryRequest); ok && c.names != nil {
		buf := data.MaterializeToBuffer(mem.DefaultBufferPool())
		defer buf.Free()
		if c.unmarshalRequest(buf.ReadOnlyData(), req) {
			return nil
		}
	}
	return c.proto.Unmarshal(data, v)
}

// unmarshalRequest decodes b into req, its resource names (field 3) the
// table's copies where it has them; false (req to be decoded by the proto
// codec, which says why) when b does not parse or a name is not UTF-8.
func (c codec) unmarshalRequest(b []byte, req *discovery.DiscoveryRequest) bool {
	count, restLen := 0, 0
	for p := b; len(p) > 0; {
		num, typ, n := protowire.ConsumeTag(p)
		if n < 0 {
			return false
		}
		m := protowire.ConsumeFieldValue(num, typ, p[n:])
		if m < 0 {
			return false
		}
		if num == 3 && typ == protowire.BytesType {
			count++
		} else {
			restLen += n + m
		}
		p = p[n+m:]
	}
	if count == 0 {
		return false // nothing to share: the proto codec's
	}
	names := make([]string, 0, count)
	rest := make([]byte, 0, restLen)
	c.names.mu.RLock()
	for p := b; len(p) > 0; {
		num, typ, n := protowire.ConsumeTag(p)
		m := protowire.ConsumeFieldValue(num, typ, p[n:])
		if num == 3 && typ == protowire.BytesType {
			v, _ := protowire.ConsumeBytes(p[n:])
			if e, ok := c.names.m[string(v)]; ok {
				names = append(names, e.name)
			} else if utf8.Valid(v) {
				names = append(names, string(v))
			} else {
				c.names.mu.RUnlock()
				return false
			}
		} else {
			rest = append(rest, p[:n+m]...)
		}
		p = p[n+m:]
	}
	c.names.mu.RUnlock()
	if err := proto.Unmarshal(rest, req); err != nil {
		return false
	}
	req.ResourceNames = names
	return true
}

func (c codec) Marshal(v any) (mem.BufferSlice, error) {
	switch m := v.(type) {
	case *discovery.DiscoveryResponse:
		if n, run := shares(m.GetResources(), func(a *anypb.Any) *anypb.Any { return a }); n > 0 {
			return marshalSotw(m, newPieces(n, run))
		}
	case *discovery.DeltaDiscoveryResponse:
		if n, run := shares(m.GetResources(), (*discovery.Resource).GetResource); n > 0 {
			return marshalDelta(m, newPieces(n, run+len(m.Resources)*32))
		}
	}
	return c.proto.Marshal(v)
}

// shares is how many of rs carry bytes worth sharing (0 when one is nil,
// which proto.Marshal refuses), and about how many bytes the runs between
// them take.
func shares[R comparable](rs []R, res func(R) *anypb.Any) (n, run int) {
	var zero R
	run = 64
	for _, r := range rs {
		if r == zero {
			return 0, 0
		}
		a := res(r)
		if v := len(a.GetValue()); v >= shareMin {
			n++
		} else {
			run += v
		}
		run += 16 + len(a.GetTypeUrl())
	}
	return n, run
}

// newPieces is a message of n shared pieces, its runs run bytes: the
// pieces' slice and their boxes are made once, at their size (a first
// answer has 2,000 resources per stream: grown piece by piece, they were
// garbage of every size, interleaved with what the streams keep).
func newPieces(n, run int) pieces {
	return pieces{out: make(mem.BufferSlice, 0, 2*n+2), boxes: make([]mem.SliceBuffer, 0, 2*n+2), run: make([]byte, 0, run)}
}

func marshalSotw(m *discovery.DiscoveryResponse, b pieces) (mem.BufferSlice, error) {
	b.str(1, m.GetVersionInfo())
	for _, a := range m.Resources {
		if err := b.any(2, a); err != nil {
			return nil, err
		}
	}
	if err := b.rest(m, 1, 2); err != nil {
		return nil, err
	}
	return b.done(), nil
}

func marshalDelta(m *discovery.DeltaDiscoveryResponse, b pieces) (mem.BufferSlice, error) {
	b.str(1, m.GetSystemVersionInfo())
	for _, r := range m.Resources {
		if err := b.resource(2, r); err != nil {
			return nil, err
		}
	}
	if err := b.rest(m, 1, 2); err != nil {
		return nil, err
	}
	return b.done(), nil
}

// pieces is an encoded message being built: the finished pieces and the
// run of small fields being appended to; boxes hold the pieces, so that
// each is not a separate allocation.
type pieces struct {
	out   mem.BufferSlice
	boxes []mem.SliceBuffer
	run   []byte
}

func (b *pieces) add(p []byte) {
	if len(b.boxes) == cap(b.boxes) {
		b.out = append(b.out, mem.SliceBuffer(p))
		return
	}
	b.boxes = append(b.boxes, p) // within its capacity: earlier boxes stay where they are
	b.out = append(b.out, &b.boxes[len(b.boxes)-1])
}

// bytes appends p as it is: shared when large, copied into the run when
// small.
func (b *pieces) bytes(p []byte) {
	if len(p) < shareMin {
		b.run = append(b.run, p...)
		return
	}
	b.flush()
	b.add(p)
}

func (b *pieces) flush() {
	if len(b.run) > 0 {
		b.add(b.run)
		b.run = b.run[len(b.run):] // appended to past its end: the piece is not written again
	}
}

func (b *pieces) done() mem.BufferSlice {
	b.flush()
	return b.out
}

// str appends string field n (nothing when empty, as proto3 does).
func (b *pieces) str(n protowire.Number, s string) {
	if s != "" {
		b.run = protowire.AppendTag(b.run, n, protowire.BytesType)
		b.run = protowire.AppendString(b.run, s)
	}
}

// lenField appends the tag and length of message field n of size size.
func (b *pieces) lenField(n protowire.Number, size int) {
	b.run = protowire.AppendTag(b.run, n, protowire.BytesType)
	b.run = protowire.AppendVarint(b.run, uint64(size))
}

func sizeStr(n protowire.Number, s int) int {
	if s == 0 {
		return 0
	}
	return protowire.SizeTag(n) + protowire.SizeBytes(s)
}

func sizeMsg(n protowire.Number, s int) int { return protowire.SizeTag(n) + protowire.SizeBytes(s) }

// anySize is the size of a's encoding, 0 and false when a has unknown
// fields (then it is marshalled whole).
func anySize(a *anypb.Any) (int, bool) {
	if len(a.ProtoReflect().GetUnknown()) > 0 {
		return 0, false
	}
	return sizeStr(1, len(a.GetTypeUrl())) + sizeStr(2, len(a.GetValue())), true
}

// any appends a as message field n, its value shared.
func (b *pieces) any(n protowire.Number, a *anypb.Any) error {
	size, ok := anySize(a)
	if !ok {
		return b.whole(n, a)
	}
	b.lenField(n, size)
	b.anyBody(a)
	return nil
}

func (b *pieces) anyBody(a *anypb.Any) {
	b.str(1, a.GetTypeUrl())
	if v := a.GetValue(); len(v) > 0 {
		b.lenField(2, len(v))
		b.bytes(v)
	}
}

// resource appends r as message field n: its version, its resource
// (shared) and its name, the fields goreka's answers set; a resource with
// any other field is marshalled whole.
func (b *pieces) resource(n protowire.Number, r *discovery.Resource) error {
	plain := len(r.ProtoReflect().GetUnknown()) == 0 && r.ResourceName == nil && len(r.Aliases) == 0 &&
		r.Ttl == nil && r.CacheControl == nil && r.Metadata == nil
	as, ok := 0, true
	if r.Resource != nil {
		as, ok = anySize(r.Resource)
	}
	if !plain || !ok {
		return b.whole(n, r)
	}
	size := sizeStr(1, len(r.Version)) + sizeStr(3, len(r.Name))
	if r.Resource != nil {
		size += sizeMsg(2, as)
	}
	b.lenField(n, size)
	b.str(1, r.Version)
	if r.Resource != nil {
		b.lenField(2, as)
		b.anyBody(r.Resource)
	}
	b.str(3, r.Name)
	return nil
}

// whole appends m, marshalled, as message field n.
func (b *pieces) whole(n protowire.Number, m proto.Message) error {
	enc, err := proto.Marshal(m)
	if err != nil {
		return err
	}
	b.lenField(n, len(enc))
	b.run = append(b.run, enc...)
	return nil
}

// rest appends the fields of m other than skip (and its unknown fields):
// those after the ones appended already, in proto.Marshal's order.
func (b *pieces) rest(m proto.Message, skip ...protoreflect.FieldNumber) error {
	src := m.ProtoReflect()
	dst := src.New()
	src.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		for _, n := range skip {
			if fd.Number() == n {
				return true
			}
		}
		dst.Set(fd, v)
		return true
	})
	dst.SetUnknown(src.GetUnknown())
	var err error
	b.run, err = proto.MarshalOptions{}.MarshalAppend(b.run, dst.Interface())
	return err
}
