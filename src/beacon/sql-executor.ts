import type Database from "better-sqlite3";
import type pg from "pg";
import { inTransaction } from "../pg-transaction.ts";

/** One statement: SQL with `?` placeholders (numbered for PostgreSQL here), and its values in order. */
export interface Statement {
  sql: string;
  params: readonly unknown[];
  /** The batch stops here, rolled back, when this statement changes no row. */
  required?: boolean;
}

/**
 * What the license and audit tables are read and written through, on either engine: reads, and batches of
 * statements that commit together. One module of SQL (license-store.ts) then serves SQLite and PostgreSQL alike.
 */
export interface SqlExecutor {
  all<T>(sql: string, params?: readonly unknown[]): Promise<T[]>;
  /** The statements in one transaction; false (nothing kept) when a `required` one changed no row. */
  batch(statements: readonly Statement[]): Promise<boolean>;
}

/** Thrown inside a transaction to roll it back. */
class BatchUnchanged extends Error {}

export function sqliteExecutor(db: Database.Database): SqlExecutor {
  return {
    async all<T>(sql: string, params: readonly unknown[] = []) {
      return db.prepare(sql).all(...params) as T[];
    },
    async batch(statements) {
      try {
        db.transaction(() => {
          for (const s of statements) if (db.prepare(s.sql).run(...s.params).changes === 0 && s.required) throw new BatchUnchanged();
        })();
        return true;
      } catch (err) {
        if (err instanceof BatchUnchanged) return false;
        throw err;
      }
    },
  };
}

/** `?` to `$1`, `$2`, ...: the statements have no `?` inside a literal. */
const numbered = (sql: string) => {
  let n = 0;
  return sql.replace(/\?/g, () => `$${++n}`);
};

export function postgresExecutor(pool: pg.Pool): SqlExecutor {
  return {
    async all<T>(sql: string, params: readonly unknown[] = []) {
      return (await pool.query(numbered(sql), params as unknown[])).rows as T[];
    },
    async batch(statements) {
      try {
        await inTransaction(
          pool,
          async (client) => {
            for (const s of statements) {
              const { rowCount } = await client.query(numbered(s.sql), s.params as unknown[]);
              if (rowCount === 0 && s.required) throw new BatchUnchanged();
            }
          },
          5,
        );
        return true;
      } catch (err) {
        if (err instanceof BatchUnchanged) return false;
        throw err;
      }
    },
  };
}

/** A unique index refused the row (SQLite's or PostgreSQL's error). */
export function uniqueViolation(err: unknown): boolean {
  const code = (err as { code?: string }).code;
  return code === "SQLITE_CONSTRAINT_UNIQUE" || code === "SQLITE_CONSTRAINT_PRIMARYKEY" || code === "23505";
}
