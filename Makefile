# The contract for people and CI. See README.md.
SHELL := /bin/bash
CARGO ?= cargo
PLUGINS_DIR ?= plugins/dist
WASM_TARGET := wasm32-wasip2
BIN := target/release/wasm-mcp

.PHONY: build plugins run test test-rust test-node bench lint wasm-target node-deps

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

# The performance suite is its own cargo workspace (it builds the official Rust
# SDK to compare against, which the tests and lints of the root workspace never
# need), sharing the root's target directory.
BENCH := CARGO_TARGET_DIR=$(CURDIR)/target $(CARGO)

## bench: the performance suite (table printed and written to bench/results.md), then the transport, reload and limits benches
bench: build plugins
	$(BENCH) build --release --manifest-path bench/Cargo.toml
	target/release/wasm-mcp-bench
	$(CARGO) bench -p wasm-mcp-tests

## lint: formatting and clippy for the host, the tests, the SDK and every plugin
lint: wasm-target
	$(CARGO) fmt --all --check
	$(CARGO) fmt --manifest-path bench/Cargo.toml --all --check
	for m in sdk-guest plugins tests/plugins; do $(CARGO) fmt --manifest-path $$m/Cargo.toml --all --check || exit 1; done
	$(CARGO) clippy --release --workspace --all-targets -- -D warnings
	$(BENCH) clippy --release --manifest-path bench/Cargo.toml --all-targets -- -D warnings
	for m in sdk-guest plugins tests/plugins; do \
		$(CARGO) clippy --release --target $(WASM_TARGET) --manifest-path $$m/Cargo.toml --all-targets -- -D warnings || exit 1; done
