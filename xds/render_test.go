package xds

import (
	"bytes"
	"fmt"
	"runtime"
	"testing"

	endpoint "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"google.golang.org/protobuf/proto"

	"github.com/goreka/goreka/registry"
)

// checkRender checks that the parts of the zone-less assignment of vs,
// rendered for zone, are the bytes of the assignment built for zone (the
// old way: one marshalled message per zone), and decode to a message
// proto.Equal to it.
func checkRender(t *testing.T, what string, vs []registry.LeaseView, o buildOptions, zone string) {
	t.Helper()
	base := o
	base.zone = ""
	parts, err := splitCLA(assignment("a", vs, base))
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	o.zone = zone
	want := assignment("a", vs, o)
	wantBytes, err := marshalOptions.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	b := zoned(parts, zone)
	got := parts.render(b.zone)
	var dec endpoint.ClusterLoadAssignment
	if err := proto.Unmarshal(got, &dec); err != nil {
		t.Fatalf("%s, zone %q: rendered bytes do not decode: %v", what, zone, err)
	}
	if !proto.Equal(&dec, want) {
		t.Errorf("%s, zone %q:\n got %v\nwant %v", what, zone, &dec, want)
	}
	if !bytes.Equal(got, wantBytes) {
		t.Errorf("%s, zone %q: rendered bytes differ from the marshalled assignment", what, zone)
	}
}

// The assignment a node in a zone gets, rendered from the zone-less one's
// parts, is the assignment built for that zone: for either kind, with and
// without remote instances, for a node in each zone, in a zone without
// endpoints and without a zone.
func TestRenderIsTheMarshalledAssignment(t *testing.T) {
	far := inst("A", "r1", "10.9.0.1", MetaZone, "z1")
	vs := views(inst("A", "a1", "10.0.0.1", MetaZone, "z1", MetaWeight, "200"), inst("A", "a2", "10.0.0.2", MetaZone, "z2", "version", "v2"),
		inst("A", "a3", "10.0.0.3"), inst("A", "a4", "10.0.0.4", MetaZone, "z1"), far)
	for _, kind := range []Kind{Envoy, GRPC} {
		for _, remote := range []map[*registry.Instance]string{nil, {far: "west"}} {
			for _, zone := range []string{"z1", "z2", "z9", ""} {
				checkRender(t, fmt.Sprintf("%s, remote %v", kind, remote != nil), vs, buildOptions{kind: kind, remote: remote}, zone)
			}
		}
	}
	checkRender(t, "no endpoints", nil, buildOptions{}, "z1")

	// Large: its localities are kept deflated.
	var many []*registry.Instance
	for i := range 60 {
		many = append(many, inst("A", fmt.Sprintf("a%02d", i), fmt.Sprintf("10.0.1.%d", i+1), MetaZone, fmt.Sprintf("z%d", 1+i%3), "version", "v1", "team", "t1"))
	}
	big := views(many...)
	for _, kind := range []Kind{Envoy, GRPC} {
		parts, err := splitCLA(assignment("a", big, buildOptions{kind: kind}))
		if err != nil || parts.raw == 0 || len(parts.buf) >= int(parts.raw) {
			t.Fatalf("%s: 60 endpoints not kept deflated (raw %d, held %d, %v)", kind, parts.raw, len(parts.buf), err)
		}
		for _, zone := range []string{"z1", "z2", "z3", ""} {
			checkRender(t, fmt.Sprintf("%s, 60 endpoints", kind), big, buildOptions{kind: kind}, zone)
		}
	}
}

// FuzzRender: any set of localities (zones, remote regions, weights,
// sizes past one length byte) renders for any zone as the marshalled
// assignment of that zone.
func FuzzRender(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3}, uint8(1), false)
	f.Add([]byte{1, 1, 1, 0x81, 0x82}, uint8(0), true)
	f.Add(bytes.Repeat([]byte{2}, 40), uint8(2), false)
	f.Fuzz(func(t *testing.T, spec []byte, zone uint8, grpc bool) {
		if len(spec) > 200 {
			spec = spec[:200]
		}
		var vs []registry.LeaseView
		remote := map[*registry.Instance]string{}
		for i, c := range spec {
			md := []string{"version", fmt.Sprintf("v%d", c%5), MetaWeight, fmt.Sprint(int(c) % 130)}
			if z := c % 4; z != 0 {
				md = append(md, MetaZone, fmt.Sprintf("z%d", z))
			}
			in := inst("A", fmt.Sprintf("a%d", i), fmt.Sprintf("10.0.%d.%d", i/250, i%250+1), md...)
			if c&0x80 != 0 {
				remote[in] = fmt.Sprintf("r%d", c&0x40>>6)
			}
			vs = append(vs, views(in)...)
		}
		kind := Envoy
		if grpc {
			kind = GRPC
		}
		z := ""
		if zone%4 != 0 {
			z = fmt.Sprintf("z%d", zone%4)
		}
		checkRender(t, fmt.Sprintf("%d instances, %s", len(vs), kind), vs, buildOptions{kind: kind, remote: remote}, z)
	})
}

// BenchmarkRender: one 50-endpoint assignment (the push benchmark's
// applications) rendered for a zone, as each stream's answer does.
func BenchmarkRender(b *testing.B) {
	var ins []*registry.Instance
	for i := range 50 {
		ins = append(ins, inst("APP-0001", fmt.Sprintf("APP-0001-%02d", i), fmt.Sprintf("10.0.1.%d", i+1), MetaZone, fmt.Sprintf("z%d", 1+i%2), "version", "v1", "team", "t1"))
	}
	parts, err := splitCLA(assignment("app-0001", views(ins...), buildOptions{}))
	if err != nil {
		b.Fatal(err)
	}
	b.Run("first", func(b *testing.B) { // what the first stream of a push pays
		b.ReportAllocs()
		for b.Loop() {
			parts.renderOnce("z1")
		}
		b.ReportMetric(float64(parts.raw), "raw-B")
		b.ReportMetric(float64(len(parts.buf)), "held-B")
	})
	b.Run("held", func(b *testing.B) { // every other stream, while an answer holds it
		held := parts.render("z1")
		for b.Loop() {
			parts.render("z1")
		}
		runtime.KeepAlive(held)
	})
}

// A push wakes every subscribed stream with the same assignment: while one
// answer holds a zone's rendering, the others get the same bytes (one
// inflate and render per zone and change, not per stream), each zone its
// own; once nothing holds it, it is rendered again, the same.
func TestRenderIsSharedWhileHeld(t *testing.T) {
	var many []*registry.Instance
	for i := range 60 {
		many = append(many, inst("A", fmt.Sprintf("a%02d", i), fmt.Sprintf("10.0.1.%d", i+1), MetaZone, fmt.Sprintf("z%d", 1+i%2)))
	}
	parts, err := splitCLA(assignment("a", views(many...), buildOptions{kind: Envoy}))
	if err != nil {
		t.Fatal(err)
	}
	z1 := parts.render("z1")
	if again := parts.render("z1"); &again[0] != &z1[0] || !bytes.Equal(again, z1) {
		t.Fatal("a zone's rendering held by an answer was rendered again for the next")
	}
	z2 := parts.render("z2")
	if &z2[0] == &z1[0] || bytes.Equal(z2, z1) {
		t.Fatal("two zones share one rendering")
	}
	want := bytes.Clone(z1)
	z1, z2 = nil, nil
	runtime.GC()
	if got := parts.render("z1"); !bytes.Equal(got, want) {
		t.Fatal("the rendering after the memo was collected differs")
	}
	if n := len(parts.memo); n > 2 {
		t.Fatalf("%d renderings remembered for two zones", n)
	}
}
