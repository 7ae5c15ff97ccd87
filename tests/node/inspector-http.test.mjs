// The MCP Inspector CLI (mcp-inspector --cli --transport http URL; its
// 2026-07-28 era included, with the official tasks extension client) and the
// official TypeScript SDK's Streamable HTTP client against the real
// `wasm-mcp serve --http`, with bearer-token authentication on.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { execFile, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { LoggingMessageNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { binary, listening, pluginsDir, requireBuilt } from "./helpers.mjs";

const TOKEN = "inspector-test-token";

/** Starts `wasm-mcp serve --http 127.0.0.1:0 ARGS` and resolves once it listens with its plugins loaded. */
async function startServer(args = []) {
  requireBuilt();
  const child = spawn(binary, ["serve", "--no-watch", "--plugins", pluginsDir, "--http", "127.0.0.1:0", ...args], {
    env: { ...process.env, WASM_MCP_AUTH_TOKEN: TOKEN },
    stdio: ["ignore", "ignore", "pipe"],
  });
  const { url, stderr } = await listening(child);
  return { url, stop: () => child.kill(), stderr };
}

describe("MCP Inspector CLI over Streamable HTTP", () => {
  let server;
  before(async () => {
    server = await startServer();
  });
  after(() => server?.stop());

  /** Runs the Inspector CLI on the server's URL; returns its exit code and the JSON it printed. */
  async function inspect(args, { token = TOKEN } = {}) {
    const headers = token ? ["--header", `Authorization: Bearer ${token}`] : [];
    // A fresh catalog each run: the Inspector remembers a server's headers in it.
    const home = mkdtempSync(join(tmpdir(), "wasm-mcp-inspector-http-"));
    const { code, stdout, stderr } = await new Promise((resolve) => {
      execFile(
        "npx",
        ["--no-install", "mcp-inspector", "--cli", server.url, "--transport", "http", ...headers, ...args],
        // Keep the Inspector's catalog out of the real home directory.
        { env: { ...process.env, MCP_CATALOG_PATH: join(home, "mcp.json") }, timeout: 120_000 },
        (error, stdout, stderr) => resolve({ code: error ? (error.code ?? "signal") : 0, stdout, stderr }),
      );
    });
    rmSync(home, { recursive: true, force: true });
    const context = `exit code ${code}\nstdout:\n${stdout}\nstderr:\n${stderr}\nserver:\n${server.stderr()}`;
    let json;
    try {
      json = JSON.parse(stdout);
    } catch {
      json = undefined;
    }
    return { code, json, context };
  }

  test("tools/list and tools/call", async () => {
    const list = await inspect(["--method", "tools/list"]);
    assert.equal(list.code, 0, list.context);
    const names = list.json.tools.map((t) => t.name);
    for (const name of ["reverse", "test_simple_text", "test_tool_with_progress"]) {
      assert.ok(names.includes(name), `${name} in ${names.join(", ")}`);
    }
    const call = await inspect(["--method", "tools/call", "--tool-name", "reverse", "--tool-arg", "text=stressed"]);
    assert.equal(call.code, 0, call.context);
    assert.deepEqual(call.json.content, [{ type: "text", text: "desserts" }]);
  });

  test("resources/read, prompts/get and logging/setLevel", async () => {
    const resource = await inspect(["--method", "resources/read", "--uri", "test://static-text"]);
    assert.equal(resource.code, 0, resource.context);
    assert.equal(resource.json.contents[0].text, "This is the content of the static text resource.");
    const prompt = await inspect([
      "--method",
      "prompts/get",
      "--prompt-name",
      "test_prompt_with_arguments",
      "--prompt-args",
      "arg1=x",
      "arg2=y",
    ]);
    assert.equal(prompt.code, 0, prompt.context);
    assert.equal(prompt.json.messages[0].content.text, "Prompt with arguments: arg1='x', arg2='y'");
    const level = await inspect(["--method", "logging/setLevel", "--log-level", "debug"]);
    assert.equal(level.code, 0, level.context);
  });

  test("a 2026-07-28 client calls tools that run as tasks (the tasks extension)", async () => {
    // failing_job requires a task: without the extension it is refused with
    // -32021, so its result proves the Inspector's ext-tasks client created
    // the task, polled it with tasks/get and took the inlined result.
    const modern = ["--protocol-era", "modern", "--method", "tools/call"];
    const required = await inspect([...modern, "--tool-name", "failing_job"]);
    assert.equal(required.json?.content?.[0]?.text, "The job failed: this fixture always fails", required.context);
    assert.equal(required.json.isError, true, required.context);
    const slow = await inspect([...modern, "--tool-name", "slow_compute", "--tool-arg", "seconds=1", "--tool-arg", "label=inspector"]);
    assert.equal(slow.code, 0, slow.context);
    assert.deepEqual(slow.json.content, [{ type: "text", text: "Computed inspector after 1 s" }]);
  });

  test("a wrong or missing token is refused", async () => {
    for (const token of ["not-the-token", null]) {
      const refused = await inspect(["--method", "tools/list"], { token });
      assert.notEqual(refused.code, 0, refused.context);
      // The CLI answers a 401 by starting OAuth, which a non-interactive run cannot do.
      assert.match(refused.context, /401|nauthorized|auth_required/, refused.context);
    }
  });
});

describe("TypeScript SDK Streamable HTTP client, with the server polling", () => {
  let server;
  let client;
  let transport;
  const logs = [];
  before(async () => {
    // Every request's stream is closed right after its priming event: the
    // SDK must fetch each answer by reconnecting with Last-Event-ID.
    server = await startServer(["--sse-poll-after", "0", "--sse-retry", "20"]);
    transport = new StreamableHTTPClientTransport(new URL(server.url), {
      requestInit: { headers: { Authorization: `Bearer ${TOKEN}` } },
    });
    client = new Client({ name: "wasm-mcp-node-tests", version: "0.1.0" }, { capabilities: {} });
    client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => logs.push(n.params));
    await client.connect(transport);
  });
  after(async () => {
    await transport?.terminateSession().catch(() => {});
    await client?.close();
    server?.stop();
  });

  test("calls complete through resumption, with their progress and logs", async () => {
    assert.ok(transport.sessionId, "a session id was issued");
    await client.setLoggingLevel("debug");
    const progress = [];
    const result = await client.callTool({ name: "test_tool_with_progress", arguments: {} }, undefined, {
      onprogress: (p) => progress.push(p.progress),
    });
    assert.deepEqual(progress, [0, 50, 100]);
    assert.ok(result.content[0].text, JSON.stringify(result));
    await client.callTool({ name: "test_tool_with_logging", arguments: {} });
    assert.equal(logs.filter((l) => l.level === "info").length, 3, JSON.stringify(logs));
  });

  test("many requests at once share the session", async () => {
    const calls = Array.from({ length: 10 }, (_, i) =>
      client.callTool({ name: "reverse", arguments: { text: `abc${i}` } }),
    );
    const results = await Promise.all(calls);
    results.forEach((r, i) => assert.equal(r.content[0].text, `${i}cba`));
  });
});
