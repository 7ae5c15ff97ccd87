// Upstream OAuth by the host: a binding in the operator's config file names
// a client at a real authorization server (oidc-provider on loopback, with
// client_credentials and resource indicators); the host obtains the access
// token, keeps it, asks for a new one before it expires and adds it to the
// `http-client` test plugin's requests to the bound upstream. The plugin
// sees neither the client's secret nor the token; the upstream (a recording
// server here) sees the token; the authorization server stopping ends in a
// clear error once the kept token has expired.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Provider from "oidc-provider";
import { connect, testPluginsDir, texts } from "./helpers.mjs";

const CLIENT = { id: "wasm-mcp-upstream", secret: "upstream-client-secret-5e1f0b7a" };
/** Seconds an access token lives: short, so the test sees one replaced. */
const TOKEN_TTL = 6;

for (const level of ["info", "warn"]) {
  const original = console[level].bind(console);
  console[level] = (first, ...rest) => {
    if (typeof first === "string" && first.startsWith("oidc-provider ")) return;
    original(first, ...rest);
  };
}

/** A server on a loopback port; resolves to it once it listens. */
async function listen(handler) {
  const server = createServer(handler);
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return server;
}

/** oidc-provider issuing client_credentials tokens for any resource, counting its token requests. */
async function startAuthorizationServer() {
  let issuer;
  let handler;
  const tokenRequests = [];
  const server = await listen((req, res) => handler(req, res));
  issuer = `http://127.0.0.1:${server.address().port}`;
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: CLIENT.id,
        client_secret: CLIENT.secret,
        grant_types: ["client_credentials"],
        response_types: [],
        redirect_uris: [],
        scope: "notes:read",
        token_endpoint_auth_method: "client_secret_basic",
      },
    ],
    scopes: ["notes:read"],
    ttl: { ClientCredentials: TOKEN_TTL },
    features: {
      clientCredentials: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => undefined,
        useGrantedResource: () => true,
        getResourceServerInfo: (_ctx, indicator) => ({
          scope: "notes:read",
          audience: indicator,
          accessTokenTTL: TOKEN_TTL,
          accessTokenFormat: "opaque",
        }),
      },
    },
  });
  provider.use(async (ctx, next) => {
    await next();
    if (ctx.oidc?.route === "token") {
      tokenRequests.push({ status: ctx.status, params: { ...ctx.oidc.params }, body: ctx.body });
    }
  });
  handler = provider.callback();
  return {
    tokenUrl: `${issuer}/token`,
    tokenRequests,
    stop: () => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(resolve));
    },
  };
}

/** An upstream that records the Authorization header of each request, and echoes it in a response header. */
async function startUpstream() {
  const seen = [];
  const server = await listen((req, res) => {
    seen.push({ path: req.url, authorization: req.headers.authorization });
    res.writeHead(200, { "content-type": "text/plain", "x-echo-authorization": req.headers.authorization ?? "-" });
    res.end(`recorded ${req.url}`);
  });
  return { port: server.address().port, seen, stop: () => new Promise((resolve) => server.close(resolve)) };
}

/** Waits (polling every 200 ms, at most `limit` ms) until `condition()` is true. */
async function waitFor(what, condition, limit = 60_000) {
  const end = Date.now() + limit;
  while (!(await condition())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

describe("upstream OAuth: the host obtains, keeps and renews the access token a plugin's requests carry", () => {
  let as;
  let upstream;
  let dir;
  let session;
  let target;

  before(async () => {
    as = await startAuthorizationServer();
    upstream = await startUpstream();
    target = `http://127.0.0.1:${upstream.port}/api/`;
    dir = mkdtempSync(join(tmpdir(), "wasm-mcp-upstream-oauth-"));
    copyFileSync(join(testPluginsDir, "http-client.wasm"), join(dir, "http-client.wasm"));
    writeFileSync(join(dir, "http-client.toml"), `[network]\nallow = ["127.0.0.1:${upstream.port}"]\n`);
    const config = join(dir, "host.toml");
    writeFileSync(
      config,
      [
        "[secrets.upstream-client]",
        'env = "UPSTREAM_CLIENT_SECRET"',
        "",
        "[bindings.notes-api]",
        'plugin = "http-client"',
        `target = ${JSON.stringify(target)}`,
        "plain_http = true",
        "",
        "[bindings.notes-api.oauth]",
        `token_url = ${JSON.stringify(as.tokenUrl)}`,
        `client_id = ${JSON.stringify(CLIENT.id)}`,
        'client_secret = "upstream-client"',
        'scope = "notes:read"',
        "",
      ].join("\n"),
    );
    session = await connect({
      plugins: dir,
      args: ["--no-watch", "--config", config],
      env: { UPSTREAM_CLIENT_SECRET: CLIENT.secret },
    });
  });

  after(async () => {
    await session?.client.close();
    await upstream?.stop();
    await as?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const call = (path) =>
    session.client.callTool({ name: "request", arguments: { url: `http://127.0.0.1:${upstream.port}${path}` } });
  const tokens = () => upstream.seen.map((request) => request.authorization);
  const issued = () => as.tokenRequests.filter((request) => request.status === 200);

  /** The plugin's view of a request: it must hold no token and no client secret. */
  function blind(result) {
    const text = texts(result).join("\n");
    for (const token of tokens()) assert.ok(!text.includes(token.replace("Bearer ", "")), text);
    assert.ok(!text.includes(CLIENT.secret) && !text.includes("x-echo-authorization"), text);
    return text;
  }

  test("a token is obtained once, for the target as resource, and reused", async () => {
    blind(await call("/api/one"));
    blind(await call("/api/two"));
    assert.equal(issued().length, 1, JSON.stringify(as.tokenRequests));
    const [asked] = issued();
    assert.equal(asked.params.grant_type, "client_credentials");
    assert.equal(asked.params.resource, target);
    assert.equal(asked.params.scope, "notes:read");
    const [first, second] = tokens();
    assert.match(first, /^Bearer \S+$/);
    assert.equal(second, first, "the kept token is reused");
    const env = texts(await session.client.callTool({ name: "env", arguments: {} })).join("\n");
    assert.ok(!env.includes(CLIENT.secret) && !env.includes("UPSTREAM_CLIENT_SECRET"), env);
  });

  test("a new token is asked for before the kept one expires", async () => {
    const first = tokens()[0];
    await waitFor("a request carrying a new token", async () => {
      blind(await call("/api/later"));
      return tokens().at(-1) !== first;
    });
    assert.equal(issued().length, 2, "one new token, not one per request");
  });

  test("the authorization server stopped: the kept token serves until it expires, then a clear error", async () => {
    await as.stop();
    let refusal;
    await waitFor("a refusal once the kept token has expired", async () => {
      const result = await call("/api/after-stop");
      if (result.isError) refusal = texts(result).join("\n");
      return result.isError;
    });
    assert.match(refusal, /no credential for http:\/\/127\.0\.0\.1:\d+: the authorization server at http:\/\/127\.0\.0\.1:\d+\/token gave the host no access token for client wasm-mcp-upstream/);
    assert.ok(!refusal.includes(CLIENT.secret), refusal);
  });

  test("each use left one audit line, and no secret or token is in the log", () => {
    const stderr = session.stderr();
    const audits = stderr.split("\n").filter((line) => line.includes("wasm_mcp::secrets::audit"));
    const carried = upstream.seen.filter((request) => request.authorization).length;
    assert.equal(audits.length, carried, stderr);
    for (const line of audits) {
      assert.match(line, /plugin=http-client binding=notes-api secret="upstream-client"/);
    }
    assert.ok(!stderr.includes(CLIENT.secret), stderr);
    for (const token of tokens()) assert.ok(!stderr.includes(token.replace("Bearer ", "")), "a token in the log");
  });
});
