# cotal: build and check targets. Only the go command is needed; modules come from GOPROXY.
# GOFLAGS from the environment applies to every go command here.

GO        ?= go
# PKGS narrows test, bench, cover and chaos: make test PKGS=./config/
PKGS      ?= ./...
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo devel)
FUZZTIME  ?= 10s
FUZZPKGS  ?= ./wire/
COVERFILE ?= coverage.out

.PHONY: all build test bench fuzz cover chaos clean

all: build test

build:
	$(GO) build -trimpath -ldflags "-X github.com/cotal-go/cotal/internal/cli.version=$(VERSION)" -o bin/cotal .

# test fails on unformatted files before it vets and runs every test with the race detector.
test:
	@unformatted="$$(gofmt -l .)"; \
	if [ -n "$$unformatted" ]; then echo "gofmt -w these files:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet $(PKGS)
	$(GO) test -race -count=1 -timeout 14m $(PKGS)

# bench regenerates BENCHMARKS.md with `cotal bench` (cotal against raw NATS on one embedded
# server, side by side; bench/doc.go), then runs each Go benchmark of PKGS once as a check.
bench:
	$(GO) run . bench --out BENCHMARKS.md
	$(GO) test -run '^$$' -bench . -benchmem -benchtime 1x -timeout 10m $(PKGS)

# fuzz runs every FuzzX of FUZZPKGS for FUZZTIME each; go test accepts one fuzzer at a time.
fuzz:
	@set -e; for pkg in $(FUZZPKGS); do \
		list="$$($(GO) test -list 'Fuzz.*' $$pkg)"; \
		for fuzzer in $$(echo "$$list" | grep '^Fuzz' || true); do \
			echo "$(GO) test -run '^$$' -fuzz '^$$fuzzer\$$' -fuzztime $(FUZZTIME) $$pkg"; \
			$(GO) test -run '^$$' -fuzz "^$$fuzzer\$$" -fuzztime $(FUZZTIME) $$pkg; \
		done; \
	done

cover:
	$(GO) test -count=1 -timeout 14m -covermode=atomic -coverprofile=$(COVERFILE) $(PKGS)
	$(GO) tool cover -func=$(COVERFILE)

# chaos runs the long tier of the fault-injection suite (./chaos/, behind the chaos build tag;
# PKGS other than ./... narrows it), then every fuzzer for FUZZTIME (30s unless given), and prints the figures
# table the tests wrote (RELIABILITY.md). About ten minutes on two cores: the ten fuzzers alone
# take five, plus their builds.
chaos: FUZZTIME = 30s
chaos:
	@figures="$$(mktemp)"; status=0; \
	pkgs="$(if $(filter ./...,$(PKGS)),./chaos/,$(PKGS))"; \
	echo "$(GO) test -tags chaos -race -count=1 -timeout 12m $$pkgs"; \
	CHAOS_FIGURES="$$figures" $(GO) test -tags chaos -race -count=1 -timeout 12m $$pkgs || status=$$?; \
	$(MAKE) --no-print-directory fuzz FUZZTIME=$(FUZZTIME) || status=$$?; \
	echo; echo "chaos figures, $$(date -u +%Y-%m-%d) at $$(git rev-parse --short HEAD 2>/dev/null || echo unknown):"; \
	echo "| tier | scenario | figures |"; echo "| --- | --- | --- |"; cat "$$figures"; rm -f "$$figures"; \
	exit $$status

clean:
	rm -rf bin $(COVERFILE)
