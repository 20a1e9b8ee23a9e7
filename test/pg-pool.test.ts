import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import type pg from "pg";
import pino from "pino";
import { databaseUnavailable } from "../src/database-unavailable.ts";
import { openPool } from "../src/pg-pool.ts";
import { inTransaction } from "../src/pg-transaction.ts";
import { freshDatabase, query } from "./helpers/postgres.ts";

// Every PostgreSQL connection of the product goes through src/pg-pool.ts, which gives each client an error listener:
// here on the real server (127.0.0.1:5432, a database of the test's own), and as a rule over the source tree.

const SRC = new URL("../src/", import.meta.url).pathname;

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? sources(join(dir, entry.name)) : entry.name.endsWith(".ts") ? [join(dir, entry.name)] : [],
  );
}

test("no module but src/pg-pool.ts makes a PostgreSQL pool or client: none can be left without an error listener", () => {
  const offenders = sources(SRC)
    .filter((file) => !file.endsWith("/pg-pool.ts"))
    // Any import of pg's values (default, named, namespace, dynamic) but a type-only one.
    .filter((file) => /^\s*import\s+(?!type\b)[^;]*\bfrom\s+"pg(-pool)?"|import\(\s*"pg"\s*\)/m.test(readFileSync(file, "utf8")))
    .map((file) => file.slice(SRC.length));
  assert.deepEqual(offenders, [], "use openPool or guardedClient of src/pg-pool.ts (type-only imports of pg are fine)");
});

test("connections ended by the server while idle, while held, and mid-transaction: the process lives, the statement fails as 'unavailable', the next one works", async () => {
  const database = await freshDatabase("egress_pgpool");
  const warnings: string[] = [];
  const logger = pino({ level: "warn" }, { write: (line: string) => void warnings.push(line) });
  const pool = openPool({ url: database.url, max: 3 }, logger, "test");
  const terminate = () =>
    query(database.url, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()", [
      database.name,
    ]);
  try {
    await pool.query("CREATE TABLE t (id int PRIMARY KEY)");
    // Idle in the pool.
    await terminate();
    await new Promise((resolve) => setTimeout(resolve, 200));
    assert.deepEqual((await pool.query("SELECT 1 AS one")).rows, [{ one: 1 }]);
    // Held by a caller, between statements (pg leaves such a client without a listener of its own).
    const held = await pool.connect();
    await terminate();
    await new Promise((resolve) => setTimeout(resolve, 200));
    await assert.rejects(held.query("SELECT 1"), (err) => databaseUnavailable(err));
    held.release(true);
    // Mid-transaction, before COMMIT: the transaction runs again on a new connection, once, and is kept once.
    let tries = 0;
    await inTransaction(pool, async (client) => {
      tries++;
      await client.query("INSERT INTO t VALUES (1)");
      if (tries === 1) {
        await terminate();
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    });
    assert.equal(tries, 2);
    assert.deepEqual((await pool.query("SELECT id FROM t")).rows, [{ id: 1 }]);
    assert.ok(
      warnings.some((line) => line.includes("57P01")),
      "the lost connections are logged, by their code",
    );
  } finally {
    await pool.end();
    await database.drop();
  }
});

/** A pool of one fake client whose statements answer by `answer` (the SQL text): what inTransaction sends, in order. */
function scriptedPool(answer: (sql: string) => unknown) {
  const sent: string[] = [];
  const released: boolean[] = [];
  const client = {
    query: async (sql: string) => {
      sent.push(sql);
      const outcome = answer(sql);
      if (outcome instanceof Error) throw outcome;
      return { rows: [] };
    },
    release: (broken: boolean) => void released.push(broken),
  };
  return { pool: { connect: async () => client } as unknown as pg.Pool, sent, released };
}

const withCode = (code: string) => Object.assign(new Error(code), { code });

test("a deadlock, a statement timeout or a full disk is not a lost connection: rolled back, the connection kept, not run again beyond attempts", async () => {
  for (const code of ["40P01", "57014", "53100"]) {
    const { pool, sent, released } = scriptedPool((sql) => (sql === "SELECT 1" ? withCode(code) : undefined));
    await assert.rejects(
      inTransaction(pool, (client) => client.query("SELECT 1")),
      { code },
    );
    assert.deepEqual(sent, ["BEGIN", "SELECT 1", "ROLLBACK"], code);
    assert.deepEqual(released, [false], `${code}: the connection goes back to the pool`);
  }
});

test("a connection lost during COMMIT is not run again (it may have committed): the caller gets the error", async () => {
  const { pool, sent, released } = scriptedPool((sql) => (sql === "COMMIT" ? withCode("57P01") : undefined));
  await assert.rejects(
    inTransaction(pool, (client) => client.query("INSERT"), 3),
    { code: "57P01" },
  );
  assert.deepEqual(sent, ["BEGIN", "INSERT", "COMMIT"]);
  assert.deepEqual(released, [true], "the broken connection leaves the pool");
});
