# goreka — make targets. `make test` is the developer loop; `make ci` is what
# .ci/run runs on a fresh machine (it also installs what the suites need).
GO       ?= go
BIN      ?= bin/goreka
FUZZTIME ?= 10s

.PHONY: all build run test vet fmt-check unit fuzz compat compat-stock browser bench bench-quick ci clean

all: build

build:
	$(GO) build -o $(BIN) ./cmd/goreka

run:
	$(GO) run ./cmd/goreka

# The test command of the README: formatting, vet, and every Go test (unit,
# golden, process-level) under the race detector.
test: fmt-check vet unit

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

unit:
	$(GO) test -race -count=1 ./...
	# Allocation tests skip under the race detector (it makes sync.Pool drop
	# items); run them once without it so a hot-path allocation fails the build.
	$(GO) test -count=1 -run 'DoesNotAllocate' ./...

# Short fuzzing of every decoder (the long runs are described in RELIABILITY.md).
# Each entry is package:target.
FUZZ_TARGETS ?= compat:FuzzDecodeInstanceJSON compat:FuzzDecodeInstanceXML compat:FuzzDecodeReplicationList \
	compat:FuzzDecodeApplications compat:FuzzFastDecoderAgrees server:FuzzRouter cmd/goreka/config:FuzzParse \
	snapshot:FuzzUnmarshal
fuzz:
	@for pt in $(FUZZ_TARGETS); do \
		p=$${pt%%:*}; t=$${pt#*:}; \
		echo "fuzz ./$$p $$t ($(FUZZTIME))"; \
		$(GO) test ./$$p -run '^$$' -fuzz "^$$t$$" -fuzztime $(FUZZTIME) || exit 1; \
	done

# The real-client compatibility suite (Spring Boot 3 and 4, Netflix Java,
# Node, Python clients, and the stock Spring Eureka server as reference).
# The dashboard in headless Chromium (Debian's chromium package).
browser:
	$(GO) test -tags browser -run Browser -count=1 -v ./server

# Two stock lines (SCN 4.3.0 and 5.0.3) and two mixed pairs since issue 15: 45 min leaves room.
compat:
	$(GO) test -tags compat -count=1 -timeout 45m -v ./compat/suite

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
