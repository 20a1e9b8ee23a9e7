// OTLP/HTTP on our HTTP server, for the sidecar's receiver and the beacon's telemetry routes alike.
import { asDatabaseUnavailable } from "../database-unavailable.ts";
import { HttpError } from "../errors.ts";
import { mediaType } from "./body.ts";
import { Answer, type HttpRequest } from "./exchange.ts";
import { PROTOBUF_MEDIA_TYPE } from "../protocol/otlp.ts";

/**
 * google.rpc.Code values: INVALID_ARGUMENT for the sender's mistakes, UNAUTHENTICATED without a valid token,
 * PERMISSION_DENIED for a refused license, RESOURCE_EXHAUSTED when throttled, UNAVAILABLE while stopping, INTERNAL for
 * ours. OTLP/HTTP clients do not act on the code (the HTTP status says what to do); it is for whoever reads the answer.
 */
export const INVALID_ARGUMENT = 3;
const codeByStatus: ReadonlyMap<number, number> = new Map([
  [401, 16],
  [403, 7],
  [429, 8],
  [503, 14],
]);
const INTERNAL = 13;

/**
 * The OTLP/HTTP spec wants a google.rpc.Status body on every 4xx and 5xx, encoded like the request (JSON or
 * protobuf). This answers so the errors raised before or outside a receiver's own answers: an undecodable gzip or
 * deflate body (400), a missing or bad token at the beacon (401), another Content-Encoding or media type (415), a
 * body over `limits.bodyLimit` (413), the server stopping or its database away (503).
 */
export async function otlpErrorAnswer(failure: unknown, request: HttpRequest): Promise<Answer> {
  const error = asDatabaseUnavailable(failure); // the beacon's database away: 503 UNAVAILABLE with Retry-After
  const status = error instanceof HttpError ? error.statusCode : 500;
  const internal = status >= 500 && !(error instanceof HttpError);
  if (internal) request.log.error({ err: error }, "request failed");
  const code = codeByStatus.get(status) ?? (status >= 500 ? INTERNAL : INVALID_ARGUMENT);
  const message = internal ? "internal error; see the server log" : (error as Error).message;
  // Retry-After on a 503 tells an OTLP exporter when to retry, as the OTLP/HTTP spec has it.
  const headers = error instanceof HttpError ? error.headers : undefined;
  if (mediaType(request.headers) === PROTOBUF_MEDIA_TYPE) {
    const { encodeRpcStatus } = await import("../protocol/otlp-protobuf.ts");
    return new Answer(status, encodeRpcStatus(code, message), PROTOBUF_MEDIA_TYPE, headers);
  }
  return new Answer(status, { code, message }, undefined, headers);
}
