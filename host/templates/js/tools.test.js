// Tests of the plugin's logic in Node (no wasm needed): node --test
import assert from "node:assert/strict";
import { test } from "node:test";

import { prompts, resources, tools } from "./tools.js";
import { definePlugin } from "./wasm-mcp.js";

const plugin = definePlugin({ tools, resources, prompts });

test("{{crate}}_shout upper-cases and repeats", () => {
  const result = plugin.tools.callTool("{{crate}}_shout", JSON.stringify({ text: "hi", times: 2 }));
  assert.deepEqual(result.content, [{ tag: "text", val: { text: "HI HI" } }]);
});

test("the schema marks text required", () => {
  const [shout] = plugin.tools.listTools();
  assert.deepEqual(JSON.parse(shout.inputSchema).required, ["text"]);
});
