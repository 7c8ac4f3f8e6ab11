// Package region keeps copies of remote regions' registries, as Eureka's
// RemoteRegionRegistry does (eureka.server.remote-region-urls-with-name):
// one Remote per region fetches GET apps/ from the region's Eureka server,
// then GET apps/delta every interval, applying the delta to its copy and
// checking the copy's reconcile hash against the delta's apps__hashcode (a
// mismatch, or a failed delta, fetches the full registry again). A failed
// fetch keeps the last good copy. A region is ready once one fetch
// succeeded; it stays ready. A full fetch is bounded by the fetch interval
// as Eureka's, unless Config.FullFetchTimeout bounds it by its progress
// instead (a relay's copy of a large core).
//
// A relay's copy of a goreka upstream also takes the upstream's watch
// (watch.go: Remote.Apply): each change goes into the copy served at once,
// on top of the copy the fetched documents made, ordered by the registry
// revision the documents name (X-Goreka-Revision) and the watch's, within
// one epoch (X-Goreka-Epoch, registry.Epoch: two servers behind one
// address, or one restarted, count revisions apart, and a watch of another
// epoch than the documents' wakes a fetch instead); the
// fetches go on unchanged as the check (deltas apply to the fetched copy,
// its hash is checked there, a mismatch fetches the full registry), and a
// change leaves the top once a fetched document holds it.
//
// Set holds every remote region and the whitelists
// (eureka.server.remote-region-app-whitelist); merge.go builds the documents
// Eureka serves from the local registry and the copies
// (AbstractInstanceRegistry.getApplicationsFromMultipleRegions,
// getApplicationDeltasFromMultipleRegions and the fallback reads).
//
// Remote copies never enter the local registry: they are not replicated to
// peers, not evicted, not counted by self-preservation.
package region
