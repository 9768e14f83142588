# Developer entry points. `make` alone lists them.

SHELL := bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

GO      ?= go
MODULE  := github.com/collegematch/matching
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
REVISION ?= $(shell git rev-parse HEAD 2>/dev/null)
LDFLAGS := -X $(MODULE)/internal/buildinfo.Version=$(VERSION) -X $(MODULE)/internal/buildinfo.Revision=$(REVISION)
# Every command under cmd/ (api, worker, matchctl).
BINARIES := $(notdir $(patsubst %/,%,$(dir $(wildcard cmd/*/main.go))))

# staticcheck 2026.2.2, which supports Go 1.26.
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2

# Tests talk to real servers; these are the defaults of internal/testutil.
TEST_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable
TEST_REDIS_URL    ?= redis://127.0.0.1:6379/0
export TEST_DATABASE_URL TEST_REDIS_URL

.PHONY: help run test test-topologies test-scaleout test-hostile fuzz lint migrate seed catalogue bench build tidy fmt up down up-scaleout down-scaleout clean clean-test-db loadtest drill

# The demo and docs pages (web/, built into internal/demo/dist and committed)
# and the TypeScript client package they use (clients/typescript).
NPM_CI := npm ci --ignore-scripts --no-audit --no-fund
.PHONY: demo clients client-pack web web-check api-compat screenshots chromium

help: ## list the targets
	@echo "usage: make <target>"
	@echo
	@awk 'BEGIN {FS = ":.*## "} /^[a-z][a-zA-Z_-]*:.*## / {printf "  %-16s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

run: ## migrate, seed if empty, run API and worker in the foreground, print a token
	@scripts/run.sh

demo: ## make run plus the demo page and API docs on 127.0.0.1:8081 (a fresh student each start)
	@RUN_DEMO=1 scripts/run.sh

test: ## start PostgreSQL and Redis if needed, then go test -race ./...
	@DATABASE_URL='$(TEST_DATABASE_URL)' REDIS_URL='$(TEST_REDIS_URL)' scripts/services.sh
	$(GO) test -race -count=1 ./...

# The request decoders' fuzz targets (internal/httpapi/fuzz_test.go); make
# test runs their seeds and kept inputs only.
FUZZ_TARGETS := FuzzShape FuzzBodyStudentID FuzzReadProfile FuzzReadPage FuzzReadSwipe FuzzReadFeedback \
	FuzzReadCategorySwipe FuzzReadContinuous FuzzReadBatchSchools FuzzReadSyncPush FuzzReadSyncPull FuzzPageMembersAsJSON
FUZZTIME ?= 30s

test-hostile: ## hostile-input drills without -race: 100,000 mutated bodies, every endpoint's 1 MiB bodies x 20 concurrent
	@DATABASE_URL='$(TEST_DATABASE_URL)' REDIS_URL='$(TEST_REDIS_URL)' scripts/services.sh
	MUTATION_REQUESTS=$${MUTATION_REQUESTS:-100000} $(GO) test -count=1 -v \
		-run 'TestMutatedBodies|TestMemoryUnderLargestBodies|TestHostileBodies' ./internal/httpapi
	$(GO) test -count=1 -v -run 'TestMadeUpMethodsMintNoSeries|TestSlowClientsLeaveOthersUnaffected' ./cmd/api

fuzz: ## run each request decoder's fuzz target for FUZZTIME (default 30s); new failing inputs land in testdata/fuzz
	@for target in $(FUZZ_TARGETS); do \
		echo "fuzz $$target"; $(GO) test -run '^$$' -fuzz "^$$target\$$" -fuzztime $(FUZZTIME) -fuzzminimizetime 5s ./internal/httpapi || exit 1; \
	done
	$(GO) test -run '^$$' -fuzz '^FuzzParseMajor$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 5s ./internal/domain

test-topologies: ## only the tests on a Redis Cluster, Sentinel and PgBouncer (servers started by scripts/)
	@DATABASE_URL='$(TEST_DATABASE_URL)' REDIS_URL='$(TEST_REDIS_URL)' scripts/services.sh
	$(GO) test -race -count=1 -run 'TestRedisCluster|TestRedisSentinel|PgBouncer' ./internal/cache ./cmd/api ./cmd/worker

test-scaleout: ## two API and two worker replicas behind a proxy on a Redis Cluster, then Sentinel, through PgBouncer: end-to-end tests, a worker killed, Redis restarted, a failover (scripts/scaleout.sh; TOPOLOGY=cluster|sentinel)
	@scripts/services.sh
	@scripts/scaleout.sh $(TOPOLOGY)

lint: ## gofmt check, go vet and staticcheck
	@unformatted=$$(gofmt -l .); \
	if [[ -n "$$unformatted" ]]; then echo "gofmt would change:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...
	@if $(GO) run $(STATICCHECK) -version >/dev/null 2>&1; then \
		echo "staticcheck ./..."; $(GO) run $(STATICCHECK) ./...; \
	else \
		echo "lint: staticcheck could not be fetched or built; ran gofmt and go vet only"; \
	fi

migrate: ## apply schema migrations to DATABASE_URL (creates the database)
	@scripts/services.sh
	$(GO) run ./cmd/matchctl migrate

seed: ## fill an empty school catalogue with the bundled real schools
	@scripts/services.sh
	$(GO) run ./cmd/matchctl seed

# The public College Scorecard and IPEDS files the bundled catalogue is built from.
DATA ?= ../shared/data

catalogue: ## rebuild the bundled school catalogue from the public files in DATA
	$(GO) run ./internal/catalog/bundled/gen -data '$(DATA)'

bench: ## run the benchmarks (no tests)
	$(GO) test -run '^$$' -bench . -benchmem ./...

loadtest: ## the service under load against same-run baselines (scripts/loadtest.sh; REF=rev also measures that build)
	@scripts/loadtest.sh $(REF)

drill: ## fault drills under a swipe load: worker SIGKILLed, Redis restarted empty, PostgreSQL black-holed (scripts/drill.sh; DRILLS=worker-kill for one)
	@scripts/drill.sh $(DRILLS)

build: ## build every command under cmd/ into bin/ (-trimpath, version from git)
	@mkdir -p bin
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/ $(addprefix ./cmd/,$(BINARIES))

tidy: ## go mod tidy
	$(GO) mod tidy

fmt: ## gofmt -w every Go file
	gofmt -w .

up: ## run the whole stack with docker compose (API on 127.0.0.1:8080)
	VERSION=$(VERSION) docker compose up -d --build

down: ## stop the docker compose stack (keeps the database volume)
	docker compose down

up-scaleout: ## instead of make up: API and 2 workers on a 3-master Redis Cluster, through PgBouncer (compose profile scaleout)
	VERSION=$(VERSION) docker compose --profile scaleout up -d --build api-scaleout worker-scaleout

down-scaleout: ## stop the docker compose stack, the scaleout profile included (keeps the database volume)
	docker compose --profile scaleout down

CLIENT := clients/typescript

$(CLIENT)/node_modules/.package-lock.json: $(CLIENT)/package.json $(CLIENT)/package-lock.json
	cd $(CLIENT) && $(NPM_CI)

# The page bundles the client package from its source, whose packages
# (openapi-fetch) are installed in the package's own folder.
web/node_modules/.package-lock.json: web/package.json web/package-lock.json $(CLIENT)/node_modules/.package-lock.json
	cd web && $(NPM_CI)

clients: $(CLIENT)/node_modules/.package-lock.json ## regenerate the TypeScript client's types (clients/typescript/src/openapi.ts) from api/openapi.yaml
	cd $(CLIENT) && npm run --silent generate

client-pack: $(CLIENT)/node_modules/.package-lock.json ## npm pack the TypeScript client package into bin/ (an installable tarball)
	@mkdir -p bin
	cd $(CLIENT) && npm pack --pack-destination ../../bin

web: clients web/node_modules/.package-lock.json ## build the demo and docs pages into internal/demo/dist (commit the result)
	cd web && npm run --silent build

web-check: web/node_modules/.package-lock.json ## the committed client types and pages match their sources; tsc --noEmit
	cd $(CLIENT) && npm run --silent check
	cd web && npm run --silent check

api-compat: ## api/openapi.yaml keeps the released contract api/released/openapi.yaml (oasdiff breaking)
	@scripts/api-compat.sh

screenshots: ## run the browser test and keep its screenshots in docs/
	@DATABASE_URL='$(TEST_DATABASE_URL)' REDIS_URL='$(TEST_REDIS_URL)' scripts/services.sh
	DEMO_SCREENSHOTS=$(CURDIR)/docs $(GO) test -count=1 -run '^TestDemoInBrowser$$' -v ./cmd/matchctl

chromium: ## install Debian's Chromium for the browser test (when missing)
	@scripts/chromium.sh

clean: ## remove bin/
	rm -rf bin

clean-test-db: ## drop the test template databases (matching_tmpl_*) on TEST_DATABASE_URL
	@psql '$(TEST_DATABASE_URL)' -Atc "SELECT datname FROM pg_database WHERE datname LIKE 'matching_tmpl_%'" | \
		while read -r db; do psql '$(TEST_DATABASE_URL)' -qc "DROP DATABASE IF EXISTS \"$$db\" WITH (FORCE)"; echo "dropped $$db"; done
