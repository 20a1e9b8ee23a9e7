import type Database from "better-sqlite3";
import type { Stream } from "./outbox-types.ts";
import { keysIds } from "./outbox-schema.ts";
import { recordKey } from "./record-key.ts";

/** Records as columns: what the billing intake hands its writer thread (half the copying of a list of objects). */
export interface RecordColumns {
  /** A record whose id its stream already holds is skipped; none: never a duplicate. */
  recordIds?: readonly (string | null | undefined)[];
  bodies: readonly (string | Buffer)[];
  /** Failed sends so far (the instance's own count for billing); none: 0. */
  attempts?: readonly number[];
}

/** Rows per statement: one multi-row INSERT per this many records took 15% off the intake's inserts (bench/RESULTS.md). */
const ROWS = 50;
const COLUMNS = 7;

const insertSql = (rows: number) =>
  `INSERT INTO outbox (stream, record_id, body, attempts, size, enqueued_at, updated_at) VALUES ${Array(rows)
    .fill(`(${Array(COLUMNS).fill("?").join(", ")})`)
    .join(", ")} ON CONFLICT DO NOTHING`;

/**
 * Inserts records into an outbox file's table, ROWS to a statement: the caller's transaction commits them. An id the
 * stream already holds, or one met earlier in the same records, is skipped (not sent twice).
 */
export class OutboxInserter {
  readonly #one: Database.Statement;
  readonly #many: Database.Statement;
  readonly #values: unknown[] = new Array(ROWS * COLUMNS);
  /** The file's ids: 16-byte keys (a new file) or text (an older one), record-key.ts. */
  readonly #key: (id: string | null | undefined) => string | Buffer | null;

  constructor(db: Database.Database) {
    this.#one = db.prepare(insertSql(1));
    this.#many = db.prepare(insertSql(ROWS));
    this.#key = keysIds(db) ? recordKey : (id) => id ?? null;
  }

  /** Returns how many were new. */
  insert(stream: Stream, records: RecordColumns, now: number): number {
    const { recordIds, bodies, attempts } = records;
    const put = (values: unknown[], at: number, i: number) => {
      const body = bodies[i]!;
      values[at] = stream;
      values[at + 1] = this.#key(recordIds?.[i]);
      values[at + 2] = body;
      values[at + 3] = attempts?.[i] ?? 0;
      values[at + 4] = Buffer.byteLength(body);
      values[at + 5] = now;
      values[at + 6] = now;
    };
    let inserted = 0;
    let i = 0;
    try {
      for (; i + ROWS <= bodies.length; i += ROWS) {
        for (let row = 0; row < ROWS; row++) put(this.#values, row * COLUMNS, i + row);
        inserted += this.#many.run(this.#values).changes;
      }
    } finally {
      this.#values.fill(undefined); // holds no body (an OTLP request's may be megabytes) past the call
    }
    const one: unknown[] = new Array(COLUMNS);
    for (; i < bodies.length; i++) {
      put(one, 0, i);
      inserted += this.#one.run(one).changes;
    }
    return inserted;
  }
}
