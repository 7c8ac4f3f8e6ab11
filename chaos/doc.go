// Package chaos runs goreka nodes and simulated Eureka clients in their own
// Linux network namespaces on one bridge, so that faults are real: a link
// set down, packets dropped one way or at random (nftables), a slow link
// (tc: netem when the kernel has it, else a tbf rate limit), a node stopped
// with SIGSTOP for longer than a lease, kill -9 and restarts. TestChaos
// (make chaos) runs a seeded schedule of such faults against 3 nodes and a
// fleet of simulated clients and checks invariants throughout and after
// each heal (RELIABILITY.md).
//
// Everything else lives in _test.go files behind the build tag chaos, so a
// plain go test ./... skips it; it needs root, ip (iproute2), nft
// (nftables) and tc:
//
//	make chaos   # cd chaos && go test -tags chaos -run '^TestChaos$' -v .
package chaos
