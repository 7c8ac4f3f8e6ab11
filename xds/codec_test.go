package xds

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"
	"unsafe"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
)

// aliases reports whether one of out's pieces is p's own bytes (shared,
// not copied).
func aliases(out mem.BufferSlice, p []byte) bool {
	for _, b := range out {
		d := b.ReadOnlyData()
		if len(d) == len(p) && unsafe.SliceData(d) == unsafe.SliceData(p) {
			return true
		}
	}
	return false
}

func TestCodecIsProtoMarshal(t *testing.T) {
	big := bytes.Repeat([]byte("endpoint"), 700) // 5,600 B: shared
	small := []byte("cluster")
	withUnknown := &anypb.Any{TypeUrl: resource.EndpointType, Value: big}
	withUnknown.ProtoReflect().SetUnknown(protoWireField99())
	sotw := &discovery.DiscoveryResponse{
		VersionInfo: "17.g3", TypeUrl: resource.EndpointType, Nonce: "n1", Canary: true,
		ControlPlane: &core.ControlPlane{Identifier: "goreka"},
		Resources: []*anypb.Any{
			{TypeUrl: resource.EndpointType, Value: big},
			{TypeUrl: resource.EndpointType, Value: small},
			{TypeUrl: resource.EndpointType},
			{Value: big[:shareMin]},
			withUnknown,
		},
		ResourceErrors: []*discovery.ResourceError{{ResourceName: &discovery.ResourceName{Name: "x"}}},
	}
	sotw.ProtoReflect().SetUnknown(protoWireField99())
	delta := &discovery.DeltaDiscoveryResponse{
		SystemVersionInfo: "18.g3", TypeUrl: resource.EndpointType, Nonce: "n2",
		RemovedResources: []string{"gone"}, ControlPlane: &core.ControlPlane{Identifier: "goreka"},
		Resources: []*discovery.Resource{
			{Name: "orders", Version: "g3v18", Resource: &anypb.Any{TypeUrl: resource.EndpointType, Value: big}},
			{Name: "users", Version: "g3v2", Resource: &anypb.Any{TypeUrl: resource.EndpointType, Value: small}},
			{Name: "empty"},
			{Name: "ttl", Ttl: durationpb.New(5e9), Aliases: []string{"a"}, Resource: &anypb.Any{Value: big}},
		},
	}
	c := newCodec(nil)
	for _, m := range []proto.Message{sotw, delta} {
		want, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		out, err := c.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if got := out.Materialize(); !bytes.Equal(got, want) {
			t.Fatalf("%T: encoded %d bytes, proto.Marshal %d; differ", m, len(got), len(want))
		}
		if !aliases(out, big) {
			t.Errorf("%T: the large resource's bytes were copied, not shared", m)
		}
		back := m.ProtoReflect().New().Interface()
		if err := c.Unmarshal(out, back); err != nil || !proto.Equal(back, m) {
			t.Errorf("%T: round trip: %v, equal %v", m, err, proto.Equal(back, m))
		}
	}
	// Nothing to share: gRPC's own encoding, one buffer.
	plain := &discovery.DiscoveryResponse{VersionInfo: "1", Resources: []*anypb.Any{{TypeUrl: resource.ClusterType, Value: small}}}
	out, err := c.Marshal(plain)
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := proto.Marshal(plain); !bytes.Equal(out.Materialize(), want) {
		t.Error("a response without large resources is not proto.Marshal's")
	}
	// Requests (and anything else) are the proto codec's.
	req := &discovery.DiscoveryRequest{TypeUrl: resource.ClusterType, ResourceNames: []string{strings.Repeat("n", 600)}}
	out, err = c.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	var back discovery.DiscoveryRequest
	if err := c.Unmarshal(out, &back); err != nil || !proto.Equal(&back, req) {
		t.Errorf("request round trip: %v", err)
	}
}

// protoWireField99 is an unknown field (number 99, a string).
func protoWireField99() []byte { return []byte{0x9a, 0x06, 0x02, 'h', 'i'} }

func TestCodecDecodesRequestNamesAsTheTables(t *testing.T) {
	var names nameTable
	held := names.add(strings.Clone("orders"))
	c := newCodec(&names)
	req := &discovery.DiscoveryRequest{
		VersionInfo: "3", TypeUrl: resource.EndpointType, ResponseNonce: "7",
		Node:          &core.Node{Id: "envoy-1", Cluster: "c"},
		ResourceNames: []string{"orders", "unknown", "orders"},
	}
	req.ProtoReflect().SetUnknown(protoWireField99())
	enc, err := proto.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	var got discovery.DiscoveryRequest
	// Two pieces, as a request read off the wire in two frames is.
	if err := c.Unmarshal(mem.BufferSlice{mem.SliceBuffer(enc[:5]), mem.SliceBuffer(enc[5:])}, &got); err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(&got, req) {
		t.Fatalf("decoded %v, sent %v", &got, req)
	}
	for _, i := range []int{0, 2} {
		if unsafe.StringData(got.ResourceNames[i]) != unsafe.StringData(held) {
			t.Errorf("name %d is a copy of its own, not the table's", i)
		}
	}
	// Decoding only reads the table: a client's names it does not hold
	// (here "unknown") are not added, so clients cannot grow it.
	if len(names.m) != 1 {
		t.Errorf("the name table holds %d names after decoding, want its 1", len(names.m))
	}
	// A name that is not UTF-8 is refused, as the proto codec refuses it.
	bad := protowire.AppendString(protowire.AppendTag(nil, 3, protowire.BytesType), "\xff")
	if err := c.Unmarshal(mem.BufferSlice{mem.SliceBuffer(bad)}, &got); err == nil {
		t.Error("a resource name that is not UTF-8 was accepted")
	}
	// Truncated: an error, not a panic.
	if err := c.Unmarshal(mem.BufferSlice{mem.SliceBuffer(enc[:len(enc)-3])}, &got); err == nil {
		t.Error("a truncated request was accepted")
	}
}

// One response is sent to every stream that subscribes to it (the cache's
// and the zone's bytes are shared): the codec encodes it on each stream's
// goroutine at once, reading the shared bytes and writing nothing of
// theirs (the race detector watches), each time proto.Marshal's bytes.
func TestCodecMarshalsOneResponseOnManyStreams(t *testing.T) {
	big := bytes.Repeat([]byte("endpoint"), 700)
	sotw := &discovery.DiscoveryResponse{VersionInfo: "5", TypeUrl: resource.EndpointType, Nonce: "n",
		Resources: []*anypb.Any{{TypeUrl: resource.EndpointType, Value: big}, {TypeUrl: resource.EndpointType, Value: big[:100]}}}
	delta := &discovery.DeltaDiscoveryResponse{SystemVersionInfo: "5", TypeUrl: resource.EndpointType, Nonce: "n",
		Resources: []*discovery.Resource{{Name: "orders", Version: "v5", Resource: &anypb.Any{TypeUrl: resource.EndpointType, Value: big}}}}
	c := newCodec(nil)
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 16 {
		m := proto.Message(sotw)
		if i%2 == 1 {
			m = delta
		}
		want, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			for range 50 {
				out, err := c.Marshal(m)
				if err != nil {
					errs <- err
					return
				}
				got := out.Materialize()
				out.Free()
				if !bytes.Equal(got, want) {
					errs <- fmt.Errorf("%T: encoded bytes differ from proto.Marshal's", m)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if !bytes.Equal(big, bytes.Repeat([]byte("endpoint"), 700)) {
		t.Error("the shared resource bytes were written to")
	}
}
