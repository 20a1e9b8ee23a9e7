import type Database from "better-sqlite3";
import type { OtlpSignal } from "../protocol/otlp.ts";

/**
 * An OTLP request's JSON text to store: a string, or its UTF-8 bytes (the body as received, when parsing left it as it
 * was): bytes reach the SQLite writer thread by transfer, not copied into a string on each side (bench/RESULTS.md).
 */
export type OtlpText = string | Uint8Array;

export const otlpTextBytes = (text: OtlpText): number => (typeof text === "string" ? Buffer.byteLength(text) : text.byteLength);
export const otlpString = (text: OtlpText): string =>
  typeof text === "string" ? text : Buffer.from(text.buffer, text.byteOffset, text.byteLength).toString("utf8");

/** One OTLP request to store: `text` its JSON (BeaconStorage.insertOtlp), `forward` queued for the vendor's collector too. */
export interface OtlpRow {
  signal: OtlpSignal;
  licenseId: string | null;
  itemCount: number;
  text: OtlpText;
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
    // CAST: bytes (bound as a BLOB) are stored as the TEXT they encode, as a string would be; SQLite copies them as they are.
    this.#insert = db.prepare(
      "INSERT INTO otlp_batches (signal, license_id, item_count, body, received_at) VALUES (?, ?, ?, CAST(? AS TEXT), ?)",
    );
  }

  /** The caller holds the transaction: the batch and its place in the forward queue are stored together. */
  insert(row: OtlpRow, receivedAt: string): void {
    const { lastInsertRowid } = this.#insert.run(row.signal, row.licenseId, row.itemCount, row.text, receivedAt);
    if (!row.forward) return;
    this.#enqueueForward ??= this.#db.prepare("INSERT INTO forward_queue (seq, bytes, received_at) VALUES (?, ?, ?)");
    this.#enqueueForward.run(lastInsertRowid, otlpTextBytes(row.text), receivedAt);
  }
}
