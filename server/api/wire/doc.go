// Package wire holds the JSON shapes of goreka's read API for tools
// (/goreka/api/v1, README.md "Tools"): the answers of the instance, app and
// long-poll queries, the events of the watch, the 400 body, the mount
// point and the paging limits.
//
// They are a package of their own so that both ends use one definition:
// server/api, which writes them, and apiclient, which reads them. A Go
// program that only reads the API imports this package and apiclient, and
// through them no HTTP framework: wire imports nothing but registry (for
// Status and Lifecycle, which are plain strings), and registry the
// standard library only.
package wire
