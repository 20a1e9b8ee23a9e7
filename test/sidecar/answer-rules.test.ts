import { randomUUID } from "node:crypto";
import assert from "node:assert/strict";
import { createServer, type OutgoingHttpHeaders } from "node:http";
import { afterEach, beforeEach, test } from "node:test";
import pino from "pino";
import { BeaconClient } from "../../src/sidecar/egress/beacon-client.ts";
import { OnlineLicense } from "../../src/sidecar/license/online-license.ts";
import { billingPolicy } from "../../src/sidecar/shippers/billing.ts";
import { Shipper, type StreamPolicy } from "../../src/sidecar/shippers/shipper.ts";
import { telemetryPolicy } from "../../src/sidecar/shippers/telemetry.ts";
import { usagePolicy } from "../../src/sidecar/shippers/usage.ts";
import { Outbox } from "../../src/sidecar/storage/outbox.ts";
import { StreamHealth } from "../../src/sidecar/storage/stream-health.ts";
import { beaconPaths } from "../../src/protocol/beacon-paths.ts";
import { otlpSignals } from "../../src/protocol/otlp.ts";
import { ORG_ID, traceTransaction } from "../helpers/fixtures.ts";
import { tempDir } from "../helpers/processes.ts";
import { HOUR, MINUTE, SimulatedTime } from "../helpers/simulated-time.ts";

// Each stream against a beacon on loopback answering the documented body, `{}`, an empty 200, a 204 or a page, on
// simulated time with the shipped defaults (flush 5 s, backoff 1 s..5 min, license checked hourly): where the
// interface documents an answer (verify, ingest-traces) only it counts, and anything else is a failed attempt with
// backoff; where it documents none (usage snapshot, OTLP) any 2xx that is not a page is a delivery, and the stream
// moves on. A page never counts.

let time: SimulatedTime;
beforeEach(() => (time = SimulatedTime.start()));
afterEach(() => time.stop());

interface Reply {
  status: number;
  headers?: OutgoingHttpHeaders;
  body?: string;
}
const json = { "content-type": "application/json" };
const loginPage = "<!DOCTYPE html>\n<html><head><title>Sign in</title></head><body><form action=/login></form></body></html>";

/** An unsigned token (no vendor key is configured here, so only its claims are read) valid for an hour. */
function token(nowMs: number): string {
  const b64 = (value: object) => Buffer.from(JSON.stringify(value)).toString("base64url");
  const iat = Math.floor(nowMs / 1000);
  return `${b64({ alg: "ES256" })}.${b64({ sub: "acme-prod", org: ORG_ID, seats: 5, iat, exp: iat + 3600 })}.sig`;
}

/** The answers every stream is tried with; `documented` is the stream's own documented (or our beacon's) answer. */
const replies: [string, (documented: string) => Reply][] = [
  ["the documented body", (documented) => ({ status: 200, headers: json, body: documented })],
  ["{}", () => ({ status: 200, headers: json, body: "{}" })],
  ["an empty 200", () => ({ status: 200, body: "" })],
  ["an empty protobuf 200", () => ({ status: 200, headers: { "content-type": "application/x-protobuf" }, body: "" })],
  ["a 204", () => ({ status: 204 })],
  ["an HTML 200 (a login page)", () => ({ status: 200, headers: { "content-type": "Text/HTML; charset=utf-8" }, body: loginPage })],
  ["an HTML 200 typed as JSON", () => ({ status: 200, headers: json, body: `\ufeff  <HTML lang="en"><body>Sign in</body></HTML>` })],
  ["the documented body typed as HTML", (documented) => ({ status: 200, headers: { "content-type": "text/html" }, body: documented })],
  ["a 302 to a login page", () => ({ status: 302, headers: { location: "/login" }, body: loginPage })],
];
const isPage = (reply: string) => /HTML|302/.test(reply);

/** A beacon on 127.0.0.1 answering every request with `reply`, and the paths it was asked, in order. */
async function beacon(reply: Reply) {
  const paths: string[] = [];
  const bodies: string[] = [];
  const server = createServer((request, response) => {
    paths.push(request.url!);
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      bodies.push(Buffer.concat(chunks).toString());
      response.writeHead(reply.status, reply.headers).end(reply.body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const client = new BeaconClient({
    baseUrl: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
    timeoutMs: 30_000,
    instanceId: randomUUID(),
  });
  let inFlight = 0;
  const post: BeaconClient["post"] = async (...args) => {
    inFlight++;
    try {
      return await client.post(...args);
    } finally {
      inFlight--;
    }
  };
  return {
    paths,
    bodies,
    transport: { post },
    /** Moves simulated time on a second at a time, letting each second's loopback requests finish on real time. */
    async advance(ms: number) {
      for (let done = 0; done < ms; done += 1_000) {
        await time.advance(1_000, 1_000);
        for (let turns = 0; inFlight > 0 && turns < 100_000; turns++) await time.settle(1);
        if (inFlight > 0) assert.fail("a loopback request did not finish");
        await time.settle(4);
      }
    },
    async close() {
      await client.close();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

const streams: {
  name: string;
  policy: StreamPolicy;
  path: string;
  documented: string;
  record: (n: number) => { recordId?: string; body: string };
}[] = [
  {
    name: "billing (ingest-traces)",
    policy: billingPolicy("lic-key", 500),
    path: beaconPaths.ingestTraces,
    documented: '{"inserted_count":1}',
    record: () => ({ recordId: crypto.randomUUID(), body: JSON.stringify(traceTransaction()) }),
  },
  {
    name: "usage snapshot",
    policy: usagePolicy("lic-key"),
    path: beaconPaths.usageSnapshot,
    documented: '{"inserted_count":1}',
    record: (n) => {
      const window = (day: number) => `2026-10-${String(day).padStart(2, "0")}T00:00:00Z`;
      return {
        recordId: window(n + 1),
        body: JSON.stringify({ from_timestamp: window(n + 1), to_timestamp: window(n + 2), measures: {} }),
      };
    },
  },
  ...(["metrics", "traces", "logs"] as const).map((signal) => ({
    name: `OTLP ${signal}`,
    // 1 byte: every record is a batch of its own, so three records are three requests in turn.
    policy: telemetryPolicy(signal, 1),
    path: beaconPaths[signal],
    documented: '{"partialSuccess":{}}',
    record: (n: number) => ({ body: JSON.stringify({ [otlpSignals[signal].fields.resources]: [{ n }] }) }),
  })),
];

for (const stream of streams) {
  const documented = stream.policy.answer.documented;
  for (const [name, reply] of replies) {
    const delivers = !isPage(name) && (!documented || name === "the documented body");
    test(`${stream.name}, a beacon answering ${name}: ${delivers ? "each of three records delivered once, in turn" : "a failed attempt, retried with backoff, nothing delivered"}`, async () => {
      const b = await beacon(reply(stream.documented));
      const outbox = new Outbox(tempDir(), { now: time.now });
      outbox.enqueue(stream.policy.stream, [0, 1, 2].map(stream.record));
      const logger = pino({ level: "silent" });
      const health = new StreamHealth(logger, stream.policy.stream, time.now);
      const shipper = new Shipper({
        policy: stream.policy,
        outbox,
        client: b.transport,
        health,
        logger,
        token: () => undefined,
        onUnauthorized: () => {},
        flushMs: 5_000,
        concurrency: 4,
        minBackoffMs: 1_000,
        maxBackoffMs: 5 * MINUTE,
        now: time.now,
      });
      shipper.start();
      try {
        await b.advance(HOUR);
        const counts = outbox.stats.counts(stream.policy.stream);
        assert.ok(
          b.paths.every((path) => path === stream.path),
          `only ${stream.path} was asked: ${[...new Set(b.paths)]}`,
        );
        if (delivers) {
          const perBatch = stream.policy.stream === "billing" ? 1 : 3; // billing: one batch of three
          assert.equal(b.paths.length, perBatch, "one request per batch, none sent twice");
          assert.equal(new Set(b.bodies).size, perBatch, "each request a different batch");
          assert.deepEqual([counts.pending, counts.sending, counts.failed], [0, 0, 0], "everything left, nothing dead-lettered");
          assert.equal(health.lastError, null);
        } else {
          // 1 s doubling (with jitter) to 5 min: about 20 attempts in the first hour, never a loop.
          assert.ok(b.paths.length >= 10 && b.paths.length <= 25, `${b.paths.length} requests in an hour`);
          assert.deepEqual([counts.completed, counts.delivered, counts.failed], [0, 0, 0], "nothing delivered, nothing dead-lettered");
          assert.equal(counts.pending + counts.sending, 3, "every record kept");
          assert.match(health.lastError!.message, isPage(name) ? /HTML|proxy or login page/ : /not the beacon's answer \{inserted_count\}/);
        }
      } finally {
        const stopped = shipper.stop(1_000);
        await b.advance(2_000);
        await stopped;
        outbox.close();
        await b.close();
      }
    });
  }
}

for (const [name, reply] of replies) {
  const verifies = name === "the documented body";
  test(`license (verify), a beacon answering ${name}: ${verifies ? "valid, verified again only before the token expires" : "a failed attempt, retried with backoff, never valid"}`, async () => {
    const b = await beacon(reply(JSON.stringify({ token: token(time.now()) })));
    const outbox = new Outbox(tempDir(), { now: time.now });
    const license = new OnlineLicense({
      client: b.transport,
      licenseKey: "lic-key",
      outbox,
      intervalMs: HOUR,
      graceMs: 72 * HOUR,
      minBackoffMs: 1_000,
      maxBackoffMs: 5 * MINUTE,
      logger: pino({ level: "silent" }),
      now: time.now,
    });
    await license.start();
    try {
      await b.advance(50 * MINUTE);
      assert.ok(b.paths.every((path) => path === beaconPaths.verify));
      const status = license.status();
      if (verifies) {
        assert.equal(b.paths.length, 1, "one verify, renewed only 5 minutes before the token's hour ends");
        assert.deepEqual([status.state, status.lastError], ["valid", null]);
      } else {
        assert.ok(b.paths.length >= 10 && b.paths.length <= 25, `${b.paths.length} requests in 50 minutes`);
        assert.equal(status.state, "unverified");
        assert.match(status.lastError!, isPage(name) ? /HTML|302/ : /not the beacon's answer \{token\}/);
      }
    } finally {
      await license.stop();
      outbox.close();
      await b.close();
    }
  });
}
