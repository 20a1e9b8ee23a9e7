import type { IncomingMessage } from "node:http";
import { EgressError } from "../errors.ts";

// Every HTTP client of the product reads its answer through here, at most a cap's worth: a wrong URL, a captive
// portal or a hostile server can send an endless body, and an unbounded read would hold all of it in memory.

export const KiB = 1024;
export const MiB = 1024 * KiB;

/** A cap in words: "64 KiB", "1 MiB", "512 bytes". */
function describeBytes(bytes: number): string {
  if (bytes >= MiB && bytes % MiB === 0) return `${bytes / MiB} MiB`;
  if (bytes >= KiB && bytes % KiB === 0) return `${bytes / KiB} KiB`;
  return `${bytes} bytes`;
}

/** Only the scheme, host and port of a URL: never its path, query or credentials, which may hold a secret. */
function originOf(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return "the server";
  }
}

/**
 * An answer (or, for a stream, one event) longer than its client's cap. The read stopped there and the connection
 * was closed: the answer counts as a failed attempt, never as a success.
 */
export class AnswerTooLargeError extends EgressError {
  readonly maxBytes: number;
  constructor(url: string, maxBytes: number, what = "the answer") {
    super(
      "EGRESS_ERR_ANSWER_TOO_LARGE",
      `${what} from ${originOf(url)} is larger than ${describeBytes(maxBytes)}, the most this client reads: ` +
        "is the URL right, or is a proxy or login page answering instead?",
    );
    this.maxBytes = maxBytes;
  }
}

/** A declared Content-Length over the cap is refused before a byte is read. */
function declaredTooLarge(contentLength: string | null | undefined, maxBytes: number): boolean {
  return contentLength !== null && contentLength !== undefined && Number(contentLength) > maxBytes;
}

/**
 * A fetch answer's body as text, read no further than `maxBytes` however it is framed (Content-Length, chunked, or
 * until the connection closes). Past the cap the body is cancelled, which makes undici destroy the connection.
 */
export async function readCappedText(response: Response, maxBytes: number, url: string): Promise<string> {
  if (declaredTooLarge(response.headers.get("content-length"), maxBytes)) {
    await response.body?.cancel();
    throw new AnswerTooLargeError(url, maxBytes);
  }
  if (!response.body) return "";
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (let next = await reader.read(); !next.done; next = await reader.read()) {
    size += next.value.byteLength;
    if (size > maxBytes) {
      await reader.cancel();
      throw new AnswerTooLargeError(url, maxBytes);
    }
    chunks.push(next.value);
  }
  return Buffer.concat(chunks, size).toString("utf8");
}

/** The same for node:http's answer: past the cap the answer, and with it its socket, is destroyed. */
export async function readCappedIncoming(message: IncomingMessage, maxBytes: number, url: string): Promise<string> {
  if (declaredTooLarge(message.headers["content-length"], maxBytes)) {
    message.destroy();
    throw new AnswerTooLargeError(url, maxBytes);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of message as AsyncIterable<Buffer>) {
    size += chunk.byteLength;
    if (size > maxBytes) {
      message.destroy();
      throw new AnswerTooLargeError(url, maxBytes);
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks, size).toString("utf8");
}
