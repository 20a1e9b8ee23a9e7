import assert from "node:assert/strict";
import { createServer, type AddressInfo } from "node:net";
import { afterEach, beforeEach, test } from "node:test";
import pino from "pino";
import { SelfTelemetry } from "../../src/sidecar/self-telemetry.ts";
import { Answer } from "../../src/http/exchange.ts";
import { HttpServer } from "../../src/http/server.ts";
import { HOUR, MINUTE, SimulatedTime } from "../helpers/simulated-time.ts";

// The sidecar's own telemetry exports to its local receiver once per selfTelemetry.exportInterval. Wired as the
// daemon wires it (every answer the receiver gives, failures included, is observed again), on simulated time:
// how many export requests an hour when the receiver refuses, fails, rejects or is gone.

let time: SimulatedTime;
beforeEach(() => (time = SimulatedTime.start()));
afterEach(() => time.stop());

type Mode = "ok" | "503" | "500" | "400";

async function receiver() {
  let mode: Mode = "ok";
  const requests: Record<string, number> = { metrics: 0, traces: 0, logs: 0 };
  const app = new HttpServer({ logger: pino({ level: "silent" }), bodyLimit: { bytes: 4 * 1024 * 1024 } });
  for (const signal of ["metrics", "traces", "logs"]) {
    app.post(
      `/v1/${signal}`,
      () => {
        requests[signal]!++;
        if (mode === "ok") return {};
        return new Answer(Number(mode), { code: 14, message: mode });
      },
      { body: { raw: ["application/json"] } },
    );
  }
  const url = await app.listen({ host: "127.0.0.1", port: 0 });
  return { app, url, requests, setMode: (next: Mode) => (mode = next) };
}

/** Real loopback I/O needs real event-loop turns between simulated steps. */
async function advance(ms: number) {
  for (let done = 0; done < ms; done += 1_000) {
    await time.advance(1_000, 1_000);
    await time.settle(40);
  }
}

for (const mode of ["ok", "503", "500", "400"] as const) {
  test(`self-telemetry against a receiver answering ${mode}: at most a few exports per signal per interval`, async () => {
    const { app, url, requests, setMode } = await receiver();
    setMode(mode);
    const telemetry = new SelfTelemetry({
      localUrl: url,
      signals: { metrics: true, traces: true, logs: true },
      env: "test",
      exportIntervalMs: MINUTE,
      slowMs: 1_000,
    });
    // As the daemon does: every answer of the local API becomes an observation, the exports' own included.
    app.onResponse = (served) =>
      telemetry.observe({
        endpoint: served.route,
        method: served.method,
        serviceName: "egress-agent",
        status: served.status,
        startMs: served.startMs,
        durationMs: served.durationMs,
      });
    try {
      // A failing request now and then, as the instance's traffic would give.
      telemetry.observe({
        endpoint: "/v1/transactions",
        method: "POST",
        serviceName: "egress-agent",
        status: 500,
        startMs: time.now(),
        durationMs: 5,
      });
      await advance(HOUR);
      const perHour = { ...requests };
      // 60 intervals an hour; OTLP exporters retry 503 (not 500 or 400) a bounded number of times per export.
      const bound = mode === "503" ? 60 * 5 : 61;
      assert.ok(perHour.metrics! >= 55 && perHour.metrics! <= bound, `metrics exports an hour: ${perHour.metrics}`);
      assert.ok(perHour.traces! <= bound, `trace exports an hour: ${perHour.traces}`);
      assert.equal(perHour.logs, 0, "no log tap: no log exports");
      console.log(`# self-telemetry, receiver ${mode}: ${JSON.stringify(perHour)} requests in a simulated hour`);
    } finally {
      time.stop();
      await telemetry.stop();
      await app.close();
    }
  });
}

test("self-telemetry whose receiver resets every connection: a bounded number of attempts per interval", async () => {
  // The receiver's port accepts and drops each connection at once: the exporter sees a network error each time.
  let connections = 0;
  const server = createServer((socket) => {
    connections++;
    socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  const telemetry = new SelfTelemetry({
    localUrl: `http://127.0.0.1:${port}`,
    signals: { metrics: true, traces: true, logs: false },
    env: "test",
    exportIntervalMs: MINUTE,
    slowMs: 1_000,
  });
  telemetry.observe({
    endpoint: "/v1/transactions",
    method: "POST",
    serviceName: "egress-agent",
    status: 500,
    startMs: time.now(),
    durationMs: 5,
  });
  try {
    await advance(HOUR);
    console.log(`# self-telemetry, receiver resetting connections: ${connections} connections in a simulated hour`);
    assert.ok(connections >= 55 && connections <= 2 * 60 * 5, `${connections} connection attempts an hour`);
  } finally {
    time.stop();
    await telemetry.stop();
    server.close();
  }
});
