import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import type { z } from "zod";
import { OtlpRequestShapeError, parseExport } from "../../src/protocol/otlp-request.ts";
import { parseRequest, RequestValidationError } from "../../src/http/validate.ts";
import { AuditQuery } from "../../src/protocol/audit.ts";
import { VerifyRequest } from "../../src/protocol/license.ts";
import { TransactionsRequest } from "../../src/protocol/local-api.ts";
import { LogsRequest, MetricsRequest, TracesRequest, type OtlpSignal } from "../../src/protocol/otlp.ts";
import { decodeOtlpProtobuf, OtlpDecodeError } from "../../src/protocol/otlp-protobuf.ts";
import { otlpProtoTypes } from "../../src/protocol/otlp-proto-schema.ts";
import { IngestTracesRequest } from "../../src/protocol/trace-transaction.ts";
import { UsageMeasures, UsageSnapshot } from "../../src/protocol/usage-snapshot.ts";
import { HTTPValidationError, MAX_VALIDATION_ERRORS } from "../../src/protocol/validation-error.ts";
import { logsRequest, metricsRequest, tracesRequest } from "../helpers/fixtures.ts";
import { badBatch, fcOptions, junkBody, mutateAt, validTransaction } from "./arbitraries.ts";

// Property-based pass over the wire schemas, in process: whatever a sender posts, validation ends in the parsed
// request or a RequestValidationError (the 422), never another exception (a 500), with `loc` at the field.

const requestSchemas: Record<string, z.ZodType> = {
  TransactionsRequest,
  IngestTracesRequest,
  VerifyRequest,
  UsageMeasures,
  UsageSnapshot,
  MetricsRequest,
  TracesRequest,
  LogsRequest,
};

/** Runs parseRequest and returns the 422 detail, or undefined when the input was valid. Any other throw fails. */
function validationDetail(schema: z.ZodType, input: unknown) {
  try {
    parseRequest(schema, input);
    return undefined;
  } catch (err) {
    assert.ok(err instanceof RequestValidationError, `not a validation error: ${(err as Error).stack}`);
    const { detail } = HTTPValidationError.parse({ detail: err.detail });
    assert.ok(detail.length >= 1 && detail.length <= MAX_VALIDATION_ERRORS);
    for (const d of detail) assert.equal(d.loc[0], "body");
    return detail;
  }
}

const hasLoc = (detail: { loc: (string | number)[] }[], loc: (string | number)[]) =>
  detail.some((d) => JSON.stringify(d.loc) === JSON.stringify(loc));

describe("wire schemas, property-based", () => {
  test("generated valid trace transactions pass both request schemas unchanged", () => {
    fc.assert(
      fc.property(fc.array(validTransaction, { minLength: 1, maxLength: 5 }), fc.string({ minLength: 1 }), (batch, license) => {
        assert.deepEqual(parseRequest(TransactionsRequest, { trace_transactions: batch }).trace_transactions, batch);
        assert.deepEqual(parseRequest(IngestTracesRequest, { license, trace_transactions: batch }).trace_transactions, batch);
      }),
      fcOptions(200),
    );
  });

  test("a dropped or mistyped field fails with a loc naming its index and field, even beside unknown fields", () => {
    fc.assert(
      fc.property(badBatch, (bad) => {
        const requests = [
          [TransactionsRequest, { trace_transactions: bad.transactions }],
          [IngestTracesRequest, { license: "k", trace_transactions: bad.transactions }],
        ] as const;
        for (const [schema, body] of requests) {
          const detail = validationDetail(schema, body);
          assert.ok(detail, `accepted: ${bad.description}`);
          assert.ok(hasLoc(detail, ["body", "trace_transactions", ...bad.loc!]), `${bad.description}: ${JSON.stringify(detail)}`);
        }
      }),
      fcOptions(300),
    );
  });

  test("unknown fields alone are dropped from a transaction, and refused (extra_forbidden) as usage measures", () => {
    const extraKey = fc
      .string({ minLength: 1 })
      .filter((k) => k !== "__proto__")
      .map((k) => `unknown_${k}`);
    fc.assert(
      fc.property(validTransaction, extraKey, fc.jsonValue(), (transaction, key, value) => {
        const parsed = parseRequest(TransactionsRequest, { trace_transactions: [{ ...transaction, [key]: value }] });
        assert.deepEqual(parsed.trace_transactions[0], transaction);
        const measures = Object.fromEntries(Object.keys(UsageMeasures.shape).map((m) => [m, 1]));
        const detail = validationDetail(UsageMeasures, { ...measures, [key]: value });
        assert.deepEqual(detail, [{ loc: ["body", key], msg: "Extra inputs are not permitted", type: "extra_forbidden" }]);
      }),
      fcOptions(200),
    );
  });

  test("any JSON value, and any value at any path of a valid request, is handled: parsed or a 422, never a throw", () => {
    const samples: Record<string, unknown> = {
      TransactionsRequest: { trace_transactions: [] },
      MetricsRequest: metricsRequest(),
      TracesRequest: tracesRequest(),
      LogsRequest: logsRequest(),
    };
    fc.assert(
      fc.property(fc.constantFrom(...Object.keys(requestSchemas)), fc.jsonValue(), fc.nat(), fc.boolean(), (name, junk, pick, drop) => {
        const schema = requestSchemas[name]!;
        validationDetail(schema, junk);
        if (samples[name]) validationDetail(schema, mutateAt(samples[name], pick, drop ? undefined : junk));
      }),
      fcOptions(400),
    );
  });

  test("nesting past 64 levels, of any shape, is a 422 json_invalid and never a stack overflow", () => {
    const wrapper = fc.constantFrom(
      (v: unknown) => [v],
      (v: unknown) => ({ resourceLogs: v }),
      (v: unknown) => ({ arrayValue: { values: [v] } }),
    );
    fc.assert(
      fc.property(fc.constantFrom(...Object.keys(requestSchemas)), fc.integer({ min: 65, max: 20_000 }), wrapper, (name, depth, wrap) => {
        let value: unknown = {};
        for (let level = 0; level < depth; level++) value = wrap(value);
        assert.deepEqual(
          validationDetail(requestSchemas[name]!, value)?.map((d) => d.type),
          ["json_invalid"],
        );
      }),
      fcOptions(60),
    );
  });

  test("a validation error never echoes a submitted value (it may be a license key)", () => {
    fc.assert(
      fc.property(fc.constantFrom(...Object.keys(requestSchemas)), fc.nat(), fc.uuid(), (name, pick, secret) => {
        const marker = `SECRET-${secret}`;
        const input = mutateAt(
          { license: 1, trace_transactions: [{ status: 2 }], resourceLogs: [{ scopeLogs: [{}] }], workspaces: "x" },
          pick,
          marker,
        );
        assert.ok(!JSON.stringify(validationDetail(requestSchemas[name]!, input) ?? []).includes(marker));
        assert.ok(!JSON.stringify(validationDetail(AuditQuery, { since: marker }) ?? []).includes(marker));
      }),
      fcOptions(200),
    );
  });

  test("the sidecar's OTLP parser: any JSON or mutated request ends in a result or OtlpRequestShapeError", () => {
    const samples = { metrics: metricsRequest, traces: tracesRequest, logs: logsRequest };
    fc.assert(
      fc.property(fc.constantFrom<OtlpSignal>("metrics", "traces", "logs"), fc.jsonValue(), fc.nat(), (signal, junk, pick) => {
        for (const raw of [junk, mutateAt(samples[signal](), pick, junk)]) {
          try {
            const parsed = parseExport(signal, raw);
            assert.ok(parsed.accepted >= 0 && parsed.rejected >= 0 && parsed.errors.length <= 3);
          } catch (err) {
            assert.ok(err instanceof OtlpRequestShapeError, (err as Error).stack);
          }
        }
      }),
      fcOptions(300),
    );
  });

  test("protobuf: random bytes, truncations and bit flips of a valid request decode or fail as OtlpDecodeError", () => {
    const type = otlpProtoTypes.requests.logs;
    const valid = type.encode(type.fromObject(logsRequest())).finish();
    const damaged = fc.oneof(
      fc.uint8Array({ maxLength: 256 }),
      fc.nat({ max: valid.length - 1 }).map((n) => valid.subarray(0, n)),
      fc.tuple(fc.nat({ max: valid.length - 1 }), fc.integer({ min: 1, max: 255 })).map(([at, bits]) => {
        const copy = Uint8Array.from(valid);
        copy[at] = copy[at]! ^ bits;
        return copy;
      }),
    );
    fc.assert(
      fc.property(fc.constantFrom<OtlpSignal>("metrics", "traces", "logs"), damaged, (signal, bytes) => {
        let decoded: unknown;
        try {
          decoded = decodeOtlpProtobuf(signal, bytes);
        } catch (err) {
          assert.ok(err instanceof OtlpDecodeError, (err as Error).stack);
          return;
        }
        try {
          parseExport(signal, decoded);
        } catch (err) {
          assert.ok(err instanceof OtlpRequestShapeError, (err as Error).stack);
        }
      }),
      fcOptions(400),
    );
  });

  test("raw text bodies: whatever parses as JSON is refused by the transaction schema", () => {
    fc.assert(
      fc.property(junkBody, (text) => {
        let value: unknown;
        try {
          value = JSON.parse(text);
        } catch {
          return; // the HTTP layer answers 422 json_invalid; the e2e pass checks that
        }
        assert.ok(validationDetail(TransactionsRequest, value));
      }),
      fcOptions(200),
    );
  });
});
