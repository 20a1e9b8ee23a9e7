import assert from "node:assert/strict";
import { test } from "node:test";
import type { QueuedBatch } from "../../src/beacon/forward/queue.ts";
import { forwardRequests } from "../../src/beacon/forward/transform.ts";
import { logsRequest, metricsRequest } from "../helpers/fixtures.ts";

const ORG = "6f1c8a52-3b7e-4c55-9a51-0d2f4e6b7a10";
const batch = (seq: number, signal: QueuedBatch["signal"], body: unknown, licenseId: string | null = "acme"): QueuedBatch => ({
  seq,
  signal,
  licenseId,
  body: JSON.stringify(body),
  receivedAt: "2026-11-01T00:00:00.000Z",
});
const options = (allowed: string[], maxBytes = 1 << 20) => ({
  allowedMetrics: new Set(allowed),
  organizationOf: (id: string) => (id === "acme" ? ORG : undefined),
  maxBytes,
});
const attributes = (entry: any) => Object.fromEntries(entry.resource.attributes.map((a: any) => [a.key, a.value.stringValue]));

test("every resource is marked with the license's id and organization; a sender's own license.id or organization.id is replaced", () => {
  const spoofed = logsRequest();
  spoofed.resourceLogs[0]!.resource.attributes.push(
    { key: "license.id", value: { stringValue: "globex" } },
    { key: "organization.id", value: { stringValue: "someone-else" } },
  );
  const [request] = forwardRequests(
    [batch(1, "logs", spoofed), batch(2, "logs", spoofed, "gone"), batch(3, "logs", spoofed, null)],
    options([]),
  );
  const entries = request!.body!.resourceLogs!.map(attributes);
  assert.deepEqual(
    entries.map((a) => [a["license.id"], a["organization.id"], a["service.name"]]),
    [
      ["acme", ORG, "backend"],
      ["gone", undefined, "backend"], // a license the beacon no longer has: its id, no organization
      [undefined, undefined, "backend"], // a batch stored without a license: neither, and never the sender's
    ],
  );
});

test("only the allowed metrics are forwarded: scopes and resources left empty go, the left-out data points are counted", () => {
  const [kept] = forwardRequests([batch(1, "metrics", metricsRequest())], options(["platform_http_requests_failed"]));
  assert.deepEqual(
    kept!.body!.resourceMetrics!.flatMap((r: any) => r.scopeMetrics.flatMap((s: any) => s.metrics.map((m: any) => m.name))),
    ["platform_http_requests_failed"],
  );
  assert.equal(kept!.droppedDataPoints, 1);
  const [none] = forwardRequests([batch(1, "metrics", metricsRequest())], options([]));
  assert.deepEqual([none!.body, none!.droppedDataPoints, none!.seqs], [null, 2, [1]], "nothing to send, and the batch is done");
});

test("a round's batches become one request per signal, split at about maxBytes, a larger batch alone, in queue order", () => {
  const size = JSON.stringify(logsRequest()).length;
  const batches = [1, 2, 3, 4, 5].map((seq) => batch(seq, seq === 3 ? "metrics" : "logs", seq === 3 ? metricsRequest() : logsRequest()));
  const requests = forwardRequests(batches, options(["platform_http_requests_latency"], 2 * size));
  assert.deepEqual(
    requests.map((r) => [r.signal, r.seqs]),
    [
      ["metrics", [3]],
      ["logs", [1, 2]],
      ["logs", [4, 5]],
    ],
  );
  assert.deepEqual(
    forwardRequests(batches, options([], 0)).map((r) => r.seqs),
    [[3], [1], [2], [4], [5]],
  );
});
