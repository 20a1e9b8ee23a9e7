import assert from "node:assert/strict";
import { connect } from "node:net";
import { test } from "node:test";
import pino from "pino";
import { LINGER_MS } from "../../src/http/lingering-close.ts";
import { HttpServer } from "../../src/http/server.ts";

// An answer given before the request's body is read (413 on the declared length here; a refused credential or an
// unknown route alike) must reach a client that is still writing that body, and the connection must not stay open.

async function server() {
  const app = new HttpServer({ logger: pino({ level: "silent" }), bodyLimit: { bytes: 1024 } });
  app.post("/intake", () => ({ ok: true }));
  return { app, url: await app.listen({ host: "127.0.0.1", port: 0 }) };
}

test("a body over the limit: the client, still writing it, reads the 413 every time (no reset in its place)", async (t) => {
  const { app, url } = await server();
  t.after(() => app.close());
  const chunk = Buffer.alloc(256 * 1024, "x");
  const answers: unknown[] = [];
  // Declared up front, the length is refused before any of the body is read; sent chunked, only once past the limit.
  for (const declared of [true, false]) {
    for (let i = 0; i < 10; i++) {
      const body = declared
        ? Buffer.concat(Array(32).fill(chunk))
        : new ReadableStream({
            start(controller) {
              for (let n = 0; n < 32; n++) controller.enqueue(chunk);
              controller.close();
            },
          });
      try {
        const response = await fetch(`${url}/intake`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body,
          duplex: "half",
        } as RequestInit);
        answers.push([response.status, ((await response.json()) as { code: string }).code]);
      } catch (err) {
        answers.push(`${(err as Error).message}: ${((err as Error).cause as Error | undefined)?.message}`);
      }
    }
  }
  assert.deepEqual(answers, Array(20).fill([413, "EGRESS_ERR_BODY_TOO_LARGE"]));
});

test("a client that keeps sending after the answer is cut off a couple of seconds later, not at the request timeout", async (t) => {
  const { app, url } = await server();
  t.after(() => app.close());
  const { port } = new URL(url);
  // Half-open allowed, as a client still writing its body goes on after the server's end of the connection.
  const socket = connect({ port: Number(port), host: "127.0.0.1", allowHalfOpen: true });
  socket.on("error", () => {});
  socket.write(`POST /intake HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${2 ** 30}\r\n\r\n`);
  let answer = "";
  let answeredAt = 0;
  socket.on("data", (chunk) => {
    answer += chunk;
    answeredAt ||= performance.now();
  });
  const sending = setInterval(() => socket.writable && socket.write(Buffer.alloc(64 * 1024)), 50);
  const closedAt = await new Promise<number>((resolve) => socket.on("close", () => resolve(performance.now())));
  clearInterval(sending);
  assert.match(answer, /^HTTP\/1\.1 413 /);
  assert.match(answer, /connection: close/i);
  const lingered = closedAt - answeredAt;
  assert.ok(lingered >= LINGER_MS - 100 && lingered < LINGER_MS + 3_000, `closed ${lingered.toFixed(0)} ms after the answer`);
});
