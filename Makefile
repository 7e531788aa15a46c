# podrun — see README.md. Targets that run pods need root.
GO       ?= go
TAGS     := containers_image_openpgp exclude_graphdriver_btrfs exclude_graphdriver_devicemapper seccomp urfave_cli_no_docs
VERSION  ?= $(shell tools/version.sh 2>/dev/null || echo v0.0.0-dev)
BIN      := bin/podrun
# podrun-shim creates the containers (supervisor, container init, exec); it is
# built with the tag podrun_lean (no registry client, no CLI) next to podrun.
# podrun-image pulls and loads images; it alone links go.podman.io/image
# (the tag podrun_image adds the image package's writer), so the CLI starts
# without it.
SHIM     := bin/podrun-shim
LEAN     := podrun_lean
IMAGEBIN := bin/podrun-image
WRITER   := podrun_image
OUT      := _output
BUSYBOX  := $(OUT)/busybox.tar
# Debian packages the tests and the example need.
APT_PKGS := busybox-static docker-registry skopeo iproute2 nftables iptables libseccomp-dev libgpgme-dev pkg-config

SHELL    := /bin/bash
comma    := ,
space    := $(empty) $(empty)
export GOFLAGS := -tags=$(subst $(space),$(comma),$(TAGS))

.PHONY: all build deps image example test unit integration vet fmt bench bench-compare clean release test-vm

all: build

# Both binaries are linked statically, as the release's (glibc and libseccomp
# from libseccomp-dev's libseccomp.a; Go's own resolver and user lookup): the
# shim is re-executed as every container's init, and a static binary starts
# with fewer page faults (no dynamic loader, no relocations).
LIBSECCOMP_A := /usr/lib/x86_64-linux-gnu/libseccomp.a
STATIC_TAGS  := netgo osusergo
STATIC_LD    := -linkmode external -extldflags -static

build: $(LIBSECCOMP_A)
	CGO_ENABLED=1 $(GO) build -trimpath -tags '$(TAGS) $(STATIC_TAGS)' -ldflags "-s -w -X main.version=$(VERSION) $(STATIC_LD)" -o $(BIN) ./cmd/podrun
	CGO_ENABLED=1 $(GO) build -trimpath -tags '$(TAGS) $(LEAN) $(STATIC_TAGS)' -ldflags "-s -w -X main.version=$(VERSION) $(STATIC_LD)" -o $(SHIM) ./cmd/podrun-shim
	CGO_ENABLED=1 $(GO) build -trimpath -tags '$(TAGS) $(WRITER) $(STATIC_TAGS)' -ldflags "-s -w -X main.version=$(VERSION) $(STATIC_LD)" -o $(IMAGEBIN) ./cmd/podrun-image

$(LIBSECCOMP_A):
	@echo "$@ missing: make deps (libseccomp-dev)"; exit 1

# deps installs the Debian packages that are missing (Go itself must be on PATH).
deps:
	@missing=""; for p in $(APT_PKGS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	fi

# image builds the busybox test image from Debian's busybox-static package.
image: $(BUSYBOX)
$(BUSYBOX):
	@mkdir -p $(OUT)
	tools/busybox-image.sh $(BUSYBOX) busybox:1.28 docker-archive

# example runs the Kubernetes docs' init-container walkthrough as written: the pod
# waits in Init:0/2 until its two Services exist, then runs.
example: deps build image
	./$(BIN) load -i $(BUSYBOX) --tag busybox:1.28
	./$(BIN) delete -f examples/services.yaml --ignore-not-found >/dev/null
	./$(BIN) delete myapp-pod --ignore-not-found --grace-period 1 >/dev/null
	./$(BIN) apply -f examples/myapp.yaml
	@for i in $$(seq 1 100); do ./$(BIN) logs myapp-pod -c init-myservice 2>/dev/null | grep -q 'waiting for myservice' && break; sleep 0.2; done
	./$(BIN) get
	./$(BIN) logs myapp-pod -c init-myservice | tail -n 3
	./$(BIN) apply -f examples/services.yaml
	./$(BIN) apply -f examples/myapp.yaml --wait --timeout 1m
	./$(BIN) get
	./$(BIN) get svc
	./$(BIN) logs myapp-pod -c myapp-container
	./$(BIN) delete -f examples/services.yaml
	./$(BIN) delete myapp-pod --grace-period 1

# vet also runs plain `go vet` (no build tags: containers/image then links its gpgme
# signer, which needs libgpgme-dev from make deps), as a developer's go command does.
vet:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo "gofmt needed"; exit 1; }
	$(GO) vet ./...
	GOFLAGS= $(GO) vet ./...
	$(GO) vet -tags '$(TAGS) $(LEAN)' ./cmd/podrun-shim ./image ./runtime ./supervisor/... ./podspec
	$(GO) vet -tags '$(TAGS) $(WRITER)' ./cmd/podrun-image ./image
	GOFLAGS= $(GO) vet -tags $(WRITER) ./cmd/podrun-image ./image

# The image package's writer (pull, load: tag podrun_image) is tested with podrun-image's tags.
unit:
	$(GO) test -count=1 $$($(GO) list ./... | grep -v /integration)
	$(GO) test -count=1 -tags '$(TAGS) $(WRITER)' ./image ./cmd/podrun-image

# On a failure it ends with what the failed tests said (tools/test-failures.sh): the
# end of CI's output then says why, not only which.
integration: build image
	PODRUN_BIN=$(CURDIR)/$(BIN) PODRUN_TEST_IMAGE=$(CURDIR)/$(BUSYBOX) $(GO) test -count=1 -timeout 60m -v ./integration/ 2>&1 | tee $(OUT)/integration.log | grep -E '^(=== RUN|--- |PASS|FAIL|ok|panic)' ; \
	rc=$${PIPESTATUS[0]}; [ $$rc = 0 ] || tools/test-failures.sh $(OUT)/integration.log; exit $$rc

# test runs everything: formatting and vet, unit tests, the end-to-end tests as
# root, then a subset of them again in VMs with cgroup v2 (test-vm). CI runs it.
test: deps vet unit integration test-vm

# Benchmarks (issue 8): bench/ runs real pods in a podrun environment of its own and prints a
# Markdown report (also written to $(OUT)/bench*.md). It fails on leftovers or wrong logs, never on
# time. BENCH_FLAGS tunes it, e.g. BENCH_FLAGS="-runs 5 -pods 10 -log-mib 50".
BENCH_FLAGS ?=
BENCH_BIN   := $(OUT)/podrun-bench
# The Services benchmark's client inside a pod: static, mounted with a hostPath volume.
DNSQUERY_BIN := $(OUT)/podrun-dnsquery
# bench compares with Debian's runc run (installed when missing); bench-compare also with podman (catatonit: podman's pause image).
BENCH_PKGS  := runc podman catatonit

bench: deps build image
	@dpkg -s runc >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends runc; }
	$(GO) build -o $(BENCH_BIN) ./bench
	CGO_ENABLED=0 $(GO) build -o $(DNSQUERY_BIN) ./bench/dnsquery
	$(BENCH_BIN) -podrun $(BIN) -image $(BUSYBOX) -dnsquery $(DNSQUERY_BIN) -o $(OUT)/bench.md $(BENCH_FLAGS)

bench-compare: deps build image
	@missing=""; for p in $(BENCH_PKGS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	fi
	$(GO) build -o $(BENCH_BIN) ./bench
	CGO_ENABLED=0 $(GO) build -o $(DNSQUERY_BIN) ./bench/dnsquery
	$(BENCH_BIN) -podrun $(BIN) -image $(BUSYBOX) -dnsquery $(DNSQUERY_BIN) -compare -o $(OUT)/bench-compare.md $(BENCH_FLAGS)

# release builds the binaries users download (podrun, podrun-shim and
# podrun-image, in one directory and one tarball): statically linked (glibc and
# libseccomp from libseccomp-dev's libseccomp.a; Go's own resolver and user
# lookup), with its semver version and its sha256, in $(OUT)/release.
RELEASE  := $(OUT)/release
release: $(LIBSECCOMP_A)
	@mkdir -p $(RELEASE)
	CGO_ENABLED=1 $(GO) build -trimpath -tags '$(TAGS) $(STATIC_TAGS)' \
		-ldflags "-s -w -X main.version=$(VERSION) $(STATIC_LD)" \
		-o $(RELEASE)/podrun-linux-amd64/podrun ./cmd/podrun
	CGO_ENABLED=1 $(GO) build -trimpath -tags '$(TAGS) $(LEAN) $(STATIC_TAGS)' \
		-ldflags "-s -w -X main.version=$(VERSION) $(STATIC_LD)" \
		-o $(RELEASE)/podrun-linux-amd64/podrun-shim ./cmd/podrun-shim
	CGO_ENABLED=1 $(GO) build -trimpath -tags '$(TAGS) $(WRITER) $(STATIC_TAGS)' \
		-ldflags "-s -w -X main.version=$(VERSION) $(STATIC_LD)" \
		-o $(RELEASE)/podrun-linux-amd64/podrun-image ./cmd/podrun-image
	@for b in podrun podrun-shim podrun-image; do if ldd $(RELEASE)/podrun-linux-amd64/$$b >/dev/null 2>&1; then echo "$$b is dynamically linked"; exit 1; fi; done
	cd $(RELEASE)/podrun-linux-amd64 && sha256sum podrun podrun-shim podrun-image > SHA256SUMS
	tar -C $(RELEASE) -czf $(RELEASE)/podrun-linux-amd64.tar.gz podrun-linux-amd64
	cd $(RELEASE) && sha256sum podrun-linux-amd64.tar.gz > podrun-linux-amd64.tar.gz.sha256
	@$(RELEASE)/podrun-linux-amd64/podrun version | head -1
	@cat $(RELEASE)/podrun-linux-amd64/SHA256SUMS $(RELEASE)/podrun-linux-amd64.tar.gz.sha256

# test-vm boots Debian's cloud kernel in qemu with cgroup v2, once with a minimal
# init (cgroupfs driver) and once with systemd as PID 1 (systemd driver), and
# runs a subset of the end-to-end tests there with the release binary (vm/run.sh).
VM_VARIANTS ?= minimal systemd
test-vm: release image
	VM_PODRUN=$(RELEASE)/podrun-linux-amd64/podrun vm/run.sh $(VM_VARIANTS)

clean:
	rm -rf bin $(OUT)
