// The official MCP TypeScript SDK client using the protocol's extensions
// against the real binary serving plugins/dist over stdio:
// - Skills (io.modelcontextprotocol/skills): the extension declared, a
//   skill listed and fetched with skills/list and skills/get, and each of
//   its files read with resources/read and checked against its digest and
//   size; the skill the playbook plugin makes listed as "dynamic".
// - MCP Apps (io.modelcontextprotocol/ui), for a client that declares it:
//   the dashboard plugin's tool links its page through _meta.ui, the page is
//   read with its text/html;profile=mcp-app type and _meta.ui, and the page
//   itself is rendered by headless Chromium, whose DOM shows what its script
//   wrote.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { ResultSchema } from "@modelcontextprotocol/sdk/types.js";
import { connect } from "./helpers.mjs";

const SKILLS = "io.modelcontextprotocol/skills";
const UI = "io.modelcontextprotocol/ui";
const APP_MIME_TYPE = "text/html;profile=mcp-app";

/** A result of an extension's method, kept whole (the SDK has no schema for it). */
const Extended = ResultSchema.passthrough();

const digest = (text) => `sha256:${createHash("sha256").update(text, "utf8").digest("hex")}`;

describe("TypeScript SDK client and the skills extension", () => {
  let session;
  before(async () => {
    session = await connect();
  });
  after(async () => {
    await session?.client.close();
  });

  test("the server declares the extension, with directory reads", () => {
    const capabilities = session.client.getServerCapabilities();
    assert.deepEqual(capabilities?.extensions?.[SKILLS], { directoryRead: true }, JSON.stringify(capabilities));
    assert.ok(capabilities?.resources, "skills need the resources capability");
  });

  test("lists and fetches a skill, and reads every file as its digest says", async () => {
    const list = await session.client.request({ method: "skills/list", params: {} }, Extended);
    const uris = list.skills.map((skill) => skill.uri);
    assert.ok(uris.includes("skill://git-workflow/SKILL.md"), uris.join(", "));
    const got = await session.client.request(
      { method: "skills/get", params: { uri: "skill://git-workflow/SKILL.md" } },
      Extended,
    );
    const skill = got.skill;
    assert.deepEqual(skill, list.skills.find((entry) => entry.uri === skill.uri));
    assert.equal(skill.frontmatter.name, "git-workflow");
    assert.deepEqual(
      skill.resources.map((file) => file.uri),
      ["skill://git-workflow/SKILL.md", "skill://git-workflow/references/commit-messages.md"],
    );
    for (const file of skill.resources) {
      const read = await session.client.readResource({ uri: file.uri });
      const text = read.contents[0].text;
      assert.equal(Buffer.byteLength(text, "utf8"), file.size, file.uri);
      assert.equal(digest(text), file.digest, file.uri);
    }
    const dynamic = list.skills.find((entry) => entry.uri === "skill://reports/daily/SKILL.md");
    assert.equal(dynamic?.resources, "dynamic", JSON.stringify(dynamic));
  });

  test("an unknown skill is invalid params", async () => {
    await assert.rejects(
      session.client.request({ method: "skills/get", params: { uri: "skill://nowhere/SKILL.md" } }, Extended),
      (error) => error.code === -32602 && /No skill is served/.test(error.message),
    );
  });
});

describe("TypeScript SDK client and MCP Apps", () => {
  let session;
  before(async () => {
    session = await connect({ capabilities: { extensions: { [UI]: { mimeTypes: [APP_MIME_TYPE] } } } });
  });
  after(async () => {
    await session?.client.close();
  });

  test("the tool links its page, which is served with the app's type and renders in Chromium", async (t) => {
    const { tools } = await session.client.listTools();
    const tool = tools.find((entry) => entry.name === "show_dashboard");
    assert.deepEqual(tool?._meta?.ui, { resourceUri: "ui://dashboard/view.html", visibility: ["model", "app"] });
    const result = await session.client.callTool({ name: "show_dashboard", arguments: {} });
    assert.deepEqual(result.structuredContent, { open: 3, closed: 12 });

    const { resources } = await session.client.listResources();
    const listed = resources.find((entry) => entry.uri === tool._meta.ui.resourceUri);
    assert.equal(listed?.mimeType, APP_MIME_TYPE);
    const read = await session.client.readResource({ uri: tool._meta.ui.resourceUri });
    const page = read.contents[0];
    assert.equal(page.mimeType, APP_MIME_TYPE);
    assert.deepEqual(page._meta?.ui, { prefersBorder: true });

    const dir = mkdtempSync(join(tmpdir(), "wasm-mcp-app-"));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const file = join(dir, "view.html");
    writeFileSync(file, page.text);
    const chromium = process.env.CHROMIUM ?? "chromium";
    const dom = execFileSync(
      chromium,
      ["--headless", "--no-sandbox", "--disable-gpu", `--user-data-dir=${join(dir, "profile")}`, "--dump-dom", pathToFileURL(file).href],
      { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] },
    );
    assert.match(dom, /<span id="open" class="figure">3<\/span>/, dom);
    assert.match(dom, /Rendered by the app: 3 open, 12 closed/, dom);
  });
});
