// {{name}}: a wasm-mcp plugin in JavaScript, built into a component by componentize-js.
import * as host from "wasm-mcp:plugin/host@0.1.0";
import * as declarations from "./tools.js";
import { definePlugin } from "./wasm-mcp.js";

export const { tools, resources, prompts, completion } = definePlugin({ host, ...declarations });
