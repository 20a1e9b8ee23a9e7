/**
 * A body's bytes as they arrive, in one buffer: a body of one chunk is that chunk; a longer one is copied, chunk by
 * chunk, into a buffer of its declared length (a plain body's Content-Length, checked against the limit before), or,
 * when that is unknown (an inflated body), one that doubles as it fills. Each chunk is garbage once copied, so a
 * body holds its size (up to half again while it doubles), not its chunks and then their concatenation besides: a
 * 16 MiB body held 32 MiB at its end. The buffer's pages are the kernel's until written: room reserved for a length
 * declared but not sent costs no memory.
 */
export class BodyBytes {
  size = 0;
  #first: Buffer | undefined;
  #buffer: Buffer | undefined;
  readonly #limit: number;
  readonly #declared: number | undefined;

  constructor(limit: number, declared: number | undefined) {
    this.#limit = limit;
    this.#declared = Number.isSafeInteger(declared) && declared! > 0 ? declared : undefined;
  }

  append(chunk: Buffer): void {
    const size = this.size + chunk.length;
    if (this.size === 0) this.#first = chunk;
    else {
      if (this.#buffer === undefined || size > this.#buffer.length) this.#grow(size);
      chunk.copy(this.#buffer!, this.size);
    }
    this.size = size;
  }

  #grow(needed: number): void {
    const capacity =
      this.#declared !== undefined && needed <= this.#declared ? this.#declared : Math.min(this.#limit, Math.max(needed, 2 * this.size));
    const buffer = Buffer.allocUnsafeSlow(Math.max(needed, capacity));
    (this.#buffer ?? this.#first!).copy(buffer, 0, 0, this.size);
    this.#buffer = buffer;
    this.#first = undefined;
  }

  /** What arrived so far, in order (the JSON item counter reads it again when it must count exactly). */
  parts(): Buffer[] {
    const held = this.#buffer ?? this.#first;
    return held ? [held.subarray(0, this.size)] : [];
  }

  /** The whole body, let go of here. */
  take(): Buffer {
    const body = this.#buffer ? this.#buffer.subarray(0, this.size) : (this.#first ?? Buffer.alloc(0));
    this.drop();
    return body;
  }

  drop(): void {
    this.#first = undefined;
    this.#buffer = undefined;
  }
}
