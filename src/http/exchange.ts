import type { IncomingHttpHeaders } from "node:http";
import type { Logger } from "pino";

/** A request as a route handler sees it. */
export interface HttpRequest {
  readonly method: string;
  /** The path without the query string. */
  readonly path: string;
  /** The values of the route's `{name}` segments, decoded. */
  readonly params: Record<string, string>;
  readonly query: Record<string, string | string[] | undefined>;
  readonly headers: IncomingHttpHeaders;
  /** `json` routes: the parsed body; `raw` routes: the (decompressed) bytes; otherwise undefined. */
  readonly body: unknown;
  /**
   * `raw` routes: the handler's decoder charges the items it makes of a body that is not JSON (protobuf messages)
   * here as it makes them; it throws the 413 once they pass `http.bodyItems`, the 503 when the body budget is full.
   */
  readonly chargeItems?: (count: number) => void;
  /** `raw` routes: the items a body may hold (`http.bodyItems`), for a decoder that can count them before making them. */
  readonly itemLimit?: number;
  /** The peer's IP address (the console counts failed sign-ins by it); undefined once the socket is gone. */
  readonly remoteAddress?: string | undefined;
  /** The server's logger with this request's id. */
  readonly log: Logger;
}

/** A handler's answer when it is not 200 with a JSON body: any status, and bytes or text of a given type. */
export class Answer {
  readonly status: number;
  readonly body: unknown;
  readonly type: string | undefined;
  /** Further response headers (e.g. cache-control on a page that shows a result). */
  readonly headers: Record<string, string> | undefined;
  constructor(status: number, body: unknown, type?: string, headers?: Record<string, string>) {
    this.status = status;
    this.body = body;
    this.type = type;
    this.headers = headers;
  }
}

/** An SSE event with a name (`event: error`, say); a plain value goes out as a `data:` line alone. */
export class NamedEvent {
  readonly name: string;
  readonly data: unknown;
  constructor(name: string, data: unknown) {
    this.name = name;
    this.data = data;
  }
}

/** One event as SSE text: `data:` with the JSON, after `event:` for a NamedEvent. */
export function sseFrame(event: unknown): string {
  return event instanceof NamedEvent
    ? `event: ${event.name}\ndata: ${JSON.stringify(event.data)}\n\n`
    : `data: ${JSON.stringify(event)}\n\n`;
}

/**
 * A Server-Sent Events answer (200, text/event-stream): each value of `events` goes out as one `data:` line of JSON
 * as soon as it is produced and the reader has taken the last one (src/http/sse-writer.ts: backpressure, heartbeats,
 * slow readers). A client that goes away ends the iteration (its `return()` runs).
 */
export class EventStream {
  readonly events: AsyncIterable<unknown>;
  constructor(events: AsyncIterable<unknown>) {
    this.events = events;
  }
}
