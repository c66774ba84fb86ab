GO      ?= go
BIN     := bin/vidfarm
GOBIN   := $(shell $(GO) env GOPATH)/bin
export PATH := $(GOBIN):$(PATH)

.PHONY: all build run test deps lint bench clean

all: build

build:
	$(GO) build -o $(BIN) ./cmd/vidfarm

## make run: the embedded single-node farm, with a working API key printed.
run: build
	./$(BIN) dev

deps:
	./scripts/deps.sh

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	staticcheck ./...

## make test: installs what is missing, then every test with -race.
test: deps lint
	VIDFARM_REQUIRE_TOOLS=1 $(GO) test -race -count=1 -timeout 19m ./...
	cd bench/tracewait && $(GO) vet ./... && $(GO) test -race -count=1 ./...

## make bench: the long benchmarks; figures go in docs/benchmarks.md.
bench: build
	./scripts/bench.sh

clean:
	rm -rf bin data
