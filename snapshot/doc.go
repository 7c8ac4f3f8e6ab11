// Package snapshot keeps the registry on disk so that a restarted server
// serves the registry it had instead of an empty one.
//
// A Store writes the registry (instances, lease timings, status overrides)
// to one file every few seconds when it changed, and once more on Flush at
// shutdown. Each write goes to path.tmp, is fsynced, renamed over path and
// the directory fsynced, so a crash at any moment leaves either the previous
// snapshot or the new one. At start-up Store.Restore loads the file into
// the registry before the server opens: every instance gets a fresh lease
// of its own duration, so instances that do not heartbeat again expire as
// usual. A missing file means starting empty; a file older than the maximum
// age is ignored; a foreign, truncated or damaged file is moved aside to
// path.corrupt-<time> with one log line, and the server starts empty.
//
// The file is a JSON document whose instances are Eureka's own instance
// objects (package compat's codec), closed by a CRC-32C checksum of
// everything before it. docs/SNAPSHOT.md documents the format.
package snapshot
