import assert from "node:assert/strict";
import { createServer, type ServerResponse } from "node:http";
import { connect, type Socket } from "node:net";
import { test } from "node:test";
import pino from "pino";
import { EventStream } from "../../src/http/exchange.ts";
import { HttpServer } from "../../src/http/server.ts";
import { HEARTBEAT, writeEventStream } from "../../src/http/sse-writer.ts";
import { waitFor } from "../helpers/processes.ts";

// Server-Sent Events against readers a server meets: one that never reads (its buffer must stay bounded, and it is
// dropped once stalled), and a quiet stream that idle proxies would cut (heartbeat comments).

const KiB = 1024;
const MiB = 1024 * KiB;
const EVENT = { text: "x".repeat(4 * KiB) };

/** Events of ~4 KiB, as fast as they are pulled, up to `max`; counts what was pulled and whether it was ended. */
function producer(max: number) {
  const state = { pulled: 0, ended: false };
  async function* events() {
    try {
      while (state.pulled < max) {
        state.pulled++;
        yield EVENT;
      }
    } finally {
      state.ended = true;
    }
  }
  return { state, events: events() };
}

/** A client that sends a request for `path` and then never reads a byte of the answer. */
async function nonReader(url: string, path: string): Promise<Socket> {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port), hostname);
  await new Promise((resolve) => socket.once("connect", resolve));
  socket.on("error", () => {});
  socket.pause();
  socket.write(`GET ${path} HTTP/1.1\r\nhost: ${hostname}\r\n\r\n`);
  return socket;
}

function capturingLogger() {
  const lines: { msg?: string; level?: number }[] = [];
  return { logger: pino({ level: "info" }, { write: (line: string) => void lines.push(JSON.parse(line)) }), lines };
}

test("a reader that never reads: the server stops producing, holds at most its buffer and one event, then drops the reader", async (t) => {
  const { logger, lines } = capturingLogger();
  const { state, events } = producer(25_000); // ~100 MiB if it were all produced
  let response!: ServerResponse;
  let buffered = 0;
  const server = createServer((_request, res) => {
    response = res;
    void writeEventStream(new EventStream(events), res, logger, { heartbeatMs: 60_000, stalledMs: 1_500 });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  t.after(() => new Promise((resolve) => server.close(resolve)));
  const socket = await nonReader(`http://127.0.0.1:${(server.address() as { port: number }).port}`, "/");
  t.after(() => socket.destroy());

  await waitFor(() => response, 5_000, "the stream to start");
  const sampler = setInterval(() => (buffered = Math.max(buffered, response.writableLength)), 5);
  t.after(() => clearInterval(sampler));
  // Past the sockets' buffers, production stops; the reader is then dropped when stalledMs passes without a drain.
  await waitFor(() => state.ended, 10_000, "the stalled reader dropped");
  clearInterval(sampler);
  const frame = Buffer.byteLength(`data: ${JSON.stringify(EVENT)}\n\n`);
  assert.ok(
    buffered <= response.writableHighWaterMark + frame,
    `the server held at most its high-water mark and one event (${buffered} bytes)`,
  );
  assert.ok(state.pulled * frame < 16 * MiB, `production stopped early (${state.pulled} of 25000 events pulled)`);
  assert.ok(response.destroyed, "the reader's connection is closed");
  console.log(`# a non-reader's stream: at most ${buffered} bytes buffered, ${state.pulled} events of ${frame} bytes produced`);
  assert.ok(
    lines.some((line) => line.msg?.startsWith("event stream reader took nothing in time") && line.level === 40),
    "the drop is logged as a warning",
  );
});

test("the real HTTP server: a stalled reader does not stop it serving, and its stream is dropped", async (t) => {
  const { logger } = capturingLogger();
  const app = new HttpServer({ logger, bodyLimit: { bytes: 1024 }, eventStreams: { heartbeatMs: 60_000, stalledMs: 1_000 } });
  const { state, events } = producer(25_000);
  app.get("/events", () => new EventStream(events));
  app.get("/ok", () => ({ ok: true }));
  const url = await app.listen({ host: "127.0.0.1", port: 0 });
  t.after(() => app.close());
  const socket = await nonReader(url, "/events");
  t.after(() => socket.destroy());
  await waitFor(() => state.pulled > 0, 5_000, "the stream to start");
  for (let i = 0; i < 5; i++) assert.deepEqual(await (await fetch(`${url}/ok`)).json(), { ok: true }, "other requests are served");
  await waitFor(() => state.ended, 10_000, "the stalled stream ended");
  assert.ok(state.pulled < 4_000, `production stopped (${state.pulled} events)`);
  assert.deepEqual(await (await fetch(`${url}/ok`)).json(), { ok: true });
});

test("a quiet stream gets a heartbeat comment every heartbeatMs; a reader that keeps up is never dropped", async (t) => {
  const { logger } = capturingLogger();
  const app = new HttpServer({ logger, bodyLimit: { bytes: 1024 }, eventStreams: { heartbeatMs: 100, stalledMs: 200 } });
  let release!: () => void;
  const quiet = new Promise<void>((resolve) => (release = resolve));
  app.get(
    "/events",
    () =>
      new EventStream(
        (async function* () {
          yield { n: 1 };
          await quiet;
          yield { n: 2 };
        })(),
      ),
  );
  const url = await app.listen({ host: "127.0.0.1", port: 0 });
  t.after(() => app.close());
  const response = await fetch(`${url}/events`);
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  let text = "";
  const started = Date.now();
  while (text.split(HEARTBEAT).length - 1 < 4) text += (await reader.read()).value;
  const elapsed = Date.now() - started;
  release();
  for (let next = await reader.read(); !next.done; next = await reader.read()) text += next.value;
  assert.ok(elapsed >= 300, `four heartbeats came no faster than one per 100 ms (${elapsed} ms)`);
  assert.ok(text.startsWith('data: {"n":1}\n\n: keep-alive\n\n'), text.slice(0, 80));
  assert.ok(text.endsWith('data: {"n":2}\n\n'), "the stream goes on after the quiet spell, not dropped");
});
