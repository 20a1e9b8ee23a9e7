import { mediaType } from "../../http/body.ts";
import { Answer } from "../../http/exchange.ts";
import type { HttpServer } from "../../http/server.ts";
import { OTLP_SIGNALS, otlpSignals, PROTOBUF_MEDIA_TYPE, type OtlpSignal } from "../../protocol/otlp.ts";
import { isDiskFull, type DataDirSpace } from "../storage/disk-space.ts";
import type { AgentMetrics } from "../local-api/metrics.ts";
import type { ByteCap, CappedEnqueueResult, Outbox } from "../storage/outbox.ts";
import { GroupCommit } from "../../group-commit.ts";
import type { PrivacyPolicy } from "../privacy/policy.ts";
import { processExport } from "./otlp-export.ts";
import { INVALID_ARGUMENT, otlpErrorAnswer } from "../../http/otlp-http.ts";

export interface OtlpReceiverOptions {
  outbox: Outbox;
  /** Which signals may leave; the others are accepted (so the instance logs no errors) and dropped at once. */
  enabled: Record<OtlpSignal, boolean>;
  privacy: PrivacyPolicy;
  cap: ByteCap<OtlpSignal>;
  metrics: AgentMetrics;
  /** Below twice the data dir's delivery reserve telemetry is not kept (billing gets the rest of the disk). */
  space: DataDirSpace;
  onEnqueued(signal: OtlpSignal): void;
}

type Entry = { stream: OtlpSignal; records: { body: Buffer }[] };

/** Per the OTLP/HTTP spec, an answer is encoded like the request: protobuf for protobuf, JSON otherwise. */
function answer(protobuf: boolean, status: number, json: unknown, encode: () => Uint8Array): Answer {
  return protobuf ? new Answer(status, encode(), PROTOBUF_MEDIA_TYPE) : new Answer(status, json);
}

/**
 * POST /v1/metrics, /v1/traces, /v1/logs: the OTLP/HTTP receiver the instance's exporters point at (JSON or
 * protobuf, gzip or deflate). Valid items pass the privacy filter and, when their signal is on, are
 * committed to the outbox under the telemetry byte cap; invalid items are rejected alone (partial success).
 * When the data dir is (nearly) full, what would be kept is dropped, counted (reason disk_full) and reported
 * as rejected in a 200 partial success: best-effort telemetry is not worth a retry (OTLP/HTTP retries only
 * 429, 502, 503, 504), and an exporter must not hold the instance's memory waiting for disk space.
 */
export function registerOtlpReceiver(app: HttpServer, options: OtlpReceiverOptions): void {
  const { outbox, enabled, privacy, cap, metrics, space } = options;
  // Requests parsed in the same turn share one transaction (a full disk fails them all).
  const intake = new GroupCommit<Entry, CappedEnqueueResult>((entries) => outbox.enqueueAllWithinCap(entries, cap), isDiskFull);
  for (const signal of OTLP_SIGNALS) {
    app.post(
      `/v1/${signal}`,
      async (request) => {
        const protobuf = mediaType(request.headers) === PROTOBUF_MEDIA_TYPE;
        // protobufjs and the OTLP schema load on the first protobuf request: JSON-only instances never pay for them.
        const codec = protobuf ? await import("../../protocol/otlp-protobuf.ts") : undefined;
        const outcome = processExport(signal, request.body as Buffer, {
          decodeProtobuf: codec ? (s, body) => codec.decodeOtlpProtobuf(s, body, request.chargeItems, request.itemLimit) : undefined,
          enabled: enabled[signal],
          policy: privacy,
        });
        if (outcome.kind === "bad") {
          const { message } = outcome;
          return answer(protobuf, 400, { code: INVALID_ARGUMENT, message }, () => codec!.encodeRpcStatus(INVALID_ARGUMENT, message));
        }
        const parsed = outcome;
        let diskFull = 0;
        metrics.received(signal, parsed.accepted + parsed.rejected);
        if (!enabled[signal]) {
          // Nothing of a switched-off signal is kept, so nothing is worth a warning: items we could not carry
          // (histograms, say) are dropped with the rest, and the exporter hears plain success, as documented.
          metrics.dropped(signal, "switched_off", parsed.accepted + parsed.rejected);
          return answer(protobuf, 200, {}, () => codec!.encodeOtlpResponse(signal));
        }
        metrics.dropped(signal, "rejected", parsed.rejected);
        if (parsed.accepted > 0) {
          metrics.dropped(signal, "policy", parsed.droppedItems);
          metrics.droppedAttributes(signal, parsed.droppedAttributes);
        }
        if (parsed.kept) {
          try {
            if (space.roomForTelemetry()) {
              const result = await intake.submit({ stream: signal, records: [{ body: parsed.kept.body }] });
              metrics.overflow(result.droppedRecords, result.droppedBytes);
              options.onEnqueued(signal);
            } else diskFull = parsed.kept.items;
          } catch (err) {
            if (!isDiskFull(err)) throw err;
            diskFull = parsed.kept.items;
          }
          // Best-effort telemetry: a full disk loses it (counted, and logged once by DataDirSpace).
          metrics.dropped(signal, "disk_full", diskFull);
        }

        const rejected = parsed.rejected + diskFull;
        if (rejected === 0) return answer(protobuf, 200, {}, () => codec!.encodeOtlpResponse(signal));
        const errorMessage = [
          ...(parsed.rejected > 0 ? [`${parsed.rejected} item(s) rejected: ${parsed.errors.join("; ")}`] : []),
          ...(diskFull > 0
            ? [`${diskFull} item(s) dropped: the egress-agent data dir is full, operational telemetry is not kept until there is room`]
            : []),
        ].join("; ");
        const field = otlpSignals[signal].fields.rejected;
        return answer(protobuf, 200, { partialSuccess: { [field]: rejected, errorMessage } }, () =>
          codec!.encodeOtlpResponse(signal, { rejected, errorMessage }),
        );
      },
      // These routes decode their own bodies: an undecodable one is the OTLP 400, not the local API's 422.
      { body: { raw: ["application/json", PROTOBUF_MEDIA_TYPE] }, errors: otlpErrorAnswer },
    );
  }
}
