package document

import (
	"cmp"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/goreka/goreka/cache"
	"github.com/goreka/goreka/compat"
	"github.com/goreka/goreka/registry"
)

// Rebuilds proportional to the change.
//
// The full registry document and the delta are written from compressed
// chunks of consecutive applications, each chunk kept (as a cache.Segment)
// until one of its applications changes or it gets old. A rebuild after a
// registration re-encodes and re-compresses one chunk, not the registry:
// the registry's outline (registry.OutlineApplications, OutlineDelta) gives,
// under one read lock, every application's revision of last change and
// size, and views of exactly the applications of changed chunks. Because
// that outline is one consistent read, the document's apps__hashcode always
// matches its content, as with a whole re-encode.
//
// The bytes are those of compat's AppendApplications (head, fragments and
// tail, see compat/parts.go); only renewal timestamps differ from a whole
// re-encode at the same moment: a kept chunk carries the ones of when it was
// encoded. A refresh (the housekeeping's build) re-encodes a chunk once it
// is its refreshAge old (between Reuse/2 and Reuse, 3/8 to 3/4 of
// AutoExpiration); a rebuild for a change keeps it up to cache's
// ChangeWriter maxAge (AutoExpiration less a housekeeping tick). Each
// chunk's segment says when it is due (cache.Segment.Due: its refreshAge
// plus refreshSlack), so the cache refreshes a document only when one of
// its chunks needs it, and that refresh takes every chunk past its
// refreshAge: in an idle registry the chunks coming due within a slack are
// re-encoded in one rebuild, not one rebuild (a copy of the whole
// document's gzip bytes) per housekeeping tick.

// Chunk bounds, in instances (full documents) or recently-changed entries
// (deltas): a chunk ends after an application whose name hashes to a cut
// point once it holds chunkMin, or at chunkMax. Cutting by name keeps the
// chunks where they are when an application elsewhere grows or appears.
// About 300 instances (350 KB of JSON) per chunk keep a rebuild after one
// change around a millisecond and cost about 1 % in gzip size against one
// stream (each chunk starts without history).
const (
	chunkMin = 256
	chunkMax = 2048
	cutEvery = 4 // one application in cutEvery is a cut point
)

// chunk is one kept segment and what it was made from.
type chunk struct {
	apps  []registry.AppOutline // names, revisions and sizes: equal means same content
	first bool                  // holds the document's first application
	// mixed: an application of the chunk has remote-region instances merged
	// in (transparent fallback), so its bytes depend on the regions' copies;
	// such a chunk is never reused.
	mixed bool
	seg   *cache.Segment
}

// remotePart is the kept segment of the applications only remote regions
// hold, and what it was made from.
type remotePart struct {
	from  []*registry.Applications // the regions' copies
	only  []string                 // the applications it holds
	first bool
	seg   *cache.Segment
}

// docParts keeps the chunks of one document variant.
type docParts struct {
	mu     sync.Mutex
	chunks map[string]*chunk // by the name of the chunk's first application
	remote *remotePart
}

// fragments builds the full and delta documents of every variant from
// chunks.
type fragments struct {
	reg    *registry.Registry
	codecs compat.Codecs
	docs   [2][2][2]docParts // [delta][JSON][compact]
	// encoded counts the instances encoded into chunks (tests, metrics).
	encoded atomic.Int64
	// refreshBudget is how many instances of merely aged chunks a refresh
	// re-encodes (refreshBudget).
	refreshBudget int
}

// refreshBudget is the instances of aged chunks one refresh re-encodes per
// document: a few hundred ms, so that a change landing during one waits
// little, and with the housekeeping's tick (UpdateInterval/16) ~17,000 a
// second per document, a 1M registry's in about a minute of the 1.5
// between its first chunk coming due (Reuse/2 + refreshSlack after a
// loading) and the refresh's maxAge (AutoExpiration less two ticks).
const refreshBudget = 32768

// refreshSlack is how long after its refreshAge a chunk's segment is due
// (cache.Segment.Due), as a share of Reuse: the refresh it triggers
// re-encodes with it every chunk that reached its refreshAge meanwhile, so
// that an idle registry's document is rebuilt about once per slack (17 s
// with the defaults) instead of at every tick that finds one chunk due
// (UpdateInterval/16, 1.875 s). Within the refresh budget a chunk is then
// re-encoded at most Reuse + slack + a tick old (154 s of AutoExpiration's
// 180); past it (a 1M registry after its loading) up to the refresh's
// maxAge (cache.ChangeWriter: AutoExpiration less two ticks), plus any
// rebuild gap.
func refreshSlack(reuse time.Duration) time.Duration { return reuse / 8 }

func newFragments(reg *registry.Registry, codecs compat.Codecs) *fragments {
	return &fragments{reg: reg, codecs: codecs, refreshBudget: refreshBudget}
}

// write writes the document to w, reusing and refreshing the variant's
// chunks.
//
// ov, when not empty, is merged in (the full registry while transparent
// fallback is on): its instances of local applications go into their
// chunks, which are then never kept, and the applications only the regions
// hold follow the local chunks in one segment of their own, rebuilt when a
// region's copy changes. The hash covers both.
func (fr *fragments) write(w cache.SegmentWriter, delta bool, f compat.Format, compact bool, ov *regionOverlay) error {
	d := &fr.docs[b2i(delta)][b2i(f == compat.JSON)][b2i(compact)]
	d.mu.Lock()
	defer d.mu.Unlock()
	now := w.Now()
	reuse := w.Reuse()
	// A rebuild after a change re-encodes what changed, keeping the other
	// chunks up to its maxAge (AutoExpiration less a housekeeping tick):
	// renewal timestamps coming due are the housekeeping's rebuild to
	// refresh (cache.ChangeWriter), not what a change waits for (right after
	// a loading, every chunk is due at once).
	//
	// A refresh (the housekeeping's) re-encodes the chunks past their
	// refresh age oldest first, at most fr.refreshBudget instances of them
	// per build while they are younger than its maxAge (AutoExpiration less
	// two ticks; older ones whatever the budget): at 1M instances the chunks
	// of a loading come due within a minute, and a change landing during a
	// refresh waits for all of it.
	keepFor := func(name string) time.Duration { return refreshAge(reuse, name) }
	maxAge, budget := time.Duration(-1), -1 // no limit: loaders' tests
	if cw, ok := w.(cache.ChangeWriter); ok {
		var change bool
		if maxAge, change = cw.ForChange(); change {
			keepFor = func(string) time.Duration { return maxAge }
		} else {
			budget = fr.refreshBudget
		}
	}
	type due struct {
		i   int
		c   *chunk
		age time.Duration
	}
	var dues []due
	var ranges [][2]int
	var kept []*chunk
	pick := func(apps []registry.AppOutline) []bool {
		ranges = chunkRanges(apps)
		kept = make([]*chunk, len(ranges))
		want := make([]bool, len(apps))
		for i, r := range ranges {
			part := apps[r[0]:r[1]]
			mixed := false
			if ov != nil {
				for _, a := range part {
					if len(ov.ByApp[a.Name]) > 0 {
						mixed = true
						break
					}
				}
			}
			if c := d.chunks[part[0].Name]; c != nil && !mixed && !c.mixed && c.first == (r[0] == 0) && slices.Equal(c.apps, part) {
				age := now.Sub(c.seg.Built)
				if age < keepFor(part[0].Name) {
					kept[i] = c
					continue
				}
				if budget >= 0 && age < maxAge {
					dues = append(dues, due{i, c, age})
					continue
				}
			}
			for j := r[0]; j < r[1]; j++ {
				want[j] = true
			}
		}
		slices.SortStableFunc(dues, func(a, b due) int { return cmp.Compare(b.age, a.age) })
		spent := 0
		for _, x := range dues {
			if spent >= budget {
				kept[x.i] = x.c // due, not yet expired: a later refresh
				continue
			}
			for j := ranges[x.i][0]; j < ranges[x.i][1]; j++ {
				want[j] = true
				spent += apps[j].Count
			}
		}
		return want
	}
	var o *registry.Outline
	if delta {
		o = fr.reg.OutlineDelta(pick)
	} else {
		o = fr.reg.OutlineApplications(pick)
	}
	if rw, ok := w.(cache.RevisionWriter); ok {
		rw.SetRevision(o.Revision)
	}
	header := &registry.Applications{VersionDelta: o.VersionDelta, HashCode: o.HashCode}
	if ov != nil {
		header.HashCode = ov.Hash(o.HashCode)
	}
	next := make(map[string]*chunk, len(ranges))
	var buf []byte
	if _, err := w.Write(fr.codecs.AppendHead(buf, f, compact, header)); err != nil {
		return err
	}
	for i, r := range ranges {
		c := kept[i]
		if c == nil {
			buf = buf[:0]
			mixed := false
			for j := r[0]; j < r[1]; j++ {
				view := &o.Views[j]
				if ov != nil && len(ov.ByApp[view.Name]) > 0 {
					merged := ov.MergeApp(*view)
					view, mixed = &merged, true
				}
				buf = fr.codecs.AppendAppFragment(buf, f, compact, view, j == 0)
			}
			for j := r[0]; j < r[1]; j++ {
				fr.encoded.Add(int64(len(o.Views[j].Instances)))
			}
			seg := cache.NewSegment(buf, now)
			if mixed {
				seg.Due = now.Add(reuse) // encoded again at every build
			} else {
				seg.Due = now.Add(refreshAge(reuse, o.Apps[r[0]].Name) + refreshSlack(reuse))
			}
			c = &chunk{apps: slices.Clone(o.Apps[r[0]:r[1]]), first: r[0] == 0, mixed: mixed, seg: seg}
		}
		next[c.apps[0].Name] = c
		if err := w.WriteSegment(c.seg); err != nil {
			return err
		}
	}
	d.chunks = next
	if ov != nil {
		if err := fr.writeRemoteOnly(w, d, f, compact, ov, o, now, reuse); err != nil {
			return err
		}
	} else {
		d.remote = nil
	}
	_, err := w.Write(fr.codecs.AppendTail(buf[:0], f, compact, header))
	return err
}

// writeRemoteOnly writes the applications only the remote regions hold,
// from the kept segment while the regions' copies are the same.
func (fr *fragments) writeRemoteOnly(w cache.SegmentWriter, d *docParts, f compat.Format, compact bool, ov *regionOverlay, o *registry.Outline, now time.Time, reuse time.Duration) error {
	local := make(map[string]bool, len(o.Apps))
	for _, a := range o.Apps {
		local[a.Name] = true
	}
	var only []string
	for _, n := range ov.Names {
		if !local[n] {
			only = append(only, n)
		}
	}
	if len(only) == 0 {
		return nil
	}
	first := len(o.Apps) == 0
	// The segment depends on which applications are local too: key it by
	// the remote-only names as well as the copies.
	p := d.remote
	if p == nil || p.first != first || !slices.Equal(p.from, ov.from) || now.Sub(p.seg.Built) >= reuse || !slices.Equal(p.names(), only) {
		var buf []byte
		for i, n := range only {
			app := ov.MergeApp(registry.Application{Name: n})
			buf = fr.codecs.AppendAppFragment(buf, f, compact, &app, first && i == 0)
		}
		seg := cache.NewSegment(buf, now)
		seg.Due = now.Add(reuse)
		p = &remotePart{from: ov.from, first: first, seg: seg}
		p.only = only
		d.remote = p
	}
	return w.WriteSegment(p.seg)
}

// refreshAge is the age at which a chunk is encoded again for fresh renewal
// timestamps: between half and all of reuse, by the chunk's first name, so
// that chunks built together (a loading) are not all due in one rebuild
// (at 1M instances that would be a full encode delaying a change).
func refreshAge(reuse time.Duration, name string) time.Duration {
	return reuse/2 + time.Duration(xxhash.Sum64String(name)%1024)*(reuse/2)/1024
}

// chunkRanges cuts the sorted outline into chunks [start, end).
func chunkRanges(apps []registry.AppOutline) [][2]int {
	var out [][2]int
	start, size := 0, 0
	for i, a := range apps {
		size += a.Count
		last := i == len(apps)-1
		if last || size >= chunkMax || (size >= chunkMin && xxhash.Sum64String(a.Name)%cutEvery == 0) {
			out = append(out, [2]int{start, i + 1})
			start, size = i+1, 0
		}
	}
	return out
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// writeDocument writes the full registry or the delta: from chunks when w
// is the cache's writer, else encoded whole.
func (fr *fragments) writeDocument(w io.Writer, delta bool, f compat.Format, compact bool) error {
	if sw, ok := w.(cache.SegmentWriter); ok {
		return fr.write(sw, delta, f, compact, nil)
	}
	apps := fr.reg.Applications()
	if delta {
		apps = fr.reg.Delta()
	}
	return fr.codecs.WriteApplications(w, f, compact, apps)
}

func (p *remotePart) names() []string { return p.only }
