import type Database from "better-sqlite3";
import type { OtlpSignal } from "../protocol/otlp.ts";

/** One OTLP request to store: `text` its JSON (BeaconStorage.insertOtlp), `forward` queued for the vendor's collector too. */
export interface OtlpRow {
  signal: OtlpSignal;
  licenseId: string | null;
  itemCount: number;
  text: string;
  forward: boolean;
}

/** Stores OTLP requests on a connection to beacon.db (the server's own, or its writer thread's). */
export class OtlpInserter {
  readonly #db: Database.Database;
  readonly #insert: Database.Statement;
  // Prepared when first used: a read-only open (`beacon report`) of an older beacon.db has no forward_queue.
  #enqueueForward: Database.Statement | undefined;

  constructor(db: Database.Database) {
    this.#db = db;
    this.#insert = db.prepare("INSERT INTO otlp_batches (signal, license_id, item_count, body, received_at) VALUES (?, ?, ?, ?, ?)");
  }

  /** The caller holds the transaction: the batch and its place in the forward queue are stored together. */
  insert(row: OtlpRow, receivedAt: string): void {
    const { lastInsertRowid } = this.#insert.run(row.signal, row.licenseId, row.itemCount, row.text, receivedAt);
    if (!row.forward) return;
    this.#enqueueForward ??= this.#db.prepare("INSERT INTO forward_queue (seq, bytes, received_at) VALUES (?, ?, ?)");
    this.#enqueueForward.run(lastInsertRowid, Buffer.byteLength(row.text), receivedAt);
  }
}
