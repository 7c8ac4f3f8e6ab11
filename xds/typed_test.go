package xds

import (
	"slices"
	"strconv"
	"testing"
	"time"

	endpoint "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listener "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/envoyproxy/go-control-plane/pkg/server/stream/v3"
	"google.golang.org/protobuf/types/known/anypb"
)

func claAny(t *testing.T, name string, port uint32) *anypb.Any {
	t.Helper()
	a, err := marshalAny(resource.EndpointType, &endpoint.ClusterLoadAssignment{ClusterName: name,
		Endpoints: []*endpoint.LocalityLbEndpoints{{Priority: port}}})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// sotwStream is one keyed SotW stream on c, subscribed to names, ACKing as
// go-control-plane's server would.
type sotwStream struct {
	t     *testing.T
	c     *typed
	sk    streamKey
	sub   stream.Subscription
	names []string
	ch    chan cachev3.Response
	ver   string
}

func newSotwStream(t *testing.T, c *typed, id int64, names ...string) *sotwStream {
	s := &sotwStream{t: t, c: c, sk: streamKey{id: id}, sub: stream.NewSotwSubscription(names, true), names: names}
	s.watch()
	return s
}

// watch opens the stream's next watch (its first request, or an ACK of
// the last answer it took).
func (s *sotwStream) watch() func() {
	s.t.Helper()
	s.ch = make(chan cachev3.Response, 1)
	req := &cachev3.Request{TypeUrl: s.c.typeURL, ResourceNames: s.names, VersionInfo: s.ver}
	cancel, err := s.c.watch(s.sk, true, req, &s.sub, s.ch)
	if err != nil {
		s.t.Fatal(err)
	}
	return cancel
}

// take is the answer waiting, taken as the server sends it (nil: none).
func (s *sotwStream) take() []string {
	s.t.Helper()
	select {
	case r := <-s.ch:
		s.ver = r.GetResponseVersion()
		s.sub.SetReturnedResources(r.GetReturnedResources())
		return names(s.t, r)
	default:
		return nil
	}
}

// A change wakes only the streams subscribed to its name, with that name
// only (SotW EDS carries the changed resources), and an ACK is answered
// with nothing.
func TestChangeAnswersOnlyItsSubscribers(t *testing.T) {
	c := newTyped(resource.EndpointType, map[string]*anypb.Any{"a": claAny(t, "a", 1), "b": claAny(t, "b", 1)}, "1")
	sa, sab := newSotwStream(t, c, 1, "a"), newSotwStream(t, c, 2, "a", "b")
	if got := sa.take(); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("first answer %v, want a", got)
	}
	if got := sab.take(); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("first answer %v, want a and b", got)
	}
	sa.watch()
	sab.watch()
	if got := append(sa.take(), sab.take()...); got != nil {
		t.Fatalf("ACKs answered with %v", got)
	}
	if err := c.update(map[string]*anypb.Any{"b": claAny(t, "b", 2)}, nil, "2", time.Time{}); err != nil {
		t.Fatal(err)
	}
	if got := sa.take(); got != nil {
		t.Errorf("the stream of a was sent %v for a change of b", got)
	}
	if got := sab.take(); !slices.Equal(got, []string{"b"}) {
		t.Errorf("the stream of a and b was sent %v, want b only", got)
	}
	sab.watch()
	if got := sab.take(); got != nil {
		t.Errorf("the ACK of b was answered with %v", got)
	}
}

// go-control-plane's SotW server drops an answer still queued when a
// request of its type arrives first (it replaces the watch's channel):
// the next watch sends it again. An answer that was sent is not.
func TestDroppedAnswerIsSentAgain(t *testing.T) {
	c := newTyped(resource.EndpointType, map[string]*anypb.Any{"a": claAny(t, "a", 1)}, "1")
	s := newSotwStream(t, c, 1, "a")
	s.take()
	cancel := s.watch()
	if err := c.update(map[string]*anypb.Any{"a": claAny(t, "a", 2)}, nil, "2", time.Time{}); err != nil {
		t.Fatal(err)
	}
	// The answer waits in s.ch; a request comes first, and the server
	// closes the watch and opens another on a new channel.
	cancel()
	s.watch()
	if got := s.take(); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("after the dropped answer: %v, want a again", got)
	}
	s.watch()
	if got := s.take(); got != nil {
		t.Errorf("a sent answer was sent again: %v", got)
	}
}

// A stream that reconnects with the version it had, after the last of its
// resources went, gets an answer (without them): a new watcher knows
// nothing of what the stream holds. Before, its version counted as
// current and nothing was sent, so the client kept the listener.
func TestReconnectAfterTheLastResourceWentIsAnswered(t *testing.T) {
	l, err := marshalAny(resource.ListenerType, &listener.Listener{Name: "a"})
	if err != nil {
		t.Fatal(err)
	}
	c := newTyped(resource.ListenerType, map[string]*anypb.Any{"a": l}, "1")
	s := newSotwStream(t, c, 1, "a")
	if got := s.take(); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("first answer %v, want a", got)
	}
	cancel := s.watch()
	cancel() // the stream ends
	c.forget(s.sk)
	if err := c.update(nil, []string{"a"}, "2", time.Time{}); err != nil {
		t.Fatal(err)
	}
	r := &sotwStream{t: t, c: c, sk: streamKey{id: 2}, sub: stream.NewSotwSubscription([]string{"a"}, true),
		names: []string{"a"}, ver: s.ver}
	r.watch()
	select {
	case resp := <-r.ch:
		if got := names(t, resp); len(got) != 0 {
			t.Fatalf("reconnected stream got %v, want no listener", got)
		}
	default:
		t.Fatal("the reconnected stream got no answer: its client keeps the listener that is gone")
	}
}

// Names interned for a stream's state are freed when no stream refers to
// them: a client subscribing to ever new names and dropping them (or
// closing its stream) does not grow the cache's name table.
func TestInternedNamesAreFreed(t *testing.T) {
	c := newTyped(resource.EndpointType, map[string]*anypb.Any{"a": claAny(t, "a", 1)}, "1")
	keep := newSotwStream(t, c, 1, "a")
	keep.take()
	for i := range 50 {
		var ns []string
		for j := range 20 {
			ns = append(ns, "n"+strconv.Itoa(i*20+j))
		}
		s := newSotwStream(t, c, int64(2+i), append(ns, "a")...)
		s.take()
		s.names = []string{"a"} // drops the 20 names
		s.sub = stream.NewSotwSubscription(s.names, true)
		s.watch()
		s.take()
		c.forget(s.sk)
	}
	if n := len(c.ids.ids); n != 1 {
		t.Errorf("%d names interned with one stream subscribed to a, want 1", n)
	}
	if n := len(c.ids.names); n > 21 {
		t.Errorf("the name table grew to %d slots for at most 21 live names", n)
	}
	if n := len(c.ids.ws); n > 2 {
		t.Errorf("%d watcher slots for at most 2 live streams: freed slots are not reused", n)
	}
	c.forget(keep.sk)
	if n := len(c.ids.ids); n != 0 {
		t.Errorf("%d names interned with no stream, want 0", n)
	}
	if err := c.update(map[string]*anypb.Any{"a": claAny(t, "a", 2)}, nil, "2", time.Time{}); err != nil {
		t.Fatal(err)
	}
}

// Marks are kept in 32 bits: a mark and one a period later look alike, and
// the sweep every quarter period turns old ones foreign, so that a name
// unchanged for a period and then changed is still sent (here with a
// period of 16 updates; without the sweep its old mark reads as the new
// resource's and the change is never sent).
func TestOldMarksDoNotHideAChange(t *testing.T) {
	defer func(p uint64) { markPeriod = p }(markPeriod)
	markPeriod = 16
	c := newTyped(resource.EndpointType, map[string]*anypb.Any{"a": claAny(t, "a", 1), "b": claAny(t, "b", 1)}, "1")
	s := newSotwStream(t, c, 1, "a", "b")
	s.take()
	for i := range 40 {
		s.watch()
		port := uint32(2 + i)
		upd := map[string]*anypb.Any{"a": claAny(t, "a", port)}
		if c.n+1 == 17 || c.n+1 == 33 { // b's mark (its update 0 + 1) one and two periods on
			upd = map[string]*anypb.Any{"b": claAny(t, "b", port)}
		}
		if err := c.update(upd, nil, strconv.Itoa(i+2), time.Time{}); err != nil {
			t.Fatal(err)
		}
		got := s.take()
		for name := range upd {
			if !slices.Equal(got, []string{name}) {
				t.Fatalf("update %d of %s: sent %v", c.n, name, got)
			}
		}
	}
}
