import fastifyCompress from "@fastify/compress";
import type { FastifyInstance, FastifyReply } from "fastify";
import { HttpError } from "../../errors.ts";
import { otlpSignals, type OtlpRequest, type OtlpSignal } from "../../protocol/otlp.ts";
import { decodeOtlpProtobuf, encodeOtlpResponse, encodeRpcStatus } from "../../protocol/otlp-protobuf.ts";
import type { AgentMetrics } from "../metrics.ts";
import type { ByteCap, Outbox } from "../outbox.ts";
import { filterLogs, filterMetrics, filterTraces, type FilterResult, type PrivacyPolicy } from "../privacy.ts";
import { OtlpRequestShapeError, parseExport } from "./otlp-request.ts";

const PROTOBUF = "application/x-protobuf";
/** google.rpc.Code INVALID_ARGUMENT, the Status code of a 400 (OTLP/HTTP spec). */
const INVALID_ARGUMENT = 3;

const filters = { metrics: filterMetrics, traces: filterTraces, logs: filterLogs } as {
  [S in OtlpSignal]: (request: OtlpRequest, policy: PrivacyPolicy) => FilterResult<OtlpRequest>;
};

export interface OtlpReceiverOptions {
  outbox: Outbox;
  /** Which signals may leave; the others are accepted (so the instance logs no errors) and dropped at once. */
  enabled: Record<OtlpSignal, boolean>;
  privacy: PrivacyPolicy;
  cap: ByteCap;
  metrics: AgentMetrics;
  onEnqueued(signal: OtlpSignal): void;
}

/** Per the OTLP/HTTP spec, an answer is encoded like the request: protobuf for protobuf, JSON otherwise. */
function answer(reply: FastifyReply, protobuf: boolean, status: number, json: unknown, encode: () => Uint8Array): FastifyReply {
  reply.code(status);
  if (!protobuf) return reply.send(json);
  return reply.type(PROTOBUF).send(Buffer.from(encode()));
}

/**
 * POST /v1/metrics, /v1/traces, /v1/logs: the OTLP/HTTP receiver the instance's exporters point at (JSON or
 * protobuf, gzip or deflate). Valid items pass the privacy filter and, when their signal is on, are
 * committed to the outbox under the telemetry byte cap; invalid items are rejected alone (partial success).
 */
export async function registerOtlpReceiver(app: FastifyInstance, options: OtlpReceiverOptions): Promise<void> {
  const { outbox, enabled, privacy, cap, metrics } = options;
  await app.register(async (scope) => {
    // These routes decode their own bodies, so an undecodable one is the OTLP 400, not the local API's 422.
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser(["application/json", PROTOBUF], { parseAs: "buffer" }, (_request, body, done) => done(null, body));
    await scope.register(fastifyCompress, {
      globalCompression: false,
      requestEncodings: ["gzip", "deflate"],
      onUnsupportedRequestEncoding: (encoding) =>
        new HttpError(415, "EGRESS_ERR_CONTENT_ENCODING", `Content-Encoding ${encoding} is not supported; use gzip, deflate or none`),
      onInvalidRequestPayload: (encoding) => new HttpError(400, "EGRESS_ERR_CONTENT_ENCODING", `the body is not valid ${encoding} data`),
    });

    for (const signal of Object.keys(otlpSignals) as OtlpSignal[]) {
      scope.post(`/v1/${signal}`, async (request, reply) => {
        const protobuf = request.headers["content-type"]?.toLowerCase().startsWith(PROTOBUF) ?? false;
        const badRequest = (message: string) =>
          answer(reply, protobuf, 400, { code: INVALID_ARGUMENT, message }, () => encodeRpcStatus(INVALID_ARGUMENT, message));
        let parsed;
        try {
          const body = request.body as Buffer;
          const raw: unknown = protobuf ? decodeOtlpProtobuf(signal, body) : JSON.parse(body.toString("utf8"));
          parsed = parseExport(signal, raw);
        } catch (err) {
          if (err instanceof OtlpRequestShapeError) return badRequest(err.message);
          return badRequest(`the body is not a valid OTLP ${protobuf ? "protobuf" : "JSON"} export request`);
        }

        metrics.received(signal, parsed.accepted + parsed.rejected);
        metrics.dropped(signal, "rejected", parsed.rejected);
        if (!enabled[signal]) {
          metrics.dropped(signal, "switched_off", parsed.accepted);
        } else if (parsed.accepted > 0) {
          const filtered = filters[signal](parsed.request, privacy);
          metrics.dropped(signal, "policy", filtered.droppedItems);
          metrics.droppedAttributes(signal, filtered.droppedAttributes);
          if (filtered.request) {
            try {
              const result = outbox.enqueueWithinCap(signal, [{ body: JSON.stringify(filtered.request) }], cap);
              metrics.overflow(result.droppedRecords, result.droppedBytes);
            } catch (err) {
              if ((err as { code?: string }).code !== "SQLITE_FULL") throw err;
              // Best-effort telemetry: a full disk loses it (counted) and must not fail the instance's exporter.
              metrics.dropped(signal, "disk_full", filtered.kept);
              request.log.warn({ signal }, "data dir full: operational telemetry dropped");
            }
            options.onEnqueued(signal);
          }
        }

        if (parsed.rejected === 0) return answer(reply, protobuf, 200, {}, () => encodeOtlpResponse(signal));
        const errorMessage = `${parsed.rejected} item(s) rejected: ${parsed.errors.join("; ")}`;
        const field = otlpSignals[signal].fields.rejected;
        return answer(reply, protobuf, 200, { partialSuccess: { [field]: parsed.rejected, errorMessage } }, () =>
          encodeOtlpResponse(signal, { rejected: parsed.rejected, errorMessage }),
        );
      });
    }
  });
}
