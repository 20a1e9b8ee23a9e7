import type { FastifyInstance } from "fastify";

const PROTOBUF = "application/x-protobuf";
/** google.rpc.Code values: INVALID_ARGUMENT for the sender's mistakes, INTERNAL for ours. */
const INVALID_ARGUMENT = 3;
const INTERNAL = 13;

/**
 * The OTLP/HTTP spec wants a google.rpc.Status body on every 4xx and 5xx, encoded like the request. This answers
 * so the errors raised before the receiver's handler runs: an undecodable gzip or deflate body (400), another
 * Content-Encoding or media type (415), a body over `limits.bodyLimit` (413).
 */
export function installOtlpErrorHandling(scope: FastifyInstance): void {
  scope.setErrorHandler(async (error: Error & { statusCode?: number }, request, reply) => {
    const status = error.statusCode !== undefined && error.statusCode >= 400 ? error.statusCode : 500;
    const internal = status >= 500;
    if (internal) request.log.error({ err: error }, "request failed");
    const code = internal ? INTERNAL : INVALID_ARGUMENT;
    const message = internal ? "internal error; see the sidecar log" : error.message;
    reply.code(status);
    if (request.headers["content-type"]?.toLowerCase().startsWith(PROTOBUF)) {
      const { encodeRpcStatus } = await import("../../protocol/otlp-protobuf.ts");
      return reply.type(PROTOBUF).send(Buffer.from(encodeRpcStatus(code, message)));
    }
    return reply.send({ code, message });
  });
}
