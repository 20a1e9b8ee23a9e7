import { readFileSync } from "node:fs";
import pino from "pino";
import { EgressError } from "../../errors.ts";
import { UsageMeasures } from "../../protocol/usage-snapshot.ts";
import type { Outbox } from "../storage/outbox.ts";

/** Where a snapshot's counts come from. Throws MeasuresUnavailableError rather than ever inventing a zero. */
export interface MeasuresSource {
  readonly name: string;
  current(): Promise<UsageMeasures>;
}

/** The counts cannot be read now: the snapshot waits and is tried again; nothing is sent. */
export class MeasuresUnavailableError extends EgressError {
  constructor(message: string) {
    super("EGRESS_ERR_MEASURES_UNAVAILABLE", message);
  }
}

const PUSHED_KEY = "usage.pushedMeasures";

/** `push`: the instance posts its current counts to POST /v1/usage/measures; the latest are kept on disk. */
export class PushedMeasures implements MeasuresSource {
  readonly name = "push";
  readonly #outbox: Outbox;

  constructor(outbox: Outbox) {
    this.#outbox = outbox;
  }

  store(measures: UsageMeasures): void {
    this.#outbox.kv.set(PUSHED_KEY, JSON.stringify(measures));
  }

  async current(): Promise<UsageMeasures> {
    const stored = this.#outbox.kv.get(PUSHED_KEY);
    if (!stored) throw new MeasuresUnavailableError("no counts pushed yet to POST /v1/usage/measures");
    return UsageMeasures.parse(JSON.parse(stored));
  }
}

/** `file`: a JSON file of the counts, read at each snapshot (air-gapped tooling writes it). */
export class FileMeasures implements MeasuresSource {
  readonly name = "file";
  readonly #path: string;

  constructor(path: string) {
    this.#path = path;
  }

  async current(): Promise<UsageMeasures> {
    let raw: unknown;
    try {
      raw = JSON.parse(readFileSync(this.#path, "utf8"));
    } catch (err) {
      throw new MeasuresUnavailableError(`usage.file ${this.#path}: ${(err as Error).message}`);
    }
    const parsed = UsageMeasures.safeParse(raw);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      throw new MeasuresUnavailableError(`usage.file ${this.#path}: ${issue.path.join(".") || "(top level)"}: ${issue.message}`);
    }
    return parsed.data;
  }
}

const SILENT = pino({ level: "silent" });

/** `postgres`: one read-only query per measure against the instance's database, each returning one integer. */
export class PostgresMeasures implements MeasuresSource {
  readonly name = "postgres";
  readonly #options: { url: string; statementTimeoutMs: number; queries: Record<keyof UsageMeasures, string> };

  constructor(options: { url: string; statementTimeoutMs: number; queries: Record<keyof UsageMeasures, string> }) {
    this.#options = options;
  }

  async current(): Promise<UsageMeasures> {
    const { url, statementTimeoutMs, queries } = this.#options;
    // Loaded on first use: most sidecars never read PostgreSQL (usage.source push or file).
    const { connectionSettings, guardedClient } = await import("../../pg-pool.ts");
    const settings = connectionSettings(url, { statement_timeout: statementTimeoutMs, connectionTimeoutMillis: statementTimeoutMs });
    // Its failures reach the snapshotter as MeasuresUnavailableError (below): nothing more to log.
    const client = guardedClient(settings, SILENT, "usage.postgres");
    const counts: Record<string, number> = {};
    let measure = "(connect)";
    try {
      await client.connect();
      await client.query("BEGIN READ ONLY");
      for (const [name, sql] of Object.entries(queries)) {
        measure = name;
        // A named prepared statement (the extended protocol): PostgreSQL parses the text as one statement and refuses
        // more (42601). As a simple query, "SELECT 1; COMMIT; DELETE ..." would end the read-only transaction and write.
        const result = await client.query({ name: `usage_${name}`, text: sql, rowMode: "array" });
        const row = result.rows[0] as unknown[] | undefined;
        const value = result.rows.length === 1 && row?.length === 1 ? row[0] : undefined;
        const count = typeof value === "string" && /^\d+$/.test(value) ? Number(value) : value;
        if (!Number.isSafeInteger(count) || (count as number) < 0) {
          throw new MeasuresUnavailableError(`must return one row with one non-negative integer, got ${result.rows.length} row(s)`);
        }
        counts[name] = count as number;
      }
    } catch (err) {
      const { message } = err as Error;
      // PostgreSQL's SQLSTATE, not the code of our own refusal of the answer.
      const code = err instanceof MeasuresUnavailableError ? undefined : (err as { code?: string }).code;
      const why = code === "42601" && /multiple commands/.test(message) ? "must be a single read-only statement: " : "";
      throw new MeasuresUnavailableError(`usage.postgres.queries.${measure}: ${why}${code ? `${code} ` : ""}${message}`);
    } finally {
      await client.end().catch(() => undefined);
    }
    return UsageMeasures.parse(counts);
  }
}
