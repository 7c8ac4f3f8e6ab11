// Package api is goreka's read API for tools, mounted at /goreka/api/v1 by
// the server: instance queries with filters and paging, application counts,
// a watch (Server-Sent Events) and a long poll on the registry's ordered
// change stream, and Prometheus HTTP service discovery. README.md, section
// "Tools", documents the shapes. They are declared once, in package wire
// (server/api/wire), which this package writes and package apiclient, the
// Go client of this API, reads without importing this package and gin.
//
// Everything is fed by API.OnEvent, which the owner calls with every
// registry event in revision order (registry.Options.OnEvent):
//
//   - the Index keeps each instance as of its last change with sets by
//     application, status, VIP, secure VIP and metadata key=value, O(1) in
//     the registry's size per change, so a filtered query walks the
//     smallest set its filters name rather than the registry (all but the
//     application sets are built by the first query that needs them);
//   - the history ring keeps the last changes, so a watcher that resumes at
//     a recent revision gets what it missed instead of a snapshot.
//
// A watch subscribes (registry.Subscribe) before it reads the history or a
// snapshot, then skips what it already sent; the registry's writers never
// wait for it, and one that falls behind is cut off with the revision to
// resume from.
//
// Heartbeats are not changes: the lifecycle of an instance (up, suspect,
// held) and its last heartbeat are read from the live lease when answering.
package api
