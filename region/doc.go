// Package region keeps copies of remote regions' registries, as Eureka's
// RemoteRegionRegistry does (eureka.server.remote-region-urls-with-name):
// one Remote per region fetches GET apps/ from the region's Eureka server,
// then GET apps/delta every interval, applying the delta to its copy and
// checking the copy's reconcile hash against the delta's apps__hashcode (a
// mismatch, or a failed delta, fetches the full registry again). A failed
// fetch keeps the last good copy. A region is ready once one fetch
// succeeded; it stays ready.
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
