import type { IncomingHttpHeaders, IncomingMessage } from "node:http";
import { createGunzip, createInflate } from "node:zlib";
import { HttpError } from "../errors.ts";
import { BodyBytes } from "./body-bytes.ts";
import { ITEM_COST, type BodyCharge } from "./budget.ts";
import { RequestValidationError } from "./validate.ts";

/** A Content-Type's media type, lower case, without parameters ("application/json; charset=utf-8" -> "application/json"). */
export function mediaTypeOf(contentType: string | null | undefined): string {
  return (contentType ?? "").split(";", 1)[0]!.trim().toLowerCase();
}

/** The media type of a request (or a node:http answer). */
export function mediaType(headers: IncomingHttpHeaders): string {
  return mediaTypeOf(headers["content-type"]);
}

function contentEncoding(request: IncomingMessage): string | undefined {
  const encoding = request.headers["content-encoding"]?.trim().toLowerCase();
  return encoding && encoding !== "identity" ? encoding : undefined;
}

/** The largest body a server reads, and the config key that sets it (named in the 413), if any. */
export interface BodyLimit {
  bytes: number;
  key?: string;
}

/** How a server reads bodies: its size limit, its item limit, and this request's account with the body budget. */
export interface BodyRules {
  limit: BodyLimit;
  items: { max: number; key?: string };
  charge: BodyCharge;
  /**
   * The longest the body may send nothing (`key` names its config key), or, with `whole`, the longest the whole body
   * may take: past it, 408 and the connection is closed.
   */
  timeout: { ms: number; key?: string; whole?: boolean };
}

const timedOut = ({ ms, key, whole }: BodyRules["timeout"]) =>
  new HttpError(
    "EGRESS_ERR_BODY_TIMEOUT",
    whole
      ? `the body did not arrive within ${ms} ms${key ? ` (${key})` : ""}; it is small and comes at once, or not at all`
      : `nothing of the body arrived for ${ms} ms${key ? ` (${key})` : ""}; a stalled body is not waited for`,
  );

const tooLarge = ({ bytes, key }: BodyLimit) =>
  new HttpError("EGRESS_ERR_BODY_TOO_LARGE", `the body is larger than the ${bytes}-byte limit${key ? ` (${key})` : ""}`);

/**
 * Reads a whole body, refused with 413 once it (decompressed, when `encoding` is given) passes the limit or, when
 * `items` counts it as it arrives, holds too many JSON objects and arrays; with 503 when the body budget cannot take
 * it now; with 400 when the client stops before its Content-Length or sends undecodable compressed data. A refused
 * body is not read further (the request is paused, and the answer closes the connection). Each chunk is charged to
 * the budget as it arrives, never the declared Content-Length ahead of it: a client that declares 8 MiB and sends a
 * byte a second holds a byte a second, not 8 MiB of everyone's room.
 */
function readBody(request: IncomingMessage, rules: BodyRules, encoding?: "gzip" | "deflate", items?: JsonItemCounter): Promise<Buffer> {
  const limit = rules.limit.bytes;
  return new Promise((resolve, reject) => {
    if (Number(request.headers["content-length"]) > limit) return reject(tooLarge(rules.limit));
    const decoder = encoding === "gzip" ? createGunzip() : encoding === "deflate" ? createInflate() : undefined;
    const body = new BodyBytes(limit, decoder ? undefined : Number(request.headers["content-length"]));
    let settled = false;
    const { timeout } = rules;
    const timer = setTimeout(() => fail(timedOut(timeout)), timeout.ms);
    const fail = (err: HttpError) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (decoder) request.unpipe(decoder);
      decoder?.destroy();
      request.pause();
      body.drop();
      reject(err);
    };
    const output = decoder ?? request;
    output.on("data", (chunk: Buffer) => {
      if (settled) return;
      if (body.size + chunk.length > limit) return fail(tooLarge(rules.limit));
      try {
        rules.charge.charge(chunk.length);
        if (items && items.push(chunk, rules.items.max, () => body.parts()) > rules.items.max) throw tooManyItems(rules);
      } catch (err) {
        return fail(err as HttpError);
      }
      body.append(chunk);
    });
    output.on("end", () => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      // The request's listeners live as long as the request: they must not keep the body alive once it is handed over.
      resolve(body.take());
    });
    const incomplete = () => fail(new HttpError("EGRESS_ERR_BODY_INCOMPLETE", "the body ended before its Content-Length"));
    request.on("error", incomplete);
    request.on("close", () => request.complete || incomplete());
    if (!timeout.whole) request.on("data", () => timer.refresh());
    if (decoder) {
      let read = 0;
      // A compressed body is bounded too: no ratio makes more than `limit` bytes of input worth reading.
      request.on("data", (chunk: Buffer) => {
        read += chunk.length;
        if (read > limit) fail(tooLarge(rules.limit));
      });
      decoder.on("error", () => fail(new HttpError("EGRESS_ERR_BODY_UNDECODABLE", `the body is not valid ${encoding} data`)));
      request.pipe(decoder);
    }
  });
}

/**
 * The JSON objects and arrays in a body, counted chunk by chunk as it arrives: what JSON.parse would build, known
 * before it builds it, and before the whole body is read. A 16 MiB body of `[],[],...` is five million arrays; it is
 * refused after its first megabytes. Counting every `{` and `[` is a memchr (GB/s); only when that count, which
 * includes brackets inside strings, passes `max` are the bytes read again with strings told apart (about 400 MB/s),
 * so ordinary bodies cost the relay next to nothing.
 */
export class JsonItemCounter {
  #brackets = 0;
  #exact: ExactJsonCounter | undefined;

  /** The count so far (exact once `max` was passed, else at least the exact count); `seen`: the bytes before `chunk`. */
  push(chunk: Buffer, max: number, seen: () => readonly Uint8Array[]): number {
    if (this.#exact) return this.#exact.push(chunk);
    for (let i = chunk.indexOf(0x7b); i >= 0; i = chunk.indexOf(0x7b, i + 1)) this.#brackets++;
    for (let i = chunk.indexOf(0x5b); i >= 0; i = chunk.indexOf(0x5b, i + 1)) this.#brackets++;
    if (this.#brackets <= max) return this.#brackets;
    this.#exact = new ExactJsonCounter();
    for (const earlier of seen()) this.#exact.push(earlier);
    return this.#exact.push(chunk);
  }

  get count(): number {
    return this.#exact?.count ?? this.#brackets;
  }
}

/** Objects and arrays outside strings, byte by byte, across chunk boundaries. */
export class ExactJsonCounter {
  count = 0;
  #inString = false;
  /** The previous chunk ended inside a string on a backslash: the next byte is escaped. */
  #escaped = false;

  push(chunk: Uint8Array): number {
    let i = 0;
    if (this.#escaped) {
      this.#escaped = false;
      i = 1;
    }
    for (; i < chunk.length; i++) {
      const byte = chunk[i];
      if (this.#inString) {
        if (byte === 0x5c) {
          if (++i === chunk.length) this.#escaped = true;
        } else if (byte === 0x22) this.#inString = false;
      } else if (byte === 0x22) this.#inString = true;
      else if (byte === 0x7b || byte === 0x5b) this.count++;
    }
    return this.count;
  }
}

const tooManyItems = ({ items: { max, key } }: BodyRules) =>
  new HttpError("EGRESS_ERR_BODY_TOO_MANY_ITEMS", `the body holds more than ${max} objects, arrays or messages${key ? ` (${key})` : ""}`);

/** Refuses (413) a body of more than the allowed items, and charges the rest to the budget (503 when it cannot). */
function chargeItems(count: number, rules: BodyRules): void {
  if (count > rules.items.max) throw tooManyItems(rules);
  rules.charge.charge(count * ITEM_COST);
}

/** The account the decoder of a raw body charges the items it makes to: 413 past the limit, 503 past the budget. */
function itemCharger(rules: BodyRules): (count: number) => void {
  let items = 0;
  return (count) => {
    items += count;
    if (items > rules.items.max) throw tooManyItems(rules);
    rules.charge.charge(count * ITEM_COST);
  };
}

/**
 * A body for routes that decode it themselves (OTLP): one of `mediaTypes`, plain, gzip or deflate. A JSON body's
 * items are counted as it arrives; the route's decoder charges those of other types to `chargeItems` as it makes them.
 */
export async function readRawBody(
  request: IncomingMessage,
  rules: BodyRules,
  mediaTypes: readonly string[],
): Promise<{ body: Buffer; chargeItems: (count: number) => void; itemLimit: number }> {
  const type = mediaType(request.headers);
  if (!mediaTypes.includes(type)) {
    throw new HttpError("EGRESS_ERR_MEDIA_TYPE", `Content-Type ${type || "(none)"} is not supported; send ${mediaTypes.join(" or ")}`);
  }
  const encoding = contentEncoding(request);
  if (encoding !== undefined && encoding !== "gzip" && encoding !== "deflate") {
    throw new HttpError("EGRESS_ERR_CONTENT_ENCODING", `Content-Encoding ${encoding} is not supported; use gzip, deflate or none`);
  }
  const json = type === "application/json" ? new JsonItemCounter() : undefined;
  const body = await readBody(request, rules, encoding, json);
  if (json) chargeItems(json.count, rules);
  return { body, chargeItems: itemCharger(rules), itemLimit: rules.items.max };
}

const invalidJson = (msg: string) => new RequestValidationError([{ loc: ["body"], msg, type: "json_invalid" }]);

/**
 * True when a parsed body holds a `__proto__` key, or a `constructor` object with a `prototype` key, anywhere: code
 * that copies such a body's keys onto another object would change its prototype. Walked without recursion.
 */
function poisoned(value: unknown): boolean {
  const nodes = [value];
  while (nodes.length > 0) {
    const node = nodes.pop();
    if (node === null || typeof node !== "object") continue;
    if (Object.hasOwn(node, "__proto__")) return true;
    const ctor = (node as { constructor?: unknown }).constructor;
    if (Object.hasOwn(node, "constructor") && ctor !== null && typeof ctor === "object" && Object.hasOwn(ctor, "prototype")) return true;
    for (const child of Object.values(node)) nodes.push(child);
  }
  return false;
}

/**
 * A JSON body: `application/json` only (any charset parameter), uncompressed. A compressed body would fail as "not
 * valid JSON", and a plain one labelled compressed would pass, so any Content-Encoding is refused (415). Malformed,
 * empty or poisoned JSON is a validation failure of the body (422).
 */
export async function readJsonBody(request: IncomingMessage, rules: BodyRules): Promise<unknown> {
  const type = mediaType(request.headers);
  if (type !== "application/json") {
    throw new HttpError("EGRESS_ERR_MEDIA_TYPE", `Content-Type ${type || "(none)"} is not supported; send application/json`);
  }
  const encoding = contentEncoding(request);
  if (encoding !== undefined) {
    throw new HttpError("EGRESS_ERR_CONTENT_ENCODING", `Content-Encoding ${encoding} is not supported here; send the JSON uncompressed`);
  }
  const items = new JsonItemCounter();
  const text = (await readBody(request, rules, undefined, items)).toString("utf8");
  chargeItems(items.count, rules);
  return parseJsonText(text);
}

/** JSON text read by a route itself (one that also takes other media types): malformed, empty or poisoned is 422. */
export function parseJsonText(text: string): unknown {
  if (text.trim() === "") throw new RequestValidationError([{ loc: ["body"], msg: "Field required", type: "missing" }]);
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw invalidJson("Body is not valid JSON");
  }
  // Only a body that could spell either key (plainly or escaped) is walked: billing batches pay nothing.
  if (/proto|constructor|\\u/.test(text) && poisoned(body)) throw invalidJson("Body has a __proto__ or constructor.prototype key");
  return body;
}
