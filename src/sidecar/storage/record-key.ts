import type { OutboxRecord } from "./outbox-types.ts";

/**
 * How a record's id is kept in outbox.db: a canonical UUID (lower-case, as the billing intake's schema writes every
 * id) as its 16 bytes, any other id as its text. The unique index on ids holds an entry per record and the billing
 * intake inserts at random places in it: 16-byte keys instead of 36 characters made its inserts and commits about a
 * sixth cheaper (bench/RESULTS.md). A blob never equals a text, and a canonical UUID and its bytes map one to one, so
 * two ids are one key exactly when they are one text; each reads back as the text it was.
 */

/** Per ASCII code: its value for 0-9 and a-f, else 255 (upper case is not canonical: such an id stays text). */
const HEX = new Uint8Array(128).fill(255);
for (let i = 0; i < 16; i++) HEX["0123456789abcdef".charCodeAt(i)] = i;
const DASH = 45;

/** The stored key of an id (none: null). */
export function recordKey(id: string | null | undefined): string | Buffer | null {
  if (id == null) return null;
  if (
    id.length !== 36 ||
    id.charCodeAt(8) !== DASH ||
    id.charCodeAt(13) !== DASH ||
    id.charCodeAt(18) !== DASH ||
    id.charCodeAt(23) !== DASH
  )
    return id;
  const bytes = Buffer.allocUnsafe(16);
  let at = 0;
  // Two digits at a time; past 6, 11, 16 and 21 a dash is skipped.
  for (let i = 0; i < 36; i += i === 6 || i === 11 || i === 16 || i === 21 ? 3 : 2) {
    const hi = id.charCodeAt(i);
    const lo = id.charCodeAt(i + 1);
    const high = hi < 128 ? HEX[hi]! : 255;
    const low = lo < 128 ? HEX[lo]! : 255;
    if (high > 15 || low > 15) return id;
    bytes[at++] = (high << 4) | low;
  }
  return bytes;
}

/**
 * SQL for a stored key's columns: `keyHex` (a 16-byte key, in hex) or `idText` (an id kept as text). Records read
 * with them make their ids text only when asked (StoredRecord): a drain claims millions and asks for none, and making
 * the text in the query took a third more time to read a batch (bench/RESULTS.md).
 */
export const storedKeyColumns = (column: string) =>
  `CASE WHEN typeof(${column}) = 'blob' THEN hex(${column}) END AS keyHex, CASE WHEN typeof(${column}) = 'text' THEN ${column} END AS idText`;

/** The columns storedKeyColumns names. */
export interface StoredKey {
  keyHex: string | null;
  idText: string | null;
}

/** The id a stored key stands for, as it was sent. */
export function storedId({ keyHex, idText }: StoredKey): string | null {
  if (keyHex === null) return idText;
  const hex = keyHex.toLowerCase();
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** A row read with storedKeyColumns, and the record's other columns. */
export type StoredRow = StoredKey & { seq: number; body: string | Buffer; attempts: number };

/** A record as claimed or exported, from a StoredRow. */
export class StoredRecord implements OutboxRecord {
  readonly seq: number;
  body: string | Buffer;
  attempts: number;
  readonly #keyHex: string | null;
  readonly #idText: string | null;

  constructor(row: StoredRow) {
    this.seq = row.seq;
    this.#keyHex = row.keyHex;
    this.#idText = row.idText;
    this.body = row.body;
    this.attempts = row.attempts;
  }

  get recordId(): string | null {
    return storedId({ keyHex: this.#keyHex, idText: this.#idText });
  }
}
