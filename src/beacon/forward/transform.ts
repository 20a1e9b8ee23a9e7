import { otlpSignals, type KeyValue, type OtlpSignal } from "../../protocol/otlp.ts";
import type { QueuedBatch } from "./queue.ts";

/** The resource attributes the beacon sets on what it forwards; a sender's own of these names are replaced. */
export const LICENSE_ID = "license.id";
export const ORGANIZATION_ID = "organization.id";

/** One request to the collector: the batches it carries and its OTLP JSON body (null when nothing is left to send). */
export interface ForwardRequest {
  signal: OtlpSignal;
  seqs: number[];
  body: Record<string, unknown[]> | null;
  /** Data points of metrics not in telemetry.forward.metrics, left out. */
  droppedDataPoints: number;
}

type Entry = { resource?: { attributes?: KeyValue[] }; scopeMetrics?: { metrics?: Metric[] }[] };
type Metric = { name: string; gauge?: { dataPoints: unknown[] }; sum?: { dataPoints: unknown[] } };

/**
 * The requests for a round's batches: per signal, in queue order, batches merged into requests of about `maxBytes`
 * of stored JSON (a larger batch alone). Metrics keep only the allowed names; every resource gets the license's id and
 * organization, never anything of its key.
 */
export function forwardRequests(
  batches: readonly QueuedBatch[],
  options: { allowedMetrics: ReadonlySet<string>; organizationOf: (licenseId: string) => string | undefined; maxBytes: number },
): ForwardRequest[] {
  const requests: ForwardRequest[] = [];
  for (const signal of Object.keys(otlpSignals) as OtlpSignal[]) {
    let current: { seqs: number[]; entries: Entry[]; dropped: number; bytes: number } | undefined;
    const flush = () => {
      if (!current) return;
      const field = otlpSignals[signal].fields.resources;
      requests.push({
        signal,
        seqs: current.seqs,
        body: current.entries.length ? { [field]: current.entries } : null,
        droppedDataPoints: current.dropped,
      });
      current = undefined;
    };
    for (const batch of batches) {
      if (batch.signal !== signal) continue;
      if (current && current.bytes + batch.body.length > options.maxBytes) flush();
      current ??= { seqs: [], entries: [], dropped: 0, bytes: 0 };
      const { entries, dropped } = batchEntries(batch, options);
      current.seqs.push(batch.seq);
      current.entries.push(...entries);
      current.dropped += dropped;
      current.bytes += batch.body.length;
    }
    flush();
  }
  return requests;
}

function batchEntries(
  batch: QueuedBatch,
  options: { allowedMetrics: ReadonlySet<string>; organizationOf: (licenseId: string) => string | undefined },
): { entries: Entry[]; dropped: number } {
  const stored = JSON.parse(batch.body) as Record<string, Entry[]>;
  let entries = stored[otlpSignals[batch.signal].fields.resources] ?? [];
  let dropped = 0;
  if (batch.signal === "metrics") {
    const kept = allowedMetrics(entries, options.allowedMetrics);
    entries = kept.entries;
    dropped = kept.dropped;
  }
  const organizationId = batch.licenseId === null ? undefined : options.organizationOf(batch.licenseId);
  const own: KeyValue[] = [];
  if (batch.licenseId !== null) own.push({ key: LICENSE_ID, value: { stringValue: batch.licenseId } });
  if (organizationId !== undefined) own.push({ key: ORGANIZATION_ID, value: { stringValue: organizationId } });
  for (const entry of entries) {
    const attributes = (entry.resource?.attributes ?? []).filter((a) => a.key !== LICENSE_ID && a.key !== ORGANIZATION_ID);
    entry.resource = { ...entry.resource, attributes: [...attributes, ...own] };
  }
  return { entries, dropped };
}

/** Metrics entries with only the allowed metrics (scopes and resources left empty go too), and the data points left out. */
function allowedMetrics(entries: Entry[], allowed: ReadonlySet<string>): { entries: Entry[]; dropped: number } {
  let dropped = 0;
  const kept: Entry[] = [];
  for (const entry of entries) {
    const scopes = (entry.scopeMetrics ?? []).flatMap((scope) => {
      const metrics = (scope.metrics ?? []).filter((metric) => {
        if (allowed.has(metric.name)) return true;
        dropped += (metric.gauge ?? metric.sum)?.dataPoints.length ?? 0;
        return false;
      });
      return metrics.length ? [{ ...scope, metrics }] : [];
    });
    if (scopes.length) kept.push({ ...entry, scopeMetrics: scopes });
  }
  return { entries: kept, dropped };
}
