// Package namespace holds what goreka knows of namespaces (docs/DESIGN.md
// "Namespaces"): the registries served at /ns/{name}/ beside the default
// one at /eureka/.
//
// It owns the name rule (a lower-case DNS label, Validate), the snapshot
// file of a namespace (SnapshotPath, SnapshotNames), the refusals as typed
// errors (ErrInvalidName, ErrUnknown, ErrLimit, ErrClosed, which the /ns/
// router, server/namespaces.go, answers with 400, 404, 403 and 503, and
// ErrCreate, a failed creation, a 500), and the lifecycle of the namespaces of one process (Manager):
// which exist from start-up (goreka.namespaces.allowed, and with
// auto-create those whose snapshot file is found), creation at the first
// request (goreka.namespaces.auto-create) up to goreka.namespaces.max,
// one creation per name however many requests wait for it, and no
// creation once shutdown began.
//
// The Manager is generic over what a namespace holds: cmd/goreka builds a
// whole registry stack per namespace and hands the Manager the function
// that builds one, so this package knows nothing of registries, HTTP or
// replication. It imports the standard library only, so that the
// configuration (cmd/goreka/config) can validate names without importing
// the HTTP edge.
package namespace
