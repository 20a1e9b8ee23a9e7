import { EgressError } from "../errors.ts";
import { otlpProtoTypes } from "./otlp-proto-schema.ts";
import type { OtlpSignal } from "./otlp.ts";
import { walkBody } from "./otlp-wire.ts";
import { countOtlpMessages } from "./otlp-wire-count.ts";
import { otlpRequestWalks } from "./otlp-wire-signals.ts";

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

/**
 * Decodes an Export{Metrics,Trace,Logs}ServiceRequest into the OTLP JSON object form (lowerCamelCase field
 * names, trace/span ids as lower-case hex, 64-bit integers as decimal strings, enums as numbers, bytes values
 * as base64), ready for otlpSignals[signal].schema. Proto3 zero values (e.g. `kind: 0`) are omitted, as
 * proto3 JSON does. Each message is passed to `chargeMessages` as it is made, before its fields: a 16 MiB body of
 * empty messages is eight million objects, and the HTTP server's account (HttpRequest.chargeItems) refuses the body
 * once they pass its limit, or the body budget cannot take them, by throwing: that error passes through as it is.
 * A body long enough to hold more than `maxMessages` (two bytes each) has them counted first, and is charged the
 * count before any is made when it holds more: refused having made nothing, as a JSON body over the limit is.
 * Throws OtlpDecodeError on undecodable input.
 */
export function decodeOtlpProtobuf(
  signal: OtlpSignal,
  body: Uint8Array,
  chargeMessages: (count: number) => void = () => {},
  maxMessages = Number.POSITIVE_INFINITY,
): unknown {
  if (body.length > 2 * maxMessages) {
    const count = countOtlpMessages(signal, body, maxMessages);
    if (count > maxMessages) chargeMessages(count);
  }
  try {
    return walkBody(body, otlpRequestWalks[signal], chargeMessages);
  } catch (error) {
    if (error instanceof EgressError) throw error; // the charge's refusal (413, 503)
    // protobufjs's Reader throws RangeError (truncated, lengths past the end), Error (bad wire type, tag or UTF-8,
    // nesting past the recursion limit): all mean the body is not a request we can read.
    throw new OtlpDecodeError(signal, error);
  }
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
