import type { AgentStatus, LicenseStatus, StreamStatus } from "../protocol/local-api.ts";
import type { Outbox, Stream } from "./outbox.ts";
import type { StreamHealth } from "./stream-health.ts";

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/** GET /v1/status: the license, and per stream its queue, last success, last error and dead letters. */
export function buildStatus(
  license: LicenseStatus,
  outbox: Outbox,
  streams: { stream: Stream; enabled: boolean; health?: StreamHealth }[],
  now: number,
): AgentStatus {
  const result: Record<string, StreamStatus> = {};
  for (const { stream, enabled, health } of streams) {
    const counts = outbox.counts(stream);
    result[stream] = {
      enabled,
      pending: counts.pending,
      sending: counts.sending,
      completed: counts.completed,
      failed: counts.failed,
      oldestPendingAgeSeconds: counts.oldestPendingAt === null ? null : Math.max(0, (now - counts.oldestPendingAt) / 1000),
      lastSuccessAt: iso(health?.lastSuccessAt ?? null),
      lastError: health?.lastError ? { at: iso(health.lastError.at)!, message: health.lastError.message } : null,
      deadLetters: outbox.deadLetters(stream),
    };
  }
  return { license, streams: result };
}
