import type { ErrorEntry } from "./entry.ts";

/** The sidecar: see src/error-codes.ts. */
export const SIDECAR_ERRORS = {
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
    meaning:
      "`outbox.db` (or `telemetry.db`, at the sidecar's start) has another schema version: newer than this sidecar, or not the one this tool (`export`) reads.",
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
} as const satisfies Record<`EGRESS_ERR_${string}`, ErrorEntry>;
