// biome-ignore-all lint/style/noExcessiveLinesPerFile: a table read by lookup, one entry per code; splitting it would only scatter the codes
/**
 * Every error code the product emits, one entry each: where a user meets it (the HTTP status it is answered with,
 * the exit code of the command it ends, or only the log), what it means and what to do. Messages carry the
 * specifics (a path, a limit, a key); an entry says what the code means whatever the message.
 *
 * The "Error codes" table of docs/errors.md is written from this (`node scripts/error-codes-table.ts`), and
 * test/errors/catalogue.test.ts fails when the table, or a code in src/, is not in step with it.
 */

type ExitCode = 1 | 2 | 3;

/** Where the code reaches a user: answered over HTTP (some also end a command), ending a command, or only logged. */
type Surface = { readonly status: number; readonly exit?: ExitCode } | { readonly exit: ExitCode } | { readonly logOnly: true };

export type ErrorEntry = Surface & {
  /** What happened, whatever the message says in particular. */
  readonly meaning: string;
  /** What the user should do. */
  readonly fix: string;
};

/** One product, one prefix: `EGRESS_ERR_` tells our codes from Node's (`ERR_...`), jose's and SQLite's. */
export const ERRORS = {
  // Every HTTP server (the sidecar's, the beacon's, the control plane's, the agent server's)
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

  // The sidecar
  EGRESS_ERR_CONFIG: {
    exit: 2,
    meaning: "The configuration (file, environment or flags) is invalid; one line per problem names the key.",
    fix: "Correct the keys named; `egress-agent validate --config FILE` checks a config without starting anything.",
  },
  EGRESS_ERR_STOPPING: {
    status: 503,
    meaning: "The sidecar is stopping and stored nothing of the request.",
    fix: "Send it again when the sidecar is back (OTLP exporters retry a 503 by themselves).",
  },
  EGRESS_ERR_DISK_FULL: {
    status: 507,
    exit: 1,
    meaning:
      "The data dir's volume is full, or has less free than the 16 MiB kept for delivering what is queued: nothing of " +
      "the batch was stored (507). At start, the outbox cannot even be opened (exit 1).",
    fix: "Free space on the data dir's volume (or grow it), then send the batch again, or start again.",
  },
  EGRESS_ERR_DATA_DIR_IN_USE: {
    exit: 3,
    meaning: "Another sidecar holds the data dir (the message names its pid, host and start time).",
    fix: "Stop the other sidecar, or give this one a `dataDir` of its own.",
  },
  EGRESS_ERR_DATA_DIR_NOT_WRITABLE: {
    exit: 3,
    meaning: "The process cannot write the data dir or a file in it (another owner, a mode, a read-only filesystem).",
    fix: "Run as the user that owns it (a stable `runAsUser`), `chown` it to this one, or mount a writable volume, as the message says.",
  },
  EGRESS_ERR_DATA_DIR_MARKER: {
    exit: 3,
    meaning: "The data dir's marker file (which names its outbox) is not one the sidecar wrote.",
    fix:
      "Restore it from the same backup as `outbox.db`; or, if that `outbox.db` is the one to use, move the marker away " +
      "and start again; or start afresh on purpose with `start --new-outbox`.",
  },
  EGRESS_ERR_INSTANCE_ID: {
    exit: 3,
    meaning: "The data dir's `instance-id` file is there but does not hold an instance id (one UUID on one line).",
    fix:
      "Restore it from the same backup as `outbox.db`; or delete it, and the sidecar starts as a new instance (the vendor " +
      "then counts one more).",
  },
  EGRESS_ERR_OUTBOX_MISSING: {
    exit: 3,
    meaning: "`outbox.db` is gone, but the marker (or a `-wal` file) shows that the data dir held an outbox.",
    fix:
      "Mount the right volume or restore the file; to start afresh on purpose, `start --new-outbox` (what is there is " +
      "moved aside, not deleted).",
  },
  EGRESS_ERR_OUTBOX_FOREIGN: {
    exit: 3,
    meaning: "`outbox.db` is not the outbox that the data dir's marker names.",
    fix: "Put back the `outbox.db` that belongs there (its undelivered billing records are in it), or `start --new-outbox`.",
  },
  EGRESS_ERR_OUTBOX_CORRUPT: {
    exit: 3,
    meaning: "`outbox.db` is damaged (empty, truncated, not a database, or fails SQLite's check); the sidecar will not write to it.",
    fix:
      "Keep the file: restore it from a backup, or save what can be read (`sqlite3 outbox.db .recover`, `egress-agent " +
      "export`) and then `start --new-outbox`.",
  },
  EGRESS_ERR_OUTBOX_OPEN: {
    exit: 1,
    meaning: "`outbox.db` cannot be opened or read, for a reason other than damage (the message has SQLite's).",
    fix: "Act on SQLite's reason (permissions, an I/O error of the volume), then start again.",
  },
  EGRESS_ERR_OUTBOX_VERSION: {
    exit: 1,
    meaning: "`outbox.db` has another schema version: newer than this sidecar, or not the one this tool (`export`) reads.",
    fix: "Upgrade the sidecar; for `export`, start the sidecar of the tool's version once, or use the tool of the sidecar's version.",
  },
  EGRESS_ERR_NO_OUTBOX: {
    exit: 1,
    meaning: "A command that reads the outbox (`export`) found no `outbox.db` in the data dir.",
    fix: "Point `--config` at the config whose `dataDir` the sidecar uses.",
  },
  EGRESS_ERR_OTLP_PROTOBUF: {
    status: 400,
    meaning:
      "An OTLP/HTTP protobuf body (to the sidecar's receiver or the beacon's telemetry routes) is not a decodable export request, or one the schema refuses. The answer is OTLP's google.rpc.Status " +
      "(INVALID_ARGUMENT), which carries no code.",
    fix: "Send OTLP/HTTP binary protobuf of the route's signal, or OTLP JSON with `Content-Type: application/json`.",
  },
  EGRESS_ERR_OTLP_JSON: {
    status: 400,
    meaning:
      "An OTLP/HTTP JSON body to the beacon's telemetry routes is not JSON, or not an export request object (its resource list not a list). The answer is OTLP's google.rpc.Status " +
      "(INVALID_ARGUMENT), which carries no code. Items that are malformed inside a valid request are not this error: they are a partial success.",
    fix: 'Send an OTLP JSON export request of the route\'s signal (`{"resourceSpans": [...]}` and so on), or OTLP/HTTP binary protobuf with `Content-Type: application/x-protobuf`.',
  },
  EGRESS_ERR_BEACON_UNREACHABLE: {
    logOnly: true,
    meaning: "The sidecar could not reach the beacon (DNS, refused, TLS, proxy, timeout); what is queued stays queued and is retried.",
    fix: "Check `beaconUrl`, the network policy and the proxy settings (`HTTPS_PROXY`, `NO_PROXY`); `egress-agent status` shows each stream's last error.",
  },
  EGRESS_ERR_ANSWER_TOO_LARGE: {
    exit: 1,
    meaning:
      "An HTTP client of the product (the sidecar's beacon client, the agent server's sidecar reporter, `deployments`, " +
      '`a2a send`, `status`) was answered with more than it reads (docs/reliability.md, "Answers and streams are bounded"): the ' +
      "read stopped at the cap and the connection was closed. The sidecar counts it as a failed attempt and retries; " +
      "a command exits 1.",
    fix: "Check the URL (`beaconUrl`, `--url`): a proxy, a captive portal or a login page answers instead of the service.",
  },
  EGRESS_ERR_MEASURES_UNAVAILABLE: {
    logOnly: true,
    meaning:
      "The usage counts could not be read (nothing pushed yet, `usage.file` unreadable or invalid, a `usage.postgres` " +
      "query failed); the snapshot is postponed, never sent as zero.",
    fix: "Fix the source the message names; the snapshot is taken at the next attempt.",
  },
  EGRESS_ERR_SIDECAR_UNREACHABLE: {
    exit: 1,
    meaning: "A command that asks the sidecar (`status`, `audit`) could not reach its local API.",
    fix: "Start the sidecar, or point `--url` at its local API.",
  },
  EGRESS_ERR_ADMIN_UNREACHABLE: {
    exit: 1,
    meaning: "A `beacon` admin command (`beacon instances`) could not reach the beacon's admin listener.",
    fix: "Check that the beacon runs with `admin.listen` set, and point `--url` at that address.",
  },
  EGRESS_ERR_ADMIN_ANSWER: {
    exit: 1,
    meaning: "The beacon's admin API answered a `beacon` admin command with something other than 200 (401: a wrong or missing key).",
    fix: "Check the admin key (`BEACON_ADMIN_API_KEY`, `--api-key-file`) and that `--url` is the admin listener; the message has the answer's status and code.",
  },
  EGRESS_ERR_DEMO: {
    exit: 1,
    meaning:
      "`egress-agent demo` did not see its sample data arrive: a local service it started answered with an error, or the records or telemetry did not reach the beacon within 30 s.",
    fix: "Run it again with `--keep` and read `beacon.log` and `sidecar.log` in the directory it names.",
  },
  EGRESS_ERR_SIDECAR_ANSWER: {
    exit: 1,
    meaning: "The sidecar's local API answered a command (`status`, `audit`) with something other than 200.",
    fix: "Check that `--url` is a sidecar of this version; the message has the answer's status and error code.",
  },

  // The beacon
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

  // The agent server and `a2a send`
  EGRESS_ERR_ASSISTANT_NOT_FOUND: {
    status: 404,
    meaning: "No assistant of `graph.json` has this id.",
    fix: "Use one of the assistant ids the message lists.",
  },
  EGRESS_ERR_A2A: {
    exit: 1,
    meaning:
      "`a2a send` failed to talk A2A with the agent server (unreachable, an answer that is not A2A, a JSON-RPC error, a stream cut short).",
    fix: "Check the URL and `--assistant`; the message has the server's answer.",
  },
  EGRESS_ERR_A2A_TASK: {
    exit: 1,
    meaning: "The task ended in a state other than completed (failed, canceled, rejected, input-required, ...).",
    fix: "Read the task's status message; answer an input-required task with `--context` and `--task`.",
  },

  // The control plane and `deployments`; the beacon's admin listener
  EGRESS_ERR_API_KEY_MISSING: {
    status: 401,
    meaning: "The request has neither an `X-Api-Key` header nor `Authorization: Bearer` (the control plane, the beacon's admin listener).",
    fix: "Send `X-Api-Key` with one of the service's keys: the control plane's `apiKeys` (env `PLATFORM_API_KEY`), the beacon's `admin.apiKeys` (env `BEACON_ADMIN_API_KEY`).",
  },
  EGRESS_ERR_API_KEY_INVALID: {
    status: 401,
    meaning:
      "The key (`X-Api-Key` or `Authorization: Bearer`) is not one the control plane (or the beacon's admin listener) accepts, or `Authorization` is not `Bearer <key>`.",
    fix: "Use one of its keys (`apiKeys`, env `PLATFORM_API_KEY`; the beacon's `admin.apiKeys`, env `BEACON_ADMIN_API_KEY`), or add this one (`controlplane hash-key` prints its sha256 form).",
  },
  EGRESS_ERR_API_KEY_CONFLICT: {
    status: 401,
    meaning: "`X-Api-Key` and `Authorization: Bearer` carry different keys: neither is chosen.",
    fix: "Send the key in one of the two headers (or the same key in both).",
  },
  EGRESS_ERR_DEPLOYMENT_NOT_FOUND: {
    status: 404,
    meaning: "No deployment has this id (or it was deleted).",
    fix: "List the deployments (`GET /v2/deployments`, `egress-agent deployments list`) for the id.",
  },
  EGRESS_ERR_REVISION_NOT_FOUND: {
    status: 404,
    meaning: "The deployment has no revision with this id.",
    fix: "List its revisions (`egress-agent deployments revisions <deployment_id>`) for the id.",
  },
  EGRESS_ERR_AUTH_PROVIDER_NOT_FOUND: {
    status: 404,
    meaning: "No auth provider has this id.",
    fix: "Configure the provider under `auth.providers`, or use a configured id.",
  },
  EGRESS_ERR_AUTH_REQUEST_NOT_FOUND: {
    status: 404,
    meaning: "No auth request has this id.",
    fix: "Create a new auth request and use the id it answers with.",
  },
  EGRESS_ERR_CLIENT_SECRET_UNREADABLE: {
    status: 500,
    meaning:
      "The setup callback could not read the provider's `clientSecretFile`; the page says the exchange failed, the log has this code.",
    fix: "Check that the file is mounted and readable by the control plane, then start the installation again.",
  },
  EGRESS_ERR_TOKEN_EXCHANGE_NETWORK: {
    status: 502,
    meaning: "The provider's token endpoint could not be reached or did not answer in time; the log has this code.",
    fix: "Check that the control plane can reach `tokenUrl`, then start the installation again.",
  },
  EGRESS_ERR_TOKEN_EXCHANGE_REFUSED: {
    status: 502,
    meaning: "The provider's token endpoint refused the code (an HTTP status other than 200, and its OAuth error when it gave one).",
    fix: "Check the provider's `clientId` and client secret; codes are single-use, so start the installation again.",
  },
  EGRESS_ERR_TOKEN_EXCHANGE_RESPONSE: {
    status: 502,
    meaning: "The token endpoint's answer is not a JSON object with an `access_token`, or is over 64 KiB.",
    fix: "Check that `tokenUrl` is the provider's OAuth token endpoint.",
  },
  EGRESS_ERR_SECRET_KEY: {
    exit: 1,
    meaning:
      "The control plane's secret key (`secrets.key` in its data dir) is not a 32-byte base64 key, or a secret sealed in `controlplane.db` does not open with it (the key was replaced, or the database restored without it). At start the control plane exits 1; a request that needs the secret is answered 500 with this code in the log.",
    fix: "Restore `secrets.key` from the same backup as `controlplane.db`; the secrets sealed under a lost key must be set again.",
  },
  EGRESS_ERR_REVISION_STEP: {
    logOnly: true,
    meaning:
      "A revision's step failed (create, build or deploy): the revision is CREATE_FAILED, BUILD_FAILED or DEPLOY_FAILED, and its status message says why (its graph config missing or failing to load, its agent server not starting, a file of its directory the control plane refuses).",
    fix: "Read the revision's status message (`egress-agent deployments revisions`), fix the source, its secrets or the config it names, and update the deployment again.",
  },
  EGRESS_ERR_CONTROL_PLANE: {
    exit: 1,
    meaning:
      "A `deployments` command could not reach the control plane, or it refused the request (the message has the answer's status, error code and, for a 422, each field path and problem type; never its text).",
    fix: "Check `--base-url` and `--api-key` (env `PLATFORM_CONTROL_PLANE_URL`, `PLATFORM_API_KEY`), and the fields the answer names.",
  },
  EGRESS_ERR_DEPLOY: {
    exit: 1,
    meaning: "`--wait` ended without DEPLOYED: the revision failed (its status is named) or time ran out.",
    fix: "Read the revision's status message (`deployments revisions`), fix the source or secrets, and update again.",
  },
} as const satisfies Record<`EGRESS_ERR_${string}`, ErrorEntry>;

export type ErrorCode = keyof typeof ERRORS;

/** The codes whose entry has `Shape`: `CodesWith<{ status: number }>` are the ones a server answers with. */
export type CodesWith<Shape> = { [K in ErrorCode]: (typeof ERRORS)[K] extends Shape ? K : never }[ErrorCode];

/** The exit code of a command that ends with `code`: its entry's, else 1 (a runtime failure). */
export function exitCodeOf(code: ErrorCode): number {
  const entry = ERRORS[code];
  return "exit" in entry ? entry.exit : 1;
}
