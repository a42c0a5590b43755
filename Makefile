# fibfleet: the two set-up commands are `sudo make lab` (the main job) and
# `sudo make test` (the test suite). Both install what they need on a fresh Debian
# machine: BIRD 2 for the upstream peer, iproute2 and util-linux for namespaces,
# qemu and cpio for the kernel matrix, a bpffs mount at /sys/fs/bpf.
SHELL := /bin/bash
GO ?= go

.PHONY: all build deps test kernels demo lab chart image generate clean

all: build

build:
	$(GO) build -o bin/ ./cmd/...

# deps installs the test and lab prerequisites when run as root; as a normal user it
# only says what the root-only tests will skip.
deps:
	@if [ "$$(id -u)" != 0 ]; then \
		echo "deps: not root: BPF, namespace and BIRD tests will skip (run sudo make test)"; \
		exit 0; \
	fi; \
	missing=""; \
	command -v bird >/dev/null || missing="$$missing bird2"; \
	command -v ip >/dev/null || missing="$$missing iproute2"; \
	command -v nsenter >/dev/null || missing="$$missing util-linux"; \
	command -v cpio >/dev/null || missing="$$missing cpio"; \
	command -v nft >/dev/null || missing="$$missing nftables"; \
	command -v stayrtr >/dev/null || missing="$$missing stayrtr"; \
	command -v qemu-system-x86_64 >/dev/null || missing="$$missing qemu-system-x86"; \
	[ -x /usr/lib/frr/bgpd ] || missing="$$missing frr"; \
	[ -e /etc/ssl/certs/ca-certificates.crt ] || missing="$$missing ca-certificates"; \
	if [ -n "$$missing" ]; then \
		echo "deps: installing$$missing"; \
		rc=""; [ -e /usr/sbin/policy-rc.d ] || { rc=1; printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d; chmod +x /usr/sbin/policy-rc.d; }; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
		st=$$?; [ -z "$$rc" ] || rm -f /usr/sbin/policy-rc.d; [ $$st = 0 ] || exit $$st; \
	fi; \
	mountpoint -q /sys/fs/bpf || mount -t bpf bpf /sys/fs/bpf

# test runs every test once, then every benchmark once at a tiny size (so none
# rots), and closes with a count of passed, failed and skipped tests. Three passes:
# every package but the end-to-end tests in parallel; the end-to-end tests alone
# (full-table loads and failovers want the 2 cores to themselves: under contention their
# timing is not what a router sees); the benchmarks (go test runs them one package
# at a time). It builds as the image does (static, trimmed paths), so the
# Dockerfile's build test, the end-to-end tests' binaries, the kernel matrix and the
# GoBGP fork's test reuse the packages the tests compiled.
test: deps
	$(GO) mod download
	@log=$$(mktemp); export CGO_ENABLED=0 GOFLAGS=-trimpath; \
	$(GO) test -count=1 -timeout 45m -v $$($(GO) list ./... | grep -v '/internal/e2e$$') > $$log 2>&1; status=$$?; \
	$(GO) test -count=1 -timeout 45m -v ./internal/e2e >> $$log 2>&1 || status=1; \
	$(GO) test -count=1 -run '^$$' -bench . -benchtime 1x ./... >> $$log 2>&1 || status=1; \
	grep -E '^\s*--- (PASS|FAIL|SKIP)|^(ok|FAIL|panic:)|^Benchmark\S+\s+[0-9]|^\s+\S+_test\.go:[0-9]+:' $$log; \
	if [ $$status != 0 ]; then \
		for t in $$(sed -n 's/^--- FAIL: \([A-Za-z0-9_]*\) .*/\1/p' $$log | sort -u); do \
			echo "--- $$t's whole output (its last 600 lines: the logs a failed lab prints):"; \
			awk -v t="$$t" '$$0 == "=== RUN   " t { p = 1 } p { print } index($$0, "--- FAIL: " t " ") == 1 { p = 0 }' $$log | tail -n 600; \
		done; \
		echo "--- the end of the log (a build error or a panic shows here):"; tail -n 60 $$log; \
	fi; \
	echo "$$(grep -cE '^\s*--- PASS' $$log) passed, $$(grep -cE '^\s*--- FAIL' $$log) failed, $$(grep -cE '^\s*--- SKIP' $$log) skipped"; \
	rm -f $$log; exit $$status

# kernels runs the dataplane's tests (program loads, packet tests, the verifier
# budget) on this machine's kernel and, under qemu, on Debian 12's 6.1 and 6.12
# (fetched with apt into ~/.cache/fibfleet/kernels, never installed); make test runs
# it too.
kernels: deps
	$(GO) test -count=1 -v -run TestKernelMatrix ./internal/kernels

# lab builds a whole fleet on this machine (bin/lab up) and leaves it running: look at
# it with bin/ctl status / top / lookup, remove it with bin/lab down.
lab: deps build
	bin/lab up $(LAB_FLAGS)

# demo builds the walking-skeleton lab and forwards UDP through the node until Ctrl-C.
demo: deps
	$(GO) run ./internal/lab/demo $(DEMO_FLAGS)

# image builds the container image from scratch (no daemon, no base image to pull):
# the node and ctl static, CA certificates, root and a non-root user, as an OCI image
# layout in bin/image and a docker-archive in bin/fibfleet-image.tar. TestImage runs
# the node from this image in the lab.
VERSION ?= dev
image:
	$(GO) run ./internal/image/mkimage -layout bin/image -tarball bin/fibfleet-image.tar -version $(VERSION)

# chart lints the Helm chart (deploy/k8s/fibfleet) with the defaults and each example,
# with Helm from the Go module proxy (the first build takes minutes). go test
# ./deploy/k8s checks far more: the rendered objects, decoded into the API types.
HELM ?= $(GO) run helm.sh/helm/v4/cmd/helm@v4.3.2
chart:
	$(HELM) lint --strict deploy/k8s/fibfleet
	@for f in deploy/k8s/examples/*.yaml; do $(HELM) lint --strict deploy/k8s/fibfleet -f $$f || exit 1; done

# generate rebuilds the BPF objects with clang-19 (the results are committed).
generate:
	@command -v clang-19 >/dev/null || { echo "generate: needs clang-19 (apt-get install clang-19)"; exit 1; }
	$(GO) generate ./...

clean:
	rm -rf bin
