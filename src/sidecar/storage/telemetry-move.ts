import type Database from "better-sqlite3";
import { KeyValues } from "./key-values.ts";
import { deliveredKey } from "./outbox-stats.ts";
import { TELEMETRY_STREAMS } from "./outbox-types.ts";

/** In telemetry.db: the highest outbox.db seq already copied over (a move cut short by a crash is resumed, not redone). */
const MOVED_UP_TO = "moved.fromOutbox.upToSeq";

/**
 * An outbox.db written by an older sidecar holds the OTLP signals' records too: they move to telemetry.db, once,
 * with their attempts, states and delivered counts. The copy commits (synced, this once) before the rows leave
 * outbox.db, and records how far it got, so a crash in between neither loses nor copies a record twice.
 * Returns how many records moved.
 */
export function moveTelemetryRows(main: Database.Database, telemetry: Database.Database): number {
  const list = TELEMETRY_STREAMS.map((stream) => `'${stream}'`).join(", ");
  const keys = TELEMETRY_STREAMS.map(deliveredKey);
  const keyList = keys.map((key) => `'${key}'`).join(", ");
  const left = main.prepare(`SELECT max(seq) AS last FROM outbox WHERE stream IN (${list})`).get() as { last: number | null };
  const counters = main.prepare(`SELECT key, value FROM kv WHERE key IN (${keyList})`).all() as { key: string; value: string }[];
  if (left.last === null && counters.length === 0) return 0;

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
  telemetry.pragma("synchronous = FULL");
  try {
    telemetry.transaction(() => {
      for (const row of rows.iterate(Number(movedUpTo ?? 0))) moved += insert.run(row as Record<string, unknown>).changes;
      // The counts go over with the first copy only; a resumed move finds them copied already.
      if (movedUpTo === undefined) for (const { key, value } of counters) kv.add(key, Number(value));
      kv.set(MOVED_UP_TO, String(Math.max(left.last ?? 0, Number(movedUpTo ?? 0))));
    })();
  } finally {
    telemetry.pragma("synchronous = OFF");
  }
  main.transaction(() => {
    main.prepare(`DELETE FROM outbox WHERE stream IN (${list})`).run();
    main.prepare(`DELETE FROM kv WHERE key IN (${keyList})`).run();
  })();
  return moved;
}
