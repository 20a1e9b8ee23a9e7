import { redactSecrets } from "../../config/redact.ts";
import type { AgentStatus, LicenseStatus, StreamStatus } from "../../protocol/local-api.ts";
import type { Outbox, Stream } from "../storage/outbox.ts";
import type { StreamHealth } from "../storage/stream-health.ts";

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/**
 * GET /v1/status: the license, and per stream its queue, last success, last error and dead letters. Every error
 * message passes redactSecrets: whatever a message came to hold, status never shows `secrets` (the license key), a
 * token or a terminal escape.
 */
export function buildStatus(
  license: LicenseStatus,
  outbox: Outbox,
  streams: { stream: Stream; enabled: boolean; health?: StreamHealth }[],
  now: number,
  secrets: readonly string[],
  /** Offline: what the outbox holds is kept for export, not queued for sending. */
  offline = false,
): AgentStatus {
  const shown = (text: string) => redactSecrets(text, secrets);
  const result: Record<string, StreamStatus> = {};
  for (const { stream, enabled, health } of streams) {
    const counts = outbox.stats.counts(stream);
    const queued = offline ? 0 : counts.pending;
    result[stream] = {
      enabled,
      pending: queued,
      sending: counts.sending,
      completed: counts.completed,
      delivered: counts.delivered,
      keptForExport: offline ? counts.pending : 0,
      failed: counts.failed,
      oldestPendingAgeSeconds: counts.oldestPendingAt === null || offline ? null : Math.max(0, (now - counts.oldestPendingAt) / 1000),
      lastSuccessAt: iso(health?.lastSuccessAt ?? null),
      lastError: health?.lastError ? { at: iso(health.lastError.at)!, message: shown(health.lastError.message) } : null,
      deadLetters: outbox.stats.deadLetters(stream).map((dead) => ({ ...dead, error: dead.error === null ? null : shown(dead.error) })),
    };
  }
  return { license: { ...license, lastError: license.lastError === null ? null : shown(license.lastError) }, streams: result };
}
