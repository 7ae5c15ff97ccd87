# The contract for people and CI. See README.md.
SHELL := /bin/bash
CARGO ?= cargo
PLUGINS_DIR ?= plugins/dist
WASM_TARGET := wasm32-wasip2
BIN := target/release/wasm-mcp
# Build tools installed from the registries (componentize-py, cargo-fuzz), gitignored and cached.
TOOLS := .tools
# Fuzzing: cargo-fuzz, pinned. The pinned (stable) toolchain builds the targets with RUSTC_BOOTSTRAP=1.
CARGO_FUZZ_VERSION := 0.13.1
CARGO_FUZZ := $(CURDIR)/$(TOOLS)/bin/cargo-fuzz
FUZZ_TARGETS := jsonrpc_message session_dispatch list_cursor manifest_toml plugin_output
# No sanitizer: the host is safe Rust, and ASan would slow the build of an
# instrumented wasmtime; panics, hangs (-timeout) and runaway memory (-rss_limit_mb) still fail.
FUZZ_FLAGS := --sanitizer none --codegen-units 16
FUZZ_SECONDS ?= 300
# wkg (wasm-pkg-tools), pinned: the third-party OCI client of the registry interop tests.
WKG_VERSION := 0.16.1
WKG := $(CURDIR)/$(TOOLS)/bin/wkg
FUZZ_CI_SECONDS ?= 20

.PHONY: build plugins rust-plugins run test test-rust test-node bench bench-check soak lint toolchain node-deps scale-deps registry-deps fuzz fuzz-ci fuzz-build image image-deps

## toolchain: the Rust toolchain rust-toolchain.toml pins, with its components and
## the plugins' target (wasm32-wasip2), installed by rustup when missing
toolchain:
	@rustup toolchain install >/dev/null

## build: the host binary at target/release/wasm-mcp
build: toolchain
	$(CARGO) build --release -p wasm-mcp

## plugins: every example plugin at plugins/dist/<name>.wasm (+ <name>.toml where it needs grants),
## and the SDK's examples at sdk-guest/target/wasm32-wasip2/release/examples/<name>.wasm
plugins: rust-plugins python-plugins js-plugins

rust-plugins: toolchain
	$(CARGO) build --release --target $(WASM_TARGET) --manifest-path plugins/Cargo.toml
	$(CARGO) build --release --target $(WASM_TARGET) --manifest-path tests/plugins/Cargo.toml
	$(CARGO) build --release --target $(WASM_TARGET) --manifest-path sdk-guest/Cargo.toml --examples
	./plugins/collect.sh plugins/target/$(WASM_TARGET)/release plugins $(PLUGINS_DIR)
	./plugins/collect.sh tests/plugins/target/$(WASM_TARGET)/release tests/plugins tests/plugins/dist

# Python plugins: plugins/python/NAME/app.py (with the helper plugins/python/wasm_mcp.py)
# become plugins/dist/NAME.wasm through componentize-py, installed from PyPI into a venv
# under $(TOOLS). JavaScript plugins: plugins/js/NAME/plugin.js (with plugins/js/wasm-mcp.js)
# through componentize-js, installed by `npm ci` in plugins/js. Each is rebuilt only when
# its sources, the helper, the WIT or the tool change.
COMPONENTIZE_PY := $(TOOLS)/python/bin/componentize-py
COMPONENTIZE_JS := plugins/js/node_modules/.bin/componentize-js
PY_PLUGINS := $(patsubst plugins/python/%/app.py,$(PLUGINS_DIR)/%.wasm,$(wildcard plugins/python/*/app.py))
JS_PLUGINS := $(patsubst plugins/js/%/plugin.js,$(PLUGINS_DIR)/%.wasm,$(wildcard plugins/js/*/plugin.js))

.PHONY: python-plugins js-plugins
python-plugins: $(PY_PLUGINS)
js-plugins: $(JS_PLUGINS)

$(COMPONENTIZE_PY): plugins/python/requirements.txt
	python3 -m venv $(TOOLS)/python
	$(TOOLS)/python/bin/pip install --quiet --disable-pip-version-check -r $<
	touch $@

$(COMPONENTIZE_JS): plugins/js/package-lock.json
	cd plugins/js && npm ci --no-audit --no-fund --loglevel=error
	touch $@

# The world a Python or JavaScript plugin is built for: `plugin`, or the one a line
# `# world: NAME` (`// world: NAME`) of its source names (`stateful-plugin` for one that keeps
# state through wasi:keyvalue). A NAME.toml beside the source is its manifest, copied along.
world_of = $(or $(shell sed -n 's/^\(\#\|\/\/\) world: *//p' $(1) | head -n 1),plugin)
manifest_of = if [ -f $(1)/$(2).toml ]; then cp $(1)/$(2).toml $(PLUGINS_DIR)/$(2).toml; fi

.SECONDEXPANSION:
$(PY_PLUGINS): $(PLUGINS_DIR)/%.wasm: $$(wildcard plugins/python/%/*.py) plugins/python/wasm_mcp.py wit/plugin.wit wit/state.wit $(COMPONENTIZE_PY)
	@mkdir -p $(@D)
	$(COMPONENTIZE_PY) --quiet -d wit -w $(call world_of,plugins/python/$*/app.py) componentize -p plugins/python/$* -p plugins/python app -o $@.partial
	mv $@.partial $@
	$(call manifest_of,plugins/python/$*,$*)

# The component imports only the host: every WASI feature componentize-js can leave out is disabled.
$(JS_PLUGINS): $(PLUGINS_DIR)/%.wasm: $$(wildcard plugins/js/%/*.js) plugins/js/wasm-mcp.js wit/plugin.wit wit/state.wit $(COMPONENTIZE_JS)
	@mkdir -p $(@D)
	$(COMPONENTIZE_JS) plugins/js/$*/plugin.js --wit wit -n $(call world_of,plugins/js/$*/plugin.js) -d stdio random clocks http fetch-event -o $@.partial
	mv $@.partial $@
	$(call manifest_of,plugins/js/$*,$*)

## run: install what is missing, build, and serve plugins/dist over stdio
run: build plugins
	$(BIN) serve --plugins $(PLUGINS_DIR)

# The Node tests' packages, and Debian's Chromium, in which the MCP Apps test renders a page.
node-deps:
	cd tests/node && npm ci --no-audit --no-fund --loglevel=error
	command -v chromium >/dev/null || { apt-get update && apt-get install -y --no-install-recommends chromium; }

# The official Python SDK (mcp 2.x) as a client of the tests, in a venv under $(TOOLS).
SDK_CLIENT := $(TOOLS)/sdk-client
$(SDK_CLIENT)/installed: tests/python/requirements.txt
	python3 -m venv $(SDK_CLIENT)
	$(SDK_CLIENT)/bin/pip install --quiet --disable-pip-version-check -r $<
	touch $@

# The check of the Kubernetes manifests (kubernetes-validate's schemas, kubectl's kustomize), in a
# venv under $(TOOLS).
DEPLOY_CHECK := $(TOOLS)/deploy
$(DEPLOY_CHECK)/installed: tests/deploy/requirements.txt
	python3 -m venv $(DEPLOY_CHECK)
	$(DEPLOY_CHECK)/bin/pip install --quiet --disable-pip-version-check -r $<
	touch $@

## test: every test (Rust end-to-end tests, the Node clients, the conformance suites, the Python SDK
## client, and three replicas behind HAProxy sharing a Redis, both installed with apt when missing;
## an OCI registry, skopeo and wkg for the registry tests; the container image's final stage built
## around the release binary and run with podman; the Kubernetes manifests validated offline)
test: build plugins node-deps scale-deps registry-deps image-deps $(SDK_CLIENT)/installed $(DEPLOY_CHECK)/installed
	$(CARGO) test --release --workspace
	$(CARGO) test --manifest-path sdk-guest/Cargo.toml
	$(CARGO) test --manifest-path plugins/Cargo.toml
	cd tests/node && ./run-tests.sh
	cd tests/node && ./conformance.sh
	$(SDK_CLIENT)/bin/python tests/python/modern_client.py $(BIN) $(PLUGINS_DIR)
	$(SDK_CLIENT)/bin/python tests/python/scale_out.py $(BIN) $(PLUGINS_DIR)
	$(DEPLOY_CHECK)/bin/python tests/deploy/manifests.py $(BIN) $(PLUGINS_DIR)

# The benchmarks are their own cargo workspace (the suite builds the official
# Rust SDK to compare against, which the tests and lints of the root workspace
# never need), sharing the root's target directory.
BENCH := CARGO_TARGET_DIR=$(CURDIR)/target $(CARGO)

## bench: the performance suite (table printed and written to bench/results.md), then the transport, reload, limits, replicas, telemetry, authentication, registry and key-value benches
bench: build plugins scale-deps registry-deps
	$(BENCH) build --release --manifest-path bench/Cargo.toml
	target/release/wasm-mcp-bench
	target/release/wasm-mcp-bench http
	target/release/wasm-mcp-bench reload
	target/release/wasm-mcp-bench limits
	target/release/wasm-mcp-bench replicas
	target/release/wasm-mcp-bench telemetry
	target/release/wasm-mcp-bench auth
	target/release/wasm-mcp-bench registry
	target/release/wasm-mcp-bench keyvalue

## bench-check: wasm-mcp's server CPU per echo call (one at a time and 16 in flight, as a multiple of
## rmcp's in the same run) against bench/baseline.json; fails when either grew more than 25 %. Run it before a
## change to the call path lands; `target/release/wasm-mcp-bench cpu-check --write-baseline` records a new one
bench-check: build plugins
	$(BENCH) build --release --manifest-path bench/Cargo.toml
	target/release/wasm-mcp-bench cpu-check

## scale-deps: redis-server and haproxy (Debian's), for the scale-out test and bench, and prometheus and
## chromium for the operations test; installed when missing
scale-deps:
	@command -v redis-server >/dev/null && command -v haproxy >/dev/null && command -v prometheus >/dev/null \
		&& command -v chromium >/dev/null || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
		apt-get install -y -qq redis-server haproxy prometheus chromium)

## registry-deps: Debian's docker-registry (distribution 2.8), htpasswd (apache2-utils) and skopeo for
## the registry tests, installed with apt when missing; wkg from crates.io into $(TOOLS)
registry-deps: $(WKG)
	@command -v docker-registry >/dev/null && command -v htpasswd >/dev/null && command -v skopeo >/dev/null \
		|| (apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
		apt-get install -y -qq docker-registry apache2-utils skopeo)

$(WKG): | toolchain
	$(CARGO) install wkg --version $(WKG_VERSION) --locked --root $(TOOLS)

## image-deps: Debian's buildah, podman, runc and mmdebstrap, to build and run the container image;
## installed with apt when missing
image-deps:
	@command -v buildah >/dev/null && command -v podman >/dev/null && command -v runc >/dev/null \
		&& command -v mmdebstrap >/dev/null || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
		apt-get install -y -qq buildah podman runc mmdebstrap)

# The image's name, and what its labels say. BUILD_CA_FILE: the certificates cargo trusts in the
# build stage to download crates (this machine's, for a network whose proxy re-signs TLS); the
# image's own are Debian's ca-certificates.
IMAGE ?= localhost/wasm-mcp:latest
BUILD_CA_FILE ?= /etc/ssl/certs/ca-certificates.crt
IMAGE_VERSION := $(shell sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)

## image: the server's container image (Containerfile) as $(IMAGE): the host built from this
## checkout in a Rust stage, then a final image of the binary, its libraries and CA certificates; the
## stages' bases are made from Debian's packages when missing (container/bases.sh)
image: toolchain image-deps
	buildah bud --isolation chroot --network host \
		--build-arg RUST_IMAGE=$$(container/bases.sh rust) \
		--build-arg DEBIAN_IMAGE=$$(container/bases.sh debian) \
		--build-arg BINARY=build \
		--secret id=build-ca,src=$(BUILD_CA_FILE) \
		--build-arg VERSION=$(IMAGE_VERSION) \
		--build-arg REVISION=$$(git rev-parse HEAD) \
		--build-arg CREATED=$$(date -u +%Y-%m-%dT%H:%M:%SZ) \
		-t $(IMAGE) -f Containerfile .
	podman images --quiet --filter dangling=true --filter label=wasm-mcp.intermediate=true \
		| xargs --no-run-if-empty podman rmi >/dev/null

## soak: many stdio and HTTP clients against real servers for SOAK_SECONDS (default 600) while
## plugins change; checks every response, every task, and flat memory and descriptors (not in `make test`)
soak: build plugins
	$(CARGO) run --release -p wasm-mcp-tests --bin soak

## lint: formatting and clippy for the host, the tests, the benchmarks, the SDK and every plugin; the SDK's docs
lint: toolchain
	$(CARGO) fmt --all --check
	for m in sdk-guest plugins tests/plugins fuzz bench; do $(CARGO) fmt --manifest-path $$m/Cargo.toml --all --check || exit 1; done
	$(CARGO) clippy --release --workspace --all-targets -- -D warnings
	for m in fuzz bench; do \
		$(CARGO) clippy --release --manifest-path $$m/Cargo.toml --target-dir target --all-targets -- -D warnings || exit 1; done
	for m in sdk-guest plugins tests/plugins; do \
		$(CARGO) clippy --release --target $(WASM_TARGET) --manifest-path $$m/Cargo.toml --all-targets -- -D warnings || exit 1; done
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc --no-deps --manifest-path sdk-guest/Cargo.toml

$(CARGO_FUZZ): | toolchain
	$(CARGO) install cargo-fuzz --version $(CARGO_FUZZ_VERSION) --locked --root $(TOOLS)

## fuzz-build: every fuzz target (fuzz/, its own workspace), instrumented
fuzz-build: toolchain $(CARGO_FUZZ) plugins
	cd fuzz && RUSTC_BOOTSTRAP=1 $(CARGO_FUZZ) build $(FUZZ_FLAGS)

## fuzz: runs every fuzz target for FUZZ_SECONDS (default 300) on its seeds plus
## what earlier runs found (fuzz/target/corpus); a crash stops with its input in fuzz/artifacts
fuzz: fuzz-build
	@for t in $(FUZZ_TARGETS); do \
		echo "== fuzz $$t for $(FUZZ_SECONDS)s"; \
		mkdir -p fuzz/target/corpus/$$t; \
		(cd fuzz && RUSTC_BOOTSTRAP=1 $(CARGO_FUZZ) run $(FUZZ_FLAGS) $$t target/corpus/$$t seeds/$$t -- \
			-max_total_time=$(FUZZ_SECONDS) -max_len=8192 -timeout=60 -rss_limit_mb=4096 -print_final_stats=1) || exit 1; \
	done

## fuzz-ci: builds the fuzz targets and runs each for FUZZ_CI_SECONDS (default 20); fails on any crash
fuzz-ci:
	$(MAKE) fuzz FUZZ_SECONDS=$(FUZZ_CI_SECONDS)
