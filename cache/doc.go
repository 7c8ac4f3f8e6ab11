// Package cache is Eureka's response cache: encoded registry payloads, stored as plain and gzip
// bytes with an ETag, served without re-encoding, and made fresh again after every change.
//
// # Two tiers, as in Eureka's ResponseCacheImpl
//
// The readWrite tier (github.com/patrickmn/go-cache) maps a Key (entity, name, JSON or XML,
// full or compact) to a Value built by the caller's Loader. A miss calls the loader once, even
// when many requests miss together, and compresses the result right away. Entries expire
// AutoExpiration (eureka.server.response-cache-auto-expiration-in-seconds, 180 s) after they
// were built, and Invalidate drops the keys a registry change affects (see Cache.Invalidate,
// which also drops the compact VIP keys and each piece of a comma-separated VIP address, two
// keys Eureka forgets).
//
// The readOnly tier is consulted first when UseReadOnly
// (eureka.server.use-read-only-response-cache, true) is set. It is an immutable map swapped
// atomically, so a hit takes no lock and allocates nothing; a miss fills it from the readWrite
// tier. It is never invalidated, only refreshed. With UseReadOnly false every Get reads the
// readWrite tier, which is always fresh.
//
// # goreka's refresh on change (the default)
//
// Eureka refreshes the readOnly tier on a 30 s timer (response-cache-update-interval-ms), so a
// new instance can take up to 30 s to show in /eureka/apps and /eureka/apps/delta, and a new
// application can 404 for as long. goreka instead marks the readOnly keys an Invalidate touches
// as dirty and Cache.Run rebuilds them shortly after:
//
//   - the first change after a quiet period is rebuilt at once;
//   - changes that arrive during a rebuild, or within the refresh gap after it, are rebuilt
//     together when the gap ends. The gap is MinRefreshGap (200 ms) or twice the duration of
//     the last rebuild, whichever is longer (never more than UpdateInterval), so a storm of a
//     thousand registrations costs a handful of rebuilds and a bounded share of the CPU. With
//     fewer changes pending than the last rebuild covered, the gap shrinks in proportion: the
//     first change after a loading waits MinRefreshGap, not twice the loading's rebuild.
//     A housekeeping refresh (below) is followed by the gap as any rebuild is, without
//     setting it (its duration says nothing of what the next change costs).
//
// A pass rebuilds only the dirty keys some Get read since they were last built: a key nobody
// reads (a VIP or an application a client fetched once) is removed from the readOnly tier
// instead, and its next Get loads it as a first Get does (goreka_cache_unread_dropped_total).
// A key is thus rebuilt at most once per read, never more often than it is asked for, however
// long a storm lasts; a key read at least once per refresh gap (the delta clients poll) is
// rebuilt on every pass as before. The registry documents (full and delta, every variant) are
// the exception: a cold load of one is a whole-registry encode inside the request (seconds at
// 1M instances, past a client's read timeout), so an unread one keeps its last copy and is
// rebuilt at most once per UpdateInterval, Eureka's own staleness bound; its first reader gets
// that copy at once and wakes a pass that brings it up to date. No read waits for the build
// of a key the readOnly tier holds: while it is rebuilt, readers get its previous payload.
// Each payload is exactly one registry revision (document builds the full registry and the
// delta from one outline and records its revision, Value.Revision, which the server sends as
// X-Goreka-Revision), never a mix of two. An older revision is what Eureka's readOnly tier
// serves too; the one reader that must not get one, a joining peer's start-up sync, does not
// read the cache (replication's doc: the sync streams from a registry view).
//
// A registration is therefore visible within the refresh gap plus one rebuild, while every full
// fetch between rebuilds is still a copy of cached bytes. A rebuild reloads only the dirty keys
// that readers have asked for, and a registry document is rebuilt from segments (below), so a
// change is visible well under a second after a quiet period and within about a second during a
// storm. Every UpdateInterval a housekeeping pass also rebuilds readOnly entries older
// than AutoExpiration, keeping Eureka's bound on how stale renewal timestamps can get.
//
// # Segments: rebuilds proportional to the change
//
// A loader may write precompressed pieces (Segment, through SegmentWriter) besides plain
// bytes. The cache frames everything written as one gzip member: plain bytes are compressed as
// they come, segments go in as they are (each is raw deflate without history ending on a sync
// flush), and the CRC-32 is combined from the pieces' (as parallel gzip tools do). The member
// is kept as that list of pieces, the segments shared with the loader and not copied
// (Value.WriteGzip writes them in turn, Value.GzipLen is the Content-Length): a rebuild that
// keeps most of a document allocates what it re-encoded, not the whole document again (50 MB
// at 1M instances); a member under 64 KiB is joined into one slice. document's
// loader keeps the segments of chunks of applications and re-encodes only the chunks whose
// applications changed, so a rebuild after one registration in a 100k registry compresses a
// few hundred KB instead of 110 MB. A payload is as old as its oldest segment (Value.Built),
// so AutoExpiration still bounds the age of every byte (renewal timestamps), as for a payload
// built whole. A rebuild for a change re-encodes only what changed (ChangeWriter: the other
// segments are kept up to AutoExpiration less a tick); refreshing segments for age is the
// housekeeping's, which every UpdateInterval/16 (the tick) rebuilds the registry documents
// one of whose segments is due (Segment.Due, Value.Due), so that a change never waits for a
// loading's worth of segments coming due together, and an idle registry is rebuilt only when
// a segment needs it (document batches the chunks coming due within 17 s into one refresh),
// not at every tick. A refresh re-encodes the segments AutoExpiration less two ticks old
// whatever a loader's budget, which keeps what is served within AutoExpiration while the
// refresh gap is at most a tick (Cache.markAged has the exact bound). Compression is
// github.com/klauspost/compress/flate (see gzipLevel).
//
// # Getting Eureka's exact 30 s behaviour back
//
// Set RefreshOnChange to false. Run then copies every readOnly key from the readWrite tier each
// UpdateInterval, first at the next multiple of the interval since the epoch, exactly like
// Eureka's timer. cmd/goreka does this when the configuration sets
// eureka.server.response-cache-update-interval-ms explicitly, or when it sets
// goreka.cache.refresh-on-change=false.
//
// # Conditional requests
//
// Each Value carries a strong ETag (xxhash of the plain bytes; a segment counts as its own
// xxhash and length). Java clients ignore it; other
// clients can send If-None-Match and get 304 (Value.NotModified).
//
// # Typical use
//
//	docs := document.New(document.Config{Registry: reg, Codecs: codecs})
//	c := cache.NewStreaming(cache.DefaultConfig(), docs.Load) // or cache.New with a Loader returning bytes
//	go c.Run(ctx)
//	// in the registry's Options.OnEvent listener, for each change of instance in:
//	c.Invalidate(in.App, in.VIPAddress, in.SecureVIPAddress)
//	v, err := c.Get(cache.Key{Entity: cache.Application, Name: cache.AllApps, JSON: true})
package cache
