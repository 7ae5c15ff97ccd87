// MCP tasks driven by the official TypeScript SDK client's experimental task
// API (client.experimental.tasks: callToolStream, getTask, getTaskResult,
// listTasks, cancelTask) against the real wasm-mcp binary over stdio.
//
// Plugins: the example batch-digest (digest_batch may run as a task), the
// spinner (spin made task-capable by a manifest written here) and the
// conformance plugin (test_elicitation made task-capable the same way).
// No timing assertions: waits end with the task, or with the test timeout.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  CallToolResultSchema,
  CreateTaskResultSchema,
  ElicitRequestSchema,
  ErrorCode,
  McpError,
  TaskStatusNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";
import { connect, pluginsDir, testPluginsDir, texts } from "./helpers.mjs";

const RELATED_TASK = "io.modelcontextprotocol/related-task";

/** A plugins directory with batch-digest, spinner and conformance, and manifests for tasks. */
function taskPluginsDir() {
  const dir = mkdtempSync(join(tmpdir(), "wasm-mcp-node-tasks-"));
  copyFileSync(join(pluginsDir, "batch-digest.wasm"), join(dir, "batch-digest.wasm"));
  copyFileSync(join(pluginsDir, "batch-digest.toml"), join(dir, "batch-digest.toml"));
  copyFileSync(join(pluginsDir, "conformance.wasm"), join(dir, "conformance.wasm"));
  writeFileSync(join(dir, "conformance.toml"), '[tools.test_elicitation]\ntask_support = "optional"\n');
  copyFileSync(join(testPluginsDir, "spinner.wasm"), join(dir, "spinner.wasm"));
  writeFileSync(join(dir, "spinner.toml"), '[tools.spin]\ntask_support = "optional"\n');
  return { path: dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** Every message of an async generator, in order. */
async function drain(stream) {
  const messages = [];
  for await (const message of stream) messages.push(message);
  return messages;
}

/** Starts `name` as a task with a plain request; returns its Task. */
async function startTask(client, name, args, task = {}) {
  const created = await client.request(
    { method: "tools/call", params: { name, arguments: args, task } },
    CreateTaskResultSchema,
  );
  return created.task;
}

/** Waits (polling tasks/get at the advised interval) until the task is terminal. */
async function waitTerminal(client, taskId) {
  for (;;) {
    const task = await client.experimental.tasks.getTask(taskId);
    if (["completed", "failed", "cancelled"].includes(task.status)) return task;
    await new Promise((resolve) => setTimeout(resolve, task.pollInterval ?? 100));
  }
}

describe("TypeScript SDK client: tasks", () => {
  let session;
  let plugins;
  const statusNotifications = [];
  const elicitations = [];

  before(async () => {
    plugins = taskPluginsDir();
    session = await connect({
      plugins: plugins.path,
      capabilities: { elicitation: { form: {} } },
      setup: (client) => {
        client.setNotificationHandler(TaskStatusNotificationSchema, (notification) => {
          statusNotifications.push(notification.params);
        });
        client.setRequestHandler(ElicitRequestSchema, async (request) => {
          elicitations.push(request.params);
          return { action: "accept", content: { username: "ada", email: "ada@example.com" } };
        });
      },
    });
    // Lets the SDK learn which tools take tasks.
    await session.client.listTools();
  });

  after(async () => {
    await session?.client.close();
    plugins?.remove();
  });

  test("the server declares tasks and each tool's task support", async () => {
    const caps = session.client.getServerCapabilities();
    assert.deepEqual(caps?.tasks, { list: {}, cancel: {}, requests: { tools: { call: {} } } });
    const { tools } = await session.client.listTools();
    const support = Object.fromEntries(tools.map((t) => [t.name, t.execution?.taskSupport]));
    assert.equal(support.digest_batch, "optional");
    assert.equal(support.digest, "forbidden");
    assert.equal(support.spin, "optional", "the manifest's override is listed");
  });

  test("callToolStream runs a task from creation to its result, with progress", async () => {
    const progress = [];
    const messages = await drain(
      session.client.experimental.tasks.callToolStream(
        { name: "digest_batch", arguments: { items: ["alpha", "beta"], rounds: 200000 } },
        CallToolResultSchema,
        { task: { ttl: 60000 }, onprogress: (p) => progress.push(p) },
      ),
    );
    const types = messages.map((m) => m.type);
    assert.equal(types[0], "taskCreated", types.join(","));
    assert.equal(types.at(-1), "result", JSON.stringify(messages.at(-1)));
    assert.ok(types.includes("taskStatus"), types.join(","));
    const created = messages[0].task;
    assert.match(created.taskId, /^[0-9a-f]{32}$/);
    assert.equal(created.status, "working");
    assert.equal(created.ttl, 60000);

    const result = messages.at(-1).result;
    assert.notEqual(result.isError, true, JSON.stringify(result));
    assert.equal(result.structuredContent.completed, 2);
    assert.equal(result.structuredContent.cancelled, false);
    assert.deepEqual(result._meta?.[RELATED_TASK], { taskId: created.taskId });
    assert.deepEqual(
      progress.map((p) => [p.progress, p.total]),
      [
        [1, 2],
        [2, 2],
      ],
      JSON.stringify(progress),
    );
    assert.ok(
      statusNotifications.some((n) => n.taskId === created.taskId && n.status === "completed"),
      JSON.stringify(statusNotifications),
    );
  });

  test("getTask, listTasks and getTaskResult follow a task started by hand", async () => {
    const tasks = session.client.experimental.tasks;
    const task = await startTask(session.client, "digest_batch", { items: ["x"], rounds: 1000 });
    const got = await tasks.getTask(task.taskId);
    assert.equal(got.taskId, task.taskId);
    assert.ok(["working", "completed"].includes(got.status), got.status);
    const listed = [];
    let cursor;
    do {
      const page = await tasks.listTasks(cursor);
      listed.push(...page.tasks);
      cursor = page.nextCursor;
    } while (cursor !== undefined);
    assert.ok(listed.some((t) => t.taskId === task.taskId), JSON.stringify(listed));

    const result = await tasks.getTaskResult(task.taskId, CallToolResultSchema);
    assert.equal(result.structuredContent.completed, 1);
    assert.deepEqual(result._meta?.[RELATED_TASK], { taskId: task.taskId });
    assert.equal((await tasks.getTask(task.taskId)).status, "completed");
  });

  test("cancelTask stops a running task; a terminal task cannot be cancelled", async () => {
    const tasks = session.client.experimental.tasks;
    const task = await startTask(session.client, "spin", {});
    const cancelled = await tasks.cancelTask(task.taskId);
    assert.equal(cancelled.status, "cancelled");
    assert.equal((await tasks.getTask(task.taskId)).status, "cancelled");
    await assert.rejects(tasks.cancelTask(task.taskId), (error) => {
      assert.ok(error instanceof McpError, String(error));
      assert.equal(error.code, ErrorCode.InvalidParams);
      assert.match(error.message, new RegExp(task.taskId));
      return true;
    });
    await assert.rejects(tasks.getTaskResult(task.taskId, CallToolResultSchema), (error) => {
      assert.equal(error.code, ErrorCode.InvalidParams);
      return true;
    });
  });

  test("a forbidden tool is refused as a task; a tool error ends the task as failed", async () => {
    const tasks = session.client.experimental.tasks;
    // The forbidden tool as a task is refused outright.
    await assert.rejects(startTask(session.client, "digest", { text: "x" }), (error) => {
      assert.equal(error.code, ErrorCode.MethodNotFound);
      return true;
    });
    // Arguments the tool refuses: an isError result, so a failed task.
    const bad = await startTask(session.client, "digest_batch", { items: [] });
    const ended = await waitTerminal(session.client, bad.taskId);
    assert.equal(ended.status, "failed");
    assert.match(ended.statusMessage ?? "", /Invalid arguments for tool digest_batch/);
    const result = await tasks.getTaskResult(bad.taskId, CallToolResultSchema);
    assert.equal(result.isError, true);
    assert.match(texts(result).join(" "), /Invalid arguments/);
  });

  test("unknown task ids are invalid params naming the id", async () => {
    const unknown = "0123456789abcdef0123456789abcdef";
    await assert.rejects(session.client.experimental.tasks.getTask(unknown), (error) => {
      assert.equal(error.code, ErrorCode.InvalidParams);
      assert.match(error.message, new RegExp(unknown));
      return true;
    });
  });

  test("an elicitation inside a task makes it input_required, tagged with the task", async () => {
    const messages = await drain(
      session.client.experimental.tasks.callToolStream(
        { name: "test_elicitation", arguments: { message: "Who are you?" } },
        CallToolResultSchema,
        { task: {} },
      ),
    );
    const created = messages[0].task;
    const result = messages.at(-1);
    assert.equal(result.type, "result", JSON.stringify(result));
    assert.match(texts(result.result).join(" "), /^User response: action=accept/);
    const request = elicitations.find((e) => e._meta?.[RELATED_TASK]?.taskId === created.taskId);
    assert.ok(request, `the elicitation names the task: ${JSON.stringify(elicitations)}`);
    const statuses = statusNotifications.filter((n) => n.taskId === created.taskId).map((n) => n.status);
    assert.deepEqual(statuses, ["input_required", "working", "completed"]);
  });
});
