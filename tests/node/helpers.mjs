// Shared by the Node end-to-end tests: where the binary and the plugins are,
// and an official MCP TypeScript SDK client connected to the real binary.
import { copyFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const here = dirname(fileURLToPath(import.meta.url));
export const workspaceRoot = resolve(here, "..", "..");

/** The wasm-mcp binary: $WASM_MCP_BIN or target/release/wasm-mcp. */
export const binary = process.env.WASM_MCP_BIN ?? resolve(workspaceRoot, "target/release/wasm-mcp");

/** The example plugins built by `make plugins`. */
export const pluginsDir = resolve(workspaceRoot, "plugins/dist");

/** The test-only plugins (probe, spinner, ...) built by `make plugins`. */
export const testPluginsDir = resolve(workspaceRoot, "tests/plugins/dist");

/**
 * A temporary plugins directory with every built plugin of plugins/dist and
 * tests/plugins/dist; `remove()` deletes it.
 */
export function allPluginsDir() {
  const dir = mkdtempSync(join(tmpdir(), "wasm-mcp-node-plugins-"));
  for (const source of [pluginsDir, testPluginsDir]) {
    for (const file of readdirSync(source)) {
      if (file.endsWith(".wasm")) copyFileSync(join(source, file), join(dir, file));
      // A manifest's relative directory grants are relative to its folder: keep them pointing at the same place.
      if (file.endsWith(".toml")) {
        const text = readFileSync(join(source, file), "utf8").replace(
          /^(\s*host\s*=\s*)"([^"/][^"]*)"/gm,
          (_, key, path) => `${key}${JSON.stringify(resolve(source, path))}`,
        );
        writeFileSync(join(dir, file), text);
      }
    }
  }
  return { path: dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** Fails early, with the fix, when the build products are missing. */
export function requireBuilt() {
  if (!existsSync(binary)) {
    throw new Error(`wasm-mcp binary missing at ${binary}: run \`make build\` (or set WASM_MCP_BIN)`);
  }
  if (!existsSync(pluginsDir)) {
    throw new Error(`plugins missing at ${pluginsDir}: run \`make plugins\``);
  }
}

/**
 * A connected SDK client serving `plugins` (default plugins/dist), with `env`
 * added to the server's environment. `capabilities` are the client's;
 * `setup(client)` registers request handlers before connecting. The server's
 * stderr is collected in `stderr()` for failure messages.
 */
export async function connect({ capabilities = {}, setup = () => {}, args = [], plugins = pluginsDir, env } = {}) {
  requireBuilt();
  const transport = new StdioClientTransport({
    command: binary,
    args: ["serve", "--plugins", plugins, ...args],
    stderr: "pipe",
    // The server's environment: this process's with `env` added, if given.
    ...(env ? { env: { ...process.env, ...env } } : {}),
  });
  let stderr = "";
  transport.stderr?.on("data", (chunk) => {
    stderr += chunk.toString();
  });
  const client = new Client({ name: "wasm-mcp-node-tests", version: "0.1.0" }, { capabilities });
  setup(client);
  await client.connect(transport);
  return { client, transport, stderr: () => stderr };
}

/** The text of every text block of a tool result. */
export function texts(result) {
  return result.content.filter((block) => block.type === "text").map((block) => block.text);
}

/** Lists every page of a list method (`listTools` → `tools`). */
export async function listAll(client, method, field) {
  const items = [];
  let cursor;
  do {
    const page = await client[method](cursor === undefined ? {} : { cursor });
    items.push(...page[field]);
    cursor = page.nextCursor;
  } while (cursor !== undefined);
  return items;
}

/**
 * Waits until `child` (a `wasm-mcp serve --http` process with piped stderr)
 * listens with its plugins loaded; resolves to its endpoint URL and its
 * stderr so far (`stderr()`), or rejects with that stderr if it exits or
 * takes a minute.
 */
export async function listening(child) {
  let stderr = "";
  const url = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the server did not start:\n${stderr}`)), 60_000);
    child.stderr.on("data", (chunk) => {
      stderr += chunk.toString();
      const listening = stderr.match(/listening on (http:\/\/\S+)/);
      if (listening && stderr.includes("plugins directory loaded")) {
        clearTimeout(timer);
        resolve(listening[1]);
      }
    });
    child.on("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`the server exited (${code}):\n${stderr}`));
    });
  });
  return { url, stderr: () => stderr };
}
