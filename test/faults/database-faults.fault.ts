import assert from "node:assert/strict";
import { generateKeyPairSync, randomUUID } from "node:crypto";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import pg from "pg";
import { beaconPaths } from "../../src/protocol/beacon-paths.ts";
import { DatabaseProxy } from "../helpers/database-proxy.ts";
import { testLicense, traceTransactions } from "../helpers/fixtures.ts";
import { freshDatabase, query } from "../helpers/postgres.ts";
import {
  agentConfig,
  beaconConfig,
  postJson,
  startAgentProcess,
  startBeacon,
  startService,
  startTogether,
  tempDir,
  waitFor,
  type ServiceProcess,
} from "../helpers/processes.ts";
import { RoundRobinProxy } from "../helpers/round-robin-proxy.ts";
import { accept, billingOnly, drained } from "./helpers/delivery.ts";

// The database drops every connection, again and again, under load: a PostgreSQL restart, a failover, an idle
// reaper. Real replicas on the real server (127.0.0.1:5432, a database of the test's own); the connections ended
// are only those of that database (pg_terminate_backend), never another test's.

/** Ends every connection to `database` but the one asking; how many it ended. */
async function terminateBackends(killer: pg.Client, database: string): Promise<number> {
  const { rows } = await killer.query(
    "SELECT pg_terminate_backend(pid) AS ended FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()",
    [database],
  );
  return rows.filter((row) => row.ended).length;
}

/** Terminates the database's backends every `everyMs` for `forMs`; the number of connections ended. */
async function terminateRepeatedly(url: string, database: string, forMs: number, everyMs: number): Promise<number> {
  const killer = new pg.Client({ connectionString: url });
  killer.on("error", () => {});
  await killer.connect();
  let ended = 0;
  try {
    for (const deadline = Date.now() + forMs; Date.now() < deadline; ) {
      ended += await terminateBackends(killer, database);
      await new Promise((resolve) => setTimeout(resolve, everyMs));
    }
  } finally {
    await killer.end();
  }
  return ended;
}

/** The process still runs, and never said it crashed. */
function assertAlive(replica: ServiceProcess): void {
  assert.equal(replica.child.exitCode, null, `a replica exited; its output:\n${replica.output().slice(-3_000)}`);
  assert.equal(replica.child.signalCode, null);
  assert.doesNotMatch(replica.output(), /Unhandled|uncaught/i);
}

async function ready(url: string): Promise<boolean> {
  const response = await fetch(`${url}/readyz`).catch(() => undefined);
  return response?.status === 200;
}

function signingKeyFile(): string {
  const path = join(tempDir("beacon-key-"), "signing-key.pem");
  const { privateKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
  writeFileSync(path, privateKey.export({ type: "pkcs8", format: "pem" }), { mode: 0o600 });
  return path;
}

test("beacon replicas: the database's connections terminated every 300 ms under load; both keep serving, and every transaction is stored once", async () => {
  const database = await freshDatabase("egress_dbfault_beacon");
  const license = testLicense({ id: "acme-prod" });
  const key = signingKeyFile();
  const env = { BEACON_DATABASE_URL: database.url };
  const replicas = await Promise.all([0, 1].map(() => startBeacon(beaconConfig([license], { signingKeyFile: key }), env)));
  const balancer = await RoundRobinProxy.start(replicas.map((replica) => replica.url));
  const sidecar = await startAgentProcess(agentConfig(balancer.url, { ...billingOnly, limits: { batchTransactions: 50 } }), {
    PLATFORM_LICENSE_KEY: license.key,
  });
  try {
    const accepted: string[] = [];
    const direct: string[] = [];
    const answers = new Map<string, number>();
    let running = true;
    // The sidecar ships what an instance sends it; the test also ingests straight into each replica.
    const instance = (async () => {
      while (running) {
        accepted.push(...(await accept(sidecar, traceTransactions(40))));
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
    })();
    const ingests = replicas.map(async (replica) => {
      while (running) {
        const batch = traceTransactions(20);
        const answer = await postJson(`${replica.url}${beaconPaths.ingestTraces}`, { license: license.key, trace_transactions: batch });
        const seen = `${answer.status} ${answer.body.code ?? ""}`.trim();
        answers.set(seen, (answers.get(seen) ?? 0) + 1);
        if (answer.status === 200) direct.push(...batch.map((t) => t.id));
        else assert.equal(answer.headers.get("retry-after"), "5", "a 503 says when to send again");
      }
    });

    await waitFor(async () => accepted.length >= 400, 20_000, "traffic flowing");
    const ended = await terminateRepeatedly(database.url, database.name, 8_000, 300);
    running = false;
    await Promise.all([instance, ...ingests]);
    console.log(`# beacon: ${ended} connections terminated in 8 s; direct ingests answered ${JSON.stringify([...answers])}`);
    assert.ok(ended >= 20, `${ended} connections terminated`);
    for (const replica of replicas) assertAlive(replica);
    for (const seen of answers.keys()) assert.match(seen, /^(200|503 EGRESS_ERR_DATABASE_UNAVAILABLE)$/, `answers: ${[...answers]}`);
    assert.ok((answers.get("200") ?? 0) > 20, `answers: ${[...answers]}`);

    // Both replicas serve again by themselves: ready, and ingesting.
    for (const replica of replicas) {
      await waitFor(() => ready(replica.url), 15_000, "the replica ready again");
      const batch = traceTransactions(5);
      const answer = await postJson(`${replica.url}${beaconPaths.ingestTraces}`, { license: license.key, trace_transactions: batch });
      assert.deepEqual([answer.status, answer.body], [200, { inserted_count: 5 }]);
      direct.push(...batch.map((t) => t.id));
    }
    const billing = await drained(sidecar.url, 60_000);
    assert.equal(billing.completed, accepted.length, "every transaction the sidecar took was delivered");
    const ids = [...accepted, ...direct];
    const [row] = await query<{ rows: string; ids: string }>(
      database.url,
      "SELECT count(*) AS rows, count(DISTINCT id) AS ids FROM trace_transactions WHERE license_id = $1 AND id = ANY($2::uuid[])",
      [license.id, ids],
    );
    assert.deepEqual([Number(row!.rows), Number(row!.ids)], [ids.length, ids.length], "each id stored, once");
    const [all] = await query<{ n: string }>(database.url, "SELECT count(*) AS n FROM trace_transactions");
    assert.equal(Number(all!.n), ids.length, "nothing stored that no one was told was stored");
  } finally {
    await sidecar.stop();
    await balancer.close();
    for (const replica of replicas) await replica.stop();
    await database.drop();
  }
});

const GRAPHS = new URL("../fixtures/graphs/graph.json", import.meta.url).pathname;

async function rpc(
  url: string,
  method: string,
  params: unknown,
): Promise<{ status: number; result?: any; error?: any; retryAfter: string | null }> {
  const response = await fetch(`${url}/a2a/waiter`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: randomUUID(), method, params }),
  });
  const body = (await response.json()) as { result?: unknown; error?: unknown };
  return { status: response.status, ...body, retryAfter: response.headers.get("retry-after") };
}

const send = (text: string, blocking = true) => ({
  message: { kind: "message", role: "user", messageId: randomUUID(), parts: [{ kind: "text", text }] },
  configuration: { blocking },
});

/** A run followed from a replica: every event of the SSE stream as it comes (`events`), and `done` at its end. */
async function follow(url: string, taskId: string): Promise<{ events: { at: number; result: any }[]; done: Promise<void> }> {
  const response = await fetch(`${url}/a2a/waiter`, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "text/event-stream" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tasks/resubscribe", params: { id: taskId } }),
  });
  assert.equal(response.headers.get("content-type"), "text/event-stream", await response.clone().text());
  const events: { at: number; result: any }[] = [];
  return { events, done: readEvents(response, events) };
}

async function readEvents(response: Response, events: { at: number; result: any }[]): Promise<void> {
  const decoder = new TextDecoder();
  let buffered = "";
  for await (const chunk of response.body!) {
    buffered += decoder.decode(chunk, { stream: true });
    for (let end = buffered.indexOf("\n\n"); end >= 0; end = buffered.indexOf("\n\n")) {
      const frame = buffered.slice(0, end);
      buffered = buffered.slice(end + 2);
      const data = frame.split("\n").find((line) => line.startsWith("data:"));
      if (data) events.push({ at: Date.now(), result: JSON.parse(data.slice(5)).result });
    }
  }
}

test("agent server replicas: connections terminated while tasks run and are followed; both keep answering, LISTEN comes back, a task is seen and canceled across them", async () => {
  const database = await freshDatabase("egress_dbfault_a2a");
  const serve = () =>
    startService(
      ["a2a", "serve", "--config", GRAPHS, "--listen", "127.0.0.1:0", "--data-dir", tempDir("a2a-dbfault-")],
      "agent server listening",
      { DATABASE_URI: database.url },
    );
  const [a, b] = await startTogether([serve(), serve()]);
  try {
    // A run on A that outlasts the outage, followed from B throughout.
    const long = await rpc(a.url, "message/send", send("wait 9000", false));
    const followed = await follow(b.url, long.result.id);
    await waitFor(() => followed.events.length > 0, 10_000, "the follower's first event");
    const statuses = new Map<string, number>();
    const failures: string[] = [];
    let running = true;
    const load = [a, b].map(async (replica) => {
      while (running) {
        const answer = await rpc(replica.url, "message/send", send("wait 200"));
        const seen = answer.status === 200 ? `200 ${answer.result?.status?.state ?? answer.error?.code}` : String(answer.status);
        statuses.set(seen, (statuses.get(seen) ?? 0) + 1);
        if (seen === "200 failed") failures.push(answer.result.status.message.parts[0].text);
        if (answer.status !== 200) assert.equal(answer.retryAfter, "5", `a ${answer.status} says when to send again`);
      }
    });
    const ended = await terminateRepeatedly(database.url, database.name, 5_000, 300);
    running = false;
    await Promise.all(load);
    console.log(`# agent server: ${ended} connections terminated in 5 s; message/send answered ${JSON.stringify([...statuses])}`);
    assert.ok(ended >= 10, `${ended} connections terminated`);
    for (const replica of [a, b]) assertAlive(replica);
    for (const seen of statuses.keys()) assert.match(seen, /^(200 completed|200 failed|503)$/, `answers: ${[...statuses]}`);
    assert.ok((statuses.get("200 completed") ?? 0) > 0, `answers: ${[...statuses]}`);
    for (const text of failures) assert.match(text, /lost its database meanwhile; send the message again/);

    // Ready again by themselves: the pool answers and the LISTEN connection is back.
    for (const replica of [a, b]) await waitFor(() => ready(replica.url), 30_000, "the replica ready again");
    await followed.done;
    const last = followed.events.at(-1)!.result;
    assert.deepEqual([last.status?.state, last.final], ["completed", true], "the follower on B saw the run on A end, across the outage");

    // A run started on A is seen from B, B's follower wakes on A's notification, and B cancels one on A.
    const short = await rpc(a.url, "message/send", send("wait 2000", false));
    const seen = await rpc(b.url, "tasks/get", { id: short.result.id });
    assert.ok(["submitted", "working"].includes(seen.result.status.state), JSON.stringify(seen));
    const shortFollowed = await follow(b.url, short.result.id);
    await shortFollowed.done;
    const done = shortFollowed.events.at(-1)!;
    assert.equal(done.result.status.state, "completed");
    const lag = done.at - Date.parse(done.result.status.timestamp);
    assert.ok(lag < 2_000, `the follower woke ${lag} ms after the run ended (a notification, not the 5 s fallback read)`);

    const toCancel = await rpc(a.url, "message/send", send("wait 60000", false));
    const canceled = await rpc(b.url, "tasks/cancel", { id: toCancel.result.id });
    assert.equal(canceled.result?.status?.state, "canceled", JSON.stringify(canceled));
    for (const replica of [a, b]) assertAlive(replica);

    // Billing: every run that ended is counted, once, whichever replica ran it and whatever the connections did.
    const [counts] = await query<{ runs: string; ended: string }>(
      database.url,
      `SELECT (SELECT coalesce(sum(runs), 0) FROM a2a_run_counts) AS runs,
              (SELECT count(*) FROM a2a_tasks WHERE state IN ('completed', 'failed', 'canceled')) AS ended`,
    );
    assert.equal(Number(counts!.runs), Number(counts!.ended), "runs counted = tasks ended");
  } finally {
    for (const replica of [a, b]) assert.equal(await replica.stop(), 0, replica.output().slice(-3_000));
    await database.drop();
  }
});

test("the database away for 10 s (every connection cut, new ones refused): 503 with Retry-After at once, not ready but alive, then back by itself", async () => {
  const database = await freshDatabase("egress_dbfault_outage");
  const proxy = await DatabaseProxy.start();
  const url = proxy.through(database.url);
  const license = testLicense({ id: "acme-prod" });
  const beacon = await startBeacon(beaconConfig([license]), { BEACON_DATABASE_URL: url });
  const serve = () =>
    startService(
      ["a2a", "serve", "--config", GRAPHS, "--listen", "127.0.0.1:0", "--data-dir", tempDir("a2a-dboutage-")],
      "agent server listening",
      { DATABASE_URI: url },
    );
  const [a, b] = await startTogether([serve(), serve()]);
  const ingest = (batch = traceTransactions(10)) =>
    postJson(`${beacon.url}${beaconPaths.ingestTraces}`, { license: license.key, trace_transactions: batch });
  try {
    const before = await rpc(a.url, "message/send", send("wait 1"));
    assert.equal(before.result.status.state, "completed");

    proxy.down();
    const started = Date.now();
    const refused = await ingest();
    assert.deepEqual(
      [refused.status, refused.body.code, refused.headers.get("retry-after")],
      [503, "EGRESS_ERR_DATABASE_UNAVAILABLE", "5"],
    );
    assert.ok(Date.now() - started < 6_000, "answered within the 5 s connect wait");
    for (const method of ["tasks/get", "GetTask"]) {
      const task = await rpc(b.url, method, { id: before.result.id });
      assert.deepEqual([task.status, task.retryAfter, task.error?.code], [503, "5", -32603], `${method} while the database is away`);
    }
    for (const service of [beacon, a, b]) {
      assert.equal((await fetch(`${service.url}/readyz`)).status, 503, "not ready while the database is away");
      const alive = await fetch(`${service.url}/${service === beacon ? "healthz" : "ok"}`);
      assert.equal(alive.status, 200, "alive all the same: a restart would not bring the database back");
    }
    await new Promise((resolve) => setTimeout(resolve, 10_000 - (Date.now() - started)));
    const tried = proxy.triedWhileDown;
    console.log(`# outage: ${tried} connections tried in 10 s by one beacon and two agent servers`);
    assert.ok(tried < 100, `${tried} connection attempts in 10 s: backoff, not a loop`);
    proxy.up();

    for (const service of [beacon, a, b]) await waitFor(() => ready(service.url), 30_000, "ready again by itself");
    const batch = traceTransactions(10);
    assert.deepEqual((await ingest(batch)).body, { inserted_count: 10 });
    // LISTEN is back on A: a cancel sent through B stops A's run.
    const long = await rpc(a.url, "message/send", send("wait 60000", false));
    const canceled = await rpc(b.url, "tasks/cancel", { id: long.result.id });
    assert.equal(canceled.result?.status?.state, "canceled", JSON.stringify(canceled));
    for (const service of [beacon, a, b]) assertAlive(service);
  } finally {
    for (const service of [beacon, a, b]) await service.stop();
    await proxy.close();
    await database.drop();
  }
});

test("a failover to a read-only standby (and back): the beacon answers 503 with Retry-After, never a 500 a sidecar could take for a bad record; then stores", async () => {
  const database = await freshDatabase("egress_dbfault_standby");
  const license = testLicense({ id: "acme-prod" });
  const beacon = await startBeacon(beaconConfig([license], { signingKeyFile: signingKeyFile() }), { BEACON_DATABASE_URL: database.url });
  const admin = new pg.Client({ connectionString: database.url });
  admin.on("error", () => {});
  await admin.connect();
  const ingest = () =>
    postJson(`${beacon.url}${beaconPaths.ingestTraces}`, { license: license.key, trace_transactions: traceTransactions(3) });
  try {
    assert.equal((await ingest()).status, 200);
    // What a promoted standby's clients see: every new transaction read-only (SQLSTATE 25006 on a write).
    await admin.query(`ALTER DATABASE ${database.name} SET default_transaction_read_only = on`);
    await terminateBackends(admin, database.name);
    for (let i = 0; i < 3; i++) {
      const answer = await ingest();
      assert.deepEqual([answer.status, answer.body.code, answer.headers.get("retry-after")], [503, "EGRESS_ERR_DATABASE_UNAVAILABLE", "5"]);
    }
    await admin.query(`ALTER DATABASE ${database.name} SET default_transaction_read_only = off`);
    await terminateBackends(admin, database.name);
    await waitFor(async () => (await ingest()).status === 200, 15_000, "writable again");
    assertAlive(beacon);
  } finally {
    await admin.end();
    await beacon.stop();
    await database.drop();
  }
});
