import { AnswerTooLargeError } from "./capped-answer.ts";

/**
 * The `data` of each Server-Sent Event of a fetch answer (multi-line data joined by newlines; comments such as the
 * server's `: keep-alive` and other fields skipped). One event may hold at most `maxEventLength` characters, its
 * comment and field lines included: past that (an endless line, an event that never ends) the stream is cancelled,
 * which closes the connection, and an AnswerTooLargeError is thrown. Only the event being read is held.
 */
export async function* sseData(body: ReadableStream<Uint8Array>, options: { maxEventLength: number; url: string }): AsyncGenerator<string> {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  /** The line being read, not yet ended by a newline. */
  let partial = "";
  let data: string[] = [];
  /** Characters of the event being read, in its ended lines. */
  let held = 0;
  try {
    for (let next = await reader.read(); !next.done; next = await reader.read()) {
      const chunk = next.value;
      let start = 0;
      // Only the new text is searched for line ends: an endless line costs no rescans.
      for (let end = chunk.indexOf("\n"); end >= 0; end = chunk.indexOf("\n", start)) {
        const line = (partial + chunk.slice(start, end)).replace(/\r$/, "");
        partial = "";
        start = end + 1;
        if (line === "") {
          if (data.length > 0) yield data.join("\n");
          data = [];
          held = 0;
          continue;
        }
        held += line.length;
        if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
      }
      partial += chunk.slice(start);
      if (held + partial.length > options.maxEventLength)
        throw new AnswerTooLargeError(options.url, options.maxEventLength, "one event of the stream");
    }
    if (data.length > 0) yield data.join("\n");
  } finally {
    // Ending early (a consumer that stops, a cap, an error) cancels the body: the connection is closed.
    await reader.cancel().catch(() => {});
  }
}
