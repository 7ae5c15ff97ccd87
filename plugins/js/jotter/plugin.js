// world: stateful-plugin
// jotter: pages and counters kept by the host, a wasm-mcp plugin written in
// JavaScript. It keeps state in the bucket its manifest grants (jotter.toml)
// through wasi:keyvalue, with openBucket from the helper layer ../wasm-mcp.js.
import * as atomics from "wasi:keyvalue/atomics@0.2.0-draft2";
import * as store from "wasi:keyvalue/store@0.2.0-draft2";
import * as host from "wasm-mcp:plugin/host@0.1.0";
import { definePlugin, openBucket, param } from "../wasm-mcp.js";

const pages = () => openBucket({ store, atomics }, "pages");

const plugin = definePlugin({
  host,
  tools: {
    jot: {
      description: "Writes a line on a page (appended by compare-and-swap)",
      params: { key: param.string("The page"), text: param.string("The line to add") },
      run: ({ key, text }) => {
        const page = new TextDecoder().decode(
          pages().update(key, (now) => (now === undefined ? text : `${new TextDecoder().decode(now)}\n${text}`)),
        );
        return `${key} has ${page.split("\n").length} line(s)`;
      },
    },
    read: {
      description: "Reads a page",
      readOnly: true,
      params: { key: param.string("The page") },
      run: ({ key }) => {
        const text = pages().getText(key);
        if (text === undefined) throw new Error(`no page ${key}`);
        return text;
      },
    },
    tally: {
      description: "Adds one to a counter and returns it",
      params: { name: param.string("The counter") },
      run: ({ name }) => ({ name, value: pages().increment(`tally:${name}`) }),
    },
    peek: {
      description: "Lists the keys of a bucket (one the manifest may not grant)",
      readOnly: true,
      params: { bucket: param.string("The bucket") },
      run: ({ bucket }) => openBucket({ store, atomics }, bucket).keys().sort().join(", "),
    },
  },
});

export const { tools, resources, prompts, completion } = plugin;
