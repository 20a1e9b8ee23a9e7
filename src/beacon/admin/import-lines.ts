import type { Readable } from "node:stream";
import { HttpError } from "../../errors.ts";

/** How much of a body is read, how long one line may be, and how long the body may send nothing. */
export interface LineLimits {
  maxBytes: number;
  maxLineBytes: number;
  idleMs: number;
}

/** One line of the body: its number (from 1, as an editor counts) and its text, or `tooLong` past maxLineBytes. */
export type BodyLine = { number: number; text: string; tooLong?: undefined } | { number: number; text?: undefined; tooLong: true };

const LF = 0x0a;

/** The chunks of `body` as they arrive; 408 when nothing comes for `idleMs`. The body is never destroyed here. */
async function* chunksOf(body: Readable, idleMs: number): AsyncGenerator<Buffer> {
  // destroyOnReturn false: stopping early (a 413) must leave the socket to carry the answer.
  const iterator = body.iterator({ destroyOnReturn: false });
  for (;;) {
    let timer: NodeJS.Timeout | undefined;
    const idle = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(
            new HttpError("EGRESS_ERR_BODY_TIMEOUT", `nothing of the file arrived for ${idleMs} ms; a stalled upload is not waited for`),
          ),
        idleMs,
      );
    });
    let next: IteratorResult<unknown>;
    try {
      next = await Promise.race([iterator.next(), idle]);
    } catch (err) {
      if (err instanceof HttpError) throw err;
      throw new HttpError("EGRESS_ERR_BODY_INCOMPLETE", "the connection ended before the whole file arrived");
    } finally {
      clearTimeout(timer);
    }
    if (next.done) return;
    yield next.value as Buffer;
  }
}

const decode = (parts: Buffer[]) => (parts.length === 1 ? parts[0]! : Buffer.concat(parts)).toString("utf8");

/**
 * The lines of a body as they arrive, without their `\n` (or `\r\n`): at most one line and one chunk are held, so a
 * file of any size within `maxBytes` is read in bounded memory. A line longer than `maxLineBytes` is reported as
 * `tooLong` and skipped to its end, never buffered. A last line without `\n` is a line. 413 past `maxBytes`.
 */
export async function* bodyLines(body: Readable, limits: LineLimits): AsyncGenerator<BodyLine> {
  let parts: Buffer[] = [];
  let held = 0;
  let skipping = false;
  let number = 0;
  let total = 0;
  const finish = (): BodyLine => {
    number++;
    const line: BodyLine = skipping ? { number, tooLong: true } : { number, text: decode(parts).replace(/\r$/, "") };
    parts = [];
    held = 0;
    skipping = false;
    return line;
  };
  for await (const chunk of chunksOf(body, limits.idleMs)) {
    total += chunk.length;
    if (total > limits.maxBytes) {
      throw new HttpError(
        "EGRESS_ERR_BODY_TOO_LARGE",
        `the file is larger than the ${limits.maxBytes}-byte limit of an import; import it in parts, each with its header line (docs/beacon.md)`,
      );
    }
    let start = 0;
    for (;;) {
      const end = chunk.indexOf(LF, start);
      const piece = chunk.subarray(start, end < 0 ? chunk.length : end);
      if (!skipping && held + piece.length > limits.maxLineBytes) {
        skipping = true;
        parts = [];
      }
      if (!skipping && piece.length > 0) {
        parts.push(piece);
        held += piece.length;
      }
      if (end < 0) break;
      yield finish();
      start = end + 1;
    }
  }
  if (held > 0 || skipping) yield finish();
}
