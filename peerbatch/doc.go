// Package peerbatch is the receiving side of Eureka's peer replication: the
// items of a POST .../peerreplication/batch/ applied to a registry and
// answered one by one (PeerReplicationResource), and the rules that answer
// shares with the REST API: the HTTP status of a registry operation's
// outcome (Status) and the visibility of an expired lease (Visible).
//
// It is a package of its own so that there is one copy of these rules for
// every server that answers a peer: server's batch handler and REST
// handlers, and replication/peertest, the fake peer of the replication
// tests, which must answer exactly as goreka does (a test against a peer
// with codes of its own proves nothing about two goreka servers). It
// imports registry and compat only, no HTTP framework, so the test peer can
// use it without pulling in the server.
//
// A replicated item is a call of the REST API in one envelope: Eureka's
// PeerReplicationResource hands each to the InstanceResource method a
// client's request reaches, so a StatusUpdate or DeleteStatusOverride
// first looks the instance up as getInstanceByAppAndId does and answers
// 404 for a lease that has expired and is not evicted yet while lease
// expiration is enabled (one held back by the eviction limit, Eureka's
// guard against mass expiry), exactly as the REST call does. Heartbeats,
// registrations and cancellations reach the registry directly, as in
// Eureka.
package peerbatch
