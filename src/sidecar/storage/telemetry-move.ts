import type Database from "better-sqlite3";
import type { Logger } from "pino";
import { isDiskFull } from "./disk-space.ts";
import { KeyValues } from "./key-values.ts";
import { deliveredKey } from "./outbox-stats.ts";
import { TELEMETRY_STREAMS } from "./outbox-types.ts";

/** In telemetry.db: the highest outbox.db seq already copied over (a move cut short by a crash is resumed, not redone). */
const MOVED_UP_TO = "moved.fromOutbox.upToSeq";

/**
 * An outbox.db written by an older sidecar holds the OTLP signals' records too: they move to telemetry.db, once,
 * with their attempts, states and delivered counts. The copy is committed and checkpointed with full syncs (into
 * telemetry.db itself: its WAL would otherwise keep the whole copy, and a power cut could take it) before the rows
 * leave outbox.db, and it records how far it got, so a crash in between neither loses nor copies a record twice.
 * On a disk too full for the copy they are dropped instead (best effort, said in a warning): billing must start.
 */
export function moveTelemetryRows(main: Database.Database, telemetry: Database.Database, logger?: Logger): void {
  const list = TELEMETRY_STREAMS.map((stream) => `'${stream}'`).join(", ");
  const keys = TELEMETRY_STREAMS.map(deliveredKey);
  const keyList = keys.map((key) => `'${key}'`).join(", ");
  const left = main.prepare(`SELECT max(seq) AS last, count(*) AS n FROM outbox WHERE stream IN (${list})`).get() as {
    last: number | null;
    n: number;
  };
  const counters = main.prepare(`SELECT key, value FROM kv WHERE key IN (${keyList})`).all() as { key: string; value: string }[];
  if (left.last === null && counters.length === 0) return;

  const kv = new KeyValues(telemetry);
  const movedUpTo = kv.get(MOVED_UP_TO);
  let moved = 0;
  const insert = telemetry.prepare(
    `INSERT INTO outbox (stream, record_id, body, state, attempts, size, enqueued_at, updated_at, last_error)
     VALUES (@stream, @record_id, @body, @state, @attempts, @size, @enqueued_at, @updated_at, @last_error)`,
  );
  const rows = main.prepare(
    `SELECT stream, record_id, body, state, attempts, size, enqueued_at, updated_at, last_error
     FROM outbox WHERE stream IN (${list}) AND seq > ? ORDER BY seq`,
  );
  let copied = true;
  telemetry.pragma("synchronous = FULL");
  try {
    telemetry.transaction(() => {
      for (const row of rows.iterate(Number(movedUpTo ?? 0))) moved += insert.run(row as Record<string, unknown>).changes;
      // The counts go over with the first copy only; a resumed move finds them copied already.
      if (movedUpTo === undefined) for (const { key, value } of counters) kv.add(key, Number(value));
      kv.set(MOVED_UP_TO, String(Math.max(left.last ?? 0, Number(movedUpTo ?? 0))));
    })();
  } catch (err) {
    if (!isDiskFull(err)) throw err;
    [copied, moved] = [false, 0];
    logger?.warn({ records: left.n }, "the data dir is too full to move operational telemetry into telemetry.db: dropped (best effort)");
  }
  try {
    // Into the file itself while still synced: its later, unsynced checkpoints must not be what keeps the copy.
    if (copied) telemetry.pragma("wal_checkpoint(TRUNCATE)");
  } catch (err) {
    if (!isDiskFull(err)) throw err; // the copy is committed in the synced log all the same
  } finally {
    telemetry.pragma("synchronous = OFF");
  }
  // On a disk too full even for these deletes, the start fails as any start on a full disk does (diskFullAtStart).
  main.transaction(() => {
    main.prepare(`DELETE FROM outbox WHERE stream IN (${list})`).run();
    main.prepare(`DELETE FROM kv WHERE key IN (${keyList})`).run();
  })();
  if (moved > 0) logger?.info({ records: moved }, "operational telemetry moved from outbox.db to telemetry.db");
}
