import assert from "node:assert/strict";
import { test } from "node:test";
import type { OutboxRecord } from "../../src/sidecar/storage/outbox.ts";
import { billingPolicy } from "../../src/sidecar/shippers/billing.ts";
import { telemetryPolicy } from "../../src/sidecar/shippers/telemetry.ts";
import { IngestTracesRequest } from "../../src/protocol/trace-transaction.ts";
import { MetricsRequest } from "../../src/protocol/otlp.ts";
import { traceTransaction } from "../helpers/fixtures.ts";

const record = (body: string | Buffer, attempts = 0, seq = 1): OutboxRecord => ({ seq, recordId: `r${seq}`, body, attempts });

test("billing payload: each transaction goes out as stored, with its current failed-send count and nothing else changed", () => {
  // A status that quotes the field name must survive untouched (JSON escapes its quotes).
  const tricky = traceTransaction({ status: 'failed "num_failed_send_attempts":9', num_failed_send_attempts: 0 });
  const plain = traceTransaction({ num_failed_send_attempts: 2 });
  const body = billingPolicy("lic-key", 500).buildPayload([record(JSON.stringify(tricky), 3, 1), record(JSON.stringify(plain), 5, 2)]);
  // What is on the wire (parsing would normalise its timestamps), and that it is a valid request.
  const sent = JSON.parse(body.toString());
  IngestTracesRequest.parse(sent);
  assert.equal(sent.license, "lic-key");
  assert.deepEqual(sent.trace_transactions, [
    { ...tricky, num_failed_send_attempts: 3 },
    { ...plain, num_failed_send_attempts: 5 },
  ]);
});

test("billing payload: bodies claimed as bytes go out byte for byte, only a changed count's digits replaced", () => {
  const current = JSON.stringify(traceTransaction({ status: "réussi ✓", num_failed_send_attempts: 2 }));
  const behind = JSON.stringify(traceTransaction({ transaction_type: "日本", num_failed_send_attempts: 9 }));
  const body = billingPolicy("k", 500).buildPayload([record(Buffer.from(current), 2, 1), record(Buffer.from(behind), 12, 2)]);
  assert.equal(
    body.toString(),
    `{"license":"k","trace_transactions":[${current},${behind.replace('"num_failed_send_attempts":9', '"num_failed_send_attempts":12')}]}`,
  );
});

test("billing payload: a stored body in another layout (an older sidecar's) is re-encoded rather than sent wrong", () => {
  const t = traceTransaction();
  const { num_failed_send_attempts: _dropped, ...withoutCount } = t;
  const body = billingPolicy("k", 500).buildPayload([record(JSON.stringify(withoutCount, null, 2), 4)]);
  assert.deepEqual(JSON.parse(body.toString()).trace_transactions, [{ ...t, num_failed_send_attempts: 4 }]);
});

test("telemetry payload: the records' resource lists side by side, as if parsed and merged", () => {
  const request = (name: string): MetricsRequest =>
    MetricsRequest.parse({
      resourceMetrics: [
        {
          resource: { attributes: [{ key: "service.name", value: { stringValue: name } }] },
          scopeMetrics: [{ metrics: [{ name: "m", gauge: { dataPoints: [{ timeUnixNano: "1", asInt: "2" }] } }] }],
        },
      ],
    });
  const a = request("a");
  const b = request("b");
  const records = [
    record(Buffer.from(JSON.stringify(a)), 0, 1),
    record(JSON.stringify({ resourceMetrics: [] }), 0, 2),
    record(Buffer.from(JSON.stringify(b, null, 1)), 0, 3),
  ];
  const body = telemetryPolicy("metrics", 1_000_000).buildPayload(records);
  assert.deepEqual(JSON.parse(body.toString()), { resourceMetrics: [...a.resourceMetrics, ...b.resourceMetrics] });
});
