# goreka — make targets. `make test` is the developer loop; `make ci` is what
# .ci/run runs on a fresh machine (it also installs what the suites need).
GO       ?= go
BIN      ?= bin/goreka
FUZZTIME ?= 10s

.PHONY: all build run test vet fmt-check unit interop fuzz compat compat-build compat-clients compat-eureka-clients kube-churn compat-consumers compat-stock chaos chaos-soak browser bench bench-quick ci clean deploy-check manifests

all: build

build:
	$(GO) build -o $(BIN) ./cmd/goreka

run:
	$(GO) run ./cmd/goreka

# The test command of the README: formatting, vet, and every Go test (unit,
# golden, process-level, and the interop module's) under the race detector.
test: fmt-check vet unit interop

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	@if git grep -nE '^(<<<<<<<|>>>>>>>) ' -- ':!*.md5'; then echo "merge conflict markers left in the files above"; exit 1; fi

# vet covers the interop module too (./... stops at a nested go.mod).
vet:
	$(GO) vet ./...
	cd interop && $(GO) vet ./...

unit:
	$(GO) test -race -count=1 ./...
	# Allocation tests skip under the race detector (it makes sync.Pool drop
	# items); run them once without it so a hot-path allocation fails the build.
	$(GO) test -count=1 -run 'DoesNotAllocate' ./...

# interop/ is its own Go module (like deploy/check), so that the libraries it
# runs against goreka (github.com/hashicorp/consul/api,
# github.com/prometheus/prometheus and, through them, k8s.io/client-go) stay
# out of goreka's go.mod. Its Prometheus test needs the prometheus binary
# (.ci/run installs it; without it the test skips, except under CI=true).
# Its go.mod cannot be told to keep goreka's versions, and Prometheus'
# requirements could raise one of them: the interop tests would then run
# against a goreka built with other libraries than the one shipped. Every
# module linked into goreka's packages must have the same version in both.
interop:
	@t=$$(mktemp -d); trap 'rm -rf $$t' EXIT; \
	$(GO) list -deps -f '{{with .Module}}{{if not .Main}}{{.Path}} {{.Version}}{{end}}{{end}}' ./... > $$t/root || exit 1; \
	(cd interop && $(GO) list -m all) > $$t/interop || exit 1; \
	sort -u $$t/root > $$t/r; awk 'NF>=2{print $$1, $$2}' $$t/interop | sort > $$t/i; \
	diff=$$(join $$t/r $$t/i | awk '$$2 != $$3'); \
	if [ -n "$$diff" ]; then echo "interop/go.mod selects other versions of modules goreka links (module, goreka's, interop's):"; echo "$$diff"; exit 1; fi
	cd interop && $(GO) test -race -count=1 ./...

# Short fuzzing of every decoder (the long runs are described in RELIABILITY.md).
# Each entry is package:target. FUZZMINIMIZETIME bounds the minimizing of each
# new interesting input (Go's default, 60 s, is spent on a mutated 2 KB keystore
# of FuzzPKCS12KeyAliases while the progress line says 0 execs/sec: the whole
# 10 s budget went to minimizing, golang/go#51484). A budget, not a goal: an
# input not fully minimized in it is kept as it is.
FUZZMINIMIZETIME ?= 2s
FUZZ_TARGETS ?= compat:FuzzDecodeInstanceJSON compat:FuzzDecodeInstanceXML compat:FuzzDecodeReplicationList \
	compat:FuzzDecodeApplications compat:FuzzFastDecoderAgrees server:FuzzRouter cmd/goreka/config:FuzzParse \
	snapshot:FuzzUnmarshal tlsconf:FuzzPKCS12KeyAliases server:FuzzScanRenewals
fuzz:
	@GO="$(GO)" FUZZTIME="$(FUZZTIME)" FUZZMINIMIZETIME="$(FUZZMINIMIZETIME)" .ci/fuzz.sh $(FUZZ_TARGETS)

# deploy/: helm lint and helm template of the chart, every rendered and
# plain manifest decoded strictly into the Kubernetes API types, promtool
# check/test of the alerting rules (deploy/check is its own Go module, so
# that k8s.io/api stays out of goreka's). Without helm or promtool the
# tests skip, except under CI=true. HELM selects the helm binary.
deploy-check:
	cd deploy/check && gofmt -l . | (! grep .) && $(GO) vet ./... && HELM=$(HELM) $(GO) test -count=1 ./...

# Regenerate the plain manifests from the chart.
HELM ?= helm
manifests:
	$(HELM) template goreka deploy/helm/goreka --namespace goreka -f deploy/kubernetes/values.yaml > deploy/kubernetes/goreka.yaml

# The real-client compatibility suite (Spring Boot 3 and 4, Netflix Java,
# Node, Python clients, and the stock Spring Eureka server as reference).
# The dashboard in headless Chromium (Debian's chromium package).
browser:
	$(GO) test -tags browser -run Browser -count=1 -v ./server

# Two stock lines (SCN 4.3.0 and 5.0.3) and two mixed pairs since issue 15: 45 min leaves room.
compat: compat-build
	$(MAKE) -j2 --output-sync=target compat-clients compat-consumers

# Every agent and both stock server lines, built once and one after the
# other (each build script is idempotent): the two halves below run at
# once and must never build the same thing together.
compat-build:
	@for b in compat/agents/*/build*.sh; do echo "build $$b"; bash $$b || exit 1; done
	bash compat/stock-server/build.sh
	STOCK_LINE=5 bash compat/stock-server/build.sh

# The Eureka clients (TestCompat: every client against goreka and both
# stock lines, the mixed pairs, the limiters, remote regions, relays), and
# beside them the Kubernetes bridge's 5-minute churn (kube-churn): the
# clients' suite runs ~19 minutes mostly waiting on Eureka's timers, so the
# churn adds no wall time.
compat-clients:
	$(MAKE) -j2 --output-sync=target compat-eureka-clients kube-churn

compat-eureka-clients:
	$(GO) test -tags compat -count=1 -timeout 45m -v -run '^TestCompat$$' ./compat/suite

# Issue 27's churn at its full length: two goreka groups of two nodes
# each (cluster ids east and west), both directions on, against one real
# kube-apiserver; instances flip OUT_OF_SERVICE, cancel and register again
# for KUBE_CHURN (make test runs the same test for 3 s), then the cycles
# done (counted), the Services re-created and the OUT_OF_SERVICE changes an
# EndpointSlice watch saw, object counts, owners (managedFields) and a full
# reconcile that writes nothing are checked. ~2/3 of a core for the 5 minutes (API server, etcd, 4 exporters
# and 4 importers), ~6 minutes in all.
KUBE_CHURN ?= 5m
kube-churn:
	GOREKA_K8S_CHURN=$(KUBE_CHURN) $(GO) test -count=1 -timeout 20m -v -run '^TestAgainstAPIServer$$/^two_groups$$' ./kube/export

# The consumers beyond Eureka clients: Envoy and grpc-java over xDS,
# TLS (keytool, openssl, Spring's eureka.client.tls.*, mutual TLS with both
# stock lines), a Spring app calling a Kubernetes Service imported from a
# real kube-apiserver, and Spring Cloud Kubernetes' DiscoveryClient on the
# export (~75 s warm).
compat-consumers:
	$(GO) test -tags compat -count=1 -timeout 30m -v -run '^(TestOpKey|TestXDS|TestCompatTLS|TestKubernetesImportSpringBoot)$$' ./compat/suite
	$(GO) test -tags compat -count=1 -timeout 15m -v -run TestSpringCloudKubernetes ./kube/export

# Seeded chaos run in network namespaces (root; ip, nft, tc): 3 nodes, 300
# simulated clients, one round of every fault (RELIABILITY.md), then the
# same start-up with eviction off, which the eviction invariant must catch
# (TestChaosEvictionOff, ~1.5 min), then a core pair with two sites of two
# relays: a site partitioned, a relay killed (TestChaosRelays, ~1 min, its
# own gkr-/10.199.2 network). Longer:
# CHAOS_ROUNDS=20 CHAOS_SEED=7 make chaos.
chaos:
	cd chaos && $(GO) test -tags chaos -count=1 -timeout 30m -v -run '^TestChaos(EvictionOff|Relays)?$$' .

# Long soak in network namespaces (root; not in CI): 3 nodes, 30 000
# instances with Eureka's timings, replication, light chaos every 5 min;
# RSS, heap, goroutines and fds sampled every 30 s (RELIABILITY.md).
# CHAOS_SOAK=1h CHAOS_OUT=/tmp/soak make chaos-soak
CHAOS_SOAK ?= 1h
chaos-soak:
	cd chaos && CHAOS_SOAK=$(CHAOS_SOAK) $(GO) test -tags chaos -count=1 -timeout 4h -v -run '^TestChaosSoak$$' .

compat-stock:
	COMPAT_TARGET=stocks $(GO) test -tags compat -count=1 -timeout 45m -v ./compat/suite

# Side-by-side benchmarks against the stock Java server and a bare gin baseline
# (bench/run.sh, BENCHMARKS.md). Not part of CI. bench writes its table into
# BENCHMARKS.md; bench-quick is the short development run.
bench:
	bench/run.sh full

bench-quick:
	bench/run.sh quick

ci: test fuzz browser compat

clean:
	rm -rf bin compat/suite/out
