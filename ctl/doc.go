// Package ctl is `goreka ctl`, the command-line client of a running
// goreka: it lists applications and instances, watches the change stream,
// sets and removes status overrides, cancels leases, shows the server's
// status and compares two nodes' registries (diff). Run is the whole
// command; cmd/goreka only hands it the arguments after "ctl".
//
// It is a package, not part of cmd/goreka, because cmd/goreka wires the
// server and nothing else, and because everything it does over HTTP is
// package apiclient's, which other Go programs use as well: ctl keeps the
// command line (flags anywhere on the line, GOREKA_URL, GOREKA_USER,
// GOREKA_PASSWORD, GOREKA_NAMESPACE), the output (tables for people, JSON
// for scripts), the diff, and the exit codes, which scripts depend on:
// ExitOK, ExitFailed (the operation was refused or diff found differences),
// ExitUsage, ExitUnreachable (no answer, not open yet, or credentials
// refused). The client's typed errors decide the code: a *StatusError by
// its HTTP status (401 and 403 are ExitUnreachable, the rest ExitFailed),
// an *UnreachableError or a broken watch ExitUnreachable.
//
// Its tests against real servers run the binary's run in cmd/goreka
// (ctl_test.go there), where the harness that starts goreka lives.
package ctl
