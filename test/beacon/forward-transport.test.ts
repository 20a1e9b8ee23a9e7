import assert from "node:assert/strict";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { after, test } from "node:test";
import { gunzipSync } from "node:zlib";
import { classifyResult } from "../../src/beacon/forward/outcome.ts";
import { OtlpHttpTransport, parseRetryAfter } from "../../src/beacon/forward/transport.ts";
import { NOWHERE } from "../helpers/processes.ts";

// The forwarder's transport alone, against a loopback server answering as a hostile or misplaced collector would.

let handler: (request: IncomingMessage, body: Buffer, response: ServerResponse) => void = () => {};
const server = createServer((request, response) => {
  const chunks: Buffer[] = [];
  request.on("data", (chunk: Buffer) => chunks.push(chunk));
  request.on("end", () => handler(request, Buffer.concat(chunks), response));
});
await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}/otlp`;
after(() => {
  server.closeAllConnections();
  server.close();
});

const transport = (to = endpoint) =>
  new OtlpHttpTransport({ endpoint: to, headers: { Authorization: "Bearer collector-s3cret" }, timeoutMs: 2_000 });
const send = (to?: string) => transport(to).send("logs", { resourceLogs: [] }, new AbortController().signal);

test("a request is OTLP/HTTP JSON, gzipped, to <endpoint>/v1/<signal>, with the configured headers", async () => {
  let seen: { url?: string; headers?: IncomingMessage["headers"]; body?: unknown } = {};
  handler = (request, body, response) => {
    seen = { url: request.url, headers: request.headers, body: JSON.parse(gunzipSync(body).toString()) };
    response.writeHead(200, { "content-type": "application/json" }).end('{"partialSuccess":{"rejectedLogRecords":"2"}}');
  };
  const result = await send();
  assert.deepEqual(classifyResult(result), { kind: "delivered", rejectedItems: 2 });
  assert.equal(seen.url, "/otlp/v1/logs");
  assert.equal(seen.headers!.authorization, "Bearer collector-s3cret");
  assert.deepEqual([seen.headers!["content-type"], seen.headers!["content-encoding"]], ["application/json", "gzip"]);
  assert.deepEqual(seen.body, { resourceLogs: [] });
});

test("an endless answer is cut at 1 MiB and is a failed attempt; a redirect is not followed; neither is a delivery", async () => {
  handler = (_request, _body, response) => {
    response.writeHead(200, { "content-type": "application/json" });
    const chunk = Buffer.alloc(64 * 1024, 0x20);
    const pump = () => {
      while (response.write(chunk)) if (response.destroyed) return;
      response.once("drain", pump);
    };
    pump();
  };
  const endless = await send();
  assert.equal(endless.kind, "unreachable");
  assert.match((endless as { reason: string }).reason, /larger than 1 MiB/);

  handler = (_request, _body, response) => response.writeHead(302, { location: "https://login.example/" }).end();
  const redirected = classifyResult(await send());
  assert.equal(redirected.kind, "retry");
  assert.equal((redirected as { label: string }).label, "3xx");
});

test("a refused connection is a retry whose reason names the system error, never the URL or a header", async () => {
  const result = classifyResult(await send(NOWHERE));
  assert.equal(result.kind, "retry");
  assert.equal((result as { reason: string }).reason, "the collector could not be reached (ECONNREFUSED)");
});

test("Retry-After in seconds or as an HTTP date", () => {
  const now = Date.parse("2026-11-27T00:00:00Z");
  assert.equal(parseRetryAfter("120", now), 120_000);
  assert.equal(parseRetryAfter("Fri, 27 Nov 2026 00:01:00 GMT", now), 60_000);
  assert.equal(parseRetryAfter("soon", now), undefined);
  assert.equal(parseRetryAfter(null, now), undefined);
});
