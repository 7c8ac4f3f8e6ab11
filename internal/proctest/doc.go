// Package proctest is the one way tests start goreka (or any server they
// run beside it) as a separate process: a port that no other test takes,
// the process with its logs, waits for readiness, signals, and stopping.
// It is test support: only test files import it (cmd/goreka's harness,
// server's browser test, chaos, compat/suite, interop, and eurekahttp's
// and replication's tests of a hung peer).
//
// Ports. A port taken from ":0" and closed again lies in the kernel's
// ephemeral range, and between the test's check and the child's bind any
// outgoing connection of this machine may take it as its local port
// ("address already in use" at start-up, or a peer URL that reaches the
// wrong process). Port hands out ports below that range instead, which
// the kernel never picks by itself; each once per test binary, starting
// at a random place, and reserved across test binaries by a lock on a
// file per port, so that packages tested side by side (go test ./...)
// never get the same one. A test that knows its ports before it starts
// anything can write its peers' URLs into the arguments, and a node can
// stop and start again on its port. (Handing the listener's descriptor to
// the child would need goreka to accept one; a child that binds ":0" and
// reports its address cannot be named in another node's arguments.)
//
// Processes. Start runs a command with its output kept in memory (Log) or
// appended to a file, in its own process group if asked, and killed with
// the test binary (Pdeathsig). Stop sends a signal and waits, then kills.
// The Wait* methods poll with a bounded deadline, end early when the
// process exits, and report what they last saw; nothing sleeps to wait for
// a condition.
//
// Binaries. Build compiles cmd/goreka; a package whose tests can run
// goreka's main in the test binary itself (cmd/goreka) calls RunAsGoreka
// from TestMain and starts Self instead, so that no separate build is
// needed and the race detector covers the child.
//
// Peers. Deaf is a listener in the test binary that accepts connections
// and never reads from them: a peer hung with its socket open.
package proctest
