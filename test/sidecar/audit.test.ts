import assert from "node:assert/strict";
import { test } from "node:test";
import { AuditLog } from "../../src/sidecar/audit.ts";
import type { SentRequest } from "../../src/sidecar/egress/beacon-client.ts";
import { tempDir } from "../helpers/processes.ts";

const DAY = 86_400_000;
const KEY = 'lic-"quoted"-key-0001';

function sent(overrides: Partial<SentRequest>): SentRequest {
  return {
    stream: "billing",
    url: "https://ops:pw@beacon.test/v1/beacon/ingest-traces",
    path: "/v1/beacon/ingest-traces",
    records: 1,
    body: "{}",
    status: 200,
    error: null,
    startMs: Date.now(),
    durationMs: 3,
    ...overrides,
  };
}

test("the audit log keeps what it is told for the retention period, with secrets and credentials removed", () => {
  const dir = tempDir();
  const log = new AuditLog(dir, { keepBodies: true, secrets: [KEY] });
  const now = Date.now();
  log.record(sent({ startMs: now - 31 * DAY, status: 500 }));
  log.record(sent({ startMs: now - DAY, body: JSON.stringify({ license: KEY }), status: null, error: `refused ${KEY}` }));
  assert.equal(log.prune(now - 30 * DAY), 1);
  const { entries } = log.list({ limit: 100 });
  assert.equal(entries.length, 1);
  const [entry] = entries;
  assert.equal(entry!.destination, "https://REDACTED@beacon.test/v1/beacon/ingest-traces");
  assert.equal(entry!.body, '{"license":"[REDACTED]"}', "the JSON-escaped key is found too");
  assert.equal(entry!.error, "refused [REDACTED]");
  assert.equal(entry!.status, null);
  log.close();

  const reader = new AuditLog(dir, { readonly: true });
  assert.equal(reader.list({ limit: 10, stream: "metrics" }).entries.length, 0);
  reader.close();
  assert.throws(() => new AuditLog(tempDir(), { readonly: true }), /no outbox at .*outbox\.db/);
});

test("without audit.keepBodies only the digest and size are kept", () => {
  const log = new AuditLog(tempDir());
  log.record(sent({ body: '{"a":1}' }));
  const [entry] = log.list({ limit: 1 }).entries;
  assert.equal(entry!.body, undefined);
  assert.equal(entry!.bytes, 7);
  assert.equal(entry!.sha256, "015abd7f5cc57a2dd94b7590f04ad8084273905ee33ec5cebeae62276a97f862");
  log.close();
});
