// world: plugin-with-skills
// textkit: identifier and text tools, a wasm-mcp plugin written in JavaScript.
//
// Built into a component by jco componentize (see the Makefile at the
// repository root, `make plugins`), with the helper layer in ../wasm-mcp.js.
// It makes a skill as it is read: `textkit/naming`, whose cases file lists
// what convert_case knows then.
import * as host from "wasm-mcp:plugin/host@0.1.0";
import { ClientError, definePlugin, param, question } from "../wasm-mcp.js";

const CASES = ["snake", "kebab", "camel", "pascal", "constant"];
// From this many lines (every pair is compared) similar_lines says it will take a while.
const LONG_TEXT_LINES = 100;

/** The files of the skill `textkit/naming`, each made when it is read. */
const NAMING_FILES = {
  "SKILL.md": () => `---
name: naming
description: Rename identifiers consistently with textkit's convert_case
---

# Naming

1. Split the identifier into its words (convert_case does it for you).
2. Pick the case the codebase uses: \`cases.md\` lists those convert_case knows.
3. Call convert_case with the words and the case.
`,
  "cases.md": () => `# Cases\n\n${CASES.map((name) => `- ${name}: ${convertCase("naming things", name)}`).join("\n")}\n`,
};

/** The words of an identifier or phrase: split on separators and case changes. */
export function words(text) {
  return text
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean)
    .map((w) => w.toLowerCase());
}

const capital = (w) => w.charAt(0).toUpperCase() + w.slice(1);

/** `text` rewritten in the case `to`. */
export function convertCase(text, to) {
  const ws = words(text);
  switch (to) {
    case "snake":
      return ws.join("_");
    case "kebab":
      return ws.join("-");
    case "camel":
      return ws.map((w, i) => (i ? capital(w) : w)).join("");
    case "pascal":
      return ws.map(capital).join("");
    case "constant":
      return ws.join("_").toUpperCase();
    default:
      throw new Error(`unknown case ${to}; use one of ${CASES.join(", ")}`);
  }
}

/**
 * The Levenshtein distance of `a` and `b` (insertions, deletions and
 * substitutions), or `limit + 1` as soon as it is known to exceed `limit`.
 */
export function editDistance(a, b, limit = Infinity) {
  let previous = Uint32Array.from({ length: b.length + 1 }, (_, j) => j);
  let current = new Uint32Array(b.length + 1);
  for (let i = 1; i <= a.length; i++) {
    current[0] = i;
    let best = i;
    for (let j = 1; j <= b.length; j++) {
      const substitute = previous[j - 1] + (a.charCodeAt(i - 1) === b.charCodeAt(j - 1) ? 0 : 1);
      const edit = Math.min(previous[j], current[j - 1]) + 1;
      current[j] = substitute < edit ? substitute : edit;
      if (current[j] < best) best = current[j];
    }
    if (best > limit) return limit + 1;
    [previous, current] = [current, previous];
  }
  return previous[b.length];
}

const plugin = definePlugin({
  host,
  tools: {
    convert_case: {
      title: "Convert case",
      description: "Rewrites an identifier or phrase in another case (snake, kebab, camel, pascal, constant)",
      readOnly: true,
      params: { text: param.string("The identifier or phrase"), to: param.enum(CASES, "The case to write it in") },
      run: ({ text, to }) => convertCase(text, to),
    },
    char_stats: {
      description: "Counts the ASCII letters, digits, spaces and other characters of a text, line by line",
      readOnly: true,
      params: { text: param.string("The text to count") },
      run({ text }, ctx) {
        const lines = text.split("\n");
        ctx.log(`counting ${text.length} characters on ${lines.length} lines`);
        const counts = { letters: 0, digits: 0, spaces: 0, other: 0 };
        lines.forEach((line, i) => {
          for (const c of line) {
            if (/[A-Za-z]/.test(c)) counts.letters++;
            else if (/\d/.test(c)) counts.digits++;
            else if (/\s/.test(c)) counts.spaces++;
            else counts.other++;
          }
          ctx.progress(i + 1, lines.length, `line ${i + 1}`);
        });
        return counts;
      },
    },
    similar_lines: {
      title: "Similar lines",
      description:
        "Finds the pairs of different lines of a text at most `distance` edits apart (near-duplicates, typos); " +
        "every pair is compared, so a long text takes a while and may run as a task",
      readOnly: true,
      taskSupport: "optional",
      params: {
        text: param.string("The text, one item per line"),
        distance: param.integer("The most edits (insertions, deletions, substitutions) apart; default 2").optional(),
      },
      run({ text, distance = 2 }, ctx) {
        const lines = text.split("\n");
        if (lines.length >= LONG_TEXT_LINES) ctx.runAsTask();
        const pairs = [];
        for (let i = 0; i < lines.length; i++) {
          if (ctx.isCancelled()) throw new Error(`cancelled after ${i} of ${lines.length} lines`);
          for (let j = i + 1; j < lines.length; j++) {
            if (lines[i] === lines[j] || Math.abs(lines[i].length - lines[j].length) > distance) continue;
            const edits = editDistance(lines[i], lines[j], distance);
            if (edits <= distance) pairs.push({ line: i + 1, other: j + 1, edits });
          }
          ctx.progress(i + 1, lines.length, `line ${i + 1}`);
        }
        return { lines: lines.length, pairs };
      },
    },
    refresh_textkit: {
      description: "Has the host list this plugin's tools, prompts and resources again and tell clients to fetch them",
      readOnly: true,
      run(_, ctx) {
        ctx.listsChanged({ tools: true, prompts: true, resources: true });
        return "the host lists textkit again";
      },
    },
    suggest_name: {
      title: "Suggest a name",
      description: "Has the client's model name what a description says, in the case the user picks",
      readOnly: true,
      params: { description: param.string("What the identifier stands for") },
      run({ description }, ctx) {
        // Both questions go out in one round; ask first, then act.
        const answers = ctx.ask({
          style: question.elicit("Which case should the name be written in?", {
            type: "object",
            properties: { case: { type: "string", enum: CASES } },
            required: ["case"],
          }),
          words: question.sample(`Name this in two or three plain words, nothing else: ${description}`, { maxTokens: 20 }),
        });
        for (const [key, answer] of Object.entries(answers)) {
          if (answer instanceof ClientError) throw new Error(`the client did not answer ${key}: ${answer.message}`);
        }
        if (answers.style.action !== "accept") throw new Error(`the user chose to ${answers.style.action} the question`);
        return convertCase(answers.words, answers.style.content.case);
      },
    },
  },
  resources: {
    "textkit://cases": {
      name: "cases",
      description: "The cases convert_case knows",
      read: () => CASES.join("\n"),
    },
  },
  prompts: {
    rename: {
      description: "Asks the model to rename an identifier in a given case",
      arguments: { identifier: param.string("The identifier to rename"), style: param.enum(CASES, "The case").optional() },
      render: ({ identifier, style = "snake" }) =>
        `Suggest a clearer name for \`${identifier}\`, written in ${style} case (convert_case can help).`,
    },
  },
  skills: {
    "textkit/naming": {
      files: () => ["SKILL.md", "cases.md"],
      read: (file) => NAMING_FILES[file]?.(),
    },
  },
});

export const { tools, resources, prompts, completion, skills } = plugin;
