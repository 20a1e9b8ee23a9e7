import protobuf from "protobufjs";
import { EgressError } from "../errors.ts";
import { otlpProtoTypes } from "./otlp-proto-schema.ts";
import type { OtlpSignal } from "./otlp.ts";

// OTLP/HTTP binary protobuf (https://opentelemetry.io/docs/specs/otlp/#binary-protobuf-encoding), decoded into
// the OTLP JSON object form so one schema (otlpSignals[signal].schema) validates both encodings.

/** The body of an `application/x-protobuf` export request is not a decodable protobuf message: answer 400. */
export class OtlpDecodeError extends EgressError {
  constructor(signal: OtlpSignal, cause: unknown) {
    // The message names the expected message type only: protobuf bodies may carry secrets, never echo them.
    super(
      "EGRESS_ERR_OTLP_PROTOBUF",
      `request body is not a valid ${otlpProtoTypes.requests[signal].name} (truncated or malformed protobuf); ` +
        "send OTLP/HTTP binary protobuf, or OTLP JSON with Content-Type: application/json",
    );
    this.cause = cause;
  }
}

const toObjectOptions = {
  longs: String, // 64-bit integers as decimal strings, as OTLP JSON carries them
  enums: Number,
  arrays: true, // empty repeated fields as [], so `resourceSpans: []` is present for an empty request
  json: true, // NaN and ±Infinity as strings, as proto3 JSON has them (the schema then refuses them)
};

const hexIdFields: ReadonlySet<string | undefined> = new Set(["traceId", "spanId", "parentSpanId"]);

/**
 * Decodes an Export{Metrics,Trace,Logs}ServiceRequest into the OTLP JSON object form (lowerCamelCase field
 * names, trace/span ids as lower-case hex, 64-bit integers as decimal strings, enums as numbers, bytes values
 * as base64), ready for otlpSignals[signal].schema. Proto3 zero values (e.g. `kind: 0`) are omitted, as
 * proto3 JSON does. Throws OtlpDecodeError on undecodable input.
 */
export function decodeOtlpProtobuf(signal: OtlpSignal, body: Uint8Array): unknown {
  const type = otlpProtoTypes.requests[signal];
  try {
    return convertBytes(type.toObject(type.decode(body), toObjectOptions));
  } catch (error) {
    // protobufjs throws RangeError (truncated, lengths past the end), Error (bad wire type or UTF-8,
    // nesting past its recursion limit): all mean the body is not a request we can read.
    throw new OtlpDecodeError(signal, error);
  }
}

/**
 * The messages decoding `body` would build (counting no further than `max` + 1), found by walking the wire format
 * along the schema without building anything: a 16 MiB body of empty messages is eight million objects, and
 * knowing that before decoding it is what keeps a protobuf bomb from taking the process's memory. Fields the
 * schema does not declare are skipped, as decoding skips them. Undecodable input counts what it has so far: the
 * decoder then refuses it.
 */
export function countOtlpMessages(signal: OtlpSignal, body: Uint8Array, max: number): number {
  const reader = protobuf.Reader.create(body);
  let count = 0;
  const walk = (type: protobuf.Type, end: number, depth: number): void => {
    // Past protobufjs's recursion limit (protoc's, 100) the decoder refuses the body: stop counting, let it.
    if (depth > 100) throw new RangeError("max depth exceeded");
    while (reader.pos < end && count <= max) {
      const tag = reader.uint32();
      const field = type.fieldsById[tag >>> 3];
      const nested = field?.resolvedType;
      if ((tag & 7) === 2 && nested instanceof protobuf.Type) {
        const length = reader.uint32();
        const fieldEnd = reader.pos + length;
        if (fieldEnd > end) return;
        count++;
        walk(nested, fieldEnd, depth + 1);
        reader.pos = fieldEnd;
      } else {
        reader.skipType(tag & 7);
      }
    }
  };
  try {
    walk(otlpProtoTypes.requests[signal], body.length, 0);
  } catch {
    // truncated or malformed: decodeOtlpProtobuf says so
  }
  return count;
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

/**
 * Encodes the Export*ServiceResponse: empty (zero bytes) when there is no partial success; else
 * partial_success {rejected_data_points|rejected_spans|rejected_log_records, error_message}.
 */
export function encodeOtlpResponse(signal: OtlpSignal, partialSuccess?: { rejected: number; errorMessage: string }): Uint8Array {
  const type = otlpProtoTypes.responses[signal];
  if (partialSuccess === undefined) return type.encode({}).finish();
  const rejectedField = { metrics: "rejectedDataPoints", traces: "rejectedSpans", logs: "rejectedLogRecords" }[signal];
  return type.encode({ partialSuccess: { [rejectedField]: partialSuccess.rejected, errorMessage: partialSuccess.errorMessage } }).finish();
}

/** google.rpc.Status {code, message}: the body of 4xx/5xx answers to protobuf requests, as the OTLP spec asks. */
export function encodeRpcStatus(code: number, message: string): Uint8Array {
  return otlpProtoTypes.rpcStatus.encode({ code, message }).finish();
}
