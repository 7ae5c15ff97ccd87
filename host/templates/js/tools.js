// The tools, resources and prompts of {{name}}: plain declarations (see wasm-mcp.js),
// tested by `node --test` without wasm; plugin.js exports them from the component.
import { param } from "./wasm-mcp.js";

// Tool and prompt names start with the plugin's name, so they never collide with another plugin's.
export const tools = {
  {{crate}}_shout: {
    description: "Upper-cases text, repeated as often as asked",
    readOnly: true,
    params: { text: param.string("The text to shout"), times: param.integer("How many times").optional() },
    run({ text, times = 1 }, ctx) {
      ctx.log(`shouting ${text.length} characters ${times} times`);
      return Array(times).fill(text.toUpperCase()).join(" ");
    },
  },
};

export const resources = {
  "{{name}}://about": { name: "about", description: "What this plugin does", read: () => "{{name}} shouts." },
};

export const prompts = {
  {{crate}}_cheer: {
    description: "Asks the model for a cheer",
    arguments: { team: param.string("Who to cheer for") },
    render: ({ team }) => `Write a short cheer for ${team}, then shout it with the {{crate}}_shout tool.`,
  },
};
