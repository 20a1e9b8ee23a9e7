import type Database from "better-sqlite3";
import type { OutboxRecord, Stream } from "./outbox.ts";
import { StoredRecord, type StoredRow, storedKeyColumns } from "./record-key.ts";

/**
 * The records the outbox keeps after delivery (billing, for the true-up export) and their retention: `export`
 * reads every record of a stream, pruning deletes delivered ones past retention.
 */
export class OutboxHistory {
  readonly #records: Database.Statement;
  readonly #prune: Database.Statement;

  constructor(db: Database.Database, streams: string) {
    this.#records = db.prepare(`SELECT seq, ${storedKeyColumns("record_id")}, body, attempts FROM outbox WHERE stream = ? ORDER BY seq`);
    // Literal stream names, so the planner can use the indexes that lead with `stream`.
    this.#prune = db.prepare(`DELETE FROM outbox WHERE stream IN (${streams}) AND state = 'completed' AND updated_at < ?`);
  }

  /** Every record of a stream, in order, whatever its state. */
  *records(stream: Stream): Generator<OutboxRecord> {
    for (const row of this.#records.iterate(stream) as Iterable<StoredRow>) yield new StoredRecord(row);
  }

  /** Deletes completed records last updated before `before` (ms). Returns how many went. */
  pruneCompleted(before: number): number {
    return this.#prune.run(before).changes;
  }
}
