/**
 * A body's bytes as they arrive, in one buffer: a body of one chunk is that chunk; a longer one is copied, chunk by
 * chunk, into a buffer that doubles as it fills, never past the body's declared length (a plain body's
 * Content-Length, checked against the limit before) when it has one. A chunk is garbage once copied, so a body holds
 * at most about twice what it has sent (the old buffer and the new one, until a collection, just after doubling) and
 * ends in a buffer of its exact length when it declared one; before, a 16 MiB body held its chunks and then their
 * concatenation besides. Room is taken for what was sent, never for what a client says it will send.
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
    const buffer = Buffer.allocUnsafeSlow(Math.max(needed, Math.min(this.#declared ?? this.#limit, 2 * this.size)));
    (this.#buffer ?? this.#first!).copy(buffer, 0, 0, this.size);
    this.#buffer = buffer;
    this.#first = undefined;
  }

  /** Bytes held for the body now. */
  get capacity(): number {
    return this.#buffer?.length ?? this.#first?.length ?? 0;
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
