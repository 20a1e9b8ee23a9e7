import { otlpProtoTypes } from "../../src/protocol/otlp-proto-schema.ts";
import type { OtlpSignal } from "../../src/protocol/otlp.ts";

// The decoder src/protocol/otlp-protobuf.ts had before its one-pass walk: protobufjs's decode and toObject, then the
// bytes as text. Kept as the reference the walk must equal (test/protocol/otlp-protobuf-equivalence.test.ts) and
// as the "before" of bench/otlp-protobuf-decode.ts.

const toObjectOptions = {
  longs: String, // 64-bit integers as decimal strings, as OTLP JSON carries them
  enums: Number,
  arrays: true, // empty repeated fields as [], so `resourceSpans: []` is present for an empty request
  json: true, // NaN and ±Infinity as strings, as proto3 JSON has them
};

const hexIdFields: ReadonlySet<string | undefined> = new Set(["traceId", "spanId", "parentSpanId"]);

/** The OTLP JSON object form of a request, as protobufjs makes it; throws what protobufjs throws. */
export function referenceDecode(signal: OtlpSignal, body: Uint8Array): unknown {
  const type = otlpProtoTypes.requests[signal];
  return convertBytes(type.toObject(type.decode(body), toObjectOptions));
}

/** Replaces the bytes toObject leaves as Uint8Array: ids become hex, other bytes (AnyValue.bytesValue) base64. */
function convertBytes(node: unknown, key?: string): unknown {
  if (node instanceof Uint8Array) {
    return Buffer.from(node.buffer, node.byteOffset, node.byteLength).toString(hexIdFields.has(key) ? "hex" : "base64");
  }
  if (Array.isArray(node)) {
    for (let i = 0; i < node.length; i++) node[i] = convertBytes(node[i]);
  } else if (node !== null && typeof node === "object") {
    const record = node as Record<string, unknown>;
    for (const k of Object.keys(record)) record[k] = convertBytes(record[k], k);
  }
  return node;
}
