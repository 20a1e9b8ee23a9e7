import assert from "node:assert/strict";
import { request as httpRequest } from "node:http";
import { test } from "node:test";
import pino from "pino";
import { Answer, EventStream } from "../../src/http/exchange.ts";
import { HttpServer } from "../../src/http/server.ts";
import { waitFor } from "../helpers/processes.ts";

// The local API's and the beacon's HTTP server, on a loopback port: what its routes' users see beyond the bad-input
// suite (which runs against the real processes): stopping, HEAD, failures and the per-request report.

function server() {
  const lines: Record<string, unknown>[] = [];
  const logger = pino({ level: "info" }, { write: (line: string) => void lines.push(JSON.parse(line)) });
  return { app: new HttpServer({ logger, bodyLimit: { bytes: 1024 } }), lines };
}

/** One raw request; resolves with status, headers and body text. */
function call(url: string, method = "GET", body?: string) {
  return new Promise<{ status: number; headers: Record<string, unknown>; text: string }>((resolve, reject) => {
    const request = httpRequest(url, { method, headers: body ? { "content-type": "application/json" } : {} }, (response) => {
      let text = "";
      response.on("data", (chunk) => (text += chunk));
      response.on("end", () => resolve({ status: response.statusCode!, headers: response.headers, text }));
    });
    request.on("error", reject);
    request.end(body);
  });
}

test("stopping: a request in flight is answered (closing its connection), later connections are refused", async () => {
  const { app } = server();
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  let arrived!: () => void;
  const handling = new Promise<void>((resolve) => (arrived = resolve));
  app.get("/slow", async () => {
    arrived();
    await held;
    return { done: true };
  });
  const url = await app.listen({ host: "127.0.0.1", port: 0 });
  const inFlight = call(`${url}/slow`);
  await handling;
  let closed = false;
  const closing = app.close().then(() => (closed = true));
  await assert.rejects(call(`${url}/slow`), { code: "ECONNREFUSED" });
  assert.equal(closed, false, "close() waits for the request in flight");
  release();
  const answer = await inFlight;
  assert.deepEqual([answer.status, JSON.parse(answer.text), answer.headers.connection], [200, { done: true }, "close"]);
  await closing;
});

test("HEAD answers a GET route's headers without its body; another method on that path is 404", async (t) => {
  const { app } = server();
  app.get("/metrics", () => new Answer(200, "egress_up 1\n", "text/plain; version=0.0.4"));
  const url = await app.listen({ host: "127.0.0.1", port: 0 });
  t.after(() => app.close());
  const head = await call(`${url}/metrics`, "HEAD");
  assert.deepEqual(
    [head.status, head.headers["content-type"], head.headers["content-length"], head.text],
    [200, "text/plain; version=0.0.4", "12", ""],
  );
  const get = await call(`${url}/metrics`);
  assert.equal(get.text, "egress_up 1\n");
  const post = await call(`${url}/metrics`, "POST", "{}");
  assert.deepEqual([post.status, JSON.parse(post.text)], [404, { detail: "no route POST /metrics", code: "EGRESS_ERR_NOT_FOUND" }]);
});

test("a handler's own failure is a 500 without internals, logged with the request's id; the report names the route", async (t) => {
  const { app, lines } = server();
  const served: unknown[] = [];
  app.onResponse = ({ route, method, status }) => served.push({ route, method, status });
  app.post("/v1/things", () => {
    throw new Error("secret internals at /var/lib/x");
  });
  const url = await app.listen({ host: "127.0.0.1", port: 0 });
  t.after(() => app.close());
  const answer = await call(`${url}/v1/things`, "POST", "{}");
  assert.equal(answer.status, 500);
  assert.deepEqual(JSON.parse(answer.text), { detail: "internal error; see the server log", code: "EGRESS_ERR_INTERNAL" });
  const logged = lines.find((line) => line.msg === "request failed");
  assert.ok(logged && typeof logged.reqId === "number" && JSON.stringify(logged.err).includes("secret internals"));
  await call(`${url}/nowhere`);
  assert.deepEqual(served, [
    { route: "/v1/things", method: "POST", status: 500 },
    { route: "unmatched", method: "GET", status: 404 },
  ]);
});

test("{name} path segments match one segment each and reach the handler decoded", async (t) => {
  const { app } = server();
  app.get("/a2a/{id}/card", (request) => ({ id: request.params.id }));
  const url = await app.listen({ host: "127.0.0.1", port: 0 });
  t.after(() => app.close());
  assert.deepEqual(JSON.parse((await call(`${url}/a2a/my%20agent/card`)).text), { id: "my agent" });
  assert.equal((await call(`${url}/a2a/card`)).status, 404);
  assert.equal((await call(`${url}/a2a/x/y/card`)).status, 404);
  assert.equal((await call(`${url}/a2a/%E0%A4%A/card`)).status, 404, "a malformed escape matches nothing");
});

test("an EventStream answer sends each event as it is produced, and stops producing when the client goes away", async (t) => {
  const { app } = server();
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  let ended = false;
  app.get(
    "/events",
    () =>
      new EventStream(
        (async function* () {
          try {
            yield { n: 1 };
            await held;
            yield { n: 2 };
          } finally {
            ended = true;
          }
        })(),
      ),
  );
  const url = await app.listen({ host: "127.0.0.1", port: 0 });
  t.after(() => app.close());
  const first = await new Promise<string>((resolve, reject) => {
    const request = httpRequest(`${url}/events`, (response) => {
      assert.equal(response.headers["content-type"], "text/event-stream");
      response.once("data", (chunk) => {
        resolve(String(chunk));
        request.destroy();
      });
    });
    request.on("error", (err) => (err.message === "socket hang up" ? undefined : reject(err)));
    request.end();
  });
  assert.equal(first, 'data: {"n":1}\n\n', "the first event arrived before the second was produced");
  release();
  await waitFor(() => ended, 5_000, "the producer to end once the client is gone");
  const whole = await call(`${url}/events`);
  assert.equal(whole.text, 'data: {"n":1}\n\ndata: {"n":2}\n\n');
});

test("a quiet route (a health check) is left out of the request log when it succeeds, kept when it fails", async (t) => {
  const lines: Record<string, unknown>[] = [];
  const logger = pino({ level: "info" }, { write: (line: string) => void lines.push(JSON.parse(line)) });
  const app = new HttpServer({ logger, bodyLimit: { bytes: 1024 }, logRequests: true });
  let healthy = true;
  app.get("/healthz", () => (healthy ? { status: "ok" } : new Answer(503, { status: "down" })), { quiet: true });
  app.get("/other", () => ({}));
  const url = await app.listen({ host: "127.0.0.1", port: 0 });
  t.after(() => app.close());
  for (let i = 0; i < 3; i++) await call(`${url}/healthz`);
  await call(`${url}/other`);
  healthy = false;
  await call(`${url}/healthz`);
  const logged = lines.filter((line) => line.msg === "request completed").map((line) => `${line.url} ${line.statusCode}`);
  assert.deepEqual(logged, ["/other 200", "/healthz 503"]);
});

test("a handler sees the peer's address, and a form body read raw; a 303 with Set-Cookie goes out as given", async (t) => {
  const { app } = server();
  app.post(
    "/form",
    (request) => {
      const form = new URLSearchParams((request.body as Buffer).toString("utf8"));
      return new Answer(303, "", "text/plain", {
        location: `/done?from=${request.remoteAddress}`,
        "set-cookie": `k=${form.get("k")}; HttpOnly`,
      });
    },
    { body: { raw: ["application/x-www-form-urlencoded"] } },
  );
  const url = await app.listen({ host: "127.0.0.1", port: 0 });
  t.after(() => app.close());
  const answer = await fetch(`${url}/form`, { method: "POST", body: new URLSearchParams({ k: "a b&c" }), redirect: "manual" });
  assert.equal(answer.status, 303);
  assert.equal(answer.headers.get("location"), "/done?from=127.0.0.1");
  assert.equal(answer.headers.get("set-cookie"), "k=a b&c; HttpOnly");
});
