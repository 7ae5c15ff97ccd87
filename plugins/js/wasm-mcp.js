// wasm-mcp.js: write wasm-mcp plugins in JavaScript with a few declarations.
//
// Built with jco componentize against the `plugin` world of wit/plugin.wit.
// Declare tools, resources and prompts with `definePlugin`; the parameter
// builders in `param` become each tool's input schema:
//
//   import * as host from "wasm-mcp:plugin/host@0.1.0";
//   import { definePlugin, param } from "./wasm-mcp.js";
//
//   const plugin = definePlugin({
//     host,
//     tools: {
//       shout: {
//         description: "Upper-cases text",
//         params: { text: param.string("What to shout"), times: param.integer("How often").optional() },
//         run: ({ text, times = 1 }) => Array(times).fill(text.toUpperCase()).join(" "),
//       },
//     },
//   });
//   export const { tools, resources, prompts, completion } = plugin;
//
// A tool's `run(args, ctx)` returns a string (text content) or an object
// (structured content, also sent as JSON text); a thrown error gives a result
// with `isError` and its message. `ctx.log(message, level)` and
// `ctx.progress(done, total, message)` reach the client; `ctx.ask(questions)`
// puts `question.elicit/sample/roots` to it under keys you name, in one round.
//
// A long tool declares `taskSupport: "optional"` (or "required"; the default
// is "forbidden"), calls `ctx.runAsTask()` once it knows the call will take a
// while (a 2026-07-28 client with the tasks extension then gets a task at
// once, and the call runs on), and checks `ctx.isCancelled()` between steps.
// `ctx.listsChanged({ tools: true })` (or `prompts`, `resources`) says that
// what the plugin lists may have changed: the host lists it again and tells
// the clients.
//
// A skill the plugin writes as it is read (a dynamic skill of the skills
// extension) is declared under `skills`, by path: `files()` gives the files
// it has now (`SKILL.md` among them), `read(file)` one's text (undefined for
// a file it does not have). It needs a world with the `skills` export: a line
// `// world: plugin-with-skills` (or `// world: full-plugin` for a plugin
// that also keeps state) in plugin.js, and `skills` among the exports.
//
// This module imports nothing from the host itself, so the logic runs under
// `node --test` too (pass `host: undefined`: log and listsChanged go to
// stderr, progress nowhere; isCancelled and runAsTask return false).

/** A JSON Schema for one parameter; `.optional()` makes it not required. */
function schema(fields) {
  return {
    schema: fields,
    required: true,
    optional() {
      return { ...this, required: false };
    },
  };
}

const described = (fields, description) => (description ? { ...fields, description } : fields);

/** Builders of parameter schemas. */
export const param = {
  string: (description) => schema(described({ type: "string" }, description)),
  number: (description) => schema(described({ type: "number" }, description)),
  integer: (description) => schema(described({ type: "integer" }, description)),
  boolean: (description) => schema(described({ type: "boolean" }, description)),
  enum: (values, description) => schema(described({ type: "string", enum: values }, description)),
  array: (items, description) => schema(described({ type: "array", items: items.schema }, description)),
};

/** The input schema of a tool's `params`. */
export function inputSchema(params = {}) {
  const properties = {};
  const required = [];
  for (const [name, p] of Object.entries(params)) {
    properties[name] = p.schema;
    if (p.required) required.push(name);
  }
  return required.length ? { type: "object", properties, required } : { type: "object", properties };
}

const LEVELS = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"];

const text = (value) => ({ tag: "text", val: { text: value } });

/** Questions for the client, for `ctx.ask`. */
export const question = {
  /** A form for the user: `message`, its fields a flat JSON object schema. */
  elicit: (message, schema) => ({
    tag: "elicit",
    val: { tag: "form", val: { message, requestedSchema: JSON.stringify(schema) } },
  }),
  /** A question for the client's model: `prompt` as the user's message. */
  sample: (prompt, { maxTokens = 256, system } = {}) => ({
    tag: "sample",
    val: { messages: [{ role: "user", content: [text(prompt)] }], systemPrompt: system, maxTokens, stopSequences: [] },
  }),
  /** The client's roots (the folders it works in). */
  roots: () => ({ tag: "list-roots" }),
};

/** A question the client did not answer: it lacks the capability, refused, timed out, or the call was cancelled. */
export class ClientError extends Error {}

function answerValue(answer) {
  switch (answer.tag) {
    case "elicit":
      return { action: answer.val.action, content: answer.val.content === undefined ? undefined : JSON.parse(answer.val.content) };
    case "sample":
      return answer.val.content.filter((c) => c.tag === "text").map((c) => c.val.text).join("");
    default:
      return answer.val.map(({ uri, name }) => ({ uri, name }));
  }
}

function clientError(error) {
  switch (error.tag) {
    case "not-supported":
      return new ClientError(`not supported: ${error.val}`);
    case "rejected":
      return new ClientError(`rejected (${error.val.code}): ${error.val.message}`);
    case "timed-out":
      return new ClientError("timed out");
    default:
      return new ClientError("cancelled");
  }
}

const TASK_SUPPORT = ["forbidden", "optional", "required"];
const LIST_KINDS = ["tools", "resources", "prompts"];

/** What a tool can ask of the host: `log`, `progress`, `isCancelled`, `runAsTask`, `listsChanged` and `ask`. */
export function context(host) {
  return {
    log(message, level = "info") {
      if (!LEVELS.includes(level)) throw new Error(`unknown log level ${level}; use one of ${LEVELS.join(", ")}`);
      if (host) host.log(level, message);
      else console.error(`[${level}] ${message}`);
    },
    progress(done, total, message) {
      if (host) host.progress(done, total, message);
    },
    /** Whether the client has cancelled the current call: check it between steps. */
    isCancelled: () => (host ? host.isCancelled() : false),
    /**
     * Says that this call will take a while. For a 2026-07-28 client that
     * negotiated the tasks extension, calling a tool whose `taskSupport` is
     * "optional" or "required", the host answers with a task now and the call
     * runs on. Returns whether the call now runs as a task (false elsewhere).
     */
    runAsTask: () => (host ? host.runAsTask() : false),
    /**
     * Says that the plugin's `tools`, `prompts` or `resources` (with
     * templates) may have changed: the host lists the plugin again, in a
     * fresh instance, and tells the clients to fetch those lists again.
     */
    listsChanged(lists) {
      const kinds = LIST_KINDS.filter((kind) => lists?.[kind]);
      if (!kinds.length) throw new Error("name a list that may have changed: listsChanged({ tools: true })");
      if (host) host.listsChanged(kinds);
      else console.error(`[lists changed] ${kinds.join(", ")}`);
    },
    /**
     * Asks the client several things at once, each under a key you name
     * (`{ name: question.elicit(...), capital: question.sample(...) }`), and
     * returns the answers by key: `{ action, content }` for a form, the text
     * for a sample, `[{ uri, name }]` for roots, or a `ClientError` (not
     * thrown) for a question the client did not answer. A 2026-07-28 client
     * answers in a later round and the call may run again from its start
     * with the earlier answers: ask first, then act.
     */
    ask(questions) {
      const keys = Object.keys(questions);
      if (!host) return Object.fromEntries(keys.map((k) => [k, new ClientError("not running in the host: no client to ask")]));
      const answers = host.ask(keys.map((k) => [k, questions[k]]));
      return Object.fromEntries(
        keys.map((k, i) => [k, answers[i].tag === "ok" ? answerValue(answers[i].val) : clientError(answers[i].val)]),
      );
    },
  };
}

const notFound = (what) => ({ tag: "not-found", val: what });

/** The four exports of the `plugin` world, from declarations. */
export function definePlugin({ host, tools = {}, resources = {}, prompts = {}, skills = {} }) {
  const ctx = context(host);
  for (const [name, t] of Object.entries(tools)) {
    if (t.taskSupport !== undefined && !TASK_SUPPORT.includes(t.taskSupport))
      throw new Error(`tool ${name}: unknown taskSupport ${t.taskSupport}; use one of ${TASK_SUPPORT.join(", ")}`);
  }
  return {
    tools: {
      listTools: () =>
        Object.entries(tools).map(([name, t]) => ({
          name,
          title: t.title,
          description: t.description,
          inputSchema: JSON.stringify(inputSchema(t.params)),
          annotations: t.readOnly === undefined ? undefined : { readOnlyHint: t.readOnly },
          icons: [],
          taskSupport: t.taskSupport ?? "forbidden",
        })),
      callTool(name, args) {
        const t = tools[name];
        if (!t) throw notFound(`no tool ${name}`);
        let value;
        try {
          value = t.run(JSON.parse(args), ctx);
        } catch (e) {
          return { content: [text(e instanceof Error ? e.message : String(e))], isError: true };
        }
        if (typeof value === "object" && value !== null) {
          const structured = JSON.stringify(value);
          return { content: [text(structured)], structuredContent: structured, isError: false };
        }
        return { content: [text(String(value))], isError: false };
      },
    },
    resources: {
      listResources: () =>
        Object.entries(resources).map(([uri, r]) => ({
          uri,
          name: r.name,
          description: r.description,
          mimeType: r.mimeType ?? "text/plain",
          icons: [],
        })),
      listResourceTemplates: () => [],
      readResource(uri) {
        const r = resources[uri];
        if (!r) throw notFound(`no resource ${uri}`);
        const value = r.read();
        const body = value instanceof Uint8Array ? { tag: "blob", val: value } : { tag: "text", val: String(value) };
        return [{ uri, mimeType: r.mimeType ?? "text/plain", body }];
      },
    },
    prompts: {
      listPrompts: () =>
        Object.entries(prompts).map(([name, p]) => ({
          name,
          description: p.description,
          arguments: Object.entries(p.arguments ?? {}).map(([arg, a]) => ({
            name: arg,
            description: a.schema.description,
            required: a.required,
          })),
          icons: [],
        })),
      getPrompt(name, args) {
        const p = prompts[name];
        if (!p) throw notFound(`no prompt ${name}`);
        const values = Object.fromEntries(args);
        const unknown = Object.keys(values).filter((arg) => !(arg in (p.arguments ?? {})));
        if (unknown.length) throw { tag: "invalid-params", val: `prompt ${name} has no argument ${unknown.join(", ")}` };
        return { description: p.description, messages: [{ role: "user", content: text(p.render(values)) }] };
      },
    },
    completion: {
      complete: () => ({ values: [], hasMore: false }),
    },
    skills: {
      listSkills: () => Object.keys(skills),
      listSkillFiles: (path) => skillAt(skills, path).files(),
      readSkillFile(path, file) {
        const made = skillAt(skills, path).read(file);
        if (made === undefined) throw notFound(`skill ${path} has no file ${file}`);
        const mimeType = file.endsWith(".md") ? "text/markdown" : "text/plain";
        return { uri: `skill://${path}/${file}`, mimeType, body: { tag: "text", val: String(made) } };
      },
    },
  };
}

function skillAt(skills, path) {
  const skill = skills[path];
  if (!skill) throw notFound(`no skill at ${path}`);
  return skill;
}

/** A state operation the host refused or failed; the message is the host's. */
export class StateError extends Error {}

/** The `StateError` of a `wasi:keyvalue` error (thrown by the import as its payload). */
function stateError(thrown) {
  const error = thrown?.payload ?? thrown;
  switch (error?.tag) {
    case "other":
      return new StateError(error.val);
    case "no-such-store":
      return new StateError("no such bucket");
    case "access-denied":
      return new StateError("access to the bucket was denied");
    default:
      return thrown;
  }
}

function kv(operation) {
  try {
    return operation();
  } catch (thrown) {
    throw stateError(thrown);
  }
}

/**
 * Opens the bucket `name` of the plugin's state, which the manifest must
 * grant (`[keyvalue] buckets = ["notes"]`); `imports` is `{ store, atomics }`,
 * the plugin's own imports of `wasi:keyvalue/store@0.2.0-draft2` and
 * `wasi:keyvalue/atomics@0.2.0-draft2` (a plugin built for the
 * `stateful-plugin` world: a line `// world: stateful-plugin` in plugin.js).
 * Values are `Uint8Array` (a string is stored as UTF-8); a counter is its
 * decimal text. Errors are thrown as `StateError`.
 */
export function openBucket({ store, atomics }, name) {
  const bucket = kv(() => store.open(name));
  const bytes = (value) => (typeof value === "string" ? new TextEncoder().encode(value) : value);
  return {
    get: (key) => kv(() => bucket.get(key)),
    getText(key) {
      const value = this.get(key);
      return value === undefined ? undefined : new TextDecoder().decode(value);
    },
    set: (key, value) => kv(() => bucket.set(key, bytes(value))),
    delete: (key) => kv(() => bucket.delete(key)),
    exists: (key) => kv(() => bucket.exists(key)),
    /** One page of keys, and the cursor of the next (undefined: the last). */
    keysPage: (cursor) => kv(() => bucket.listKeys(cursor)),
    keys() {
      const keys = [];
      let cursor;
      do {
        const page = this.keysPage(cursor);
        keys.push(...page.keys);
        cursor = page.cursor;
      } while (cursor !== undefined);
      return keys;
    },
    /** Adds `delta` to the counter `key` at once, whoever else counts; its new value. */
    increment: (key, delta = 1) => Number(kv(() => atomics.increment(bucket, key, BigInt(delta)))),
    /** Replaces the value of `key` with `change(the value now)` by compare-and-swap. */
    update(key, change) {
      let cas = kv(() => atomics.Cas.new(bucket, key));
      for (;;) {
        const value = bytes(change(kv(() => cas.current())));
        try {
          atomics.swap(cas, value);
          return value;
        } catch (thrown) {
          const error = thrown?.payload;
          if (error?.tag !== "cas-failed") throw stateError(error?.tag === "store-error" ? error.val : thrown);
          cas = error.val;
        }
      }
    },
  };
}
