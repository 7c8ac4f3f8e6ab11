// Package document builds the registry documents Eureka serves: the full
// registry, the delta, one application, a VIP and a secure VIP, in JSON or
// XML, full or compact, with the remote regions merged in as Eureka's
// ResponseCacheImpl.generatePayload does. Builder.Load is the response
// cache's loader (cache.StreamLoader); package server only serves what the
// cache holds (negotiation, ETag, gzip, status codes).
//
// # One constructor
//
// New takes the registry, the codecs (eureka.server.json-codec-name,
// xml-codec-name) and the remote regions once, and the Builder is the one
// holder of them. The HTTP server takes the Builder (server.Deps.Docs),
// builds its response cache on Builder.Load, and reads the regions back
// from it (Builder.Regions, Builder.RegionsKey) for what it decides itself:
// the cache key of ?regions=, the 403 while a region never answered, the
// fallback of single-instance reads. So the regions a server merges are
// always those its cache's documents are built with.
//
// # Why a package of its own
//
// Building a document is neither HTTP nor caching: it reads registry views
// and region copies, encodes them with compat and keeps compressed pieces
// (cache.Segment) between builds. Kept apart, it is tested and benchmarked
// without a router (fragments_test.go, the rebuild benchmarks), and the
// cache stays a leaf that stores whatever bytes its loader writes.
//
// # Rebuilds proportional to the change
//
// The full registry and the delta are written from kept chunks of
// consecutive applications; a rebuild after one registration re-encodes one
// chunk (fragments.go). With transparent fallback, the applications only
// remote regions hold follow in one kept segment of their own, rebuilt when
// a region's copy changes; chunks holding a merged application are never
// kept. Each chunk's segment says when it is due for fresh renewal
// timestamps (cache.Segment.Due), so the cache's housekeeping rebuilds a
// document only when one of its chunks needs it, and that refresh takes
// every chunk that came due meanwhile.
package document
