# klab's build. `make run` and `make test` are all a newcomer needs.

GO      ?= go
BIN     := bin/klab
PKG     := github.com/klab-dev/klab
ARGS    ?=

# VERSION names a release; BUILD_ID names the exact sources, so that the
# Docker runtime can tag the node image it builds from this binary
# (klab/node:<build-id>) and rebuild it only when the binary changed.
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
BUILD_ID ?= $(shell find . -path ./bin -prune -o -path ./.git -prune -o \( -name '*.go' -o -name '*.json' -o -name go.sum \) -type f -print | LC_ALL=C sort | xargs cat | sha256sum | cut -c1-12)
# The embedded kubectl reports the Kubernetes version of the k8s.io modules
# it is built from, as the official binary is stamped at release.
KUBE_VERSION := $(shell $(GO) list -m -f '{{.Version}}' k8s.io/kubectl 2>/dev/null | sed 's/^v0\./v1./')
KUBE_MINOR   := $(word 2,$(subst ., ,$(KUBE_VERSION)))
KUBE_LDFLAGS := $(foreach p,k8s.io/client-go/pkg/version k8s.io/component-base/version,-X $(p).gitVersion=$(KUBE_VERSION) -X $(p).gitMajor=1 -X $(p).gitMinor=$(KUBE_MINOR) -X $(p).gitTreeState=clean)
LDFLAGS  := -s -w -X main.version=$(VERSION) -X main.buildID=$(BUILD_ID) $(KUBE_LDFLAGS)

TEST_TIMEOUT ?= 20m

.PHONY: build image run test race fuzz bench lint clean

## build: a static linux binary at bin/klab (it must run FROM scratch in a container)
build:
	CGO_ENABLED=0 GOOS=linux $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/klab

## image: the Docker images klab/node:<build-id> and klab/app:latest, built
## from bin/klab (klab builds them on first use too; this is for a binary
## that cannot be used, e.g. one built for another OS)
image: build
	KLAB_BINARY=$(CURDIR)/$(BIN) ./$(BIN) image

## run: build, then run bin/klab with ARGS (make run ARGS='up --masters 3')
run: build
	./$(BIN) $(ARGS)

## test: every package's tests, without -race (race on two cores is slow).
## The Docker tests build their images from bin/klab, the static binary.
test: build
	KLAB_BINARY=$(CURDIR)/$(BIN) $(GO) test -count=1 -timeout $(TEST_TIMEOUT) -ldflags '$(KUBE_LDFLAGS)' ./...

## race: the race detector over the packages where goroutines meet most: etcd
## (raft loop, apply, watch, leases), the API server (handlers, watch cache,
## admission) and the kubelet (pod workers, probes, status). Slow on two cores,
## so not part of make test; make bench runs it.
RACE_PKGS := ./cluster/etcd/... ./cluster/apiserver/... ./cluster/kubelet/...
race:
	$(GO) test -race -count=1 -timeout 45m -ldflags '$(KUBE_LDFLAGS)' $(RACE_PKGS)

## fuzz: every fuzz test for FUZZTIME each (make test runs them on their
## seeds only). go test -fuzz takes one function per package at a time, so
## they are listed one by one; a failing input is written under the
## package's testdata/fuzz, where make test replays it from then on.
FUZZTIME ?= 60s
FUZZ_TARGETS := \
	./cluster/etcd:FuzzKVRequest \
	./cluster/etcd/rafthttp:FuzzDecode \
	./cluster/apiserver:FuzzDecodeCreate \
	./cluster/apiserver:FuzzPatch \
	./cluster/apiserver:FuzzUpdate \
	./cluster/apiserver/auth:FuzzAuthorize \
	./lessons:FuzzLoad
fuzz:
	@missing="$$(grep -rn --include='*_test.go' '^func Fuzz' cluster lessons | sed 's|^\([^:]*\)/[^/]*:[0-9]*:func \(Fuzz[A-Za-z0-9_]*\).*|./\1:\2|' | LC_ALL=C sort -u | grep -vxF "$$(printf '%s\n' $(FUZZ_TARGETS))")"; \
	if [ -n "$$missing" ]; then echo "fuzz tests not in FUZZ_TARGETS: $$missing"; exit 1; fi
	@for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; fn=$${t#*:}; \
		echo "fuzz $$fn in $$pkg for $(FUZZTIME)"; \
		$(GO) test -count=1 -run '^$$' -fuzz "^$$fn\$$" -fuzztime $(FUZZTIME) -ldflags '$(KUBE_LDFLAGS)' $$pkg || exit 1; \
	done

## bench: klab's etcd against real etcd side by side (tables on stdout), a 1 GiB
## etcd space quota filled and recovered from (NOSPACE, compaction, defrag), the
## API server's latencies (p50/p99), scheduling density, exec round trips and
## port-forward throughput, a 10-minute soak under churn (goroutines and heap)
## and 10,000 idle connections to an API server, the Docker runtime's
## start/stop times and memory, a reset to a lesson step of a 3+3 cluster
## (local and Docker), the workspace's CPU and what recording
## events.jsonl costs, then the Go benchmarks of every other
## package that has some, every fuzz test for a minute (make fuzz), and last
## the race detector (make race)
bench:
	$(GO) run ./bench/etcd/cmd/etcdbench
	KLAB_LINW=1 KLAB_LINW_RUNS=10 $(GO) test -count=1 -timeout 30m -run '^TestLinearizabilityWide$$' -v ./cluster/etcd/
	KLAB_QUOTA_BYTES=1073741824 $(GO) test -count=1 -timeout 40m -run '^TestSpaceQuotaAlarm$$' -v ./cluster/etcd/
	$(GO) test -count=1 -timeout 20m -run '^TestSnapshotRestoreBringsDeploymentBack$$' -v ./cluster/lab/
	$(GO) run ./bench/proxy/cmd/proxybench
	$(GO) test -count=1 -run '^$$' -bench 'Create|Apply|Get|List1000$$|WatchDelivery' -benchtime 2s ./bench/apiserver/
	$(GO) test -count=1 -run '^$$' -bench 'List10000' -benchtime 20x ./bench/apiserver/
	$(GO) test -count=1 -timeout 60m -run '^$$' -bench 'Density' -benchtime 1x ./bench/controlloop/
	$(GO) test -count=1 -run '^$$' -bench . -benchtime 200x ./bench/exec/
	@if docker info >/dev/null 2>&1; then $(MAKE) build && KLAB_BINARY=$(CURDIR)/$(BIN) $(GO) run ./bench/docker/cmd/dockerbench; \
	else echo "no Docker engine answers: the Docker runtime's figures are skipped"; fi
	$(MAKE) build
	KLAB_BINARY=$(CURDIR)/$(BIN) $(GO) run ./bench/reset/cmd/resetbench -runtimes local,docker -runs 3
	KLAB_BINARY=$(CURDIR)/$(BIN) $(GO) run ./bench/ui/cmd/uibench -view raft -record
	KLAB_BINARY=$(CURDIR)/$(BIN) $(GO) run ./bench/ui/cmd/uibench -view overview
	@pkgs="$$(grep -rl --include='*_test.go' '^func Benchmark' . | xargs -r -n1 dirname | grep -v '^./bench/' | LC_ALL=C sort -u)"; \
	if [ -n "$$pkgs" ]; then $(GO) test -count=1 -run '^$$' -bench . -benchmem $$pkgs; fi
	$(GO) run ./bench/soak/cmd/soakbench -for 10m -conns 10000
	$(MAKE) fuzz
	$(MAKE) race

## lint: go vet, gofmt, and golangci-lint when it is installed
lint:
	$(GO) vet ./...
	@out="$$(gofmt -l $$(find . -path ./bin -prune -o -name '*.go' -print))"; \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi
	@if command -v golangci-lint >/dev/null 2>&1; then golangci-lint run ./...; \
	else echo "golangci-lint not installed; skipped (go install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@latest)"; fi

clean:
	rm -rf bin
