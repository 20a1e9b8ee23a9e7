import assert from "node:assert/strict";
import { deflateSync, gzipSync } from "node:zlib";
import { after, afterEach, before, beforeEach, describe, test } from "node:test";
import { otlpProtoTypes } from "../../src/protocol/otlp-proto-schema.ts";
import type { OtlpSignal } from "../../src/protocol/otlp.ts";
import { logsRequest, metricsRequest } from "../helpers/fixtures.ts";
import { waitFor } from "../helpers/processes.ts";
import { beaconResources, taggedRequest } from "../helpers/telemetry.ts";
import {
  assertOtlpStatus,
  assertUp,
  beaconOtlpBodies,
  deepArrays,
  send,
  sidecarStored,
  wrongMediaTypes,
  wrongTopLevel,
} from "./harness.ts";
import { BODY_LIMIT, startPair, stopPair, type Pair } from "./setup.ts";

// The sidecar's OTLP/HTTP receiver (docs/sidecar.md: 200 with partialSuccess naming what was rejected, 400 with a Status
// for an undecodable body, 415 for other media types and encodings). Every error body is a google.rpc.Status,
// protobuf-encoded when the request was protobuf, as the OTLP spec asks; a refused item or request queues nothing.

const SIGNALS: OtlpSignal[] = ["metrics", "traces", "logs"];
const JSON_TYPE = { "content-type": "application/json" };
const PROTOBUF = { "content-type": "application/x-protobuf" };

function varint(n: number): number[] {
  const out: number[] = [];
  for (; n > 127; n >>>= 7) out.push((n & 127) | 128);
  return [...out, n];
}

/** ExportLogsServiceRequest bytes of one log record whose body is AnyValue arrays nested `depth` deep. */
function deepProtobufLogs(depth: number): Buffer {
  const inner = [0x0a, 1, 0x78]; // AnyValue { stringValue: "x" }
  const headers: number[][] = [];
  let length = inner.length;
  for (let i = 0; i < depth; i++) {
    for (const tag of [0x0a, 0x2a]) {
      // ArrayValue.values (1), then AnyValue.arrayValue (5)
      headers.push([tag, ...varint(length)]);
      length += headers.at(-1)!.length;
    }
  }
  for (const tag of [0x2a, 0x12, 0x12, 0x0a]) {
    // LogRecord.body, ScopeLogs.logRecords, ResourceLogs.scopeLogs, request.resourceLogs
    headers.push([tag, ...varint(length)]);
    length += headers.at(-1)!.length;
  }
  return Buffer.from([...headers.reverse().flat(), ...inner]);
}

const encodeLogs = (request: unknown) => {
  const type = otlpProtoTypes.requests.logs;
  return type.encode(type.fromObject(request as Record<string, unknown>)).finish();
};

/** One log record wrapped as a logs request; `record` replaces the sample record's fields. */
const logsWith = (record: Record<string, unknown>) => {
  const request = logsRequest() as any;
  request.resourceLogs[0].scopeLogs[0].logRecords = [{ ...request.resourceLogs[0].scopeLogs[0].logRecords[0], ...record }];
  return request;
};

describe("sidecar OTLP receiver: bad input", () => {
  let pair: Pair;
  let url: (signal: OtlpSignal) => string;
  let storedBefore: ReturnType<typeof sidecarStored>;

  before(async () => {
    pair = await startPair();
    url = (signal) => `${pair.agent.url}/v1/${signal}`;
  });
  after(() => stopPair(pair));
  beforeEach(() => {
    storedBefore = sidecarStored(pair.agentFixture.dataDir);
  });
  afterEach(async () => {
    assert.deepEqual(sidecarStored(pair.agentFixture.dataDir), storedBefore, "nothing refused was queued");
    await assertUp(pair.agent.url);
  });

  test("undecodable JSON is 400 with a JSON Status: malformed, empty, the wrong type, a list that is not a list", async () => {
    for (const signal of SIGNALS) {
      const bodies = ["{not json", "", '{"resourceLogs": [', ...Object.values(wrongTopLevel), deepArrays(100_000)];
      for (const body of bodies) assertOtlpStatus(await send(url(signal), body, JSON_TYPE), 400, false);
      const field = { metrics: "resourceMetrics", traces: "resourceSpans", logs: "resourceLogs" }[signal];
      const status = assertOtlpStatus(await send(url(signal), JSON.stringify({ [field]: "nope" }), JSON_TYPE), 400, false);
      assert.match(status.message, new RegExp(`${field}: must be a list`));
    }
  });

  test("garbage, truncated or 100,000-deep protobuf is 400 with a protobuf Status", async () => {
    const valid = encodeLogs(logsRequest());
    const beforeValid = sidecarStored(pair.agentFixture.dataDir);
    const accepted = await send(url("logs"), valid, PROTOBUF);
    assert.equal(accepted.status, 200, "the untruncated request is fine");
    storedBefore = sidecarStored(pair.agentFixture.dataDir);
    assert.equal(storedBefore.inserted, beforeValid.inserted + 1, "the untruncated request is queued: the count sees it");
    for (const signal of SIGNALS) {
      const bodies = [
        new Uint8Array([0x0a, 0xff, 0xff, 0xff, 0x0f, 0x01]),
        valid.subarray(0, valid.length >> 1),
        valid.subarray(0, 3),
        Buffer.from('{"resourceLogs":[]}'),
      ];
      for (const body of bodies) assertOtlpStatus(await send(url(signal), body, PROTOBUF), 400, true);
    }
    assertOtlpStatus(await send(url("logs"), deepProtobufLogs(100_000), PROTOBUF), 400, true);
  });

  test("truncated or false gzip and deflate are 400 with a Status in the request's encoding", async () => {
    const json = Buffer.from(JSON.stringify(metricsRequest()));
    const gzip = gzipSync(json);
    const deflate = deflateSync(json);
    for (const [headers, protobuf] of [
      [JSON_TYPE, false],
      [PROTOBUF, true],
    ] as const) {
      const cases: [string, Uint8Array][] = [
        ["gzip", gzip.subarray(0, gzip.length >> 1)],
        ["gzip", gzip.subarray(0, 10)],
        ["gzip", json],
        ["deflate", deflate.subarray(0, deflate.length >> 1)],
        ["deflate", json],
      ];
      for (const [encoding, body] of cases) {
        const status = assertOtlpStatus(await send(url("metrics"), body, { ...headers, "content-encoding": encoding }), 400, protobuf);
        assert.ok(!status.message.includes("platform_http"), "the Status never echoes the body");
      }
    }
  });

  test("other encodings and media types are 415 with a Status", async () => {
    for (const signal of SIGNALS) {
      for (const { headers, body } of Object.values(wrongMediaTypes)) assertOtlpStatus(await send(url(signal), body, headers), 415, false);
      for (const encoding of ["br", "zstd", "gzip, gzip"]) {
        assertOtlpStatus(await send(url(signal), "{}", { ...JSON_TYPE, "content-encoding": encoding }), 415, false);
        assertOtlpStatus(await send(url(signal), new Uint8Array(), { ...PROTOBUF, "content-encoding": encoding }), 415, true);
      }
    }
  });

  test("over limits.bodyLimit is 413 with a Status, also when it only gets there once decompressed", async () => {
    const padding = { resourceLogs: [], padding: "x".repeat(BODY_LIMIT) };
    assertOtlpStatus(await send(url("logs"), JSON.stringify(padding), JSON_TYPE), 413, false);
    assertOtlpStatus(await send(url("logs"), new Uint8Array(BODY_LIMIT + 1), PROTOBUF), 413, true);
    const bomb = gzipSync(Buffer.alloc(16 * BODY_LIMIT, 0x20)); // 16 MiB of spaces in a few KiB
    assert.ok(bomb.length < BODY_LIMIT / 16);
    assertOtlpStatus(await send(url("logs"), bomb, { ...JSON_TYPE, "content-encoding": "gzip" }), 413, false);
    assertOtlpStatus(await send(url("logs"), bomb, { ...PROTOBUF, "content-encoding": "gzip" }), 413, true);
  });

  test("more protobuf messages than http.bodyItems (500,000) is 413 with a Status; as many is a request", async () => {
    const emptyResources = (count: number) => Buffer.alloc(2 * count, Buffer.from([0x0a, 0x00])); // within 1 MiB
    const refused = assertOtlpStatus(await send(url("metrics"), emptyResources(500_001), PROTOBUF), 413, true);
    assert.match(refused.message, /more than 500000 objects, arrays or messages \(http\.bodyItems\)$/);
    assert.equal((await send(url("metrics"), emptyResources(500_000), PROTOBUF)).status, 200);
  });

  test("a bad item is rejected alone, by count and path: wrong types, too deep, too many values, 60,000 bad items", async () => {
    const rejected = async (request: unknown, count: number, reason: RegExp) => {
      const response = await send(url("logs"), JSON.stringify(request), JSON_TYPE);
      assert.equal(response.status, 200, response.bytes.toString());
      assert.equal(response.json.partialSuccess.rejectedLogRecords, count);
      assert.match(response.json.partialSuccess.errorMessage, reason);
    };
    await rejected(logsWith({ severityNumber: "13", timeUnixNano: -1 }), 1, /logRecords\.0\.(severityNumber|timeUnixNano)/);
    await rejected(logsWith({ traceId: 42, attributes: "a" }), 1, /logRecords\.0\./);
    await rejected(logsWith({ body: JSON.parse(deepArrays(70)) }), 1, /logRecords\.0: nested too deeply/);
    await rejected(logsWith({ attributes: Array(60_000).fill(1) }), 1, /logRecords\.0: more than 50000 values/);
    const many = logsRequest() as any;
    many.resourceLogs[0].scopeLogs[0].logRecords = Array(60_000).fill({ flags: -1 });
    await rejected(many, 60_000, /^60000 item\(s\) rejected: resourceLogs\.0\.scopeLogs\.0\.logRecords\.0\.flags: /);
    const deepValue = await send(url("logs"), deepProtobufLogs(30), PROTOBUF);
    assert.equal(deepValue.status, 200, "30 nested arrays decode; the item is then rejected alone");
    const decoded = otlpProtoTypes.responses.logs.decode(deepValue.bytes) as unknown as {
      partialSuccess: { rejectedLogRecords: { toString(): string } };
    };
    assert.equal(decoded.partialSuccess.rejectedLogRecords.toString(), "1");
  });

  test("unknown fields are ignored (OTLP) and never leave; good requests still go through", async () => {
    const marker = "bad-input-unknown";
    for (const signal of SIGNALS) {
      const request = taggedRequest(signal, marker);
      const list = Object.keys(request)[0]!;
      const withUnknown = {
        ...request,
        vendorSecret: "s3cr3t-field",
        [list]: request[list].map((r: object) => ({ ...r, extra: { nested: "s3cr3t-field" } })),
      };
      const response = await send(url(signal), JSON.stringify(withUnknown), JSON_TYPE);
      assert.deepEqual([response.status, response.json], [200, {}]);
    }
    assert.equal(sidecarStored(pair.agentFixture.dataDir).inserted, storedBefore.inserted + 3, "one record per signal");
    for (const signal of SIGNALS) {
      const delivered = await waitFor(async () => {
        const resources = beaconResources(pair.beaconFixture.dataDir, signal, marker);
        return resources.length > 0 && resources;
      });
      assert.ok(!JSON.stringify(delivered).includes("s3cr3t-field"), `${signal}: unknown fields were dropped at intake`);
    }
    assert.ok(!beaconOtlpBodies(pair.beaconFixture.dataDir).some((body) => body.includes("s3cr3t-field") || body.includes("vendorSecret")));
    storedBefore = sidecarStored(pair.agentFixture.dataDir); // the afterEach check is about refused input; these were accepted
  });
});
