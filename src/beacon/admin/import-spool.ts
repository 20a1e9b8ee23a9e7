import { randomBytes } from "node:crypto";
import { mkdirSync, readSync } from "node:fs";
import { type FileHandle, open, unlink } from "node:fs/promises";
import { join } from "node:path";
import { StringDecoder } from "node:string_decoder";
import type { TraceTransaction } from "../../protocol/trace-transaction.ts";

/** Written out once this much is gathered; read back in pieces of this size. */
const CHUNK_BYTES = 1 << 16;

/**
 * The records of an import as validated, one JSON line each, in a file of the beacon's data dir: the file is read
 * and checked whole before anything is stored, in bounded memory. The file is unlinked as soon as it is made, so it
 * is gone with its last descriptor, also when the beacon dies mid-import.
 */
export class ImportSpool {
  readonly #file: FileHandle;
  #pending: string[] = [];
  #pendingBytes = 0;
  #size = 0;

  private constructor(file: FileHandle) {
    this.#file = file;
  }

  static async open(dataDir: string): Promise<ImportSpool> {
    const dir = join(dataDir, "imports");
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const path = join(dir, `${randomBytes(8).toString("hex")}.jsonl`);
    const file = await open(path, "w+", 0o600);
    await unlink(path);
    return new ImportSpool(file);
  }

  async append(transaction: TraceTransaction): Promise<void> {
    const line = `${JSON.stringify(transaction)}\n`;
    this.#pending.push(line);
    this.#pendingBytes += line.length;
    if (this.#pendingBytes >= CHUNK_BYTES) await this.flush();
  }

  async flush(): Promise<void> {
    if (this.#pending.length === 0) return;
    const bytes = Buffer.from(this.#pending.join(""), "utf8");
    this.#pending = [];
    this.#pendingBytes = 0;
    await this.#file.write(bytes, 0, bytes.length, this.#size);
    this.#size += bytes.length;
  }

  /** The records back, `size` at a time, read synchronously (an SQLite transaction cannot wait on a promise). */
  *batches(size: number): Generator<TraceTransaction[]> {
    const buffer = Buffer.alloc(CHUNK_BYTES);
    // A character cut by a piece's end is completed by the next piece.
    const decoder = new StringDecoder("utf8");
    let batch: TraceTransaction[] = [];
    let carry = "";
    for (let position = 0; position < this.#size; ) {
      const read = readSync(this.#file.fd, buffer, 0, Math.min(CHUNK_BYTES, this.#size - position), position);
      position += read;
      const text = carry + decoder.write(buffer.subarray(0, read));
      const lines = text.split("\n");
      carry = lines.pop()!;
      for (const line of lines) {
        batch.push(JSON.parse(line) as TraceTransaction);
        if (batch.length === size) {
          yield batch;
          batch = [];
        }
      }
    }
    if (batch.length > 0) yield batch;
  }

  close(): Promise<void> {
    return this.#file.close();
  }
}
