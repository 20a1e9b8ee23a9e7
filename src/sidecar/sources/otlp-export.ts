import { HttpError } from "../../errors.ts";
import type { OtlpRequest, OtlpSignal } from "../../protocol/otlp.ts";
import { OtlpRequestShapeError, parseExport } from "../../protocol/otlp-request.ts";
import { filterLogs, filterMetrics, filterTraces, type FilterResult, type PrivacyPolicy } from "../privacy/policy.ts";

const filters = { metrics: filterMetrics, traces: filterTraces, logs: filterLogs } as {
  [S in OtlpSignal]: (request: OtlpRequest, policy: PrivacyPolicy) => FilterResult<OtlpRequest>;
};

/**
 * What one OTLP export request came to: counts, reasons and the bytes to keep, and none of the decoded request. The
 * route holds this across its wait for the outbox's commit; were it the decoded trees, every collection meanwhile
 * would copy them (bench/RESULTS.md: garbage collection was the relay's largest cost).
 */
export type ExportOutcome =
  /** Not an export request at all (undecodable, or not the request's shape): the OTLP 400, with this message. */
  | { kind: "bad"; message: string }
  | {
      kind: "parsed";
      accepted: number;
      rejected: number;
      errors: string[];
      /** What passed the privacy filter, when the signal is on and something did: the outbox record's body. */
      kept?: { body: Buffer; items: number };
      droppedItems: number;
      droppedAttributes: number;
    };

/**
 * Decodes (JSON, or protobuf with `decodeProtobuf`), validates item by item and filters one export request, and
 * serialises what may leave. The HTTP server's refusal while decoding (too many messages: 413; the body budget full:
 * 503) is thrown as it is.
 */
export function processExport(
  signal: OtlpSignal,
  body: Buffer,
  o: { decodeProtobuf: ((signal: OtlpSignal, body: Buffer) => unknown) | undefined; enabled: boolean; policy: PrivacyPolicy },
): ExportOutcome {
  let parsed: ReturnType<typeof parseExport>;
  try {
    const raw: unknown = o.decodeProtobuf ? o.decodeProtobuf(signal, body) : JSON.parse(body.toString("utf8"));
    parsed = parseExport(signal, raw);
  } catch (err) {
    if (err instanceof OtlpRequestShapeError) return { kind: "bad", message: err.message };
    if (err instanceof HttpError) throw err;
    return { kind: "bad", message: `the body is not a valid OTLP ${o.decodeProtobuf ? "protobuf" : "JSON"} export request` };
  }
  const { accepted, rejected, errors } = parsed;
  const outcome = { kind: "parsed" as const, accepted, rejected, errors, droppedItems: 0, droppedAttributes: 0 };
  if (!o.enabled || accepted === 0) return outcome;
  const filtered = filters[signal](parsed.request, o.policy);
  outcome.droppedItems = filtered.droppedItems;
  outcome.droppedAttributes = filtered.droppedAttributes;
  if (!filtered.request) return outcome;
  return { ...outcome, kept: { body: Buffer.from(JSON.stringify(filtered.request)), items: filtered.kept } };
}
