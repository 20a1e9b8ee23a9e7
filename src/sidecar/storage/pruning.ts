import type { Logger } from "pino";
import type { Clock } from "../../clock.ts";
import type { AuditLog } from "../audit.ts";
import type { OutboxHistory } from "./outbox-history.ts";

export const PRUNE_EVERY_MS = 60 * 60_000;

export interface PruningOptions {
  outbox: Pick<OutboxHistory, "pruneCompleted">;
  audit: Pick<AuditLog, "prune">;
  /** How long delivered records and audit entries are kept (ms). */
  keepCompletedMs: number;
  keepAuditMs: number;
  logger: Logger;
  now: Clock;
}

/**
 * Deletes delivered records and audit entries past retention: once just after start (after the listener is up:
 * on a large outbox it takes a while, and readiness must not wait) and then hourly, whatever the last round did.
 */
export function startPruning(options: PruningOptions): { close(): void } {
  const { outbox, audit, logger, now } = options;
  const prune = () => {
    try {
      const removed = outbox.pruneCompleted(now() - options.keepCompletedMs);
      if (removed > 0) logger.info({ removed }, "pruned delivered records past retention");
      const audited = audit.prune(now() - options.keepAuditMs);
      if (audited > 0) logger.info({ removed: audited }, "pruned audit entries past retention");
    } catch (err) {
      // Deleting is a write too: on a full data dir it waits for the next round instead of ending the process.
      logger.warn({ err }, "pruning failed; tried again in an hour");
    }
  };
  const first = setTimeout(prune, 0);
  const hourly = setInterval(prune, PRUNE_EVERY_MS);
  hourly.unref();
  return {
    close() {
      clearTimeout(first);
      clearInterval(hourly);
    },
  };
}
