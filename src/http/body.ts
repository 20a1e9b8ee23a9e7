import type { IncomingHttpHeaders, IncomingMessage } from "node:http";
import { createGunzip, createInflate } from "node:zlib";
import { HttpError } from "../errors.ts";
import { RequestValidationError } from "./validate.ts";

/** The media type of a request, lower case, without parameters ("application/json; charset=utf-8" -> "application/json"). */
export function mediaType(headers: IncomingHttpHeaders): string {
  return (headers["content-type"] ?? "").split(";", 1)[0]!.trim().toLowerCase();
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

const tooLarge = ({ bytes, key }: BodyLimit) =>
  new HttpError(413, "ERR_BODY_TOO_LARGE", `the body is larger than the ${bytes}-byte limit${key ? ` (${key})` : ""}`);

/**
 * Reads a whole body, refused with 413 once it (decompressed, when `encoding` is given) passes `limit` bytes, and
 * with 400 when the client stops before its Content-Length or sends undecodable compressed data. A refused body
 * is not read further.
 */
function readBody(request: IncomingMessage, bodyLimit: BodyLimit, encoding?: "gzip" | "deflate"): Promise<Buffer> {
  const limit = bodyLimit.bytes;
  return new Promise((resolve, reject) => {
    if (Number(request.headers["content-length"]) > limit) return reject(tooLarge(bodyLimit));
    const decoder = encoding === "gzip" ? createGunzip() : encoding === "deflate" ? createInflate() : undefined;
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    const fail = (err: HttpError) => {
      if (settled) return;
      settled = true;
      if (decoder) request.unpipe(decoder);
      decoder?.destroy();
      reject(err);
    };
    const output = decoder ?? request;
    output.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) return fail(tooLarge(bodyLimit));
      chunks.push(chunk);
    });
    output.on("end", () => {
      if (settled) return;
      settled = true;
      resolve(Buffer.concat(chunks, size));
    });
    const incomplete = () => fail(new HttpError(400, "ERR_BODY_INCOMPLETE", "the body ended before its Content-Length"));
    request.on("error", incomplete);
    request.on("close", () => request.complete || incomplete());
    if (decoder) {
      let read = 0;
      // A compressed body is bounded too: no ratio makes more than `limit` bytes of input worth reading.
      request.on("data", (chunk: Buffer) => (read += chunk.length) > limit && fail(tooLarge(bodyLimit)));
      decoder.on("error", () => fail(new HttpError(400, "ERR_CONTENT_ENCODING", `the body is not valid ${encoding} data`)));
      request.pipe(decoder);
    }
  });
}

/** A body for routes that decode it themselves (OTLP): one of `mediaTypes`, plain, gzip or deflate. */
export function readRawBody(request: IncomingMessage, limit: BodyLimit, mediaTypes: readonly string[]): Promise<Buffer> {
  const type = mediaType(request.headers);
  if (!mediaTypes.includes(type)) {
    throw new HttpError(415, "ERR_MEDIA_TYPE", `Content-Type ${type || "(none)"} is not supported; send ${mediaTypes.join(" or ")}`);
  }
  const encoding = contentEncoding(request);
  if (encoding !== undefined && encoding !== "gzip" && encoding !== "deflate") {
    throw new HttpError(415, "ERR_CONTENT_ENCODING", `Content-Encoding ${encoding} is not supported; use gzip, deflate or none`);
  }
  return readBody(request, limit, encoding);
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
    const constructor = (node as { constructor?: unknown }).constructor;
    if (Object.hasOwn(node, "constructor") && constructor !== null && typeof constructor === "object" && Object.hasOwn(constructor, "prototype")) return true;
    for (const child of Object.values(node)) nodes.push(child);
  }
  return false;
}

/**
 * A JSON body: `application/json` only (any charset parameter), uncompressed. A compressed body would fail as "not
 * valid JSON", and a plain one labelled compressed would pass, so any Content-Encoding is refused (415). Malformed,
 * empty or poisoned JSON is a validation failure of the body (422).
 */
export async function readJsonBody(request: IncomingMessage, limit: BodyLimit): Promise<unknown> {
  const type = mediaType(request.headers);
  if (type !== "application/json") {
    throw new HttpError(415, "ERR_MEDIA_TYPE", `Content-Type ${type || "(none)"} is not supported; send application/json`);
  }
  const encoding = contentEncoding(request);
  if (encoding !== undefined) {
    throw new HttpError(415, "ERR_CONTENT_ENCODING", `Content-Encoding ${encoding} is not supported here; send the JSON uncompressed`);
  }
  const text = (await readBody(request, limit)).toString("utf8");
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
