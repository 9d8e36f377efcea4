# fencekit: make demo | make test | make bench | make fuzz | make tools
GO        ?= go
GOBIN     := $(shell $(GO) env GOPATH)/bin
VERSITYGW_VERSION := v1.8.0
VERSITYGW := $(GOBIN)/versitygw
# etcd's version is pinned in tools/etcd/go.mod (`go install` refuses the
# server module: its go.mod has replace directives, so it is built as a tool).
ETCD_VERSION := $(shell sed -n 's/^[[:space:]]*go.etcd.io\/etcd\/server\/v3 \(v[0-9.]*\).*/\1/p' tools/etcd/go.mod)
ETCD      := $(GOBIN)/etcd
# SeaweedFS, the second S3 server, is built from its module source as the main
# module (its go.mod has replace directives, so `go install` refuses it);
# $(WEED).version records the version built.
SEAWEEDFS_VERSION := v0.0.0-20261109003541-7506e5f91cd6
WEED      := $(GOBIN)/weed
ETCDUTL   := $(GOBIN)/etcdutl
STATICCHECK_VERSION := v0.8.2
STATICCHECK := $(GOBIN)/staticcheck
FUZZTIME  ?= 30s
TESTFLAGS ?=

# The test harness finds the versitygw that `make tools` installed here.
export FENCEKIT_VERSITYGW ?= $(VERSITYGW)
export FENCEKIT_ETCD ?= $(ETCD)
export FENCEKIT_WEED ?= $(WEED)
export FENCEKIT_ETCDUTL ?= $(ETCDUTL)

.PHONY: demo tools test vet fmt-check lint bench bench-issuers bench-short fuzz soak timeline playground serve violation-map playground-screenshot

## demo: the simulator replays Kleppmann's GC-pause scenario with and without fencing (no servers needed)
demo:
	$(GO) run ./cmd/fencesim

## timeline: render the kleppmann scenario's HTML timeline to docs/img/kleppmann.png with headless Chromium
timeline:
	bash scripts/render-timeline.sh

## playground: build the interactive playground (WebAssembly + one page) into $(PLAYGROUND), for any static host
PLAYGROUND ?= build/playground
playground:
	$(GO) run ./cmd/fenceplay -build $(PLAYGROUND)

## serve: build the playground and serve it on http://127.0.0.1:8080/
serve:
	$(GO) run ./cmd/fenceplay

## violation-map: redraw docs/img/violation-map.svg and the playground's copy (fencesim sweep over pause/TTL, every storage mode)
violation-map:
	$(GO) run ./cmd/fencesim sweep -svg docs/img/violation-map.svg >/dev/null
	cp docs/img/violation-map.svg internal/playground/static/violation-map.svg

## playground-screenshot: redraw docs/img/playground.png with the browser test (headless Chromium)
playground-screenshot: tools
	cd internal/playground/browser && FENCEKIT_REQUIRE_SERVERS=1 $(GO) test -count=1 -run 'TestBrowserMovesPause' . -args -playground.screenshot=$(CURDIR)/docs/img/playground.png

## tools: install versitygw $(VERSITYGW_VERSION) and SeaweedFS (the S3 servers the tests start) and etcd and etcdutl
## $(ETCD_VERSION) unless installed, and Debian's chromium (the playground's browser test), pgbouncer and zookeeper when missing
tools:
	@if command -v chromium >/dev/null 2>&1; then \
		echo "chromium already installed at $$(command -v chromium)"; \
	else \
		echo "installing Debian's chromium (the playground's browser test)"; \
		apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y chromium; \
	fi
	@if [ -x /usr/sbin/pgbouncer ]; then \
		echo "pgbouncer already installed at /usr/sbin/pgbouncer"; \
	else \
		echo "installing Debian's pgbouncer (the PgBouncer tests)"; \
		apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y pgbouncer; \
	fi
	@if [ -f /usr/share/java/zookeeper.jar ] && command -v java >/dev/null 2>&1; then \
		echo "zookeeper already installed at /usr/share/java/zookeeper.jar"; \
	else \
		echo "installing Debian's zookeeper (the zklease tests start it)"; \
		apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y zookeeper; \
	fi
	@if $(ETCD) --version 2>/dev/null | grep -qx 'etcd Version: $(patsubst v%,%,$(ETCD_VERSION))'; then \
		echo "etcd $(ETCD_VERSION) already installed at $(ETCD)"; \
	else \
		echo "building etcd $(ETCD_VERSION) (a minute or two the first time)"; \
		cd tools/etcd && GOWORK=off $(GO) build -o $(ETCD) go.etcd.io/etcd/server/v3; \
	fi
	@if $(ETCDUTL) version 2>/dev/null | grep -qx 'etcdutl version: $(patsubst v%,%,$(ETCD_VERSION))'; then \
		echo "etcdutl $(ETCD_VERSION) already installed at $(ETCDUTL)"; \
	else \
		echo "building etcdutl $(ETCD_VERSION) (the runbook's etcd restore, TestRestoreRecovery)"; \
		cd tools/etcd && GOWORK=off $(GO) build -o $(ETCDUTL) go.etcd.io/etcd/etcdutl/v3; \
	fi
	@if $(GO) version -m $(STATICCHECK) 2>/dev/null | grep -Eq 'mod[[:space:]]+honnef.co/go/tools[[:space:]]+$(STATICCHECK_VERSION)([[:space:]]|$$)'; then \
		echo "staticcheck $(STATICCHECK_VERSION) already installed at $(STATICCHECK)"; \
	else \
		echo "installing staticcheck $(STATICCHECK_VERSION)"; \
		GOBIN=$(GOBIN) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION); \
	fi
	@if $(GO) version -m $(VERSITYGW) 2>/dev/null | grep -Eq 'mod[[:space:]]+github.com/versity/versitygw[[:space:]]+$(VERSITYGW_VERSION)([[:space:]]|$$)'; then \
		echo "versitygw $(VERSITYGW_VERSION) already installed at $(VERSITYGW)"; \
	else \
		echo "installing versitygw $(VERSITYGW_VERSION) (a few minutes the first time)"; \
		GOBIN=$(GOBIN) $(GO) install github.com/versity/versitygw/cmd/versitygw@$(VERSITYGW_VERSION); \
	fi
	@if [ -x $(WEED) ] && [ "$$(cat $(WEED).version 2>/dev/null)" = "$(SEAWEEDFS_VERSION)" ]; then \
		echo "SeaweedFS $(SEAWEEDFS_VERSION) already installed at $(WEED)"; \
	else \
		echo "building SeaweedFS $(SEAWEEDFS_VERSION) (15-20 minutes the first time)"; \
		dir=$$(cd / && $(GO) mod download -json github.com/seaweedfs/seaweedfs@$(SEAWEEDFS_VERSION) | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$$/\1/p') && \
		test -n "$$dir" && cd "$$dir" && $(GO) build -trimpath -o $(WEED) ./weed && \
		echo $(SEAWEEDFS_VERSION) > $(WEED).version; \
	fi

## test: vet, gofmt check, staticcheck, and every test with the race detector against real servers
test: tools vet fmt-check lint
	FENCEKIT_REQUIRE_SERVERS=1 $(GO) test -race -timeout 20m $(TESTFLAGS) ./...
	FENCEKIT_REQUIRE_SERVERS=1 FENCEKIT_S3_SERVER=seaweedfs $(GO) test -race -timeout 10m $(TESTFLAGS) ./blobfence/
	cd lease/etcdlease && FENCEKIT_REQUIRE_SERVERS=1 $(GO) test -race -timeout 10m $(TESTFLAGS) ./...
	cd cmd/fencectl && FENCEKIT_REQUIRE_SERVERS=1 $(GO) test -race -timeout 10m $(TESTFLAGS) ./...
	cd cmd/fencectl && FENCEKIT_REQUIRE_SERVERS=1 FENCEKIT_S3_SERVER=seaweedfs $(GO) test -race -timeout 10m -run 'S3' $(TESTFLAGS) ./...
	cd internal/playground/browser && FENCEKIT_REQUIRE_SERVERS=1 $(GO) test -race -timeout 10m $(TESTFLAGS) ./...
	cd internal/metricstest && FENCEKIT_REQUIRE_SERVERS=1 $(GO) test -race -timeout 10m $(TESTFLAGS) ./...

vet:
	$(GO) vet ./...
	cd bench && $(GO) vet ./...
	cd lease/etcdlease && $(GO) vet ./...
	cd cmd/fencectl && $(GO) vet ./...
	cd internal/playground/browser && $(GO) vet ./...
	cd internal/metricstest && $(GO) vet ./...

## lint: staticcheck over every module users import and the benchmarks
lint:
	$(STATICCHECK) ./...
	cd bench && $(STATICCHECK) ./...
	cd lease/etcdlease && $(STATICCHECK) ./...
	cd cmd/fencectl && $(STATICCHECK) ./...
	cd internal/playground/browser && $(STATICCHECK) ./...
	cd internal/metricstest && $(STATICCHECK) ./...

fmt-check:
	@out=$$(gofmt -l $$(find . -name '*.go' -not -path './.git/*')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

## bench: the packages' own benchmarks, then the peer comparison in bench/ (about 15 minutes; see docs/performance.md)
bench: tools
	$(GO) test -run '^$$' -bench . -benchmem ./...
	bash bench/run.sh

## bench-issuers: Acquire+Release, renewal and hand-off per lease issuer (Redis, PostgreSQL table and advisory, etcd, ZooKeeper), 5 rounds (about 6 minutes)
bench-issuers: tools
	cd bench && for r in 1 2 3 4 5; do BENCH_ROUND=$$r $(GO) test -run '^$$' -bench '^BenchmarkIssuer$$' -benchtime 300x . || exit 1; done

## bench-short: two short rounds of the peer comparison (about 3 minutes)
bench-short: tools
	BENCH_SHORT=1 bash bench/run.sh

## soak: the long versions of the seeded fault and race tests (tens of minutes)
soak: tools
	FENCEKIT_REQUIRE_SERVERS=1 $(GO) test -race -timeout 60m -run 'FlakySeeded' ./lease/redislease/ -args -lease.soak
	FENCEKIT_REQUIRE_SERVERS=1 $(GO) test -timeout 10m -run 'TestManyLeasesOneClient' -v ./lease/redislease/ -args -lease.many=60s
	FENCEKIT_REQUIRE_SERVERS=1 $(GO) test -race -timeout 60m -run 'TestRacingWriters' ./blobfence/ -args -race-rounds=200 -same-rounds=200
	$(GO) test -timeout 60m -run 'TestModelCheck$$' ./blobfence/ -args -model-full
	cd bench && $(GO) test -race -timeout 30m -run 'TestS3Linearizable' . -args -s3-linearize-rounds=100
	cd bench && FENCEKIT_S3_SERVER=seaweedfs $(GO) test -race -timeout 30m -run 'TestS3Linearizable' . -args -s3-linearize-rounds=100
	FENCEKIT_REQUIRE_SERVERS=1 FENCEKIT_S3_SERVER=seaweedfs $(GO) test -race -timeout 60m -run 'TestRacingWriters' ./blobfence/ -args -race-rounds=200 -same-rounds=200

## fuzz: every fuzz target in the module, FUZZTIME each (default 30s)
fuzz:
	@set -e; for pkg in $$($(GO) list ./...); do \
		dir=$$($(GO) list -f '{{.Dir}}' $$pkg); \
		for f in $$(cat $$dir/*_test.go 2>/dev/null | sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p'); do \
			echo "== $$pkg $$f ($(FUZZTIME))"; \
			$(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg; \
		done; \
	done
