import type { ErrorEntry } from "./entry.ts";

/** Every HTTP server (the sidecar's, the beacon's, the control plane's, the agent server's): see src/error-codes.ts. */
export const HTTP_ERRORS = {
  EGRESS_ERR_NOT_FOUND: {
    status: 404,
    meaning: "No route has this method and path.",
    fix: "Check the URL and the method against the service's routes (README.md and docs/).",
  },
  EGRESS_ERR_MEDIA_TYPE: {
    status: 415,
    meaning: "The route does not take this Content-Type.",
    fix: "Send `application/json` (the OTLP routes also take `application/x-protobuf`), as the message says.",
  },
  EGRESS_ERR_CONTENT_ENCODING: {
    status: 415,
    meaning: "The route does not take this Content-Encoding: JSON routes take none, the OTLP routes gzip or deflate.",
    fix: "Send the body uncompressed, or (OTLP) gzip or deflate.",
  },
  EGRESS_ERR_BODY_UNDECODABLE: {
    status: 400,
    meaning: "The body is not valid data of the Content-Encoding it is labelled with (gzip or deflate).",
    fix: "Compress the body as its Content-Encoding says, or drop the header for a plain body.",
  },
  EGRESS_ERR_BODY_TIMEOUT: {
    status: 408,
    meaning:
      "The body stopped arriving: nothing of it came for http.bodyIdleTimeout (on the beacon's verify: the whole body did not come within it). What it had sent is given back to the body budget and the connection is closed.",
    fix: "Send the request again; if it keeps happening, look for a proxy or a link that stalls requests mid-body.",
  },
  EGRESS_ERR_BODY_INCOMPLETE: {
    status: 400,
    meaning: "The connection ended before the body's Content-Length bytes arrived.",
    fix: "Send the request again; if it keeps happening, look for a proxy or client that cuts requests short.",
  },
  EGRESS_ERR_BODY_TOO_LARGE: {
    status: 413,
    meaning: "The body (decompressed) is over the server's body size limit; nothing of it was kept.",
    fix: "Send smaller batches, or raise the limit the message names (the sidecar's `limits.bodyLimit`, the beacon's `bodyLimit`).",
  },
  EGRESS_ERR_BODY_TOO_MANY_ITEMS: {
    status: 413,
    meaning: "The body holds more JSON objects and arrays (or protobuf messages) than the server reads in one request.",
    fix: "Send smaller batches, or raise the limit the message names (`http.bodyItems`).",
  },
  EGRESS_ERR_VALIDATION: {
    status: 422,
    meaning:
      "The body, query or path does not match the route's schema. The answer is an `HTTPValidationError` " +
      "(`{detail: [{loc, msg, type}]}`), which carries no code; nothing of the request was kept.",
    fix: "Correct the fields that the `loc` paths name.",
  },
  EGRESS_ERR_BUSY: {
    status: 503,
    meaning: "Too many connections are open, or too many request bodies are being read at once (Retry-After: 1).",
    fix: "Send the request again after Retry-After; if it persists, send fewer requests at once or raise the limit the message names.",
  },
  EGRESS_ERR_CLOSING: {
    status: 503,
    meaning: "The server is shutting down.",
    fix: "Send the request again once the service is back.",
  },
  EGRESS_ERR_INTERNAL: {
    status: 500,
    exit: 1,
    meaning: "The server (or a command) failed in a way it did not expect: a bug, or a failure of its machine.",
    fix: "Look in the server's log for the `request failed` line at that time (a command prints the message), and report it.",
  },
} as const satisfies Record<`EGRESS_ERR_${string}`, ErrorEntry>;
