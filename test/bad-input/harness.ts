import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { connect } from "node:net";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import Database from "better-sqlite3";
import { otlpProtoTypes } from "../../src/protocol/otlp-proto-schema.ts";
import { recordKey } from "../../src/sidecar/storage/record-key.ts";
import { HTTPValidationError, MAX_VALIDATION_ERRORS } from "../../src/protocol/validation-error.ts";

// Shared by the bad-input suite: raw requests (any bytes, any headers), the catalogue of bad bodies, and
// read-only views of what the sidecar and the beacon have stored, to prove a refused request stored nothing.

export interface RawAnswer {
  status: number;
  contentType: string;
  bytes: Buffer;
  /** The body parsed as JSON, or undefined when it is not JSON. */
  json: any;
}

/** POSTs exactly `body` with exactly `headers` (no content type unless given). */
export async function send(
  url: string,
  body: string | Uint8Array,
  headers: Record<string, string> = {},
  method = "POST",
): Promise<RawAnswer> {
  const response = await fetch(url, { method, headers, body: typeof body === "string" ? Buffer.from(body) : body });
  const bytes = Buffer.from(await response.arrayBuffer());
  const contentType = response.headers.get("content-type") ?? "";
  return {
    status: response.status,
    contentType,
    bytes,
    json: contentType.startsWith("application/json") ? JSON.parse(bytes.toString()) : undefined,
  };
}

export const sendJson = (url: string, body: string | Uint8Array, headers: Record<string, string> = {}) =>
  send(url, body, { "content-type": "application/json", ...headers });

/** A request whose body stops short of its Content-Length (the client hangs up mid-body); the answer's status, if any. */
export function sendTruncated(url: string, body: string, headers: Record<string, string> = {}): Promise<number | undefined> {
  const { hostname, port, pathname } = new URL(url);
  const extra = Object.entries(headers)
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join("");
  const head = `POST ${pathname} HTTP/1.1\r\nHost: ${hostname}\r\nContent-Type: application/json\r\n${extra}Content-Length: ${Buffer.byteLength(body)}\r\n\r\n`;
  return new Promise((resolve) => {
    let answer = "";
    const socket = connect(Number(port), hostname, () => socket.end(head + body.slice(0, body.length >> 1)));
    socket.on("data", (chunk) => (answer += chunk));
    socket.on("error", () => {}); // the server may reset the connection instead of answering
    socket.on("close", () => {
      const status = /^HTTP\/1\.1 (\d{3})/.exec(answer)?.[1];
      resolve(status === undefined ? undefined : Number(status));
    });
  });
}

export const deepArrays = (depth: number) => "[".repeat(depth) + "]".repeat(depth);
export const deepObjects = (depth: number) => `${'{"a":'.repeat(depth)}0${"}".repeat(depth)}`;

/** Bodies that are not JSON at all: each must be 422 `json_invalid` (or the OTLP 400). */
export const malformedJson: Record<string, string> = {
  "unclosed object": '{"trace_transactions": [',
  "trailing comma": '{"a": 1,}',
  "single quotes": "{'a': 1}",
  "bare word": "undefined",
  "NaN literal": '{"a": NaN}',
  "two documents": "{} {}",
  "control character in a string": '{"a": "\u0001"}',
  "prototype pollution": '{"__proto__": {"polluted": true}}',
  "constructor pollution": '{"constructor": {"prototype": {"polluted": true}}}',
};

/** Valid JSON of the wrong shape for a request object: 422 naming the body. */
export const wrongTopLevel: Record<string, string> = { array: "[]", null: "null", number: "42", string: '"body"', boolean: "true" };

/** Media types a JSON route does not take: 415. */
export const wrongMediaTypes: Record<string, { headers: Record<string, string>; body: string | Uint8Array }> = {
  "text/plain": { headers: { "content-type": "text/plain" }, body: "{}" },
  "application/xml": { headers: { "content-type": "application/xml" }, body: "<transactions/>" },
  multipart: {
    headers: { "content-type": "multipart/form-data; boundary=x" },
    body: '--x\r\nContent-Disposition: form-data; name="a"\r\n\r\n{}\r\n--x--\r\n',
  },
  "form-urlencoded": { headers: { "content-type": "application/x-www-form-urlencoded" }, body: "trace_transactions=1" },
  "no content type": { headers: {}, body: new TextEncoder().encode("{}") },
};

/** A gzip stream cut short: the header and part of the deflate data, no trailer. */
export const truncatedGzip = (json: unknown) => {
  const full = gzipSync(JSON.stringify(json));
  return full.subarray(0, full.length >> 1);
};

/** Asserts a 422 HTTPValidationError with an entry at `loc` (and of `type`, when given); returns its detail. */
export function assertValidation(answer: { status: number; json?: any; body?: any }, loc: (string | number)[], type?: string) {
  const body = answer.json ?? answer.body;
  assert.equal(answer.status, 422, JSON.stringify(body)?.slice(0, 500));
  const { detail } = HTTPValidationError.parse(body);
  assert.ok(detail.length >= 1 && detail.length <= MAX_VALIDATION_ERRORS, `1..${MAX_VALIDATION_ERRORS} entries, got ${detail.length}`);
  const match = detail.find((d) => JSON.stringify(d.loc) === JSON.stringify(loc));
  assert.ok(match, `expected an entry at ${JSON.stringify(loc)}, got ${JSON.stringify(detail).slice(0, 500)}`);
  if (type) assert.equal(match.type, type, JSON.stringify(match));
  return detail;
}

/** Asserts an error answer `{detail, code}` with this status and code. */
export function assertError(answer: RawAnswer, status: number, code?: string) {
  assert.equal(answer.status, status, answer.bytes.toString().slice(0, 300));
  assert.equal(typeof answer.json?.detail, "string", answer.bytes.toString().slice(0, 300));
  if (code) assert.equal(answer.json.code, code);
}

/** Asserts an OTLP error: a google.rpc.Status, protobuf-encoded for a protobuf request, JSON otherwise. */
export function assertOtlpStatus(answer: RawAnswer, status: number, protobuf: boolean): { code: number; message: string } {
  assert.equal(answer.status, status, answer.bytes.toString().slice(0, 300));
  let decoded: { code?: number; message?: string };
  if (protobuf) {
    assert.equal(answer.contentType, "application/x-protobuf");
    decoded = otlpProtoTypes.rpcStatus.toObject(otlpProtoTypes.rpcStatus.decode(answer.bytes)) as typeof decoded;
  } else {
    assert.match(answer.contentType, /^application\/json/);
    decoded = answer.json;
  }
  // google.rpc.Code: UNAUTHENTICATED without a valid token, INVALID_ARGUMENT for the sender's other mistakes.
  if (status === 401) assert.equal(decoded.code, 16, "google.rpc.Code UNAUTHENTICATED");
  else assert.equal(decoded.code, 3, "google.rpc.Code INVALID_ARGUMENT");
  assert.equal(typeof decoded.message, "string");
  assert.ok(decoded.message!.length > 0);
  return { code: decoded.code!, message: decoded.message! };
}

function readOnly<T>(path: string, read: (db: Database.Database) => T): T {
  const db = new Database(path, { readonly: true, fileMustExist: true });
  try {
    return read(db);
  } finally {
    db.close();
  }
}

/**
 * What the sidecar has kept from its inputs: how many records were ever inserted into either file of its outbox
 * (outbox.db, telemetry.db: the AUTOINCREMENT high-water marks, which delivery and pruning do not lower) and the
 * pushed usage counts.
 */
export function sidecarStored(dataDir: string): { inserted: number; pushedMeasures: string | null } {
  const inserted = (db: Database.Database) =>
    (db.prepare("SELECT seq FROM sqlite_sequence WHERE name = 'outbox'").get() as { seq: number } | undefined)?.seq ?? 0;
  const telemetry = join(dataDir, "telemetry.db");
  return readOnly(join(dataDir, "outbox.db"), (db) => {
    const pushed = db.prepare("SELECT value FROM kv WHERE key = 'usage.pushedMeasures'").get() as { value: string } | undefined;
    const otlp = existsSync(telemetry) ? readOnly(telemetry, inserted) : 0;
    return { inserted: inserted(db) + otlp, pushedMeasures: pushed?.value ?? null };
  });
}

/** The stored body of one billing record, by transaction id (kept as the outbox keys it). */
export function sidecarRecordBody(dataDir: string, id: string): Record<string, unknown> | undefined {
  const row = readOnly(
    join(dataDir, "outbox.db"),
    (db) =>
      db.prepare("SELECT body FROM outbox WHERE stream = 'billing' AND record_id = ?").get(recordKey(id)) as { body: string } | undefined,
  );
  return row && JSON.parse(row.body);
}

/** Row counts of every table the beacon stores requests in. */
export function beaconStored(dataDir: string): { transactions: number; otlp: number; snapshots: number } {
  return readOnly(join(dataDir, "beacon.db"), (db) => {
    const count = (table: string) => (db.prepare(`SELECT COUNT(*) AS n FROM ${table}`).get() as { n: number }).n;
    return { transactions: count("trace_transactions"), otlp: count("otlp_batches"), snapshots: count("usage_snapshots") };
  });
}

/** The stored OTLP batches of the beacon, as the JSON text it keeps. */
export function beaconOtlpBodies(dataDir: string): string[] {
  return readOnly(join(dataDir, "beacon.db"), (db) =>
    (db.prepare("SELECT body FROM otlp_batches").all() as { body: string }[]).map((r) => r.body),
  );
}

/** Asserts a server still serves: /healthz answers 200. */
export async function assertUp(baseUrl: string) {
  const response = await fetch(`${baseUrl}/healthz`);
  assert.equal(response.status, 200, "the process still serves");
}
