// OAuth 2.1 resource-server mode (`wasm-mcp serve --http --auth-issuer`)
// against a real authorization server: oidc-provider on loopback, issuing
// RS256 JWT access tokens for the server's canonical resource URI (and opaque
// ones for a second server that introspects them).
//
// - discovery end to end with the official TypeScript SDK client
//   (client_credentials, and authorization code + PKCE for a dynamically
//   registered client, driven through oidc-provider's dev interactions);
// - the refusal matrix of self-minted tokens (audience, issuer, time,
//   key, signature, algorithm) and the WWW-Authenticate challenges;
// - Protected Resource Metadata (RFC 9728);
// - per-entry scopes from plugin manifests, in a 2025-11-25 session and in
//   2026-07-28 stateless requests (lists filtered, calls refused with 403),
//   a skill's included (skills/list, skills/get, its files and folders);
// - the principal bound to sessions, tasks and MRTR requestState;
// - token introspection (--auth-introspection-client), --auth-resource,
//   --auth-algorithms, --auth-leeway, the metadata's issuer check, and a
//   key rotated in at the AS (the JWKS fetched again for an unknown kid);
// - what depends on the caller's scopes cached privately (`cacheScope`,
//   `Cache-Control`);
// - an AS that stops: tokens of known keys still served, an unknown kid
//   answered 503 saying the keys could not be fetched again.
//
// One authorization server for the whole file; one wasm-mcp process for
// most tests, and a few more for the flags that change how tokens are checked.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { createHmac, createSign, generateKeyPairSync, randomUUID } from "node:crypto";
import { copyFileSync, cpSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Provider, { errors as oidcErrors } from "oidc-provider";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ClientCredentialsProvider } from "@modelcontextprotocol/sdk/client/auth-extensions.js";
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";
import { binary, listening, pluginsDir, requireBuilt } from "./helpers.mjs";

const LEGACY = "2025-11-25";
const MODERN = "2026-07-28";
const TASKS = "io.modelcontextprotocol/tasks";
const ALL_SCOPES = "mcp notes:read notes:write conformance skills:read";
const SEARCH = { name: "search_notes", arguments: { query: "reload" } };
const TOUCH = { name: "touch_note", arguments: { slug: "hot-reload" } };
const TOUCHED = "Announced an update of notes://note/hot-reload";
/** The resource server's own client at the AS, for token introspection. */
const RS_CLIENT = { id: "wasm-mcp", secret: "wasm-mcp-introspection-secret-0123456789" };
const CLIENTS = {
  reader: { secret: "reader-secret-0123456789", scope: "mcp notes:read conformance", auth: "client_secret_post" },
  writer: { secret: "writer-secret-0123456789", scope: ALL_SCOPES, auth: "client_secret_basic" },
  other: { secret: "other-secret-0123456789", scope: ALL_SCOPES, auth: "client_secret_basic" },
};

// oidc-provider announces its development defaults on the console: keep them out of the test output.
for (const level of ["info", "warn"]) {
  const original = console[level].bind(console);
  console[level] = (first, ...rest) => {
    if (typeof first === "string" && first.startsWith("oidc-provider ")) return;
    original(first, ...rest);
  };
}

// --- keys and tokens --------------------------------------------------------

/** An RSA signing key: the private KeyObject, its public PEM and its private JWK (with `kid`). */
function rsaKey(kid) {
  const { privateKey, publicKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
  const jwk = { ...privateKey.export({ format: "jwk" }), kid, alg: "RS256", use: "sig" };
  return { kid, privateKey, publicPem: publicKey.export({ format: "pem", type: "spki" }), jwk };
}

const b64url = (data) => Buffer.from(data).toString("base64url");

/** An EC P-256 signing key, as `rsaKey`. */
function ecKey(kid) {
  const { privateKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
  const jwk = { ...privateKey.export({ format: "jwk" }), kid, alg: "ES256", use: "sig" };
  return { kid, privateKey, jwk };
}

/**
 * A compact JWS of `payload`, signed with `key` by `alg` (RS256 or ES256), or
 * `none`, or HS256 keyed with `secret`.
 */
function jwt(payload, { key, alg = key?.jwk.alg ?? "RS256", kid = key?.kid, secret, typ = "at+jwt" } = {}) {
  const header = { alg, typ, ...(kid === undefined ? {} : { kid }) };
  const input = `${b64url(JSON.stringify(header))}.${b64url(JSON.stringify(payload))}`;
  if (alg === "none") return `${input}.`;
  if (alg === "HS256") return `${input}.${createHmac("sha256", secret).update(input).digest("base64url")}`;
  const signer = createSign("SHA256").update(input);
  const signature =
    alg === "ES256" ? signer.sign({ key: key.privateKey, dsaEncoding: "ieee-p1363" }) : signer.sign(key.privateKey);
  return `${input}.${signature.toString("base64url")}`;
}

/** The claims of a JWT (not verified). */
function claims(token) {
  return JSON.parse(Buffer.from(token.split(".")[1], "base64url").toString());
}

// --- processes --------------------------------------------------------------

/** A free loopback port (closed again; a short race we accept). */
async function freePort() {
  const probe = createServer();
  await new Promise((resolve) => probe.listen(0, "127.0.0.1", resolve));
  const { port } = probe.address();
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

/**
 * oidc-provider at http://127.0.0.1:PORT, publishing `keys` (it signs with the
 * first). `resources()` maps each resource it issues tokens for (known once
 * wasm-mcp listens) to its access token format, `jwt` or `opaque`; the first
 * is the default. The resource server's client RS_CLIENT may introspect
 * tokens. Every authorization, token, registration and introspection request
 * is kept in `seen`, and the JWKS fetches are counted in `jwksFetches`.
 * `publish(keys)` rotates the keys: the same issuer, a new provider instance
 * (oidc-provider's in-memory storage is shared, so clients and grants stay).
 */
async function startAuthorizationServer(keys, resources) {
  const port = await freePort();
  const issuer = `http://127.0.0.1:${port}`;
  const seen = [];
  const serverErrors = [];
  let handler;
  const publish = (published) => {
    handler = authorizationServer(issuer, published, resources, seen, serverErrors).callback();
  };
  publish(keys);
  const state = { jwksFetches: 0 };
  const server = createServer((req, res) => {
    if (req.method === "GET" && new URL(req.url, issuer).pathname === "/jwks") state.jwksFetches++;
    handler(req, res);
  });
  await new Promise((resolve) => server.listen(port, "127.0.0.1", resolve));
  return {
    issuer,
    seen,
    serverErrors,
    get jwksFetches() {
      return state.jwksFetches;
    },
    publish,
    stop: () => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(resolve));
    },
  };
}

/** The oidc-provider instance of `startAuthorizationServer`. */
function authorizationServer(issuer, keys, resources, seen, serverErrors) {
  const provider = new Provider(issuer, {
    clients: [
      ...Object.entries(CLIENTS).map(([id, client]) => ({
        client_id: id,
        client_secret: client.secret,
        grant_types: ["client_credentials"],
        response_types: [],
        redirect_uris: [],
        scope: client.scope,
        token_endpoint_auth_method: client.auth,
      })),
      {
        client_id: RS_CLIENT.id,
        client_secret: RS_CLIENT.secret,
        grant_types: ["client_credentials"],
        response_types: [],
        redirect_uris: [],
        token_endpoint_auth_method: "client_secret_basic",
      },
    ],
    jwks: { keys: keys.map((key) => key.jwk) },
    scopes: ["openid", "offline_access", ...ALL_SCOPES.split(" ")],
    findAccount: (_ctx, id) => ({ accountId: id, claims: () => ({ sub: id }) }),
    clientBasedCORS: () => true,
    pkce: { required: () => true },
    ttl: {
      AccessToken: 600,
      AuthorizationCode: 60,
      ClientCredentials: 600,
      Grant: 3600,
      IdToken: 600,
      Interaction: 600,
      RefreshToken: 3600,
      Session: 3600,
    },
    features: {
      devInteractions: { enabled: true },
      clientCredentials: { enabled: true },
      introspection: { enabled: true, allowedPolicy: (_ctx, client) => client.clientId === RS_CLIENT.id },
      revocation: { enabled: true },
      registration: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => Object.keys(resources())[0],
        useGrantedResource: () => true,
        getResourceServerInfo: (_ctx, indicator) => {
          const format = resources()[indicator];
          if (!format) throw new oidcErrors.InvalidTarget(`unknown resource ${indicator}`);
          return {
            scope: ALL_SCOPES,
            audience: indicator,
            accessTokenTTL: 600,
            accessTokenFormat: format,
            ...(format === "jwt" ? { jwt: { sign: { alg: "RS256" } } } : {}),
          };
        },
      },
    },
  });
  provider.on("server_error", (_ctx, error) => serverErrors.push(error));
  provider.use(async (ctx, next) => {
    await next();
    const route = ctx.oidc?.route;
    if (["authorization", "token", "registration", "introspection"].includes(route)) {
      const params = ctx.oidc.params ? { ...ctx.oidc.params } : {};
      seen.push({ route, status: ctx.status, clientId: ctx.oidc.client?.clientId, params, body: ctx.oidc.body });
    }
  });
  return provider;
}

/**
 * A plugins directory with notes, conformance and playbook (with its skills
 * folder), and the scopes their manifests require: playbook's static skill
 * git-workflow needs skills:read, its dynamic reports/daily nothing.
 */
function scopedPluginsDir() {
  const dir = mkdtempSync(join(tmpdir(), "wasm-mcp-node-oauth-"));
  copyFileSync(join(pluginsDir, "notes.wasm"), join(dir, "notes.wasm"));
  copyFileSync(join(pluginsDir, "conformance.wasm"), join(dir, "conformance.wasm"));
  copyFileSync(join(pluginsDir, "playbook.wasm"), join(dir, "playbook.wasm"));
  cpSync(join(pluginsDir, "playbook.skills"), join(dir, "playbook.skills"), { recursive: true });
  writeFileSync(join(dir, "playbook.toml"), '[scopes]\nskills = { "git-workflow" = ["skills:read"] }\n');
  writeFileSync(
    join(dir, "notes.toml"),
    [
      "[scopes]",
      'default = ["notes:read"]',
      'tools = { "touch_*" = ["notes:write"] }',
      'prompts = { "*" = ["notes:read"] }',
      'resources = { "notes://note/*" = ["notes:read"] }',
      "",
    ].join("\n"),
  );
  writeFileSync(join(dir, "conformance.toml"), '[scopes]\ndefault = ["conformance"]\n');
  return { path: dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/**
 * `wasm-mcp serve --http 127.0.0.1:0 --auth-issuer ISSUER ARGS` (with its own
 * task state file, removed by `stop`), once it listens with its plugins loaded.
 */
async function startServer(plugins, issuer, args = [], env = {}) {
  requireBuilt();
  const state = mkdtempSync(join(tmpdir(), "wasm-mcp-node-oauth-state-"));
  const child = spawn(
    binary,
    [
      "serve",
      "--no-watch",
      "--plugins",
      plugins,
      "--state",
      join(state, "tasks.redb"),
      "--http",
      "127.0.0.1:0",
      "--auth-issuer",
      issuer,
      ...args,
    ],
    { stdio: ["ignore", "ignore", "pipe"], env: { ...process.env, ...env } },
  );
  const { url, stderr } = await listening(child);
  return {
    url,
    origin: new URL(url).origin,
    stderr,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) {
        await new Promise((resolve) => {
          child.once("exit", resolve);
          child.kill();
        });
      }
      rmSync(state, { recursive: true, force: true });
    },
  };
}

// --- HTTP -------------------------------------------------------------------

/** The JSON-RPC messages of a response body, JSON or SSE. */
function parseMessages(contentType, text) {
  if ((contentType ?? "").startsWith("text/event-stream")) {
    return text
      .split("\n")
      .filter((line) => line.startsWith("data:"))
      .map((line) => line.slice(5).trim())
      .filter((data) => data.startsWith("{") || data.startsWith("["))
      .map((data) => JSON.parse(data));
  }
  if (!text) return [];
  try {
    return [JSON.parse(text)];
  } catch {
    return [];
  }
}

let nextId = 1;

describe("OAuth: wasm-mcp as a protected resource of a real authorization server", () => {
  const key = rsaKey("as-key-1");
  const ecdsa = ecKey("as-key-2"); // published too; the AS itself signs with the RSA key
  const stranger = rsaKey("stranger-key"); // the same kind of key, not in the JWKS
  let as;
  let server;
  let plugins;
  let resource; // the canonical resource URI: the URL wasm-mcp listens on
  let introspected; // the resource URI of the second server, which introspects opaque tokens

  before(async () => {
    plugins = scopedPluginsDir();
    as = await startAuthorizationServer([key, ecdsa], () => ({
      [resource]: "jwt",
      ...(introspected ? { [introspected]: "opaque" } : {}),
    }));
    server = await startServer(plugins.path, as.issuer, ["--auth-scopes", "mcp"]);
    resource = server.url;
  });

  after(async () => {
    await server?.stop();
    await as?.stop();
    plugins?.remove();
  });

  /** The tail of a server's log (the first server's by default), for failure messages. */
  const log = (target = server) => `\n--- wasm-mcp stderr (tail) ---\n${target.stderr().slice(-6000)}`;

  /** Context for an assertion about `response`. */
  const about = (what, response) =>
    [
      what,
      `request: ${JSON.stringify(response.request)}`,
      `status: ${response.status}`,
      `WWW-Authenticate: ${response.challenge}`,
      `body: ${response.text.slice(0, 4000)}${log(response.target)}`,
    ].join("\n");

  /**
   * POSTs `body` to /mcp of `target` (the first server by default) with
   * `token` (none when undefined) and `headers`; returns status, headers, the
   * challenge, the JSON-RPC messages and the response among them.
   */
  async function post(body, { token, headers = {}, target = server } = {}) {
    const all = {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      ...(token === undefined ? {} : { authorization: `Bearer ${token}` }),
      ...headers,
    };
    const response = await fetch(target.url, { method: "POST", headers: all, body: JSON.stringify(body) });
    const text = await response.text();
    const messages = parseMessages(response.headers.get("content-type"), text);
    return {
      target,
      request: { url: target.url, headers: { ...all, authorization: all.authorization && "Bearer …" }, body },
      status: response.status,
      headers: response.headers,
      challenge: response.headers.get("www-authenticate"),
      text,
      messages,
      message: messages.findLast((m) => m.id === body.id) ?? messages.at(-1),
    };
  }

  const request = (method, params = {}) => ({ jsonrpc: "2.0", id: nextId++, method, params });

  /** A 2025-11-25 initialize request. */
  const initialize = () =>
    request("initialize", {
      protocolVersion: LEGACY,
      capabilities: {},
      clientInfo: { name: "wasm-mcp-oauth-tests", version: "0.1.0" },
    });

  /** Opens a 2025-11-25 session with `token`; returns its id. */
  async function openSession(token) {
    const init = await post(initialize(), { token });
    assert.equal(init.status, 200, about("initialize", init));
    assert.equal(init.message?.result?.protocolVersion, LEGACY, about("initialize", init));
    const sessionId = init.headers.get("mcp-session-id");
    assert.ok(sessionId, about("initialize issues a session id", init));
    const initialized = await post(
      { jsonrpc: "2.0", method: "notifications/initialized" },
      { token, headers: { "mcp-session-id": sessionId, "mcp-protocol-version": LEGACY } },
    );
    assert.equal(initialized.status, 202, about("notifications/initialized", initialized));
    return sessionId;
  }

  /** A request of the 2025-11-25 session `sessionId`, with `token`. */
  const inSession = (sessionId, token, method, params) =>
    post(request(method, params), { token, headers: { "mcp-session-id": sessionId, "mcp-protocol-version": LEGACY } });

  /** The `_meta` of a 2026-07-28 request. */
  const modernMeta = (capabilities = {}) => ({
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": capabilities,
    "io.modelcontextprotocol/clientInfo": { name: "wasm-mcp-oauth-tests", version: "0.1.0" },
  });

  /** A 2026-07-28 stateless request with the headers that mirror it. */
  function modern(method, params, token, capabilities = {}) {
    const body = request(method, { ...params, _meta: modernMeta(capabilities) });
    const headers = { "mcp-protocol-version": MODERN, "mcp-method": method };
    const name = params.taskId ?? params.name ?? params.uri;
    if (name !== undefined) headers["mcp-name"] = name;
    return post(body, { token, headers });
  }

  /** A client_credentials token of the authorization server, for `audience` (the first server's by default). */
  async function clientToken(clientId, { scope = CLIENTS[clientId].scope, audience = resource, opaque = false } = {}) {
    const { secret, auth } = CLIENTS[clientId];
    const form = new URLSearchParams({ grant_type: "client_credentials", scope, resource: audience });
    const headers = { "content-type": "application/x-www-form-urlencoded" };
    if (auth === "client_secret_basic") {
      headers.authorization = `Basic ${Buffer.from(`${clientId}:${secret}`).toString("base64")}`;
    } else {
      form.set("client_id", clientId);
      form.set("client_secret", secret);
    }
    const response = await fetch(`${as.issuer}/token`, { method: "POST", headers, body: form });
    const body = await response.json();
    assert.equal(response.status, 200, `token request for ${clientId}: ${JSON.stringify(body)}`);
    assert.equal(body.token_type, "Bearer", JSON.stringify(body));
    const kind = opaque ? "an opaque" : "a JWT";
    assert.equal(body.access_token.split(".").length !== 3, opaque, `${kind} access token: ${JSON.stringify(body)}`);
    return body.access_token;
  }

  /** Valid claims of a self-minted access token, `overrides` applied (undefined deletes). */
  function tokenClaims(overrides = {}) {
    const now = Math.floor(Date.now() / 1000);
    const base = {
      iss: as.issuer,
      sub: "self-minted-user",
      aud: resource,
      client_id: "self-minted-client",
      scope: ALL_SCOPES,
      iat: now,
      exp: now + 300,
      jti: randomUUID(),
    };
    for (const [name, value] of Object.entries(overrides)) {
      if (value === undefined) delete base[name];
      else base[name] = value;
    }
    return base;
  }

  /** A challenge's auth-params (`Bearer a="b", c="d"` → {a: "b", c: "d"}). */
  function challengeParams(challenge) {
    assert.ok(challenge, "a WWW-Authenticate header");
    assert.match(challenge, /^Bearer\b/i, challenge);
    const params = {};
    for (const [, name, quoted, bare] of challenge.matchAll(/([A-Za-z_]+)=(?:"((?:[^"\\]|\\.)*)"|([^\s,]+))/g)) {
      params[name] = quoted ?? bare;
    }
    return params;
  }

  /**
   * The metadata URL a server's challenges name: derived from its resource
   * (RFC 9728 section 3.1), the URL it listens on unless `--auth-resource` says otherwise.
   */
  const metadataUrl = (target = server) =>
    target.metadataUrl ?? `${target.origin}/.well-known/oauth-protected-resource/mcp`;

  /**
   * Asserts a 401 invalid_token answer, with the resource metadata and the
   * server-wide `scope` (null: a server with no --auth-scopes, no scope parameter).
   */
  function assertInvalidToken(response, what, scope = "mcp") {
    assert.equal(response.status, 401, about(what, response));
    const params = challengeParams(response.challenge);
    assert.equal(params.error, "invalid_token", about(what, response));
    assert.equal(params.resource_metadata, metadataUrl(response.target), about(what, response));
    assert.equal(params.scope, scope ?? undefined, about(what, response));
    assert.ok(params.error_description, about(`${what}: an error_description`, response));
  }

  /** The names of a tools/list answer. */
  function toolNames(response) {
    assert.equal(response.status, 200, about("tools/list", response));
    const tools = response.message?.result?.tools;
    assert.ok(Array.isArray(tools), about("tools/list result", response));
    return tools.map((tool) => tool.name);
  }

  /** The text of a tools/call answer that succeeded. */
  function callText(response, what) {
    assert.equal(response.status, 200, about(what, response));
    const result = response.message?.result;
    assert.ok(result, about(what, response));
    assert.notEqual(result.isError, true, about(what, response));
    return result.content?.[0]?.text ?? "";
  }

  /**
   * Asserts an HTTP 403 insufficient_scope answer naming `scope`: every scope
   * the request needs, the server-wide ones included, so that a client asking
   * for exactly these gets a token that serves it.
   */
  function assertInsufficientScope(response, scope, what) {
    assert.equal(response.status, 403, about(what, response));
    const params = challengeParams(response.challenge);
    assert.equal(params.error, "insufficient_scope", about(what, response));
    assert.equal(params.scope, scope, about(what, response));
    assert.equal(params.resource_metadata, metadataUrl(), about(what, response));
  }

  // --- the tests ------------------------------------------------------------

  test("Protected Resource Metadata at both well-known URLs, without a token", async () => {
    for (const path of ["/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"]) {
      const response = await fetch(`${server.origin}${path}`);
      const text = await response.text();
      const what = `GET ${path}: ${response.status} ${text}${log()}`;
      assert.equal(response.status, 200, what);
      assert.match(response.headers.get("content-type") ?? "", /^application\/json/, what);
      const metadata = JSON.parse(text);
      assert.equal(metadata.resource, resource, what);
      assert.deepEqual(metadata.authorization_servers, [as.issuer], what);
      assert.deepEqual(metadata.bearer_methods_supported, ["header"], what);
      assert.equal(metadata.resource_name, "wasm-mcp", what);
      for (const scope of ALL_SCOPES.split(" ")) {
        assert.ok(metadata.scopes_supported?.includes(scope), `${scope} in scopes_supported: ${what}`);
      }
    }
  });

  test("the TypeScript SDK discovers the authorization server and gets a token (client_credentials)", async () => {
    const before = as.seen.length;
    const authProvider = new ClientCredentialsProvider({
      clientId: "writer",
      clientSecret: CLIENTS.writer.secret,
      scope: ALL_SCOPES,
      expectedIssuer: as.issuer,
    });
    // Counts what the transport sends to wasm-mcp, to see the 401 and the retry.
    const toServer = [];
    const transport = new StreamableHTTPClientTransport(new URL(server.url), {
      authProvider,
      fetch: async (url, init) => {
        const response = await fetch(url, init);
        if (String(url).startsWith(server.origin)) toServer.push(response.status);
        return response;
      },
    });
    const client = new Client({ name: "wasm-mcp-oauth-sdk", version: "0.1.0" }, { capabilities: {} });
    try {
      await client.connect(transport);
      const { tools } = await client.listTools();
      const names = tools.map((t) => t.name);
      for (const name of ["search_notes", "touch_note", "test_simple_text"]) {
        assert.ok(names.includes(name), `${name} in ${names.join(", ")}${log()}`);
      }
      const search = await client.callTool(SEARCH);
      assert.notEqual(search.isError, true, JSON.stringify(search));
      assert.match(search.content[0].text, /1 note matches/, JSON.stringify(search));
      const touch = await client.callTool(TOUCH);
      assert.notEqual(touch.isError, true, JSON.stringify(touch));
      assert.equal(touch.content[0].text, TOUCHED);
    } finally {
      await transport.terminateSession().catch(() => {});
      await client.close();
    }
    assert.equal(toServer[0], 401, `the first request went without a token: ${toServer}`);
    const tokenRequests = as.seen.slice(before).filter((s) => s.route === "token");
    assert.equal(tokenRequests.length, 1, JSON.stringify(tokenRequests));
    const [tokenRequest] = tokenRequests;
    assert.equal(tokenRequest.clientId, "writer", JSON.stringify(tokenRequest));
    assert.equal(tokenRequest.params.grant_type, "client_credentials", JSON.stringify(tokenRequest));
    assert.equal(tokenRequest.params.resource, resource, `the resource, named: ${JSON.stringify(tokenRequest)}`);
    const issued = claims(authProvider.tokens().access_token);
    assert.ok([issued.aud].flat().includes(resource), `aud of the issued token: ${JSON.stringify(issued)}`);
    assert.equal(issued.iss, as.issuer);
    assert.equal(issued.client_id, "writer");
  });

  /**
   * The TypeScript SDK client against `url` as the user `login` of a
   * dynamically registered public client: the first connect is refused and
   * "redirects" (the provider walks the AS's login and consent pages and
   * keeps the code), finishAuth exchanges the code, the second connect
   * succeeds and lists the tools. Returns the provider, the tool names and
   * what the AS saw meanwhile.
   */
  async function userFlow(url, login) {
    const before = as.seen.length;
    const redirectUrl = "http://127.0.0.1:9/callback"; // never fetched: the code is taken from the redirect
    const authProvider = new BrowserlessUserProvider(redirectUrl, login);
    const transport = () => new StreamableHTTPClientTransport(new URL(url), { authProvider });
    const first = new Client({ name: "wasm-mcp-oauth-user", version: "0.1.0" }, { capabilities: {} });
    // No token yet: the SDK registers, builds the authorization URL and "redirects" the user.
    await assert.rejects(first.connect(transport()), UnauthorizedError);
    assert.ok(authProvider.code, `the user came back with a code: ${JSON.stringify(authProvider.visited)}`);
    const authed = transport();
    await authed.finishAuth(authProvider.code);
    const client = new Client({ name: "wasm-mcp-oauth-user", version: "0.1.0" }, { capabilities: {} });
    try {
      await client.connect(authed);
      const { tools } = await client.listTools();
      return { authProvider, tools: tools.map((t) => t.name), seen: as.seen.slice(before) };
    } finally {
      await authed.terminateSession().catch(() => {});
      await client.close();
    }
  }

  test("the TypeScript SDK registers a client and runs authorization code + PKCE for a user", async () => {
    const { authProvider, tools, seen } = await userFlow(server.url, "ada");
    // The SDK asked for the challenge's scope (mcp): it covers the server
    // but no plugin entry (each needs notes:read, notes:write or conformance).
    assert.deepEqual(tools, [], `a token with only "mcp" sees no plugin tools${log()}`);
    const registration = seen.find((s) => s.route === "registration");
    assert.ok(registration, `dynamic client registration: ${JSON.stringify(seen)}`);
    const authorization = seen.find((s) => s.route === "authorization");
    assert.equal(authorization?.params.code_challenge_method, "S256", JSON.stringify(authorization));
    assert.equal(authorization?.params.resource, resource, `the resource, named: ${JSON.stringify(authorization)}`);
    assert.equal(authorization?.params.scope, "mcp", `the challenge's scope: ${JSON.stringify(authorization)}`);
    const token = seen.find((s) => s.route === "token" && s.params.grant_type === "authorization_code");
    assert.equal(token?.params.resource, resource, `resource on the token request: ${JSON.stringify(token)}`);
    assert.ok(token?.params.code_verifier, `a PKCE verifier: ${JSON.stringify(token)}`);
    const issued = claims(authProvider.tokens().access_token);
    assert.equal(issued.sub, "ada", JSON.stringify(issued));
    assert.ok([issued.aud].flat().includes(resource), JSON.stringify(issued));
    assert.equal(issued.scope, "mcp", JSON.stringify(issued));
  });

  describe("refusals", () => {
    test("no token: 401 pointing at the metadata, with the server-wide scope", async () => {
      const response = await post(initialize());
      assert.equal(response.status, 401, about("no token", response));
      const params = challengeParams(response.challenge);
      assert.equal(params.resource_metadata, metadataUrl(), about("no token", response));
      assert.equal(params.scope, "mcp", about("no token", response));
      assert.equal(params.error, undefined, about("no token: no error code (RFC 6750 3.1)", response));
    });

    test("invalid tokens: 401 invalid_token", async () => {
      const now = Math.floor(Date.now() / 1000);
      const valid = jwt(tokenClaims(), { key });
      const [header, payload, signature] = valid.split(".");
      const altered = `${header}.${b64url(JSON.stringify(tokenClaims({ scope: "mcp notes admin" })))}.${signature}`;
      const cases = {
        "wrong audience": jwt(tokenClaims({ aud: "http://127.0.0.1:1/mcp" }), { key }),
        "wrong audience (array)": jwt(tokenClaims({ aud: ["http://other.example/mcp", `${resource}/x`] }), { key }),
        "wrong issuer": jwt(tokenClaims({ iss: "http://127.0.0.1:1" }), { key }),
        "expired 10 minutes ago": jwt(tokenClaims({ iat: now - 1200, exp: now - 600 }), { key }),
        "not valid for 10 minutes": jwt(tokenClaims({ nbf: now + 600 }), { key }),
        "signed by a key not in the JWKS (unknown kid)": jwt(tokenClaims(), { key: stranger }),
        "signed by another key under the AS's kid": jwt(tokenClaims(), { key: stranger, kid: key.kid }),
        "payload altered after signing": altered,
        "alg none": jwt(tokenClaims(), { alg: "none", kid: key.kid }),
        "HS256 keyed with the public key": jwt(tokenClaims(), { alg: "HS256", kid: key.kid, secret: key.publicPem }),
        "no exp": jwt(tokenClaims({ exp: undefined }), { key }),
        "not a JWT": "not-a-jwt",
      };
      for (const [what, token] of Object.entries(cases)) {
        assertInvalidToken(await post(initialize(), { token }), what);
      }
    });

    test("valid tokens are accepted: self-minted, aud as an array, and the authorization server's", async () => {
      const now = Math.floor(Date.now() / 1000);
      const tokens = {
        "self-minted": jwt(tokenClaims(), { key }),
        "self-minted ES256 (the AS publishes an EC key too)": jwt(tokenClaims(), { key: ecdsa }),
        "aud array": jwt(tokenClaims({ aud: ["http://other.example/api", resource] }), { key }),
        "expired 10 s ago (within the 30 s leeway)": jwt(tokenClaims({ exp: now - 10 }), { key }),
        "issued by the AS to reader": await clientToken("reader"),
      };
      for (const [what, token] of Object.entries(tokens)) {
        const response = await post(initialize(), { token });
        assert.equal(response.status, 200, about(what, response));
        assert.equal(response.message?.result?.protocolVersion, LEGACY, about(what, response));
      }
    });

    test("a token without the server-wide scope is refused", async () => {
      const token = jwt(tokenClaims({ scope: "notes:read conformance" }), { key });
      assertInsufficientScope(await post(initialize(), { token }), "mcp", "no mcp scope");
    });
  });

  describe("scopes", () => {
    let reader;
    let writer;
    before(async () => {
      reader = await clientToken("reader");
      writer = await clientToken("writer");
    });

    test("the AS issued what the scopes tests rely on", () => {
      assert.equal(claims(reader).scope, "mcp notes:read conformance");
      assert.equal(claims(writer).scope, ALL_SCOPES);
      assert.ok([claims(reader).aud].flat().includes(resource));
    });

    test("2025-11-25 session: reader sees and calls search_notes, not touch_note; writer both", async () => {
      const session = await openSession(reader);
      const names = toolNames(await inSession(session, reader, "tools/list", {}));
      assert.ok(names.includes("search_notes"), `search_notes in ${names}${log()}`);
      assert.ok(!names.includes("touch_note"), `touch_note hidden from reader: ${names}${log()}`);
      assert.ok(names.includes("test_simple_text"), `conformance tools in ${names}${log()}`);
      const touch = await inSession(session, reader, "tools/call", TOUCH);
      assertInsufficientScope(touch, "mcp notes:write", "reader calls touch_note");
      const search = await inSession(session, reader, "tools/call", SEARCH);
      assert.match(callText(search, "reader calls search_notes"), /1 note matches/);

      const writerSession = await openSession(writer);
      const all = toolNames(await inSession(writerSession, writer, "tools/list", {}));
      assert.ok(all.includes("search_notes") && all.includes("touch_note"), `${all}${log()}`);
      const touched = await inSession(writerSession, writer, "tools/call", TOUCH);
      assert.equal(callText(touched, "writer calls touch_note"), TOUCHED);
      const searched = await inSession(writerSession, writer, "tools/call", SEARCH);
      assert.match(callText(searched, "writer calls search_notes"), /1 note matches/);
    });

    test("2026-07-28 stateless requests: the same split", async () => {
      const names = toolNames(await modern("tools/list", {}, reader));
      assert.ok(names.includes("search_notes") && !names.includes("touch_note"), `${names}${log()}`);
      const touch = await modern("tools/call", TOUCH, reader);
      assertInsufficientScope(touch, "mcp notes:write", "2026-07-28 reader calls touch_note");
      const search = await modern("tools/call", SEARCH, reader);
      assert.match(callText(search, "2026-07-28 reader calls search_notes"), /1 note matches/);
      assert.equal(search.headers.get("mcp-session-id"), null, "no session in 2026-07-28");

      const all = toolNames(await modern("tools/list", {}, writer));
      assert.ok(all.includes("search_notes") && all.includes("touch_note"), `${all}${log()}`);
      const touched = await modern("tools/call", TOUCH, writer);
      assert.equal(callText(touched, "2026-07-28 writer calls touch_note"), TOUCHED);
    });

    test("what the caller's scopes filter is cached only by that caller; discovery by anyone", async () => {
      for (const method of ["tools/list", "prompts/list", "resources/list", "resources/templates/list"]) {
        for (const [who, token] of Object.entries({ reader, writer })) {
          const listed = await modern(method, {}, token);
          assert.equal(listed.status, 200, about(`${who}: ${method}`, listed));
          const scope = listed.message?.result?.cacheScope;
          assert.equal(scope, "private", about(`${who}: ${method} depends on the caller's scopes`, listed));
        }
      }
      const readerTools = toolNames(await modern("tools/list", {}, reader));
      const writerTools = toolNames(await modern("tools/list", {}, writer));
      assert.notDeepEqual(readerTools, writerTools, "two callers, two lists: neither may be served to the other");
      const read = await modern("resources/read", { uri: "notes://note/hot-reload" }, reader);
      assert.equal(read.status, 200, about("reader reads a note", read));
      assert.equal(read.message?.result?.cacheScope, "private", about("a read served under scopes", read));
      const discover = await modern("server/discover", {}, reader);
      assert.equal(discover.message?.result?.cacheScope, "public", about("the same for every caller", discover));

      // An event stream says how it may be cached: privately, as a caller's.
      const session = await openSession(reader);
      const controller = new AbortController();
      const stream = await fetch(server.url, {
        headers: {
          accept: "text/event-stream",
          authorization: `Bearer ${reader}`,
          "mcp-session-id": session,
          "mcp-protocol-version": LEGACY,
        },
        signal: controller.signal,
      });
      const cacheControl = stream.headers.get("cache-control");
      controller.abort();
      assert.equal(stream.status, 200, `GET the session's stream: ${stream.status}${log()}`);
      assert.equal(cacheControl, "no-cache, private", `Cache-Control of an authenticated stream${log()}`);
    });

    test("prompts, resources and templates follow the manifest; a broader scope covers narrower ones", async () => {
      // mcp + conformance only: nothing of notes is listed or readable.
      const noNotes = jwt(tokenClaims({ scope: "mcp conformance" }), { key });
      const session = await openSession(noNotes);
      const tools = toolNames(await inSession(session, noNotes, "tools/list", {}));
      assert.ok(!tools.includes("search_notes") && tools.includes("test_simple_text"), `${tools}${log()}`);
      const prompts = await inSession(session, noNotes, "prompts/list", {});
      const promptNames = prompts.message?.result?.prompts?.map((p) => p.name) ?? [];
      assert.ok(!promptNames.includes("summarize_note"), about(`summarize_note hidden: ${promptNames}`, prompts));
      const resources = await inSession(session, noNotes, "resources/list", {});
      const uris = resources.message?.result?.resources?.map((r) => r.uri) ?? [];
      const noNotesResource = uris.length > 0 && !uris.some((u) => u.startsWith("notes://"));
      assert.ok(noNotesResource, about(`no notes:// resource: ${uris}`, resources));
      const templates = await inSession(session, noNotes, "resources/templates/list", {});
      const templateUris = templates.message?.result?.resourceTemplates?.map((t) => t.uriTemplate) ?? [];
      const hidden = !templateUris.includes("notes://note/{slug}");
      assert.ok(hidden, about(`note template hidden: ${templateUris}`, templates));
      assertInsufficientScope(
        await inSession(session, noNotes, "resources/read", { uri: "notes://note/hot-reload" }),
        "mcp notes:read",
        "resources/read of a note without notes:read",
      );
      assertInsufficientScope(
        await inSession(session, noNotes, "resources/read", { uri: "notes://index" }),
        "mcp notes:read",
        "resources/read of the index (the default scopes) without notes:read",
      );
      assertInsufficientScope(
        await inSession(session, noNotes, "prompts/get", { name: "summarize_note", arguments: { slug: "hot-reload" } }),
        "mcp notes:read",
        "prompts/get without notes:read",
      );

      // `notes` covers notes:read and notes:write; `scp` works as well as `scope`.
      const broad = jwt(tokenClaims({ scope: undefined, scp: ["mcp", "notes"] }), { key });
      const listed = toolNames(await modern("tools/list", {}, broad));
      assert.ok(listed.includes("search_notes") && listed.includes("touch_note"), `${listed}${log()}`);
      assert.ok(!listed.includes("test_simple_text"), `conformance needs its scope: ${listed}${log()}`);
      const read = await modern("resources/read", { uri: "notes://note/hot-reload" }, broad);
      assert.equal(read.status, 200, about("resources/read with notes", read));
      assert.match(read.message?.result?.contents?.[0]?.text ?? "", /# Hot reload/, about("resources/read", read));
      const touched = await modern("tools/call", TOUCH, broad);
      callText(touched, "touch_note with the scope notes");
    });
  });

  describe("skill scopes", () => {
    const GUARDED = "skill://git-workflow/SKILL.md";
    const GUARDED_FILE = "skill://git-workflow/references/commit-messages.md";
    const OPEN = "skill://reports/daily/SKILL.md";
    let reader;
    let writer;
    before(async () => {
      reader = await clientToken("reader");
      writer = await clientToken("writer");
    });

    /** The URIs a list answer gives under `key`. */
    function listed(response, key, what) {
      assert.equal(response.status, 200, about(what, response));
      const entries = response.message?.result?.[key];
      assert.ok(Array.isArray(entries), about(what, response));
      return entries.map((entry) => entry.uri);
    }

    /** A request of `token`'s caller in `revision`: in a 2025-11-25 session, or stateless in 2026-07-28. */
    async function asker(revision, token) {
      if (revision === MODERN) return (method, params) => modern(method, params, token);
      const session = await openSession(token);
      return (method, params) => inSession(session, token, method, params);
    }

    for (const revision of [LEGACY, MODERN]) {
      test(`${revision}: without the skill's scope it is not seen, and getting or reading it is refused`, async () => {
        assert.ok(!claims(reader).scope.split(" ").includes("skills:read"), claims(reader).scope);
        const ask = await asker(revision, reader);
        const skills = listed(await ask("skills/list", {}), "skills", "reader's skills/list");
        assert.ok(skills.includes(OPEN), `the skill that needs no scope is listed: ${skills}${log()}`);
        assert.ok(!skills.includes(GUARDED), `git-workflow hidden from reader: ${skills}${log()}`);
        const resources = listed(await ask("resources/list", {}), "resources", "reader's resources/list");
        assert.ok(!resources.includes(GUARDED), `its SKILL.md is no listed resource either: ${resources}`);
        assertInsufficientScope(await ask("skills/get", { uri: GUARDED }), "mcp skills:read", "skills/get");
        for (const uri of [GUARDED, GUARDED_FILE]) {
          assertInsufficientScope(await ask("resources/read", { uri }), "mcp skills:read", `resources/read ${uri}`);
        }
        // Its folder shows nothing of it, not even the names of the folders in it.
        const folder = await ask("resources/directory/read", { uri: "skill://git-workflow" });
        const invalidParams = revision === MODERN ? 400 : 200; // 2026-07-28 says an invalid request in the status too
        assert.equal(folder.status, invalidParams, about("reader reads the skill's folder", folder));
        assert.equal(folder.message?.error?.code, -32602, about("no such directory for reader", folder));
        assert.match(folder.message.error.message, /is not a directory resource/, about("the error", folder));
        const open = await ask("skills/get", { uri: OPEN });
        assert.equal(open.message?.result?.skill?.uri, OPEN, about("reader gets the skill needing no scope", open));
      });

      test(`${revision}: with the skill's scope it is listed, got and read`, async () => {
        const ask = await asker(revision, writer);
        const list = await ask("skills/list", {});
        const skills = listed(list, "skills", "writer's skills/list");
        assert.ok(skills.includes(GUARDED) && skills.includes(OPEN), `${skills}${log()}`);
        if (revision === MODERN) {
          assert.equal(list.message.result.cacheScope, "private", about("a list filtered by scope", list));
        }
        const resources = listed(await ask("resources/list", {}), "resources", "writer's resources/list");
        assert.ok(resources.includes(GUARDED), `its SKILL.md is a listed resource: ${resources}`);
        const got = await ask("skills/get", { uri: GUARDED });
        assert.equal(got.status, 200, about("writer's skills/get", got));
        const entry = got.message?.result?.skill;
        assert.deepEqual(
          entry?.resources?.map((file) => file.uri),
          [GUARDED, GUARDED_FILE],
          about("its files, with digests", got),
        );
        const read = await ask("resources/read", { uri: GUARDED });
        assert.equal(read.status, 200, about("writer reads SKILL.md", read));
        const text = read.message?.result?.contents?.[0]?.text ?? "";
        assert.match(text, /^---\nname: git-workflow\n/, about("the SKILL.md", read));
        const file = await ask("resources/read", { uri: GUARDED_FILE });
        assert.ok(file.message?.result?.contents?.[0]?.text, about("writer reads a file of the skill", file));
        const folder = listed(
          await ask("resources/directory/read", { uri: "skill://git-workflow" }),
          "resources",
          "writer reads the skill's folder",
        );
        assert.deepEqual(folder, [GUARDED, "skill://git-workflow/references"], `${folder}${log()}`);
      });
    }
  });

  describe("the principal is bound to state", () => {
    let writer;
    let other;
    before(async () => {
      writer = await clientToken("writer");
      other = await clientToken("other");
    });

    test("a 2025-11-25 session opened by writer is not found with other's token", async () => {
      const session = await openSession(writer);
      const mine = await inSession(session, writer, "tools/list", {});
      assert.equal(mine.status, 200, about("the owner's request", mine));
      const theirs = await inSession(session, other, "tools/list", {});
      assert.equal(theirs.status, 404, about("another principal's request in the session", theirs));
      const call = await inSession(session, other, "tools/call", { name: "test_simple_text", arguments: {} });
      assert.equal(call.status, 404, about("another principal's call in the session", call));
      const still = await inSession(session, writer, "tools/list", {});
      assert.equal(still.status, 200, about("the session lives on for its owner", still));
    });

    test("a 2026-07-28 task created by writer is unknown to other", async () => {
      const caps = { extensions: { [TASKS]: {} } };
      const slow = { name: "slow_compute", arguments: { seconds: 3, label: "mine" } };
      const created = await modern("tools/call", slow, writer, caps);
      assert.equal(created.status, 200, about("slow_compute as a task", created));
      const task = created.message?.result;
      assert.equal(task?.resultType, "task", about("a CreateTaskResult", created));
      const { taskId } = task;
      assert.ok(taskId, about("a task id", created));

      const got = await modern("tasks/get", { taskId }, writer, caps);
      assert.equal(got.message?.result?.taskId, taskId, about("writer's tasks/get", got));

      for (const [method, params] of [
        ["tasks/get", { taskId }],
        ["tasks/cancel", { taskId }],
        ["tasks/update", { taskId, inputResponses: {} }],
      ]) {
        const refused = await modern(method, params, other, caps);
        const error = refused.message?.error;
        assert.ok(error, about(`other's ${method} is refused`, refused));
        assert.equal(error.code, -32602, about(`other's ${method}: as for an unknown task`, refused));
        assert.match(error.message, /Unknown task/, about(`other's ${method}: as for an unknown task`, refused));
        assert.equal(refused.message?.result, undefined, about(`other's ${method}`, refused));
      }
      // The control: a task id that never existed is refused the same way.
      const unknown = await modern("tasks/get", { taskId: "0123456789abcdef0123456789abcdef" }, other, caps);
      assert.equal(unknown.message?.error?.code, -32602, about("an unknown task", unknown));

      // other's cancel did nothing: the task runs to its result for writer.
      let status;
      for (let i = 0; i < 100; i++) {
        const now = await modern("tasks/get", { taskId }, writer, caps);
        status = now.message?.result;
        assert.ok(status, about("writer polls the task", now));
        assert.notEqual(status.status, "cancelled", about("other's tasks/cancel cancelled the task", now));
        if (["completed", "failed"].includes(status.status)) break;
        await new Promise((resolve) => setTimeout(resolve, Math.min(status.pollIntervalMs ?? 100, 250)));
      }
      assert.equal(status.status, "completed", `${JSON.stringify(status)}${log()}`);
      assert.equal(status.result?.content?.[0]?.text, "Computed mine after 3 s", JSON.stringify(status));
    });

    test("an MRTR requestState issued to writer is refused for other", async () => {
      const caps = { elicitation: {} };
      const name = "test_input_required_result_elicitation";
      const round = await modern("tools/call", { name, arguments: {} }, writer, caps);
      assert.equal(round.status, 200, about("the first round", round));
      const asked = round.message?.result;
      assert.equal(asked?.resultType, "input_required", about("the first round asks", round));
      assert.ok(asked.requestState, about("a requestState", round));
      const retry = {
        name,
        arguments: {},
        inputResponses: { user_name: { action: "accept", content: { name: "Grace" } } },
        requestState: asked.requestState,
      };
      const stolen = await modern("tools/call", retry, other, caps);
      assert.equal(stolen.message?.error?.code, -32602, about("other retries with writer's requestState", stolen));
      assert.equal(stolen.message?.result, undefined, about("other retries with writer's requestState", stolen));
      const done = await modern("tools/call", retry, writer, caps);
      assert.equal(callText(done, "writer retries"), "Hello, Grace!");
    });
  });

  describe("introspection mode (--auth-introspection-client): opaque tokens asked about at the AS", () => {
    let second;

    before(async () => {
      second = await startServer(
        plugins.path,
        as.issuer,
        ["--auth-scopes", "mcp", "--auth-introspection-client", RS_CLIENT.id, "--auth-introspection-cache", "2"],
        { WASM_MCP_AUTH_CLIENT_SECRET: RS_CLIENT.secret },
      );
      introspected = second.url;
    });

    after(async () => {
      await second?.stop();
    });

    /** POSTs a 2025-11-25 initialize to the second server with `token`. */
    const initializeThere = (token) => post(initialize(), { token, target: second });

    test("the metadata names the second server's own resource", async () => {
      const response = await fetch(`${second.origin}/.well-known/oauth-protected-resource/mcp`);
      const metadata = await response.json();
      assert.equal(metadata.resource, introspected, `${JSON.stringify(metadata)}${log(second)}`);
      assert.deepEqual(metadata.authorization_servers, [as.issuer], JSON.stringify(metadata));
    });

    test("a user's opaque token (authorization code + PKCE through the SDK) is introspected and accepted", async () => {
      const { authProvider, seen } = await userFlow(second.url, "grace");
      const token = authProvider.tokens().access_token;
      assert.notEqual(token.split(".").length, 3, `an opaque token: ${token}`);
      const introspections = seen.filter((s) => s.route === "introspection");
      assert.ok(introspections.length > 0, `the server introspected the token: ${JSON.stringify(seen)}${log(second)}`);
      assert.equal(introspections[0].clientId, RS_CLIENT.id, JSON.stringify(introspections[0]));

      // The AS's answer serves the same token's next requests for --auth-introspection-cache (2 s).
      const asked = seen.filter((s) => s.route === "introspection").length;
      const ok = await initializeThere(token);
      assert.equal(ok.status, 200, about("the user's token before revocation", ok));
      const askedAgain = seen.filter((s) => s.route === "introspection").length;
      assert.ok(askedAgain <= asked + 1, `at most one introspection for two requests: ${askedAgain - asked}`);

      // Revoked at the AS: refused once the remembered answer runs out, and from then on.
      const clientId = authProvider.clientInformation().client_id;
      const revoked = await fetch(`${as.issuer}/token/revocation`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ token, token_type_hint: "access_token", client_id: clientId }),
      });
      assert.equal(revoked.status, 200, `revocation: ${revoked.status} ${await revoked.text()}`);
      const deadline = Date.now() + 15_000;
      let refused = await initializeThere(token);
      while (refused.status === 200 && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 250));
        refused = await initializeThere(token);
      }
      assertInvalidToken(refused, "a revoked token");
      assertInvalidToken(await initializeThere(token), "a revoked token, remembered as refused");
    });

    test("tokens the AS does not know as active for this server are refused", async () => {
      const cases = {
        "self-minted JWT": jwt(tokenClaims({ aud: introspected }), { key }),
        "a JWT the AS issued for the first server": await clientToken("writer"),
        "made up": "no-such-token-0123456789",
      };
      for (const [what, token] of Object.entries(cases)) {
        assertInvalidToken(await initializeThere(token), what);
      }
    });

    test("a client_credentials opaque token (introspected without sub) is accepted", async () => {
      // oidc-provider's introspection of a client_credentials token has no
      // `sub` (RFC 7662 makes it optional): the principal is its client_id.
      const token = await clientToken("writer", { audience: introspected, opaque: true });
      const response = await initializeThere(token);
      assert.equal(response.status, 200, about("writer's opaque client_credentials token", response));
      const session = response.headers.get("mcp-session-id");
      const initialized = await post(
        { jsonrpc: "2.0", method: "notifications/initialized" },
        { token, target: second, headers: { "mcp-session-id": session, "mcp-protocol-version": LEGACY } },
      );
      assert.equal(initialized.status, 202, about("notifications/initialized", initialized));
      const listed = await post(request("tools/list", {}), {
        token,
        target: second,
        headers: { "mcp-session-id": session, "mcp-protocol-version": LEGACY },
      });
      const names = toolNames(listed);
      assert.ok(names.includes("touch_note") && names.includes("test_simple_text"), about(`${names}`, listed));
    });
  });

  describe("--auth-resource, --auth-algorithms, --auth-leeway, and the issuer check", () => {
    const canonical = "https://mcp.example.test/mcp";
    let custom;
    let mixedUp;

    before(async () => {
      custom = await startServer(plugins.path, as.issuer, [
        "--auth-resource",
        canonical,
        "--auth-algorithms",
        "ES256",
        "--auth-leeway",
        "0",
      ]);
      custom.metadataUrl = "https://mcp.example.test/.well-known/oauth-protected-resource/mcp";
      // The AS answers at localhost too, but its metadata names 127.0.0.1.
      mixedUp = await startServer(plugins.path, as.issuer.replace("127.0.0.1", "localhost"));
    });

    after(async () => {
      await custom?.stop();
      await mixedUp?.stop();
    });

    test("the configured resource is the audience; only the configured algorithms; no leeway", async () => {
      const response = await fetch(`${custom.origin}/.well-known/oauth-protected-resource/mcp`);
      const metadata = await response.json();
      assert.equal(metadata.resource, canonical, `${JSON.stringify(metadata)}${log(custom)}`);

      const none = await post(initialize(), { target: custom });
      assert.equal(none.status, 401, about("no token", none));
      const params = challengeParams(none.challenge);
      assert.equal(params.scope, undefined, about("no --auth-scopes: no scope in the challenge", none));
      assert.equal(params.resource_metadata, metadataUrl(custom), about("no token", none));

      const now = Math.floor(Date.now() / 1000);
      const es256 = jwt(tokenClaims({ aud: canonical }), { key: ecdsa });
      const ok = await post(initialize(), { target: custom, token: es256 });
      assert.equal(ok.status, 200, about("ES256 for the configured resource", ok));
      const cases = {
        "RS256 when only ES256 is accepted": jwt(tokenClaims({ aud: canonical }), { key }),
        "the listening URL as audience": jwt(tokenClaims({ aud: custom.url }), { key: ecdsa }),
        "expired 5 s ago with no leeway": jwt(tokenClaims({ aud: canonical, iat: now - 60, exp: now - 5 }), {
          key: ecdsa,
        }),
      };
      for (const [what, token] of Object.entries(cases)) {
        assertInvalidToken(await post(initialize(), { target: custom, token }), what, null);
      }
    });

    test("metadata that names another issuer is not trusted (RFC 8414 section 3.3)", async () => {
      const token = jwt(tokenClaims({ iss: as.issuer.replace("127.0.0.1", "localhost"), aud: mixedUp.url }), { key });
      const response = await post(initialize(), { target: mixedUp, token });
      assert.equal(response.status, 503, `nothing is known of the token: the issuer's keys are not trusted${log(mixedUp)}`);
      assert.match(response.text, /keys could not be read/, `the answer says what is missing${log(mixedUp)}`);
      assert.match(mixedUp.stderr(), /names the issuer/, `the server says why${log(mixedUp)}`);
    });
  });

  describe("key rotation", () => {
    test("a key the issuer publishes later is fetched when a token names it; keys are cached", async () => {
      const rotated = rsaKey("as-key-rotated");
      const token = jwt(tokenClaims(), { key: rotated });
      assertInvalidToken(await post(initialize(), { token }), "a key the issuer does not publish yet");
      as.publish([key, ecdsa, rotated]);
      // wasm-mcp fetches the JWKS again for a kid it lacks, at most once per
      // backoff (10 s): retry until it has, counting the fetches meanwhile.
      const fetchesBefore = as.jwksFetches;
      const deadline = Date.now() + 25_000;
      let response;
      let attempts = 0;
      do {
        await new Promise((resolve) => setTimeout(resolve, 500));
        response = await post(initialize(), { token });
        attempts++;
      } while (response.status === 401 && Date.now() < deadline);
      assert.equal(response.status, 200, about(`a token of the rotated key, after ${attempts} attempts`, response));
      const fetches = as.jwksFetches - fetchesBefore;
      const counted = `${fetches} JWKS fetches for ${attempts} requests naming an unknown kid${log()}`;
      assert.ok(fetches >= 1 && fetches <= 2, counted);
      // Known keys are served from the cache.
      const cached = as.jwksFetches;
      for (let i = 0; i < 5; i++) {
        const again = await post(initialize(), { token: jwt(tokenClaims(), { key: i % 2 ? rotated : key }) });
        assert.equal(again.status, 200, about("a token of a cached key", again));
      }
      assert.equal(as.jwksFetches, cached, `no JWKS fetch for known keys${log()}`);
    });
  });

  describe("an authorization server that stops", () => {
    test("known keys still serve; an unknown kid is 503 saying the keys could not be fetched again", async () => {
      let third;
      const lone = await startAuthorizationServer([key], () => ({}));
      try {
        third = await startServer(plugins.path, lone.issuer, ["--auth-issuer-wait", "5"]);
        const own = (overrides) => tokenClaims({ iss: lone.issuer, aud: third.url, ...overrides });
        const known = await post(initialize(), { target: third, token: jwt(own({}), { key }) });
        assert.equal(known.status, 200, about("a token of the issuer's key", known));
        await lone.stop();

        // Within 10 s of the last fetch (at start) an unknown kid is refused
        // for what it found; then it makes the server fetch again, which fails.
        const deadline = Date.now() + 30_000;
        let unknown;
        do {
          unknown = await post(initialize(), { target: third, token: jwt(own({}), { key: stranger }) });
          if (unknown.status === 401) {
            assert.match(unknown.text, /which the issuer does not publish \(its keys as fetched \d+ s ago\)/);
            await new Promise((resolve) => setTimeout(resolve, 500));
          }
        } while (unknown.status === 401 && Date.now() < deadline);
        assert.equal(unknown.status, 503, about("an unknown kid with the issuer stopped", unknown));
        assert.ok(Number(unknown.headers.get("retry-after")) >= 1, about("Retry-After", unknown));
        assert.match(unknown.text, /"stranger-key\\", which is not among the authorization server's keys fetched \d+ s ago, and fetching them again failed: .*Connection refused/, about("says what happened", unknown));
        // Meanwhile, and after, a new token of the known key is answered.
        const another = await post(initialize(), { target: third, token: jwt(own({ sub: "another" }), { key }) });
        assert.equal(another.status, 200, about("a new token of a known key, the issuer stopped", another));
      } finally {
        await third?.stop();
        await lone.stop();
      }
    });
  });
});

/**
 * An OAuthClientProvider for a user agent with no browser: it registers
 * dynamically (public client, PKCE) and, when sent to the authorization
 * URL, walks oidc-provider's development login and consent pages with
 * fetch, keeping cookies, until the redirect to `redirectUrl` carries a code.
 */
class BrowserlessUserProvider {
  constructor(redirectUrl, login) {
    this.redirectUrl = redirectUrl;
    this.login = login;
    this.cookies = new Map();
    this.visited = [];
  }

  get clientMetadata() {
    return {
      client_name: "wasm-mcp-oauth-user",
      redirect_uris: [this.redirectUrl],
      grant_types: ["authorization_code"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
    };
  }

  clientInformation() {
    return this.info;
  }

  saveClientInformation(info) {
    this.info = info;
  }

  tokens() {
    return this.saved;
  }

  saveTokens(tokens) {
    this.saved = tokens;
  }

  saveCodeVerifier(verifier) {
    this.verifier = verifier;
  }

  codeVerifier() {
    return this.verifier;
  }

  async redirectToAuthorization(authorizationUrl) {
    this.code = await this.browse(authorizationUrl);
  }

  async fetchWithCookies(url, init = {}) {
    const cookie = [...this.cookies].map(([name, value]) => `${name}=${value}`).join("; ");
    const response = await fetch(url, { ...init, redirect: "manual", headers: { ...init.headers, cookie } });
    for (const set of response.headers.getSetCookie()) {
      const [pair] = set.split(";");
      const at = pair.indexOf("=");
      this.cookies.set(pair.slice(0, at).trim(), pair.slice(at + 1).trim());
    }
    this.visited.push(`${init.method ?? "GET"} ${url} → ${response.status}`);
    return response;
  }

  /** Follows redirects and submits the login and consent forms; returns the code. */
  async browse(start) {
    let url = new URL(start);
    let init = {};
    for (let step = 0; step < 20; step++) {
      const response = await this.fetchWithCookies(url, init);
      init = {};
      if (response.status >= 300 && response.status < 400) {
        await response.body?.cancel();
        const next = new URL(response.headers.get("location"), url);
        if (next.href.startsWith(this.redirectUrl)) {
          const error = next.searchParams.get("error");
          if (error) throw new Error(`authorization refused: ${error} ${next.searchParams.get("error_description")}`);
          return next.searchParams.get("code");
        }
        url = next;
        continue;
      }
      const html = await response.text();
      if (response.status !== 200) throw new Error(`${url}: ${response.status} ${html.slice(0, 2000)}`);
      const action = html.match(/<form[^>]*action="([^"]+)"/)?.[1];
      const prompt = html.match(/name="prompt" value="([^"]+)"/)?.[1];
      if (!action || !prompt) throw new Error(`no form at ${url}: ${html.slice(0, 2000)}`);
      const form = new URLSearchParams({ prompt });
      if (prompt === "login") {
        form.set("login", this.login);
        form.set("password", "any");
      }
      url = new URL(action.replace(/&amp;/g, "&"), url);
      const headers = { "content-type": "application/x-www-form-urlencoded" };
      init = { method: "POST", headers, body: form.toString() };
    }
    throw new Error(`no code after 20 steps: ${this.visited.join("\n")}`);
  }
}
