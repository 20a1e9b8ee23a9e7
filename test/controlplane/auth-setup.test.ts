import assert from "node:assert/strict";
import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { join } from "node:path";
import { test, type TestContext } from "node:test";
import Database from "better-sqlite3";
import { ApiKeys } from "../../src/http/api-keys.ts";
import { prefersHtml } from "../../src/controlplane/auth-pages.ts";
import { registerAuthRoutes } from "../../src/controlplane/auth-setup.ts";
import { installationToken } from "../../src/controlplane/auth-store.ts";
import { SecretBox } from "../../src/controlplane/secret-box.ts";
import { HttpServer } from "../../src/http/server.ts";
import { createLogger } from "../../src/log.ts";
import { tempDir, waitFor } from "../helpers/processes.ts";

// The auth service's routes on a loopback port, with a stand-in provider token endpoint: auth requests, the
// setup callback (update, install, every refusal), the token exchange's failures, and what never leaks.

const API_KEY = "test-api-key-0123456789";
const CLIENT_SECRET = "client-secret-NEVER-SHOWN-4f2a9c";
const FILE_SECRET = "file-secret-NEVER-SHOWN-77b1e0";
const ACCESS_TOKEN = "gho_ACCESS-TOKEN-NEVER-SHOWN-d41d8c";
const BROWSER_ACCEPT = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8";
const START = Date.parse("2030-01-01T00:00:00Z");

interface TokenCall {
  form: URLSearchParams;
  headers: IncomingMessage["headers"];
}

type TokenAnswer = (call: TokenCall, response: ServerResponse) => void;

const grant: TokenAnswer = (_call, response) => {
  response.writeHead(200, { "content-type": "application/json" });
  response.end(
    JSON.stringify({
      access_token: ACCESS_TOKEN,
      token_type: "bearer",
      scope: "repo",
      refresh_token: "refresh-NEVER-SHOWN",
      expires_in: 3600,
    }),
  );
};

/** The control plane's auth routes, a stand-in provider and a clock the test moves. */
async function setup(t: TestContext, options: { exchangeTimeoutMs?: number } = {}) {
  const dir = tempDir("egress-auth-");
  const lines: string[] = [];
  const logger = createLogger("debug", { write: (line: string) => void lines.push(line) });

  const calls: TokenCall[] = [];
  const provider = {
    answer: grant,
    server: createServer((request, response) => {
      let body = "";
      request.on("data", (chunk) => (body += chunk));
      request.on("end", () => {
        const call = { form: new URLSearchParams(body), headers: request.headers };
        calls.push(call);
        provider.answer(call, response);
      });
    }),
  };
  await new Promise<void>((resolve) => provider.server.listen(0, "127.0.0.1", resolve));
  const address = provider.server.address();
  const tokenUrl = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}/login/oauth/access_token`;
  const secretFile = join(dir, "gitlab-secret");
  writeFileSync(secretFile, `${FILE_SECRET}\n`);

  const dbPath = join(dir, "controlplane.db");
  const db = new Database(dbPath);
  const box = new SecretBox(dir);
  const clock = { now: START };
  const server = new HttpServer({ logger, bodyLimit: { bytes: 64 * 1024 } });
  const deps = {
    db,
    providers: {
      github: {
        tokenUrl,
        authorizeUrl: "https://github.example/apps/egress/installations/new?foo=bar",
        clientId: "client-gh",
        clientSecret: CLIENT_SECRET,
      },
      gitlab: { tokenUrl, clientId: "client-gl", clientSecretFile: secretFile },
    },
    stateTtlMs: 15 * 60_000,
    apiKeys: new ApiKeys([API_KEY]),
    box,
    logger,
    now: () => clock.now,
    ...(options.exchangeTimeoutMs !== undefined && { exchangeTimeoutMs: options.exchangeTimeoutMs }),
  };
  registerAuthRoutes(server, deps);
  const base = await server.listen({ host: "127.0.0.1", port: 0 });
  t.after(async () => {
    await server.close();
    provider.server.closeAllConnections();
    await new Promise((resolve) => provider.server.close(resolve));
    db.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const api = (path: string, init: RequestInit = {}) =>
    fetch(`${base}${path}`, { ...init, headers: { "x-api-key": API_KEY, ...init.headers } });
  /** A new auth request of `providerId`: its id and state. */
  const authRequest = async (providerId = "github") => {
    const response = await api(`/v2/auth/providers/${providerId}/auth-requests`, { method: "POST" });
    assert.equal(response.status, 201);
    return (await response.json()) as { auth_id: string; state: string; authorize_url: string | null; status: string };
  };
  const callback = (providerId: string, query: Record<string, string>, accept?: string) =>
    fetch(`${base}/v2/auth/setup/${providerId}?${new URLSearchParams(query)}`, accept ? { headers: { accept } } : {});
  const authStatus = async (authId: string) =>
    (await (await api(`/v2/auth/auth-requests/${authId}`)).json()) as { status: string; error: string | null };
  return { base, api, authRequest, callback, authStatus, calls, provider, clock, db, dbPath, box, lines, deps, logger };
}

test("an auth request: 201 with a state and the authorize URL; GET shows its status but not the state; unknown provider 404", async (t) => {
  const { api, authRequest } = await setup(t);
  const created = await authRequest();
  assert.match(created.auth_id, /^[0-9a-f-]{36}$/);
  const [authId, secret] = created.state.split(".");
  assert.equal(authId, created.auth_id);
  assert.equal(Buffer.from(secret!, "base64url").length, 32);
  const authorize = new URL(created.authorize_url!);
  assert.deepEqual(
    [authorize.searchParams.get("foo"), authorize.searchParams.get("client_id"), authorize.searchParams.get("state")],
    ["bar", "client-gh", created.state],
  );
  assert.equal(created.status, "pending");

  const got = await (await api(`/v2/auth/auth-requests/${created.auth_id}`)).json();
  assert.deepEqual(got, {
    auth_id: created.auth_id,
    provider_id: "github",
    state: null,
    authorize_url: null,
    status: "pending",
    error: null,
    created_at: "2030-01-01T00:00:00.000Z",
    expires_at: "2030-01-01T00:15:00.000Z",
  });
  assert.equal((await authRequest("gitlab")).authorize_url, null, "no authorizeUrl configured");

  const unknown = await api("/v2/auth/providers/bitbucket/auth-requests", { method: "POST" });
  assert.equal(unknown.status, 404);
  assert.equal(((await unknown.json()) as { code: string }).code, "EGRESS_ERR_AUTH_PROVIDER_NOT_FOUND");
  const prototypeKey = await api("/v2/auth/providers/constructor/auth-requests", { method: "POST" });
  assert.equal(prototypeKey.status, 404);
  assert.equal((await api("/v2/auth/auth-requests/00000000-0000-0000-0000-000000000000")).status, 404);
});

test("X-Api-Key is required on the auth routes (401) but not on the setup callback", async (t) => {
  const { base, authRequest, callback } = await setup(t);
  for (const [method, path] of [
    ["POST", "/v2/auth/providers/github/auth-requests"],
    ["GET", "/v2/auth/auth-requests/00000000-0000-0000-0000-000000000000"],
    ["GET", "/v2/auth/installations"],
  ] as const) {
    const missing = await fetch(`${base}${path}`, { method });
    assert.deepEqual([missing.status, ((await missing.json()) as { code: string }).code], [401, "EGRESS_ERR_API_KEY_MISSING"], path);
    const wrong = await fetch(`${base}${path}`, { method, headers: { "x-api-key": "not-the-key-at-all" } });
    assert.equal(wrong.status, 401, path);
  }
  const update = await callback("github", { setup_action: "update", installation_id: "7", state: (await authRequest()).state });
  assert.equal(update.status, 200);
});

test("setup_action=update without a state the control plane issued: refused as an unknown state, nothing logged as updated", async (t) => {
  const { authRequest, callback, authStatus, lines } = await setup(t);
  const { auth_id: authId } = await authRequest();
  const forged = `${authId}.${Buffer.alloc(32).toString("base64url")}`;
  for (const query of [
    { setup_action: "update", installation_id: "666" } as Record<string, string>,
    { setup_action: "update", installation_id: "666", state: forged },
    { setup_action: "update", installation_id: "666", state: "" },
  ]) {
    const answer = await callback("github", query);
    const body = (await answer.json()) as { status: string; error: string; error_description: string };
    assert.deepEqual([answer.status, body.status, body.error], [400, "failed", "invalid_state"], JSON.stringify(query));
    assert.match(body.error_description, /refused: it is not a state this control plane issued/);
  }
  const page = await (await callback("github", { setup_action: "update", installation_id: "666" }, BROWSER_ACCEPT)).text();
  assert.match(page, /<title>Installation failed<\/title>/);
  const messages = lines.map((line) => JSON.parse(line) as { msg: string; installationId?: number });
  assert.ok(!messages.some((m) => m.msg === "setup callback: installation updated"), "no update is logged");
  assert.ok(!messages.some((m) => m.installationId === 666), "the caller's installation id is not logged");
  assert.equal((await authStatus(authId)).status, "pending", "the real state is untouched");
});

test("setup_action=update with the state: a success page, the auth request completed, no token exchange; the state works once", async (t) => {
  const { authRequest, authStatus, callback, calls } = await setup(t);
  const first = await authRequest();
  const json = await callback("github", { setup_action: "update", installation_id: "42", state: first.state });
  assert.equal(json.status, 200);
  assert.match(json.headers.get("content-type")!, /^application\/json/);
  assert.deepEqual(await json.json(), { status: "updated", provider_id: "github", installation_id: 42 });
  assert.equal((await authStatus(first.auth_id)).status, "completed");
  const replay = await callback("github", { setup_action: "update", installation_id: "42", state: first.state });
  assert.equal(replay.status, 400);
  assert.match(((await replay.json()) as { error_description: string }).error_description, /already been used/);
  const { state } = await authRequest();
  const html = await callback("github", { setup_action: "update", installation_id: "42", code: "ignored", state }, BROWSER_ACCEPT);
  assert.equal(html.status, 200);
  assert.match(html.headers.get("content-type")!, /^text\/html/);
  const page = await html.text();
  assert.match(page, /<title>Installation updated<\/title>/);
  assert.match(page, /<meta name="referrer" content="no-referrer">/);
  assert.doesNotMatch(page, /<script/i);
  for (const answer of [json, html])
    assert.deepEqual([answer.headers.get("cache-control"), answer.headers.get("referrer-policy")], ["no-store", "no-referrer"]);
  assert.equal(calls.length, 0, "the provider's token endpoint saw nothing");
});

test("install: the state's code becomes a sealed token and an installation; the same state again is refused", async (t) => {
  const { api, authRequest, callback, authStatus, calls, db, dbPath, box } = await setup(t);
  const { auth_id, state } = await authRequest();
  const answer = await callback("github", { code: "code-123", state, installation_id: "42", setup_action: "install" });
  assert.equal(answer.status, 200);
  assert.deepEqual(await answer.json(), { status: "installed", provider_id: "github", installation_id: 42 });

  assert.equal(calls.length, 1);
  assert.deepEqual(Object.fromEntries(calls[0]!.form), {
    grant_type: "authorization_code",
    code: "code-123",
    client_id: "client-gh",
    client_secret: CLIENT_SECRET,
  });
  assert.match(calls[0]!.headers["content-type"]!, /^application\/x-www-form-urlencoded/);
  assert.equal(calls[0]!.headers.accept, "application/json");

  const completed = await authStatus(auth_id);
  assert.deepEqual([completed.status, completed.error], ["completed", null]);
  const listed = (await (await api("/v2/auth/installations")).json()) as { resources: Record<string, unknown>[]; offset: number };
  assert.equal(listed.resources.length, 1);
  assert.equal(listed.offset, 1, "the offset of the next page");
  const [installation] = listed.resources;
  assert.deepEqual(Object.keys(installation!).sort(), ["auth_id", "created_at", "id", "installation_id", "provider_id"]);
  assert.deepEqual([installation!.provider_id, installation!.installation_id, installation!.auth_id], ["github", 42, auth_id]);
  assert.deepEqual(
    await (await api("/v2/auth/installations?offset=1")).json(),
    { resources: [], offset: 1 },
    "past the last: empty, same offset",
  );
  assert.equal((await api("/v2/auth/installations?limit=0")).status, 422);

  // Sealed at rest: neither the database file nor its WAL holds the token; the box opens it.
  const stored = [dbPath, `${dbPath}-wal`]
    .filter(existsSync)
    .map((path) => readFileSync(path).toString("latin1"))
    .join("");
  assert.ok(stored.includes(auth_id), "the row is in the file");
  assert.ok(!stored.includes(ACCESS_TOKEN) && !stored.includes("refresh-NEVER-SHOWN"), "no token in plain text");
  assert.ok(!stored.includes(state.split(".")[1]!), "no state secret in plain text");
  const token = installationToken(db, box, installation!.id as string)!;
  assert.deepEqual([token.access_token, token.refresh_token, token.expires_at], [ACCESS_TOKEN, "refresh-NEVER-SHOWN", START + 3_600_000]);

  const again = await callback("github", { code: "code-123", state, installation_id: "42" }, BROWSER_ACCEPT);
  assert.equal(again.status, 400);
  const page = await again.text();
  assert.match(page, /<title>Installation failed<\/title>/);
  assert.match(page, /refused: it has already been used/);
  assert.equal(calls.length, 1, "no second exchange");
});

test("an install naming a recorded installation id is refused (409), its token kept; the secret may come from clientSecretFile", async (t) => {
  const { api, authRequest, authStatus, callback, calls, db, box } = await setup(t);
  const first = await authRequest("gitlab");
  assert.equal((await callback("gitlab", { code: "first", state: first.state, installation_id: "9" })).status, 200);
  assert.equal(calls[0]!.form.get("client_secret"), FILE_SECRET);
  assert.equal(calls[0]!.form.get("client_id"), "client-gl");
  const [installation] = ((await (await api("/v2/auth/installations")).json()) as { resources: { id: string }[] }).resources;

  // Someone holding a fresh state names installation 9: their token must not replace its own.
  const second = await authRequest("gitlab");
  const answer = await callback("gitlab", { code: "second", state: second.state, installation_id: "9" });
  const body = (await answer.json()) as { status: string; error: string; error_description: string };
  assert.deepEqual([answer.status, body.status, body.error], [409, "failed", "installation_exists"]);
  assert.match(body.error_description, /Installation 9 is already recorded/);
  assert.equal(calls.length, 1, "the second code is not exchanged");
  const failed = await authStatus(second.auth_id);
  assert.deepEqual([failed.status, failed.error], ["failed", "installation 9 is already recorded"]);
  const listed = (await (await api("/v2/auth/installations")).json()) as { resources: { id: string; auth_id: string }[] };
  assert.deepEqual(
    listed.resources.map((i) => [i.id, i.auth_id]),
    [[installation!.id, first.auth_id]],
  );
  assert.equal(installationToken(db, box, installation!.id)!.access_token, ACCESS_TOKEN);

  // The same id under another provider is another installation.
  const github = await authRequest("github");
  assert.equal((await callback("github", { code: "third", state: github.state, installation_id: "9" })).status, 200);
});

test("two installs of one new installation id at once: one recorded, the other refused (409)", async (t) => {
  const { api, authRequest, callback, calls, provider } = await setup(t);
  const held: (() => void)[] = [];
  provider.answer = (call, response) => held.push(() => grant(call, response));
  const [a, b] = [await authRequest(), await authRequest()];
  const both = [a, b].map(({ state }) => callback("github", { code: "c", state, installation_id: "77" }));
  await waitFor(() => held.length === 2, 10_000, "both exchanges under way");
  for (const release of held) release();
  const answers = await Promise.all(both);
  assert.deepEqual(answers.map((answer) => answer.status).sort(), [200, 409]);
  assert.equal(calls.length, 2);
  assert.equal(((await (await api("/v2/auth/installations")).json()) as { resources: unknown[] }).resources.length, 1);
});

test("refused states: unknown, another provider's, expired; and a redirect without code or state", async (t) => {
  const { authRequest, callback, authStatus, calls, clock } = await setup(t);
  const refusal = async (providerId: string, query: Record<string, string>) => {
    const answer = await callback(providerId, query);
    return [answer.status, (await answer.json()) as { status: string; error?: string; error_description?: string }] as const;
  };

  const { auth_id: authId, state } = await authRequest("github");
  const forged = `${authId}.${Buffer.alloc(32).toString("base64url")}`;
  for (const bad of ["nonsense", `${authId}`, forged, "00000000-0000-0000-0000-000000000000.abc"]) {
    const [status, body] = await refusal("github", { code: "c", state: bad });
    assert.deepEqual([status, body.status, body.error], [400, "failed", "invalid_state"], bad);
    assert.match(body.error_description!, /refused: it is not a state this control plane issued/);
  }
  const [otherStatus, other] = await refusal("gitlab", { code: "c", state });
  assert.equal(otherStatus, 400);
  assert.match(other.error_description!, /issued for another provider/);

  const [missingStatus, missing] = await refusal("github", { state });
  assert.deepEqual([missingStatus, missing.error], [400, "invalid_request"]);
  assert.equal((await refusal("github", { code: "c" }))[0], 400);
  assert.equal((await authStatus(authId)).status, "pending", "none of these used the state");

  clock.now += 15 * 60_000;
  const [expiredStatus, expired] = await refusal("github", { code: "c", state });
  assert.equal(expiredStatus, 400);
  assert.match(expired.error_description!, /refused: it has expired/);
  assert.equal((await authStatus(authId)).status, "expired");
  assert.equal(calls.length, 0);

  const [unknownStatus, unknown] = await refusal("bitbucket", { code: "c", state });
  assert.deepEqual([unknownStatus, unknown.error], [404, "unknown_provider"]);
});

test("two callbacks with one state at once: one exchange, one installation, the other refused", async (t) => {
  const { authRequest, callback, calls, provider } = await setup(t);
  // Each exchange is held until the other callback has its answer (or has begun an exchange too): the two overlap.
  const held: (() => void)[] = [];
  provider.answer = (call, response) => held.push(() => grant(call, response));
  const { state } = await authRequest();
  let answered = 0;
  const both = [callback("github", { code: "c", state }), callback("github", { code: "c", state })].map((answer) =>
    answer.finally(() => answered++),
  );
  await waitFor(() => answered === 1 || held.length === 2, 10_000, "one callback answered while the other's exchange is held");
  for (const release of held) release();
  const answers = await Promise.all(both);
  assert.deepEqual(answers.map((a) => a.status).sort(), [200, 400]);
  assert.equal(calls.length, 1);
});

test("a control plane started again fails the requests whose exchange it left unfinished; the late exchange records nothing", async (t) => {
  const { api, authRequest, callback, authStatus, calls, provider, deps, logger, lines } = await setup(t);
  let release!: () => void;
  provider.answer = (call, response) => (release = () => grant(call, response));
  const { auth_id, state } = await authRequest();
  const inFlight = callback("github", { code: "c", state, installation_id: "3" });
  await waitFor(() => calls.length > 0, 10_000, "the token exchange under way");

  registerAuthRoutes(new HttpServer({ logger, bodyLimit: { bytes: 1024 } }), deps); // as a restart over the same file does
  const interrupted = await authStatus(auth_id);
  assert.deepEqual([interrupted.status, interrupted.error], ["failed", "the control plane stopped during the token exchange"]);
  assert.ok(lines.some((line) => line.includes("interrupted during the token exchange")));

  release();
  const late = await inFlight;
  assert.equal(late.status, 409);
  assert.equal(((await late.json()) as { error: string }).error, "auth_request_closed");
  assert.equal(((await (await api("/v2/auth/installations")).json()) as { resources: unknown[] }).resources.length, 0);
});

test("the provider's error: a failure page naming it, escaped; a state that came with it fails its auth request", async (t) => {
  const { authRequest, callback, authStatus, calls } = await setup(t);
  const { auth_id, state } = await authRequest();
  const description = `The user <script>alert("x")</script> & denied 'it'`;
  const html = await callback("github", { error: "access_denied", error_description: description, state }, BROWSER_ACCEPT);
  assert.equal(html.status, 400);
  const page = await html.text();
  assert.match(page, /<title>Installation failed<\/title>/);
  assert.ok(page.includes("access_denied"));
  assert.ok(page.includes("The user &lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; denied &#39;it&#39;"), page);
  assert.ok(!page.includes("<script>"));
  const failed = await authStatus(auth_id);
  assert.deepEqual([failed.status, failed.error], ["failed", "the provider reported access_denied"]);

  // Without a state it issued (anyone can craft the URL): the error code only, never the query's free text.
  const phishing = "Your session expired: call +1 555 0100 or visit evil.example to restore access";
  const json = await callback("github", { error: "access_denied", error_description: phishing });
  assert.equal(json.status, 400);
  assert.deepEqual(await json.json(), {
    status: "failed",
    provider_id: "github",
    error: "access_denied",
    error_description: "The provider reported an error. Start the installation again.",
  });
  const forged = await callback(
    "github",
    { error: "Call 555 0100 now", error_description: phishing, state: "not-a-state" },
    BROWSER_ACCEPT,
  );
  const forgedPage = await forged.text();
  assert.ok(!forgedPage.includes("555") && !forgedPage.includes("evil.example"), forgedPage);
  assert.ok(forgedPage.includes("provider_error"));
  assert.equal(calls.length, 0);
});

test("the token endpoint failing: 502, the auth request failed, nothing the provider sent is shown", async (t) => {
  const { authRequest, callback, authStatus, provider } = await setup(t, { exchangeTimeoutMs: 200 });
  const failing: [string, TokenAnswer, RegExp][] = [
    [
      "HTTP 500",
      (_call, response) => {
        response.writeHead(500, { "content-type": "application/json" });
        response.end(JSON.stringify({ error: "server_error", error_description: `bad ${CLIENT_SECRET}` }));
      },
      /answered HTTP 500 \(error server_error\)/,
    ],
    [
      "200 without a token",
      (_call, response) => {
        response.writeHead(200, { "content-type": "application/json" });
        response.end(JSON.stringify({ error: "bad_verification_code", error_description: "The code passed is incorrect or expired." }));
      },
      /has no access_token \(error bad_verification_code\)/,
    ],
    [
      "not JSON",
      (_call, response) => {
        response.writeHead(200, { "content-type": "application/x-www-form-urlencoded" });
        response.end(`access_token=${ACCESS_TOKEN}&token_type=bearer`);
      },
      /not a JSON object/,
    ],
    [
      "a chunked answer past 64 KiB (no Content-Length): read no further",
      (_call, response) => {
        response.writeHead(200, { "content-type": "application/json" });
        // Chunked, and endless: only the bound stops the read (before, 3.2 GB of RSS in one callback).
        const chunk = Buffer.alloc(16 * 1024, 0x20);
        const pump = () => {
          while (!response.destroyed && response.write(chunk));
          if (!response.destroyed) response.once("drain", pump);
        };
        response.on("error", () => {});
        pump();
      },
      /larger than 65536 bytes/,
    ],
    [
      "a trickle that never ends",
      (_call, response) => {
        response.writeHead(200, { "content-type": "application/json" });
        response.write("{");
        const timer = setInterval(() => response.destroyed || response.write(" "), 20);
        response.on("close", () => clearInterval(timer));
      },
      /did not answer within 200 ms/,
    ],
    ["no answer", () => {}, /did not answer within 200 ms/],
    ["connection dropped", (_call, response) => response.socket?.destroy(), /could not be reached/],
  ];
  for (const [name, answer, reason] of failing) {
    provider.answer = answer;
    const { auth_id, state } = await authRequest();
    const response = await callback("github", { code: "c", state, installation_id: "5" });
    assert.equal(response.status, 502, name);
    const body = (await response.json()) as { status: string; error: string; error_description: string };
    assert.deepEqual([body.status, body.error], ["failed", "token_exchange_failed"], name);
    assert.match(body.error_description, reason, name);
    assert.ok(!JSON.stringify(body).includes(CLIENT_SECRET) && !JSON.stringify(body).includes(ACCESS_TOKEN), name);
    const status = await authStatus(auth_id);
    assert.equal(status.status, "failed", name);
    assert.match(status.error!, reason, name);
  }
});

test("an installation_id that is not an integer is a 422 HTTPValidationError at ['query','installation_id']", async (t) => {
  const { base, callback } = await setup(t);
  for (const bad of ["abc", "", "1.5", "0x10", "1e3"]) {
    const answer = await callback("github", { setup_action: "update", installation_id: bad });
    assert.equal(answer.status, 422, bad);
    const body = (await answer.json()) as { detail: { loc: unknown[]; msg: string }[] };
    assert.deepEqual(
      body.detail.map((d) => d.loc),
      [["query", "installation_id"]],
      bad,
    );
  }
  const repeated = await fetch(`${base}/v2/auth/setup/github?code=a&code=b`);
  assert.equal(repeated.status, 422);
});

test("HTML or JSON by Accept", () => {
  assert.equal(prefersHtml(undefined), false);
  assert.equal(prefersHtml("*/*"), false);
  assert.equal(prefersHtml("application/json"), false);
  assert.equal(prefersHtml("application/json, text/html;q=0.5"), false);
  assert.equal(prefersHtml("text/html;q=0, */*"), false);
  assert.equal(prefersHtml(BROWSER_ACCEPT), true);
  assert.equal(prefersHtml("text/html"), true);
  assert.equal(prefersHtml("text/*"), true);
});

test("the client secret, the code, the state and the tokens never reach the log", async (t) => {
  const { authRequest, callback, provider, lines } = await setup(t);
  const { state } = await authRequest();
  await callback("github", { code: "code-SECRET-1", state, installation_id: "1" });
  await callback("github", { code: "code-SECRET-2", state }); // refused: used
  provider.answer = (_call, response) => {
    response.writeHead(401, { "content-type": "application/json" });
    response.end(
      JSON.stringify({ error: "invalid_client", error_description: `client_secret ${CLIENT_SECRET} is wrong`, access_token: ACCESS_TOKEN }),
    );
  };
  const second = await authRequest();
  assert.equal((await callback("github", { code: "code-SECRET-3", state: second.state })).status, 502);
  await callback("github", { error: "access_denied", state: (await authRequest()).state });

  const log = lines.join("");
  const messages = lines.map((line) => (JSON.parse(line) as { msg: string }).msg);
  assert.ok(messages.includes("setup callback: installation recorded"));
  assert.ok(messages.includes("setup callback: token exchange failed"));
  assert.ok(messages.includes("setup callback: state refused"));
  for (const secret of [
    CLIENT_SECRET,
    ACCESS_TOKEN,
    "refresh-NEVER-SHOWN",
    "code-SECRET",
    state.split(".")[1]!,
    second.state.split(".")[1]!,
  ]) {
    assert.ok(!log.includes(secret), `the log holds ${secret}`);
  }
});
