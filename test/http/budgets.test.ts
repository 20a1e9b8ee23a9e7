import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { join } from "node:path";
import { test } from "node:test";
import fc from "fast-check";
import pino from "pino";
import { ExactJsonCounter, JsonItemCounter } from "../../src/http/body.ts";
import { BodyBudget } from "../../src/http/budget.ts";
import { HttpError } from "../../src/errors.ts";
import { Answer } from "../../src/http/exchange.ts";
import { connectionCap, defaultHttpLimits, type HttpLimits } from "../../src/http/limits.ts";
import { HttpServer } from "../../src/http/server.ts";
import { tempDir, waitFor } from "../helpers/processes.ts";

// The HTTP server's budgets on a loopback port: connections (cap, reserve, eviction of idle ones, first-request
// timeout), body items and bytes in flight, and answers that cannot be written.

function server(limits: Partial<HttpLimits> = {}) {
  const lines: Record<string, unknown>[] = [];
  const logger = pino({ level: "info" }, { write: (line: string) => void lines.push(JSON.parse(line)) });
  const app = new HttpServer({ logger, bodyLimit: { bytes: 1024 * 1024 }, limits: { ...defaultHttpLimits, ...limits }, limitsKey: "http" });
  return { app, lines };
}

function openSocket(url: string): Promise<Socket> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => resolve(socket));
    socket.on("error", reject);
    // Read what the server may send before it closes (Node's own timeout checker answers 408 first, where our
    // first-request timer just closes): an unread answer would hold back the socket's "close".
    socket.resume();
  });
}

const closed = (socket: Socket) => new Promise<void>((resolve) => (socket.destroyed ? resolve() : socket.once("close", () => resolve())));

test("JSON items are counted outside strings, whatever the chunking; the quick count is exact once past the limit", () => {
  const json = fc.jsonValue({ maxDepth: 6 }).map((value) => JSON.stringify(value));
  fc.assert(
    fc.property(json, fc.array(fc.nat(), { maxLength: 8 }), fc.nat({ max: 20 }), (text, cuts, max) => {
      let expected = 0;
      const walk = (node: unknown): void => {
        if (node === null || typeof node !== "object") return;
        expected++;
        for (const child of Object.values(node)) walk(child);
      };
      walk(JSON.parse(text));
      const bytes = Buffer.from(text);
      const points = [...new Set(cuts.map((cut) => cut % (bytes.length + 1)))].sort((a, b) => a - b);
      const exact = new ExactJsonCounter();
      const quick = new JsonItemCounter();
      let from = 0;
      for (const point of [...points, bytes.length]) {
        exact.push(bytes.subarray(from, point));
        quick.push(bytes.subarray(from, point), max, () => [bytes.subarray(0, from)]);
        from = point;
      }
      assert.equal(exact.count, expected, text);
      // Below the limit the quick count may include brackets inside strings; past it, it is the exact count.
      if (quick.count > max) assert.equal(quick.count, expected, text);
      else assert.ok(quick.count >= expected && expected <= max, text);
    }),
    { numRuns: 500 },
  );
  // Brackets in strings, escaped quotes and a backslash split across chunks do not count.
  const tricky = Buffer.from(String.raw`{"a":"[{\"\\","b":["x\\\"{"]}`);
  for (let cut = 0; cut <= tricky.length; cut++) {
    const exact = new ExactJsonCounter();
    exact.push(tricky.subarray(0, cut));
    assert.equal(exact.push(tricky.subarray(cut)), 2, `cut at ${cut}`);
    const quick = new JsonItemCounter();
    quick.push(tricky.subarray(0, cut), 1, () => []);
    assert.equal(
      quick.push(tricky.subarray(cut), 1, () => [tricky.subarray(0, cut)]),
      2,
      `quick, cut at ${cut}`,
    );
  }
});

test("a body of more items than http.bodyItems is refused with 413 naming the key, before the handler runs", async (t) => {
  const { app } = server({ bodyItems: 1000 });
  let handled = 0;
  app.post("/in", () => ({ handled: ++handled }));
  const url = await app.listen({ host: "127.0.0.1", port: 0 });
  t.after(() => app.close());
  const post = (body: string) => fetch(`${url}/in`, { method: "POST", headers: { "content-type": "application/json" }, body });
  const many = await post(`[${"[],".repeat(1000)}[]]`);
  assert.equal(many.status, 413);
  assert.match(((await many.json()) as { detail: string }).detail, /more than 1000 objects, arrays or messages \(http\.bodyItems\)/);
  const enough = await post(`[${"[],".repeat(998)}[]]`);
  assert.equal(enough.status, 200);
  assert.equal(handled, 1);
});

test("bodies in flight over http.bodyBytesInFlight: the surplus gets 503 with Retry-After; a lone large body passes", async (t) => {
  const { app } = server({ bodyBytesInFlight: 256 * 1024 });
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  app.post("/hold", async () => {
    await held;
    return { ok: true };
  });
  app.post("/in", () => ({ ok: true }));
  const url = await app.listen({ host: "127.0.0.1", port: 0 });
  // Released before the server closes, whatever failed: close() waits for the held request.
  t.after(async () => {
    release();
    await app.close();
  });
  const body = JSON.stringify({ padding: "x".repeat(200 * 1024) });
  const post = (path: string, text = body) =>
    fetch(`${url}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: text });
  // Alone, a body larger than the budget still gets through.
  assert.equal((await post("/in", JSON.stringify({ padding: "x".repeat(600 * 1024) }))).status, 200);
  const holding = post("/hold");
  await waitFor(() => app.load.bodyBytes >= 200 * 1024, 10_000, "the held body is charged");
  const refused = await post("/in");
  assert.equal(refused.status, 503);
  assert.equal(refused.headers.get("retry-after"), "1");
  assert.match(((await refused.json()) as { detail: string }).detail, /http\.bodyBytesInFlight/);
  assert.equal((await post("/in", "{}")).status, 200, "a small body fits beside the held one");
  release();
  assert.equal((await holding).status, 200);
  assert.equal(app.load.bodyBytes, 0, "answered bodies give their bytes back");
  // A body is charged what it has sent, never its declared length: a slow sender holds no room it has not used.
  const slow = await openSocket(url);
  slow.write(`POST /in HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${250 * 1024}\r\n\r\n{"a":`);
  await waitFor(() => app.load.bodyBytes === 5, 10_000, "the 5 bytes sent are charged");
  assert.equal((await post("/in")).status, 200, "a declared 250 KiB reserves nothing: another large body fits");
  slow.write(`"${"x".repeat(100 * 1024)}`);
  await waitFor(() => app.load.bodyBytes === 5 + 1 + 100 * 1024, 10_000, "what it sends next is charged as it comes");
  assert.equal(app.load.bodyBytes, 5 + 1 + 100 * 1024, "and nothing more");
  assert.equal((await post("/in")).status, 503, "what it has sent counts against the others");
  slow.destroy();
  await waitFor(() => app.load.bodyBytes === 0, 10_000, "a body cut short gives its bytes back");
  assert.equal((await post("/in")).status, 200);
});

test("budget classes: bodies of one class never take another's room; a route may take a smaller body limit", async (t) => {
  const { app } = server({ bodyBytesInFlight: 64 * 1024, bodyBudgets: { billing: 64 * 1024, anonymous: 64 * 1024 } });
  const byHeader = (request: { headers: Record<string, unknown> }) => (request.headers["x-token"] ? "billing" : "anonymous");
  app.post("/telemetry", () => ({ ok: true }));
  app.post("/billing", () => ({ ok: true }), { budget: byHeader });
  app.post("/small", () => ({ ok: true }), { budget: "billing", bodyLimit: { bytes: 100 } });
  assert.throws(() => app.post("/x", () => ({}), { budget: "nonesuch" }), /budget class "nonesuch"/);
  const url = await app.listen({ host: "127.0.0.1", port: 0 });
  const sockets: Socket[] = [];
  t.after(async () => {
    for (const socket of sockets) socket.destroy();
    await app.close();
  });
  /** A body that stops after `sent` of its declared 1 MiB: it holds `sent` bytes until the test's end. */
  const hold = async (path: string, sent: number, headers = "") => {
    const socket = await openSocket(url);
    sockets.push(socket);
    socket.write(`POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n${headers}Content-Length: ${1024 * 1024}\r\n\r\n`);
    socket.write(`"${"x".repeat(sent - 1)}`);
  };
  const post = (path: string, body: string, headers: Record<string, string> = {}) =>
    fetch(`${url}${path}`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body });
  const batch = JSON.stringify({ padding: "x".repeat(16 * 1024) });
  await hold("/telemetry", 60 * 1024);
  await hold("/billing", 60 * 1024); // no token: the anonymous budget
  await waitFor(() => app.load.bodyBytesByBudget.shared === 60 * 1024 && app.load.bodyBytesByBudget.anonymous === 60 * 1024);
  assert.equal((await post("/telemetry", batch)).status, 503, "the shared budget is full");
  assert.equal((await post("/billing", batch)).status, 503, "so is the anonymous one");
  assert.equal((await post("/billing", batch, { "x-token": "1" })).status, 200, "billing has its own room");
  assert.deepEqual(app.load.bodyBytesByBudget, { shared: 60 * 1024, billing: 0, anonymous: 60 * 1024 });
  const small = await post("/small", JSON.stringify({ padding: "x".repeat(100) }));
  assert.equal(small.status, 413, "the route's own limit");
  assert.match(((await small.json()) as { detail: string }).detail, /100-byte limit/);
});

test("a body that sends nothing for http.bodyIdleTimeout is cut off with 408 and gives its bytes back; a small-body route's whole body must come within it", async (t) => {
  const { app } = server({ bodyIdleTimeoutMs: 400, bodyBudgets: { small: 64 * 1024 } });
  app.post("/in", () => ({ ok: true }));
  app.post("/small", () => ({ ok: true }), { budget: "small", bodyLimit: { bytes: 4096 } });
  const url = await app.listen({ host: "127.0.0.1", port: 0 });
  t.after(() => app.close());
  /** Sends `pieces` body pieces `everyMs` apart, of a body declaring more; the answer's head and when it came. */
  const trickle = async (path: string, pieces: string[], everyMs: number) => {
    const socket = await openSocket(url);
    let answer = "";
    socket.on("data", (chunk) => (answer += chunk));
    const started = Date.now();
    socket.write(`POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 4000\r\n\r\n`);
    for (const piece of pieces) {
      if (answer) break;
      socket.write(piece);
      await new Promise((resolve) => setTimeout(resolve, everyMs));
    }
    await closed(socket);
    return { head: answer.split("\r\n\r\n", 1)[0]!, afterMs: Date.now() - started, body: answer.split("\r\n\r\n")[1] ?? "" };
  };
  // A byte every 100 ms keeps a body alive; silence after 3,000 bytes ends it.
  const stalled = await trickle("/in", ["{", ..."x".repeat(10), "y".repeat(3000)], 100);
  assert.match(stalled.head, /^HTTP\/1\.1 408 .*\r\nconnection: close/is, stalled.head);
  assert.match(stalled.body, /400 ms \(http\.bodyIdleTimeout\).*"code":"EGRESS_ERR_BODY_TIMEOUT"/);
  assert.ok(stalled.afterMs >= 1_000 + 400, `not before the silence lasted the timeout (${stalled.afterMs} ms)`);
  assert.equal(app.load.bodyBytes, 0, "its 3,011 bytes are given back");
  // On a route for small bodies the whole body must arrive within the timeout: a trickle is cut off.
  const slowSmall = await trickle("/small", Array(40).fill("x"), 50);
  assert.match(slowSmall.head, /^HTTP\/1\.1 408 /, slowSmall.head);
  assert.ok(slowSmall.afterMs < 1_500, `cut off at the timeout, trickle or not (${slowSmall.afterMs} ms)`);
  assert.equal(app.load.bodyBytes, 0);
});

test("connections: at the cap the oldest idle one is closed for a new one; in the reserve only reserved routes answer", async (t) => {
  const { app } = server({ maxConnections: 20, reservedConnections: 5 });
  app.get("/healthz", () => ({ status: "ok" }), { reserved: true });
  // Reserved or not by who sent it, decided after `authorize`.
  app.get("/billing", () => ({ billing: true }), {
    authorize: (request) => {
      if (request.headers["x-token"] === "bad") throw new HttpError("EGRESS_ERR_TOKEN_INVALID", "bad token");
    },
    reserved: (request) => request.headers["x-token"] === "good",
  });
  app.get("/other", () => ({ other: true }));
  const url = await app.listen({ host: "127.0.0.1", port: 0 });
  t.after(() => app.close());
  const idle: Socket[] = [];
  t.after(() => {
    for (const socket of idle) socket.destroy();
  });
  for (let i = 0; i < 17; i++) idle.push(await openSocket(url));
  await waitFor(() => app.load.open === 17, 10_000, "17 connections open");
  // 17 open of 20 with 5 reserved: only reserved routes are served (fetch's own connection makes 18).
  const other = await fetch(`${url}/other`, { headers: { connection: "close" } });
  assert.deepEqual([other.status, other.headers.get("retry-after")], [503, "1"]);
  assert.equal((await fetch(`${url}/healthz`, { headers: { connection: "close" } })).status, 200);
  const billing = (token: string) => fetch(`${url}/billing`, { headers: { connection: "close", "x-token": token } });
  assert.equal((await billing("good")).status, 200, "reserved for this sender");
  assert.equal((await billing("none")).status, 503, "not for that one");
  assert.equal((await billing("bad")).status, 401, "credentials are checked before the reserve");
  // Past the cap: each new connection closes the oldest idle one, never refusing the newcomer.
  for (let i = 0; i < 10; i++) idle.push(await openSocket(url));
  await closed(idle[0]!);
  await waitFor(() => app.load.open === 20 && app.load.evicted >= 7, 10_000, "the cap held by closing the oldest");
  assert.ok(app.load.evicted >= 7, `oldest idle connections closed (${app.load.evicted})`);
  assert.equal(idle[0]!.destroyed, true, "the oldest went first");
  assert.equal(idle.at(-1)!.destroyed, false, "the newest stays");
  assert.equal((await fetch(`${url}/healthz`, { headers: { connection: "close" } })).status, 200, "health still answers");
});

test("a connection that sends nothing is closed after http.headersTimeout; one with a request in progress is not", async (t) => {
  const { app } = server({ headersTimeoutMs: 1000, requestTimeoutMs: 10_000 });
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  app.get("/slow", async () => {
    await held;
    return { ok: true };
  });
  const url = await app.listen({ host: "127.0.0.1", port: 0 });
  t.after(async () => {
    release();
    await app.close();
  });
  const silent = await openSocket(url);
  const started = Date.now();
  const slow = fetch(`${url}/slow`);
  await closed(silent);
  assert.ok(Date.now() - started >= 900, "closed after the timeout, not before");
  // Not a wait for an event: the behaviour is that nothing cuts the request in progress over another timeout's length.
  await new Promise((resolve) => setTimeout(resolve, 1_200));
  release();
  assert.equal((await slow).status, 200, "a request in progress outlives the first-request timeout");
});

test("an answer that cannot be written (a BigInt, a bad header) is a logged 500, never an unhandled rejection", async (t) => {
  const { app, lines } = server();
  app.get("/bigint", () => ({ count: 1n }));
  app.get("/header", () => new Answer(200, { ok: true }, undefined, { "x-bad": "line\nbreak" }));
  const url = await app.listen({ host: "127.0.0.1", port: 0 });
  t.after(() => app.close());
  for (const path of ["/bigint", "/header"]) {
    const response = await fetch(`${url}${path}`);
    assert.equal(response.status, 500, path);
    assert.deepEqual(await response.json(), { detail: "internal error; see the server log", code: "EGRESS_ERR_INTERNAL" });
  }
  assert.equal(lines.filter((line) => line.msg === "request failed").length, 2);
});

test("maxConnections never exceeds the process's open-file limit, less what it needs besides", () => {
  const limits = join(tempDir("limits-"), "limits");
  writeFileSync(
    limits,
    "Limit                     Soft Limit           Hard Limit           Units\nMax open files            1024                 4096                 files\n",
  );
  assert.equal(connectionCap(4096, limits), 1024 - 128);
  assert.equal(connectionCap(512, limits), 512);
  writeFileSync(limits, "Max open files            unlimited            unlimited            files\n");
  assert.equal(connectionCap(4096, limits), 4096);
  assert.equal(connectionCap(4096, "/nonexistent"), 4096, "no /proc: the configured value");
});

test("BodyBudget: a lone request may take more than the budget; others wait their turn; release gives back", () => {
  const budget = new BodyBudget(100, "http.bodyBytesInFlight");
  const a = budget.open();
  a.charge(150);
  const b = budget.open();
  assert.throws(() => b.charge(1), { statusCode: 503 });
  a.release();
  b.charge(60);
  assert.equal(budget.held, 60);
  const c = budget.open();
  c.charge(40);
  assert.throws(() => c.charge(1), /over 100 bytes, http\.bodyBytesInFlight/);
  b.release();
  c.release();
  assert.equal(budget.held, 0);
});
