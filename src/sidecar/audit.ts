import { createHash } from "node:crypto";
import Database from "better-sqlite3";
import type { Logger } from "pino";
import { redactUrl } from "../config/redact.ts";
import type { AuditEntry, AuditListing, AuditQuery } from "../protocol/audit.ts";
import type { SentRequest } from "./egress/beacon-client.ts";
import { openOutboxReadonly, outboxPath } from "./storage/outbox.ts";

const schema = `
CREATE TABLE IF NOT EXISTS audit (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  at INTEGER NOT NULL,
  stream TEXT NOT NULL,
  destination TEXT NOT NULL,
  path TEXT NOT NULL,
  records INTEGER NOT NULL,
  bytes INTEGER NOT NULL,
  sha256 TEXT NOT NULL,
  status INTEGER,
  error TEXT,
  duration_ms INTEGER NOT NULL,
  body TEXT
);
CREATE INDEX IF NOT EXISTS audit_by_time ON audit (at);
`;

/**
 * The record of every request sent to the beacon, in the outbox database (its own connection and table):
 * time, destination, stream, record count, bytes, SHA-256 of the body, the answer. Kept `retentionMs`.
 * The license key is replaced in kept bodies and errors; the token travels in a header and is never seen.
 */
export class AuditLog {
  readonly #db: Database.Database;
  readonly #keepBodies: boolean;
  readonly #secrets: string[];
  readonly #insert: Database.Statement | undefined;
  readonly #logger: Logger | undefined;
  /** Entries that could not be written since the last one that could (a full disk). */
  #missed = 0;

  constructor(dataDir: string, options: { keepBodies?: boolean; secrets?: readonly string[]; readonly?: boolean; logger?: Logger } = {}) {
    this.#keepBodies = options.keepBodies ?? false;
    this.#logger = options.logger;
    // JSON-escaped too: that is how a key appears inside a body.
    this.#secrets = (options.secrets ?? []).filter(Boolean).flatMap((secret) => [secret, JSON.stringify(secret).slice(1, -1)]);
    if (options.readonly) {
      this.#db = openOutboxReadonly(dataDir);
      return;
    }
    this.#db = new Database(outboxPath(dataDir));
    this.#db.pragma("journal_mode = WAL");
    // A lost last entry on power loss is acceptable here; the data it describes is guarded by the outbox.
    this.#db.pragma("synchronous = NORMAL");
    this.#db.pragma("busy_timeout = 5000");
    this.#db.exec(schema);
    this.#insert = this.#db.prepare(
      `INSERT INTO audit (at, stream, destination, path, records, bytes, sha256, status, error, duration_ms, body)
       VALUES (@at, @stream, @destination, @path, @records, @bytes, @sha256, @status, @error, @durationMs, @body)`,
    );
  }

  #redact(text: string): string {
    return this.#secrets.reduce((result, secret) => result.replaceAll(secret, "[REDACTED]"), text);
  }

  /**
   * Records one request. Never throws into the send path: an entry that cannot be written (the data dir is
   * full) is counted and logged (once when entries start going missing, once when writing works again).
   */
  record(request: SentRequest): void {
    try {
      this.#write(request);
    } catch (err) {
      if (this.#missed++ === 0) this.#logger?.warn({ err, stream: request.stream }, "audit entry not written; the request went ahead");
      return;
    }
    if (this.#missed > 0) this.#logger?.info({ missed: this.#missed }, "audit entries written again");
    this.#missed = 0;
  }

  #write(request: SentRequest): void {
    this.#insert?.run({
      at: request.startMs,
      stream: request.stream,
      destination: redactUrl(request.url),
      path: request.path,
      records: request.records,
      bytes: Buffer.byteLength(request.body),
      sha256: createHash("sha256").update(request.body).digest("hex"),
      status: request.status,
      error: request.error === null ? null : this.#redact(request.error),
      durationMs: Math.round(request.durationMs),
      body: this.#keepBodies ? this.#redact(request.body.toString()) : null,
    });
  }

  /** Entries at or after `since`, oldest first, up to `limit`; `truncated` when more matched. */
  list(query: AuditQuery): AuditListing {
    if (!this.#hasTable()) return { entries: [], truncated: false };
    const rows = this.#db
      .prepare(
        `SELECT id, at, stream, destination, path, records, bytes, sha256, status, error, duration_ms AS durationMs, body FROM audit
          WHERE at >= @since AND id > @after AND (@stream IS NULL OR stream = @stream) ORDER BY id LIMIT @limit`,
      )
      .all({
        since: query.since ? Date.parse(query.since) : 0,
        stream: query.stream ?? null,
        after: query.after ?? 0,
        limit: query.limit + 1,
      }) as (Omit<AuditEntry, "at" | "body"> & { at: number; body: string | null })[];
    const entries = rows.slice(0, query.limit).map(({ at, body, ...rest }) => ({
      ...rest,
      at: new Date(at).toISOString(),
      ...(body === null ? {} : { body }),
    }));
    return { entries, truncated: rows.length > query.limit };
  }

  #hasTable(): boolean {
    return this.#db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'audit'").get() !== undefined;
  }

  /** Deletes entries older than `before` (ms). Returns how many went. */
  prune(before: number): number {
    return this.#db.prepare("DELETE FROM audit WHERE at < ?").run(before).changes;
  }

  close(): void {
    if (this.#db.open) this.#db.close();
  }
}
