package region

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/goreka/goreka/compat"
	"github.com/goreka/goreka/eurekahttp"
	"github.com/goreka/goreka/registry"
)

// docServer is a goreka server's registry documents as its cache serves
// them: what publish last took (a full registry and a delta, with their
// X-Goreka-Revision), however the registry changed since. It answers in
// memory (an http.RoundTripper), so that it runs in a synctest bubble.
type docServer struct {
	reg *registry.Registry

	mu          sync.Mutex
	full, delta *registry.Applications
	noRevision  bool          // answer without X-Goreka-Revision (a stock server, a relay)
	otherEpoch  string        // answer as another server (its epoch) behind the same address
	downDelta   bool          // the delta's request fails as an unreachable server's would
	cutDelta    bool          // the delta's body breaks off after its headers
	badHash     bool          // the delta's apps__hashcode is wrong
	piece       time.Duration // a full body arrives 4 KiB per piece (0: at once)
	fulls       int
	deltas      int
}

func newDocServer() *docServer {
	d := &docServer{reg: registry.New(registry.Options{})}
	d.publish()
	return d
}

// epoch is the server's registry's epoch (eurekahttp.EpochHeader), or
// another one's when it stands for a second server behind one address.
func (d *docServer) epoch() string {
	if d.otherEpoch != "" {
		return d.otherEpoch
	}
	return d.reg.Epoch()
}

func (d *docServer) publish() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.full, d.delta = d.reg.Applications(), d.reg.Delta()
}

func (d *docServer) RoundTrip(req *http.Request) (*http.Response, error) {
	d.mu.Lock()
	var apps *registry.Applications
	switch req.URL.Path {
	case "/eureka/apps/":
		d.fulls++
		apps = d.full
	case "/eureka/apps/delta":
		d.deltas++
		if d.downDelta {
			d.mu.Unlock()
			return nil, errors.New("connection reset by peer")
		}
		if d.cutDelta {
			d.mu.Unlock()
			return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}},
				Body: io.NopCloser(io.MultiReader(strings.NewReader(`{"applications":{`), errReader{})), Request: req}, nil
		}
		c := *d.delta
		if d.badHash {
			c.HashCode = "UP_999_"
		}
		apps = &c
	default:
		d.mu.Unlock()
		return &http.Response{StatusCode: 404, Body: io.NopCloser(bytes.NewReader(nil)), Request: req}, nil
	}
	h := http.Header{"Content-Type": {"application/json"}}
	if !d.noRevision {
		h.Set(eurekahttp.RevisionHeader, strconv.FormatInt(apps.Revision, 10))
		h.Set(eurekahttp.EpochHeader, d.epoch())
	}
	piece := d.piece
	if req.URL.Path != "/eureka/apps/" {
		piece = 0
	}
	d.mu.Unlock()
	var body io.Reader = bytes.NewReader(compat.AppendApplications(nil, compat.JSON, false, apps))
	if piece > 0 {
		body = &slowReader{r: body, every: piece, ctx: req.Context()}
	}
	return &http.Response{StatusCode: 200, Header: h, Body: io.NopCloser(body), Request: req}, nil
}

func (d *docServer) counts() (fulls, deltas int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.fulls, d.deltas
}

// slowReader hands out 4 KiB every piece of (bubble) time, until its
// request's context ends (as a connection's body).
type slowReader struct {
	r     io.Reader
	every time.Duration
	ctx   context.Context
}

func (s *slowReader) Read(p []byte) (int, error) {
	t := time.NewTimer(s.every)
	defer t.Stop()
	select {
	case <-s.ctx.Done():
		return 0, s.ctx.Err()
	case <-t.C:
	}
	return s.r.Read(p[:min(len(p), 4096)])
}

// changes records what OnChange was told.
type changes struct {
	mu  sync.Mutex
	got []string // app/id of every instance reported
}

func (c *changes) on(ch Change) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, in := range ch.Instances {
		c.got = append(c.got, in.App+"/"+in.ID())
	}
}

func (c *changes) take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.got
	c.got = nil
	slices.Sort(out)
	return slices.Compact(out)
}

func newWatchedRemote(t testing.TB, d *docServer, mod func(*Config)) (*Remote, *changes) {
	t.Helper()
	ch := &changes{}
	cfg := Config{Name: "upstream", URL: "http://core.test/eureka/", FetchInterval: 5 * time.Second, ReadTimeout: 5 * time.Second,
		HTTPClient: &http.Client{Transport: d}, OnChange: ch.on}
	if mod != nil {
		mod(&cfg)
	}
	r, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r, ch
}

// register registers app/id in d's registry and returns the update its
// watch would report.
func (d *docServer) register(t testing.TB, app, id string) Update {
	t.Helper()
	in := &registry.Instance{InstanceID: id, HostName: id + ".core", App: app, IPAddr: "10.2.0.1", Status: registry.StatusUp,
		DataCenterInfo: registry.DataCenterInfo{Name: registry.DataCenterMyOwn}, Metadata: map[string]string{}}
	in.Normalize()
	if _, err := d.reg.Register(in, false); err != nil {
		t.Fatal(err)
	}
	v, _ := d.reg.Get(app, id)
	return Update{Revision: v.Revision, App: app, ID: id, View: v}
}

func (d *docServer) cancel(t *testing.T, app, id string) Update {
	t.Helper()
	if err := d.reg.Cancel(app, id, false); err != nil {
		t.Fatalf("cancel %s/%s: %v", app, id, err)
	}
	return Update{Revision: d.reg.Applications().Revision, App: app, ID: id, Deleted: true}
}

// The watch's updates reach the copy served at once, ahead of the
// documents, and stay there while the documents fetched are older; the
// fetched copy alone is what deltas apply to and the hash checks.
func TestApplyPutsUpdatesAheadOfTheDocuments(t *testing.T) {
	d := newDocServer()
	d.register(t, "CORE", "c1")
	d.publish()
	r, ch := newWatchedRemote(t, d, nil)
	if r.Apply(d.reg.Epoch(), []Update{d.register(t, "CORE", "early")}) {
		t.Fatal("Apply took an update before any fetch (no revision to order it against)")
	}
	d.cancel(t, "CORE", "early")
	d.publish()
	if err := r.FetchOnce(t.Context()); err != nil {
		t.Fatal(err)
	}
	fetchedAt := d.full.Revision
	if got := r.Revision(); got != fetchedAt || got == 0 {
		t.Fatalf("Revision %d after a full fetch of revision %d", got, fetchedAt)
	}
	ch.take()

	u := d.register(t, "CORE", "c2")
	if !r.Apply(d.reg.Epoch(), []Update{u}) {
		t.Fatal("Apply refused an update after a fetch")
	}
	if got := idsOf(r); !slices.Equal(got, []string{"CORE/c1", "CORE/c2"}) {
		t.Fatalf("copy after Apply: %v", got)
	}
	if got := ch.take(); !slices.Equal(got, []string{"CORE/c2"}) {
		t.Fatalf("OnChange after Apply: %v", got)
	}
	if r.Revision() != u.Revision {
		t.Fatalf("Revision %d, want the update's %d", r.Revision(), u.Revision)
	}

	// The delta the server still serves is older than the update: the
	// copy keeps the update, and the hash is checked on the fetched copy
	// (no full fetch).
	if err := r.FetchOnce(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := idsOf(r); !slices.Equal(got, []string{"CORE/c1", "CORE/c2"}) {
		t.Fatalf("copy after an older delta: %v", got)
	}
	if fulls, _ := d.counts(); fulls != 1 {
		t.Fatalf("%d full fetches: the older delta failed the hash check of the copy served", fulls)
	}
	if got := ch.take(); len(got) != 0 {
		t.Fatalf("OnChange after an older delta: %v", got)
	}

	// A delta of the update's revision holds it: the update leaves the
	// top, and the document's version of the instance is no change.
	d.publish()
	if err := r.FetchOnce(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := ch.take(); len(got) != 0 {
		t.Fatalf("OnChange when the delta brought what the update had: %v", got)
	}
	r.mu.RLock()
	ahead := len(r.ahead)
	r.mu.RUnlock()
	if ahead != 0 {
		t.Fatalf("%d updates still on top of a document that holds them", ahead)
	}

	// A cancel; an update of a revision the copy holds is skipped.
	if !r.Apply(d.reg.Epoch(), []Update{d.cancel(t, "CORE", "c2"), u}) {
		t.Fatal("Apply refused")
	}
	if got := idsOf(r); !slices.Equal(got, []string{"CORE/c1"}) {
		t.Fatalf("copy after a cancel and an old update: %v", got)
	}
	if got := ch.take(); !slices.Equal(got, []string{"CORE/c2"}) {
		t.Fatalf("OnChange after the cancel: %v", got)
	}

	// A wrong hash still fetches the full registry.
	d.publish()
	d.mu.Lock()
	d.badHash = true
	d.mu.Unlock()
	if err := r.FetchOnce(t.Context()); err != nil {
		t.Fatal(err)
	}
	if fulls, _ := d.counts(); fulls != 2 {
		t.Fatalf("%d full fetches after a hash mismatch, want 2", fulls)
	}
}

// Documents that name no revision (the upstream restarted into an older
// one, or it is a relay) drop the updates on top, and Apply refuses
// until a document names one again.
func TestApplyStopsWithoutRevisions(t *testing.T) {
	d := newDocServer()
	d.register(t, "CORE", "c1")
	d.publish()
	r, _ := newWatchedRemote(t, d, nil)
	if err := r.FetchOnce(t.Context()); err != nil {
		t.Fatal(err)
	}
	if !r.Apply(d.reg.Epoch(), []Update{d.register(t, "CORE", "c2")}) {
		t.Fatal("Apply refused")
	}
	d.reg.Cancel("CORE", "c2", false) // the watch's cancel is lost
	d.mu.Lock()
	d.noRevision = true
	d.mu.Unlock()
	d.publish()
	if err := r.FetchOnce(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := idsOf(r); !slices.Equal(got, []string{"CORE/c1"}) {
		t.Fatalf("copy after a document without a revision: %v (an update stayed on top)", got)
	}
	if r.Apply(d.reg.Epoch(), []Update{d.register(t, "CORE", "c3")}) || r.Revision() != 0 {
		t.Fatalf("Apply took an update with documents of no revision (Revision %d)", r.Revision())
	}
}

// A relay's full fetch of a large upstream is bounded by its progress
// (FullFetchTimeout, FullReadTimeout), not by the fetch interval: a body
// that arrives steadily over four intervals is a copy, where a remote
// region abandons it at its interval as Eureka does.
func TestFullFetchTimeout(t *testing.T) {
	for _, tc := range []struct {
		name string
		full time.Duration
		ok   bool
	}{{"interval-bound", 0, false}, {"progress-bound", 10 * time.Minute, true}} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				d := newDocServer()
				for i := range 200 {
					d.register(t, "CORE", "c"+strconv.Itoa(i))
				}
				d.publish()
				d.piece = time.Second // a whole registry takes ~20 s
				r, _ := newWatchedRemote(t, d, func(c *Config) { c.FullFetchTimeout, c.FullReadTimeout = tc.full, 2*time.Second })
				err := r.FetchOnce(t.Context())
				if got := len(idsOf(r)); (err == nil) != tc.ok || tc.ok && got != 200 {
					t.Fatalf("full fetch: err %v, %d instances copied", err, got)
				}
			})
		})
	}
}

func idsOf(r *Remote) []string {
	apps, _ := r.Copy()
	return ids(apps)
}

// BenchmarkApply is the cost of one batch of watch updates put into a
// copy of 110,000 instances in 550 applications (a relay tier of 10 x
// 10,000 and its core): batches of 1 (a change after a quiet spell) and
// of 1,000 spread over every application (a fleet registering).
func BenchmarkApply(b *testing.B) {
	d := newDocServer()
	for i := range 110000 {
		in := &registry.Instance{InstanceID: "i" + strconv.Itoa(i), HostName: "h", App: "APP" + strconv.Itoa(i%550), IPAddr: "10.0.0.1",
			Status: registry.StatusUp, DataCenterInfo: registry.DataCenterInfo{Name: registry.DataCenterMyOwn}}
		d.reg.Register(in, false)
	}
	d.publish()
	for _, n := range []int{1, 1000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			r, _ := newWatchedRemote(b, d, nil)
			if err := r.FetchOnce(b.Context()); err != nil {
				b.Fatal(err)
			}
			rev := r.Revision()
			ups := make([]Update, n)
			b.ResetTimer()
			for i := range b.N {
				for j := range ups {
					rev++
					k := i*n + j
					in := &registry.Instance{InstanceID: "n" + strconv.Itoa(k), HostName: "h", App: "APP" + strconv.Itoa(k%550),
						Status: registry.StatusUp, DataCenterInfo: registry.DataCenterInfo{Name: registry.DataCenterMyOwn}}
					ups[j] = Update{Revision: rev, App: in.App, ID: in.InstanceID, View: registry.LeaseView{Instance: in}}
				}
				r.Apply(d.reg.Epoch(), ups)
			}
		})
	}
}

// Revisions compare only within one epoch (X-Goreka-Epoch): updates of
// another server's sequence are refused (the caller fetches), a document of
// another epoch drops what is on top, a full registry older than the last
// delta of the same epoch keeps the updates newer than it, and Reset drops
// the top.
func TestApplyComparesRevisionsWithinOneEpoch(t *testing.T) {
	d := newDocServer()
	d.register(t, "CORE", "c1")
	d.publish()
	r, _ := newWatchedRemote(t, d, nil)
	if err := r.FetchOnce(t.Context()); err != nil {
		t.Fatal(err)
	}
	if r.Apply("another-server", []Update{d.register(t, "CORE", "c2")}) {
		t.Fatal("Apply took updates of another epoch than the fetched copy's")
	}
	if r.Apply("", []Update{d.register(t, "CORE", "c3")}) {
		t.Fatal("Apply took updates of no epoch")
	}
	d.cancel(t, "CORE", "c2")
	d.cancel(t, "CORE", "c3")

	// A full registry older than the delta before it (an unread document
	// the server keeps up to an update interval): the update newer than
	// both stays on top.
	old := d.full
	d.register(t, "CORE", "c4")
	d.publish()
	if err := r.FetchOnce(t.Context()); err != nil {
		t.Fatal(err)
	}
	if !r.Apply(d.reg.Epoch(), []Update{d.register(t, "CORE", "c5")}) {
		t.Fatal("Apply refused")
	}
	d.mu.Lock()
	d.full, d.badHash = old, true // the delta fails its hash: a full fetch, of the old document
	d.mu.Unlock()
	if err := r.FetchOnce(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := idsOf(r); !slices.Contains(got, "CORE/c5") {
		t.Fatalf("copy after an older full registry: %v (the newer update on top was dropped)", got)
	}
	d.mu.Lock()
	d.badHash = false
	d.mu.Unlock()

	// Reset drops the top: the copy served is the fetched one's.
	r.Reset()
	if got := idsOf(r); slices.Contains(got, "CORE/c5") {
		t.Fatalf("copy after Reset: %v (the update stayed on top)", got)
	}

	// Another server behind the address: its documents drop the top.
	if !r.Apply(d.reg.Epoch(), []Update{d.register(t, "CORE", "c6")}) {
		t.Fatal("Apply refused")
	}
	d.reg.Cancel("CORE", "c6", false) // the other server never had it
	d.mu.Lock()
	d.otherEpoch = "another-server"
	d.mu.Unlock()
	d.publish()
	if err := r.FetchOnce(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := idsOf(r); slices.Contains(got, "CORE/c6") {
		t.Fatalf("copy after a document of another epoch: %v (an update of the old one stayed on top)", got)
	}
}

// errReader fails every read, as a connection broken off does.
type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("connection reset by peer") }

// A delta that gets no answer (the server is not there) is not followed by
// a full fetch when the full fetch is bounded by progress only (a relay:
// its caller moves to the next endpoint at once); one that broke off in its
// body is, and a remote region falls back as Eureka does.
func TestUnansweredDeltaFetchesNoFullWithAProgressBound(t *testing.T) {
	for _, tc := range []struct {
		name  string
		full  time.Duration
		cut   bool
		fulls int
	}{{"remote region", 0, false, 2}, {"relay", 10 * time.Minute, false, 1}, {"relay, body cut", 10 * time.Minute, true, 2}} {
		t.Run(tc.name, func(t *testing.T) {
			d := newDocServer()
			d.register(t, "CORE", "c1")
			d.publish()
			r, _ := newWatchedRemote(t, d, func(c *Config) { c.FullFetchTimeout = tc.full })
			if err := r.FetchOnce(t.Context()); err != nil {
				t.Fatal(err)
			}
			d.mu.Lock()
			d.downDelta, d.cutDelta = !tc.cut, tc.cut
			d.mu.Unlock()
			r.FetchOnce(t.Context())
			if fulls, _ := d.counts(); fulls != tc.fulls {
				t.Fatalf("%d full fetches after an unanswered delta, want %d", fulls, tc.fulls)
			}
		})
	}
}
