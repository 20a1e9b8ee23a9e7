import { createHash } from "node:crypto";
import type { IncomingHttpHeaders } from "node:http";
import { Answer } from "../http/exchange.ts";
import { A2A_SERVED_VERSIONS, RpcErrorCode, type AgentCard } from "../protocol/a2a.ts";
import { RpcError } from "./rpc-error.ts";

// What the A2A routes read from and write to HTTP headers: the protocol version a client asks for (`A2A-Version`),
// and the agent card's cache validators.

/** How long a client may keep the card without asking again; it changes only when the server restarts with other graphs. */
const CARD_MAX_AGE_SECONDS = 300;

/**
 * -32009 (VersionNotSupported) when the request asks for an A2A version this endpoint does not serve. A2A v1.0:
 * clients send `A2A-Version` (Major.Minor); a request without it is taken as 0.3, which is served.
 */
export function versionRefusal(headers: IncomingHttpHeaders): RpcError | undefined {
  const header = headers["a2a-version"];
  const version = (Array.isArray(header) ? header[0] : header)?.trim();
  if (version === undefined || version === "" || (A2A_SERVED_VERSIONS as readonly string[]).includes(version)) return undefined;
  return new RpcError(
    RpcErrorCode.versionNotSupported,
    `Version not supported: A2A-Version ${JSON.stringify(version.slice(0, 20))}; this agent serves ${A2A_SERVED_VERSIONS.join(" and ")}`,
  );
}

/**
 * The agent card with an `ETag` (its content's hash) and `Cache-Control`: a client that sends the tag back in
 * `If-None-Match` gets 304 without the body while the card is the same.
 */
export function cardAnswer(card: AgentCard, headers: IncomingHttpHeaders): Answer {
  const etag = `"${createHash("sha256").update(JSON.stringify(card)).digest("base64url").slice(0, 32)}"`;
  const cache = { etag, "cache-control": `public, max-age=${CARD_MAX_AGE_SECONDS}` };
  const asked = headers["if-none-match"]
    ?.split(",")
    .map((tag) => tag.trim().replace(/^W\//, ""))
    .some((tag) => tag === etag || tag === "*");
  return asked ? new Answer(304, undefined, undefined, cache) : new Answer(200, card, undefined, cache);
}
