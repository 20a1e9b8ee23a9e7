import assert from "node:assert/strict";
import { createHash, randomBytes } from "node:crypto";
import { request as httpRequest } from "node:http";
import { setTimeout as sleep } from "node:timers/promises";
import { test } from "node:test";
import { deflateSync, gzipSync } from "node:zlib";
import pino from "pino";
import { BodyBytes } from "../../src/http/body-bytes.ts";
import { defaultHttpLimits } from "../../src/http/limits.ts";
import { HttpServer } from "../../src/http/server.ts";

// A body reaches its route whole and in order however it comes: in one chunk or many, with its length declared or
// chunked without one, compressed and inflated into many pieces; and a JSON body's items are counted exactly when the
// quick count must read again what already arrived.

const sha = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");

async function echoServer(bodyItems = defaultHttpLimits.bodyItems) {
  const app = new HttpServer({
    logger: pino({ level: "silent" }),
    bodyLimit: { bytes: 4 * 1024 * 1024 },
    limits: { ...defaultHttpLimits, bodyItems },
  });
  app.post("/raw", (request) => ({ bytes: (request.body as Buffer).length, sha: sha(request.body as Buffer) }), {
    body: { raw: ["application/octet-stream"] },
  });
  app.post("/json", (request) => ({ keys: Object.keys(request.body as object) }));
  return { app, url: await app.listen({ host: "127.0.0.1", port: 0 }) };
}

/** Sends `pieces` one by one, a few ms apart (each its own chunk at the server), with `headers` (Content-Length or none). */
function send(url: string, pieces: Buffer[], headers: Record<string, string | number>) {
  return new Promise<{ status: number; body: any }>((resolve, reject) => {
    const request = httpRequest(url, { method: "POST", headers }, (response) => {
      let text = "";
      response.on("data", (chunk) => (text += chunk));
      response.on("end", () => resolve({ status: response.statusCode!, body: JSON.parse(text) }));
    });
    request.on("error", reject);
    (async () => {
      for (const piece of pieces) {
        request.write(piece);
        await sleep(2);
      }
      request.end();
    })();
  });
}

const split = (bytes: Buffer, parts: number) =>
  Array.from({ length: parts }, (_, i) =>
    bytes.subarray(Math.floor((i * bytes.length) / parts), Math.floor(((i + 1) * bytes.length) / parts)),
  );

test("a body arrives whole and in order: one chunk, many with a declared length, chunked without one, gzip and deflate", async (t) => {
  const { app, url } = await echoServer();
  t.after(() => app.close());
  const bytes = randomBytes(700 * 1024);
  const expect = { bytes: bytes.length, sha: sha(bytes) };
  const octets = { "content-type": "application/octet-stream" };
  const declared = { ...octets, "content-length": bytes.length };
  assert.deepEqual((await send(`${url}/raw`, [bytes], declared)).body, expect, "one write");
  assert.deepEqual((await send(`${url}/raw`, split(bytes, 9), declared)).body, expect, "nine, length declared");
  assert.deepEqual((await send(`${url}/raw`, split(bytes, 9), octets)).body, expect, "nine, chunked");
  // Compressible, so that a few input chunks inflate to many output ones (the buffer grows as it fills).
  const text = Buffer.from(Array.from({ length: 60_000 }, (_, i) => `line ${i} ${i % 7}\n`).join(""));
  const wanted = { bytes: text.length, sha: sha(text) };
  for (const [encoding, packed] of [
    ["gzip", gzipSync(text)],
    ["deflate", deflateSync(text)],
  ] as const) {
    const answer = await send(`${url}/raw`, split(packed, 3), { ...octets, "content-encoding": encoding });
    assert.deepEqual(answer.body, wanted, encoding);
  }
  const empty = await send(`${url}/raw`, [], { ...declared, "content-length": 0 });
  assert.deepEqual(empty.body, { bytes: 0, sha: sha(Buffer.alloc(0)) });
});

test("a JSON body whose strings hold many brackets is counted exactly across its chunks: passes under the limit, 413 over it", async (t) => {
  const { app, url } = await echoServer(1000);
  t.after(() => app.close());
  // 5,000 brackets inside a string come last: the quick count passes 1,000 in a late chunk and must count again,
  // exactly, what arrived before it (by then copied into one buffer).
  const body = (arrays: number) => Buffer.from(`{"a":[${"[],".repeat(arrays - 2)}[]],"s":"${"[{".repeat(2500)}"}`);
  const json = { "content-type": "application/json" };
  const under = await send(`${url}/json`, split(body(998), 12), json);
  assert.equal(under.status, 200);
  assert.deepEqual(under.body, { keys: ["a", "s"] });
  const over = await send(`${url}/json`, split(body(1000), 12), json);
  assert.equal(over.status, 413);
});

test("a body holds room for what it has sent, never for the length it declares, and ends in a buffer of its exact length", () => {
  const declared = 16 * 1024 * 1024;
  const trickle = new BodyBytes(declared, declared);
  for (let i = 0; i < 3; i++) trickle.append(Buffer.from([i]));
  assert.ok(trickle.capacity <= 4, `three bytes sent, ${trickle.capacity} held`);
  assert.deepEqual([...trickle.take()], [0, 1, 2]);

  const whole = new BodyBytes(declared, 300_000);
  for (const piece of split(randomBytes(300_000), 7)) {
    whole.append(piece);
    assert.ok(whole.capacity <= Math.max(2 * whole.size, piece.length), `${whole.size} sent, ${whole.capacity} held`);
  }
  assert.equal(whole.capacity, 300_000, "the declared length exactly, once it has all come");

  const inflated = new BodyBytes(declared, undefined);
  for (let i = 0; i < 100; i++) inflated.append(Buffer.alloc(16_384, i));
  assert.ok(inflated.capacity < 2 * inflated.size);
  const body = inflated.take();
  assert.equal(body.length, 1_638_400);
  assert.ok(body.subarray(16_384 * 99).every((byte) => byte === 99));
});
