import { randomBytes } from "node:crypto";
import pg from "pg";

// The real PostgreSQL server on 127.0.0.1:5432 (trust auth for local users; .ci/run starts it when it is down).

const ADMIN_URL = "postgres://postgres@127.0.0.1:5432/postgres";

/** A database of its own for one test: its URL, and `drop()` (also of what connections are still open on it). */
export async function freshDatabase(prefix = "egress_test"): Promise<{ url: string; name: string; drop(): Promise<void> }> {
  const name = `${prefix}_${process.pid}_${randomBytes(4).toString("hex")}`;
  await admin(`CREATE DATABASE ${name}`);
  return {
    url: `postgres://postgres@127.0.0.1:5432/${name}`,
    name,
    drop: () => admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`),
  };
}

async function admin(sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: ADMIN_URL });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

/** One query against `url`, its rows. */
export async function query<T extends pg.QueryResultRow = Record<string, unknown>>(
  url: string,
  sql: string,
  params: unknown[] = [],
): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<T>(sql, params)).rows;
  } finally {
    await client.end();
  }
}
