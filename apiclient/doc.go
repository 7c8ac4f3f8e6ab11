// Package apiclient is a Go client of goreka's read API for tools
// (/goreka/api/v1, README.md "Tools"): application counts, instance queries
// across all their pages, the watch with its resume, the long poll, and
// Eureka's /eureka/status, plus the three Eureka operations an operator
// runs by hand (status override, its removal, cancel). `goreka ctl` is
// built on it (package ctl); other Go programs import it the same way.
//
// Why a package of its own, and why this shape:
//
//   - One client for every tool. The command line had its own HTTP code
//     (paging, SSE parsing, the lagged resume, error bodies); a program that
//     wanted the same would have copied it. Now the rules of the API's
//     client side (follow continue tokens, resume a lagged watch from the
//     revision it names) are written once, next to the shapes they read.
//   - Small import graph. The answers are server/api/wire's types, which
//     server/api writes; this package imports wire and registry (plain
//     strings for Status and Lifecycle) and the standard library, not
//     server/api, gin or anything else of the server.
//   - A Eureka service URL is a server URL. New accepts what a client's
//     defaultZone holds (http://user:pass@host:8761/eureka/, or
//     .../ns/dev/eureka/ for a namespace) as well as a bare host:port;
//     credentials in the URL win over WithCredentials.
//   - Typed errors. An answer other than 2xx is a *StatusError with the
//     HTTP status and the API's message (Parameter names what a 400
//     refused); no answer at all is an *UnreachableError; a watch that
//     breaks ends with a *StreamError holding the revision to resume from.
//     Callers pick their exit codes or retries from these with errors.As.
//   - Context everywhere, no goroutines. Every call takes a context and the
//     iterators (Pages, Watch) do their I/O in the caller's loop: breaking
//     out closes the connection, cancelling the context ends the call. The
//     HTTP client's Timeout bounds each request but not the watch and the
//     long poll, which last by design and are bounded by their context.
//
// The watch resumes by itself only where the protocol says so (a lagged
// event names the revision to reconnect from); a stream the server or a
// proxy closes ends the sequence, so that a caller sees a dropped
// connection and decides (Watch again from StreamError.Revision loses
// nothing).
package apiclient
