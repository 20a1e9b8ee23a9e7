import type { ErrorEntry } from "./entry.ts";

/** The beacon: see src/error-codes.ts. */
export const BEACON_ERRORS = {
  EGRESS_ERR_LICENSE_UNKNOWN: {
    status: 403,
    meaning: "The license key is not one of the beacon's licenses.",
    fix: "Check the sidecar's `licenseKey`; on the beacon, add the license to its config.",
  },
  EGRESS_ERR_LICENSE_EXPIRED: {
    status: 403,
    meaning: "The license has expired: the beacon issues no token for it.",
    fix: "Renew the license (a later `expiresAt` in the beacon's config), or use a current license key.",
  },
  EGRESS_ERR_LICENSE_REVOKED: {
    status: 403,
    meaning:
      "The license was revoked (`POST /v1/admin/licenses/{id}/revoke`, `beacon licenses revoke`): verify refuses its key, and ingest refuses its key and its tokens.",
    fix: "The customer needs a new license: create one (`beacon licenses create`) and give them its key.",
  },
  EGRESS_ERR_LICENSE_EXISTS: {
    status: 409,
    meaning: "A license with this id exists already (`POST /v1/admin/licenses`); nothing was changed.",
    fix: "Choose another id, or change the existing license (`PATCH /v1/admin/licenses/{id}`, `beacon licenses update`).",
  },
  EGRESS_ERR_LICENSE_NOT_FOUND: {
    status: 404,
    meaning: "No license has this id (admin API).",
    fix: "List the licenses (`GET /v1/admin/licenses`, `beacon licenses list`) for the id.",
  },
  EGRESS_ERR_BEACON_ADMIN: {
    exit: 1,
    meaning:
      "A `beacon licenses` or `beacon import` command could not reach the beacon's admin listener, or it refused the request (the message has the answer's status, error code and, for a 422, each field path and problem type; for an import, each line at fault).",
    fix: "Check `--url` (the admin listener, `admin.listen`) and the admin key (env `BEACON_ADMIN_API_KEY` or `--api-key-file`), and the fields the answer names.",
  },
  EGRESS_ERR_CONSOLE_FORM_REFUSED: {
    status: 403,
    meaning:
      "A form post to the beacon's web console came from another site (its `Origin` is not the console's host) or without this session's CSRF token.",
    fix: "Reload the console page and submit its form again; behind a proxy, pass the browser's `Host` header through unchanged.",
  },
  EGRESS_ERR_CONSOLE_FORM_INVALID: {
    status: 422,
    meaning: "A form of the beacon's web console (renew, revoke) was sent with a field it cannot take; nothing was changed.",
    fix: "Correct the field the page names (a date, a whole number of seats, the confirmation box) and send the form again.",
  },
  EGRESS_ERR_TOKEN_REQUIRED: {
    status: 401,
    meaning: "Operational telemetry carries no license key, so it needs a bearer token.",
    fix: "Send `Authorization: Bearer <token>` with a token from `POST /v1/beacon/verify`.",
  },
  EGRESS_ERR_TOKEN_INVALID: {
    status: 401,
    meaning:
      "The bearer token is malformed, expired, not signed by this beacon, names a license it no longer has, or was issued before the license's key was rotated.",
    fix: "Verify the license again (`POST /v1/beacon/verify`) for a new token; the sidecar does so by itself.",
  },
  EGRESS_ERR_TOKEN_OFFLINE: {
    status: 401,
    meaning: "An offline license token was sent as a bearer token: an air-gapped sidecar checks it itself.",
    fix: "Use a token from `POST /v1/beacon/verify` (verify an online license key).",
  },
  EGRESS_ERR_TOKEN_MISMATCH: {
    status: 403,
    meaning: "The bearer token was issued for a different license than the body's license key.",
    fix: "Send the token that `/v1/beacon/verify` issued for this license key.",
  },
  EGRESS_ERR_DATABASE: {
    exit: 3,
    meaning:
      "The beacon or the agent server cannot open its PostgreSQL database (the beacon's `database.url`, the agent server's `DATABASE_URI`): unreachable, refused, or an unknown database.",
    fix: "Check the URL (`database.url` or `BEACON_DATABASE_URL`; `DATABASE_URI`) and that the server is up; the message has PostgreSQL's error code.",
  },
  EGRESS_ERR_DATABASE_UNAVAILABLE: {
    status: 503,
    meaning:
      "The beacon's or the agent server's PostgreSQL database cannot be reached just now (a restart, a failover, a connection the server ended, every connection busy for 5 s); nothing of the request was kept. `/readyz` answers the same while it lasts; the service reconnects by itself.",
    fix: "Send the request again after Retry-After (the sidecar does so by itself); if it lasts, check the database server and the URL (`database.url`, `DATABASE_URI`).",
  },
  EGRESS_ERR_BEACON_SCHEMA: {
    exit: 1,
    meaning:
      "The beacon's store (`beacon.db`, or its PostgreSQL database) has a schema version newer than this beacon: a newer beacon has used it. Nothing was changed.",
    fix: "Run the beacon of that newer version (or later); every replica on one database must be of it.",
  },
  EGRESS_ERR_NO_DATA: {
    exit: 1,
    meaning: "`beacon report` found no `beacon.db` in the beacon's data dir.",
    fix: "Point `--config` at the config whose `dataDir` the beacon uses.",
  },
} as const satisfies Record<`EGRESS_ERR_${string}`, ErrorEntry>;
