# The contract for people and CI. See README.md.
SHELL := /bin/bash
CARGO ?= cargo
PLUGINS_DIR ?= plugins/dist
WASM_TARGET := wasm32-wasip2
BIN := target/release/wasm-mcp
# Fuzzing: cargo-fuzz, pinned, installed into a gitignored tools dir (cached
# between runs). The stable toolchain builds the targets with RUSTC_BOOTSTRAP=1.
TOOLS_DIR := .tools
CARGO_FUZZ_VERSION := 0.13.1
CARGO_FUZZ := $(CURDIR)/$(TOOLS_DIR)/bin/cargo-fuzz
FUZZ_TARGETS := jsonrpc_message session_dispatch list_cursor manifest_toml plugin_output
# No sanitizer: the host is safe Rust, and ASan would slow the build of an
# instrumented wasmtime; panics, hangs (-timeout) and runaway memory (-rss_limit_mb) still fail.
FUZZ_FLAGS := --sanitizer none --codegen-units 16
FUZZ_SECONDS ?= 300
FUZZ_CI_SECONDS ?= 20

.PHONY: build plugins run test test-rust test-node bench lint wasm-target node-deps fuzz fuzz-ci fuzz-build

## build: the host binary at target/release/wasm-mcp
build:
	$(CARGO) build --release -p wasm-mcp

wasm-target:
	@rustup target list --installed 2>/dev/null | grep -qx $(WASM_TARGET) || rustup target add $(WASM_TARGET)

## plugins: every example plugin at plugins/dist/<name>.wasm (+ <name>.toml where it needs grants)
plugins: wasm-target
	$(CARGO) build --release --target $(WASM_TARGET) --manifest-path plugins/Cargo.toml
	$(CARGO) build --release --target $(WASM_TARGET) --manifest-path tests/plugins/Cargo.toml
	./plugins/collect.sh plugins/target/$(WASM_TARGET)/release plugins $(PLUGINS_DIR)
	./plugins/collect.sh tests/plugins/target/$(WASM_TARGET)/release tests/plugins tests/plugins/dist

## run: install what is missing, build, and serve plugins/dist over stdio
run: build plugins
	$(BIN) serve --plugins $(PLUGINS_DIR)

node-deps:
	cd tests/node && npm ci --no-audit --no-fund --loglevel=error

## test: every test (Rust end-to-end tests and the Node clients)
test: build plugins node-deps
	$(CARGO) test --release --workspace
	$(CARGO) test --manifest-path sdk-guest/Cargo.toml
	cd tests/node && ./run-tests.sh
	cd tests/node && ./conformance.sh

## bench: the benchmarks
bench: build plugins
	$(CARGO) bench -p wasm-mcp-tests

## lint: formatting and clippy for the host, the tests, the SDK and every plugin
lint: wasm-target
	$(CARGO) fmt --all --check
	for m in sdk-guest plugins tests/plugins; do $(CARGO) fmt --manifest-path $$m/Cargo.toml --all --check || exit 1; done
	$(CARGO) fmt --manifest-path fuzz/Cargo.toml --all --check
	$(CARGO) clippy --release --workspace --all-targets -- -D warnings
	$(CARGO) clippy --release --manifest-path fuzz/Cargo.toml --target-dir target --all-targets -- -D warnings
	for m in sdk-guest plugins tests/plugins; do \
		$(CARGO) clippy --release --target $(WASM_TARGET) --manifest-path $$m/Cargo.toml --all-targets -- -D warnings || exit 1; done

$(CARGO_FUZZ):
	$(CARGO) install cargo-fuzz --version $(CARGO_FUZZ_VERSION) --locked --root $(TOOLS_DIR)

## fuzz-build: every fuzz target (fuzz/, its own workspace), instrumented
fuzz-build: $(CARGO_FUZZ) plugins
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
