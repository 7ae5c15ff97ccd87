// The official MCP TypeScript SDK client against the real wasm-mcp binary
// serving plugins/dist over stdio, with sampling, elicitation and roots
// handlers registered the way a real client registers them.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ListRootsRequestSchema,
  LoggingMessageNotificationSchema,
  ResourceUpdatedNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";
import { allPluginsDir, connect, listAll, texts } from "./helpers.mjs";

const PNG =
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";

describe("TypeScript SDK client over stdio", () => {
  let session;
  const sampling = [];
  const elicitations = [];
  const rootsRequests = [];
  const logs = [];

  before(async () => {
    session = await connect({
      capabilities: { sampling: {}, elicitation: { form: {} }, roots: { listChanged: true } },
      setup: (client) => {
        client.setRequestHandler(CreateMessageRequestSchema, async (request) => {
          sampling.push(request.params);
          return {
            role: "assistant",
            content: { type: "text", text: "This is a test response from the client" },
            model: "test-model",
            stopReason: "endTurn",
          };
        });
        client.setRequestHandler(ElicitRequestSchema, async (request) => {
          elicitations.push(request.params);
          return { action: "accept", content: { username: "testuser", email: "test@example.com" } };
        });
        client.setRequestHandler(ListRootsRequestSchema, async () => {
          rootsRequests.push(true);
          return { roots: [{ uri: "file:///workspace/project", name: "project" }] };
        });
        client.setNotificationHandler(LoggingMessageNotificationSchema, (notification) => {
          logs.push(notification.params);
        });
      },
    });
  });

  after(async () => {
    await session?.client.close();
  });

  test("connects and negotiates 2025-11-25", () => {
    const info = session.client.getServerVersion();
    assert.ok(info?.name, `serverInfo.name: ${JSON.stringify(info)}`);
    const caps = session.client.getServerCapabilities();
    for (const cap of ["tools", "resources", "prompts", "logging", "completions"]) {
      assert.ok(caps?.[cap], `capability ${cap} declared: ${JSON.stringify(caps)}`);
    }
  });

  test("lists the conformance tools with descriptions", async () => {
    const tools = await listAll(session.client, "listTools", "tools");
    const names = tools.map((t) => t.name);
    for (const name of ["test_simple_text", "test_sampling", "test_elicitation", "test_error_handling"]) {
      assert.ok(names.includes(name), `${name} in ${names.join(", ")}`);
    }
    for (const tool of tools) {
      assert.equal(tool.inputSchema.type, "object", `${tool.name} inputSchema`);
    }
  });

  test("calls a tool and reads its result", async () => {
    const result = await session.client.callTool({ name: "test_simple_text", arguments: {} });
    assert.notEqual(result.isError, true, JSON.stringify(result));
    assert.deepEqual(texts(result), ["This is a simple text response for testing."]);
  });

  test("calls a text-tools tool with structured output", async () => {
    const tools = await listAll(session.client, "listTools", "tools");
    const wordCount = tools.find((t) => t.name === "word_count");
    assert.ok(wordCount?.outputSchema, "word_count declares an outputSchema");
    // The SDK client checks structuredContent against the outputSchema.
    const result = await session.client.callTool({ name: "word_count", arguments: { text: "one two\nthree" } });
    assert.notEqual(result.isError, true, JSON.stringify(result));
    assert.deepEqual(result.structuredContent, { words: 3, lines: 2, characters: 13 });
    assert.deepEqual(JSON.parse(texts(result)[0]), result.structuredContent);

    const cased = await session.client.callTool({
      name: "change_case",
      arguments: { text: "helloWorld foo-bar", to: "kebab" },
    });
    assert.deepEqual(texts(cased), ["hello-world-foo-bar"]);
  });

  test("arguments that break the input schema are an isError result naming the field", async () => {
    const result = await session.client.callTool({ name: "change_case", arguments: { text: "x", to: "sideways" } });
    assert.equal(result.isError, true, JSON.stringify(result));
    assert.match(texts(result).join(" "), /\/to|"to"|`to`/);
  });

  test("a failing tool is an isError result", async () => {
    const result = await session.client.callTool({ name: "test_error_handling", arguments: {} });
    assert.equal(result.isError, true, JSON.stringify(result));
    assert.deepEqual(texts(result), ["This tool intentionally returns an error for testing"]);
  });

  test("an unknown tool is rejected", async () => {
    await assert.rejects(
      session.client.callTool({ name: "no_such_tool_anywhere", arguments: {} }),
      (error) => error.code === -32602,
    );
  });

  test("sampling round trip through the client's handler", async () => {
    const before = sampling.length;
    const result = await session.client.callTool({
      name: "test_sampling",
      arguments: { prompt: "Test prompt for sampling" },
    });
    assert.notEqual(result.isError, true, JSON.stringify(result));
    assert.equal(sampling.length, before + 1, "one sampling request during the call");
    assert.deepEqual(sampling.at(-1).messages, [
      { role: "user", content: { type: "text", text: "Test prompt for sampling" } },
    ]);
    assert.deepEqual(texts(result), ["LLM response: This is a test response from the client"]);
  });

  test("elicitation round trip through the client's handler", async () => {
    const before = elicitations.length;
    const result = await session.client.callTool({
      name: "test_elicitation",
      arguments: { message: "Please provide your information" },
    });
    assert.notEqual(result.isError, true, JSON.stringify(result));
    assert.equal(elicitations.length, before + 1, "one elicitation request during the call");
    assert.equal(elicitations.at(-1).message, "Please provide your information");
    const [text] = texts(result);
    const prefix = "User response: action=accept, content=";
    assert.ok(text.startsWith(prefix), text);
    assert.deepEqual(JSON.parse(text.slice(prefix.length)), {
      username: "testuser",
      email: "test@example.com",
    });
  });

  test("resources: list, templates, read text and blob", async () => {
    const resources = await listAll(session.client, "listResources", "resources");
    const uris = resources.map((r) => r.uri);
    for (const uri of ["test://static-text", "test://static-binary", "test://watched-resource"]) {
      assert.ok(uris.includes(uri), `${uri} in ${uris.join(", ")}`);
    }
    const templates = await listAll(session.client, "listResourceTemplates", "resourceTemplates");
    assert.ok(templates.some((t) => t.uriTemplate === "test://template/{id}/data"));

    const text = await session.client.readResource({ uri: "test://static-text" });
    assert.deepEqual(text.contents, [
      {
        uri: "test://static-text",
        mimeType: "text/plain",
        text: "This is the content of the static text resource.",
      },
    ]);
    const blob = await session.client.readResource({ uri: "test://static-binary" });
    assert.deepEqual(blob.contents, [{ uri: "test://static-binary", mimeType: "image/png", blob: PNG }]);
    const templated = await session.client.readResource({ uri: "test://template/123/data" });
    assert.deepEqual(JSON.parse(templated.contents[0].text), {
      id: "123",
      templateTest: true,
      data: "Data for ID: 123",
    });
  });

  test("reading an unknown resource is -32002", async () => {
    await assert.rejects(
      session.client.readResource({ uri: "test://no-such-resource" }),
      (error) => error.code === -32002,
    );
  });

  test("prompts: list and get", async () => {
    const prompts = await listAll(session.client, "listPrompts", "prompts");
    const names = prompts.map((p) => p.name);
    for (const name of ["test_simple_prompt", "test_prompt_with_arguments"]) {
      assert.ok(names.includes(name), `${name} in ${names.join(", ")}`);
    }
    const prompt = await session.client.getPrompt({
      name: "test_prompt_with_arguments",
      arguments: { arg1: "testValue1", arg2: "testValue2" },
    });
    assert.deepEqual(prompt.messages, [
      {
        role: "user",
        content: { type: "text", text: "Prompt with arguments: arg1='testValue1', arg2='testValue2'" },
      },
    ]);
  });

  test("a prompt without a required argument is rejected with -32602", async () => {
    await assert.rejects(
      session.client.getPrompt({ name: "test_prompt_with_arguments", arguments: { arg1: "only one" } }),
      (error) => error.code === -32602,
    );
  });

  test("completion passes context.arguments to the owning plugin", async () => {
    const ref = { type: "ref/prompt", name: "compare_notes" };
    const all = await session.client.complete({ ref, argument: { name: "second", value: "" } });
    assert.ok(all.completion.values.includes("sandbox"), JSON.stringify(all));
    const rest = await session.client.complete({
      ref,
      argument: { name: "second", value: "" },
      context: { arguments: { first: "sandbox" } },
    });
    assert.deepEqual(
      rest.completion.values,
      all.completion.values.filter((v) => v !== "sandbox"),
      "the plugin leaves out the slug already chosen as `first`",
    );
  });

  test("completion for a prompt argument", async () => {
    const result = await session.client.complete({
      ref: { type: "ref/prompt", name: "test_prompt_with_arguments" },
      argument: { name: "arg1", value: "test" },
    });
    assert.ok(Array.isArray(result.completion.values));
    assert.ok(result.completion.values.length <= 100);
  });

  test("log messages reach the client at the level it set", async () => {
    await session.client.setLoggingLevel("debug");
    const before = logs.length;
    const result = await session.client.callTool({ name: "test_tool_with_logging", arguments: {} });
    assert.notEqual(result.isError, true, JSON.stringify(result));
    const received = logs.slice(before);
    assert.deepEqual(
      received.map((l) => l.data),
      ["Tool execution started", "Tool processing data", "Tool execution completed"],
      JSON.stringify(received),
    );
    assert.ok(received.every((l) => l.level === "info" && l.logger === "conformance"), JSON.stringify(received));

    await session.client.setLoggingLevel("warning");
    const quiet = logs.length;
    await session.client.callTool({ name: "test_tool_with_logging", arguments: {} });
    assert.deepEqual(logs.slice(quiet), [], "info messages are filtered at level warning");
  });

  test("progress notifications reach the caller's progress handler", async () => {
    const progress = [];
    const result = await session.client.callTool(
      { name: "test_tool_with_progress", arguments: {} },
      undefined,
      { onprogress: (p) => progress.push(p) },
    );
    assert.notEqual(result.isError, true, JSON.stringify(result));
    assert.deepEqual(
      progress.map((p) => [p.progress, p.total]),
      [
        [0, 100],
        [50, 100],
        [100, 100],
      ],
    );
  });
});

describe("TypeScript SDK client: roots and resource updates (test plugins)", () => {
  let session;
  let plugins;
  let roots = [{ uri: "file:///workspace/one", name: "one" }];
  const updates = [];

  before(async () => {
    plugins = allPluginsDir();
    session = await connect({
      plugins: plugins.path,
      capabilities: { roots: { listChanged: true } },
      setup: (client) => {
        client.setRequestHandler(ListRootsRequestSchema, async () => ({ roots }));
        client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => updates.push(n.params.uri));
      },
    });
  });

  after(async () => {
    await session?.client.close();
    plugins?.remove();
  });

  test("roots round trip, and the next call sees changed roots", async () => {
    const first = await session.client.callTool({ name: "list_roots", arguments: {} });
    assert.deepEqual(JSON.parse(texts(first)[0]), [{ uri: "file:///workspace/one", name: "one" }]);
    roots = [{ uri: "file:///workspace/two" }];
    await session.client.sendRootsListChanged();
    const second = await session.client.callTool({ name: "list_roots", arguments: {} });
    assert.deepEqual(JSON.parse(texts(second)[0]), [{ uri: "file:///workspace/two" }]);
  });

  test("a subscribed resource gets its update and an unsubscribed one does not", async () => {
    await session.client.subscribeResource({ uri: "notes://note/sandbox" });
    await session.client.callTool({ name: "touch_note", arguments: { slug: "limits" } });
    await session.client.callTool({ name: "touch_note", arguments: { slug: "sandbox" } });
    await session.client.unsubscribeResource({ uri: "notes://note/sandbox" });
    await session.client.callTool({ name: "touch_note", arguments: { slug: "sandbox" } });
    // A round trip after the last call: its notifications were written before its result.
    await session.client.ping();
    assert.deepEqual(updates, ["notes://note/sandbox"]);
  });

  test("without the sampling capability a sampling tool fails clearly", async () => {
    const result = await session.client.callTool({ name: "test_sampling", arguments: { prompt: "hi" } });
    assert.equal(result.isError, true, JSON.stringify(result));
    assert.match(texts(result).join(" "), /sampling.*capability|capability.*sampling/);
  });
});
