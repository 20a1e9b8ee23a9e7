import type { ServerResponse } from "node:http";
import type { Logger } from "pino";
import { type EventStream, sseFrame } from "./exchange.ts";

/** How one event stream treats a quiet stream and a slow reader. */
export interface EventStreamLimits {
  /** After this long without a write, a comment line (HEARTBEAT) goes out: idle proxies cut quiet connections. */
  heartbeatMs: number;
  /** A reader that takes nothing of what is waiting for it for this long is dropped (its connection destroyed). */
  stalledMs: number;
}

export const defaultEventStreamLimits: EventStreamLimits = { heartbeatMs: 15_000, stalledMs: 60_000 };

/** An SSE comment: every client ignores it, and it keeps the connection busy for the proxies on the way. */
export const HEARTBEAT = ": keep-alive\n\n";

/**
 * Writes an EventStream as `text/event-stream`, pulling the next event only once the last one has been taken: when
 * `write()` says the socket's buffer is full, production stops until `drain`. So what one stream holds is at most
 * the response's high-water mark (64 KiB) and one event. A reader that takes nothing for `stalledMs` is dropped, not
 * ended cleanly: a clean end would have to wait for that same reader to take the bytes already waiting. Dropping
 * loses nothing: the task runs on, and tasks/resubscribe gives it as it is now, then its next events.
 */
export async function writeEventStream(
  answer: EventStream,
  response: ServerResponse,
  log: Logger,
  limits: EventStreamLimits = defaultEventStreamLimits,
): Promise<void> {
  response.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", "x-accel-buffering": "no" });
  const events = answer.events[Symbol.asyncIterator]();
  const gone = () => void events.return?.();
  response.on("close", gone);
  /** Set while the reader is behind: resolves true once it has taken what waits, false once it was dropped. */
  let behind: Promise<boolean> | undefined;
  const send = (text: string): Promise<boolean> => {
    if (response.write(text)) return Promise.resolve(true);
    behind ??= drained(response, limits.stalledMs).then((took) => {
      behind = undefined;
      if (!took) {
        log.warn(
          { bufferedBytes: response.writableLength, stalledMs: limits.stalledMs },
          "event stream reader took nothing in time; connection dropped (the task goes on; tasks/resubscribe follows it again)",
        );
        response.destroy();
      }
      return took;
    });
    return behind;
  };
  // Restarted by every write: it fires only after heartbeatMs of quiet, and sends nothing to a reader that is behind.
  const heartbeat = setTimeout(function beat() {
    if (!behind && !response.destroyed) void send(HEARTBEAT);
    heartbeat.refresh();
  }, limits.heartbeatMs);
  heartbeat.unref();
  try {
    for (let next = await events.next(); !next.done; next = await events.next()) {
      // A reader still behind on a heartbeat is waited for like one behind on an event.
      if (behind && !(await behind)) break;
      if (response.destroyed) break;
      const took = await send(sseFrame(next.value));
      heartbeat.refresh();
      if (!took) break;
    }
  } catch (err) {
    // The head is sent: a failure can only end the stream early, and the server log says why.
    log.error({ err }, "event stream failed");
  } finally {
    clearTimeout(heartbeat);
    response.off("close", gone);
    response.end();
    // However the stream ended (a dropped reader included), its producer is told: its `finally` runs.
    void events.return?.();
  }
}

/** True once the response's buffer has drained (or the reader has gone); false when `stalledMs` passed first. */
function drained(response: ServerResponse, stalledMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    const done = (result: boolean) => {
      clearTimeout(timer);
      response.off("drain", onDrain);
      response.off("close", onDrain);
      resolve(result);
    };
    const onDrain = () => done(true);
    const timer = setTimeout(() => done(false), stalledMs);
    response.once("drain", onDrain);
    response.once("close", onDrain);
  });
}
