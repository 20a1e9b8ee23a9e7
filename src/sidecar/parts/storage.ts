import type { Logger } from "pino";
import type { Clock } from "../../clock.ts";
import { OTLP_SIGNALS } from "../../protocol/otlp.ts";
import { AuditLog } from "../audit.ts";
import type { AgentConfig } from "../config.ts";
import { openOutbox } from "../storage/data-dir.ts";
import { ensureWritableDataDir, shareWithGroup } from "../storage/data-dir-access.ts";
import { lockDataDir } from "../storage/data-dir-lock.ts";
import { BillingWriter } from "../storage/billing-writer.ts";
import { DataDirSpace } from "../storage/disk-space.ts";
import { ensureInstanceId } from "../storage/instance-id.ts";
import type { Outbox } from "../storage/outbox.ts";

export interface Storage {
  outbox: Outbox;
  /** The billing intake's commits to the outbox, on a thread of their own. */
  billing: BillingWriter;
  /** This sidecar's instance id, kept in the data dir (sent to the beacon on every request). */
  instanceId: string;
  audit: AuditLog;
  space: DataDirSpace;
  /** Marks the data dir as served by this process (after the listener is up). */
  announce(): void;
  close(): Promise<void>;
}

/**
 * Opens the data dir: its lock, the outbox, the instance id and the audit log. Refuses (exit 3) a data dir another
 * sidecar runs on, or whose outbox or instance id is missing, swapped or damaged.
 */
export function openStorage(config: AgentConfig, options: { logger: Logger; now: Clock; newOutbox?: boolean }): Storage {
  const { logger, now } = options;
  ensureWritableDataDir(config.dataDir);
  const lock = lockDataDir(config.dataDir, now);
  let outbox: Outbox | undefined;
  let audit: AuditLog | undefined;
  let instanceId: string;
  try {
    outbox = openOutbox(config.dataDir, { now, logger, newOutbox: options.newOutbox });
    instanceId = ensureInstanceId(config.dataDir, logger);
    shareWithGroup(config.dataDir);
    audit = new AuditLog(config.dataDir, { keepBodies: config.audit.keepBodies, secrets: [config.licenseKey], logger });
    discardSwitchedOff(config, outbox, logger);
  } catch (err) {
    audit?.close();
    outbox?.close();
    lock.release();
    throw err;
  }
  const space = new DataDirSpace(config.dataDir, { logger });
  space.roomForTelemetry(); // logs at once when the sidecar starts on a (nearly) full data dir
  const billing = new BillingWriter(config.dataDir, { now, logger });
  return {
    outbox,
    billing,
    instanceId,
    audit,
    space,
    announce: () => lock.announce(),
    async close() {
      try {
        await billing.close(); // its last commits first: what it answered is on disk
        audit.close();
      } finally {
        try {
          outbox.close();
        } finally {
          lock.release();
        }
      }
    },
  };
}

/** A switched-off signal's queued records are deleted, not sent (the switch may have changed since they came). */
function discardSwitchedOff(config: AgentConfig, outbox: Outbox, logger: Logger): void {
  for (const signal of OTLP_SIGNALS) {
    const removed = config.telemetry[signal] ? 0 : outbox.discard(signal);
    if (removed > 0) logger.info({ signal, removed }, "signal switched off: queued records deleted");
  }
  if (!config.usageReporting) {
    const removed = outbox.discard("usage");
    if (removed > 0) logger.info({ removed }, "usage reporting off: queued snapshots deleted");
  }
}
