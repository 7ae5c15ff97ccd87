// The MCP Inspector CLI (npx mcp-inspector --cli) driving the real wasm-mcp
// binary over stdio, asserting on the JSON it prints.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { binary, pluginsDir, requireBuilt } from "./helpers.mjs";

/**
 * Runs the Inspector CLI against `wasm-mcp serve --plugins plugins/dist` and
 * returns the JSON it printed with its exit code. `expectFailure` accepts a
 * non-zero exit (the CLI exits non-zero for a tool result with isError).
 */
async function run(args, { expectFailure = false } = {}) {
  requireBuilt();
  const home = mkdtempSync(join(tmpdir(), "wasm-mcp-inspector-"));
  try {
    const { code, stdout, stderr } = await new Promise((resolve) => {
      execFile(
        "npx",
        ["--no-install", "mcp-inspector", "--cli", binary, "serve", "--plugins", pluginsDir, ...args],
        // Keep the Inspector's catalog out of the real home directory.
        { env: { ...process.env, MCP_CATALOG_PATH: join(home, "mcp.json") }, timeout: 120_000 },
        (error, stdout, stderr) => resolve({ code: error ? (error.code ?? "signal") : 0, stdout, stderr }),
      );
    });
    const context = `exit code ${code}\nstdout:\n${stdout}\nstderr:\n${stderr}`;
    if (expectFailure) {
      assert.notEqual(code, 0, `the Inspector should report the failure: ${context}`);
    } else {
      assert.equal(code, 0, `the Inspector failed: ${context}`);
    }
    try {
      return JSON.parse(stdout);
    } catch (e) {
      throw new Error(`the Inspector printed no JSON (${e.message}): ${context}`);
    }
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
}

const inspect = (...args) => run(args);

test("Inspector CLI: tools/list shows the plugins' tools", async () => {
  const result = await inspect("--method", "tools/list");
  const names = result.tools.map((t) => t.name);
  for (const name of ["reverse", "word_count", "echo", "test_simple_text", "search_notes"]) {
    assert.ok(names.includes(name), `${name} in ${names.join(", ")}`);
  }
  const reverse = result.tools.find((t) => t.name === "reverse");
  assert.equal(reverse.description, "Reverses a text, character by character.");
});

test("Inspector CLI: tools/call with --tool-arg returns the plugin's result", async () => {
  const result = await inspect("--method", "tools/call", "--tool-name", "reverse", "--tool-arg", "text=stressed");
  assert.notEqual(result.isError, true, JSON.stringify(result));
  assert.deepEqual(result.content, [{ type: "text", text: "desserts" }]);
});

test("Inspector CLI: a tool error comes back as isError", async () => {
  const result = await run(
    ["--method", "tools/call", "--tool-name", "base64_decode", "--tool-arg", "data=not base64!"],
    { expectFailure: true },
  );
  assert.equal(result.isError, true, JSON.stringify(result));
  assert.match(result.content[0].text, /not valid base64/);
});

test("Inspector CLI: resources/read and prompts/get", async () => {
  const resource = await inspect("--method", "resources/read", "--uri", "notes://note/sandbox");
  assert.equal(resource.contents[0].uri, "notes://note/sandbox");
  assert.match(resource.contents[0].text, /^# The sandbox/);
  const prompt = await inspect(
    "--method",
    "prompts/get",
    "--prompt-name",
    "test_prompt_with_arguments",
    "--prompt-args",
    "arg1=a",
    "arg2=b",
  );
  assert.deepEqual(prompt.messages, [
    { role: "user", content: { type: "text", text: "Prompt with arguments: arg1='a', arg2='b'" } },
  ]);
});
