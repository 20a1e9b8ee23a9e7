import assert from "node:assert/strict";
import { EventEmitter } from "node:events";
import { afterEach, beforeEach, test } from "node:test";
import pino from "pino";
import { ReplicaBus } from "../src/a2a/replica-bus.ts";
import type { TaskStore } from "../src/a2a/task-store.ts";
import { databaseUnavailable } from "../src/database-unavailable.ts";
import { DatabaseListener } from "../src/pg-listener.ts";
import { reconnectDelayMs } from "../src/database-unavailable.ts";
import { HOUR, SimulatedTime } from "./helpers/simulated-time.ts";

// A database that goes away, on simulated time: how often the services knock while it is down, and that they come
// back by themselves when it returns. The real thing (pg_terminate_backend under load) is test/faults/database-faults.fault.ts.

const silent = pino({ level: "silent" });
let time: SimulatedTime;
beforeEach(() => (time = SimulatedTime.start()));
afterEach(() => time.stop());

const refused = () => Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:5432"), { code: "ECONNREFUSED" });

/** A database that is up or down, and the LISTEN clients made to it (a stand-in for pg.Client). */
class FakeDatabase {
  down = false;
  connects = 0;
  readonly clients: FakeClient[] = [];
  client = (): FakeClient => {
    const client = new FakeClient(this);
    this.clients.push(client);
    return client;
  };
  /** The server ends every connection (a restart, pg_terminate_backend). */
  terminateAll(): void {
    for (const client of this.clients) client.terminate();
  }
}

class FakeClient extends EventEmitter {
  readonly #database: FakeDatabase;
  listening: string | undefined;
  ended = false;
  constructor(database: FakeDatabase) {
    super();
    this.#database = database;
  }
  async connect(): Promise<void> {
    this.#database.connects++;
    if (this.#database.down) throw refused();
  }
  async query(sql: string): Promise<void> {
    this.listening = sql;
  }
  async end(): Promise<void> {
    this.ended = true;
  }
  terminate(): void {
    if (this.ended) return;
    this.ended = true;
    this.emit("end");
  }
}

test("reconnect backoff: 0.5 s doubling to 30 s, never more, jitter only shortening it", () => {
  assert.deepEqual(
    [1, 2, 3, 7, 8, 100].map((n) => reconnectDelayMs(n, () => 0)),
    [500, 1_000, 2_000, 30_000, 30_000, 30_000],
  );
  assert.equal(
    reconnectDelayMs(100, () => 0.999),
    24_006,
  );
});

test("a LISTEN connection lost while the database stays down an hour tries about 120 times, then LISTENs again and has its owner catch up", async () => {
  const database = new FakeDatabase();
  let caughtUp = 0;
  const listener = new DatabaseListener({
    client: database.client,
    channels: ["a2a_events", "a2a_cancel"],
    onNotification: () => {},
    onReconnect: () => caughtUp++,
    logger: silent,
  });
  await listener.start();
  assert.equal(database.clients[0]!.listening, "LISTEN a2a_events; LISTEN a2a_cancel");

  database.down = true;
  database.terminateAll();
  assert.equal(listener.connected, false);
  await time.advance(HOUR, 1_000);
  // 0.5 + 1 + ... + 16 s, then one each 24-30 s: 120 to 150 in the hour; a loop without backoff would be thousands.
  assert.ok(listener.attempts >= 115 && listener.attempts <= 155, `${listener.attempts} reconnect attempts in an hour`);
  assert.equal(caughtUp, 0);

  database.down = false;
  await time.advance(31_000, 1_000);
  assert.equal(listener.connected, true, "back by itself within one backoff step");
  assert.equal(caughtUp, 1, "the owner is told once, to read again what it missed");
  assert.equal(database.clients.at(-1)!.listening, "LISTEN a2a_events; LISTEN a2a_cancel");
  const attempts = listener.attempts;
  await time.advance(HOUR, 10_000);
  assert.equal(listener.attempts, attempts, "no more attempts once connected");

  // Lost again (a reaper this time, the database up): back within the first step.
  database.terminateAll();
  await time.advance(1_000, 100);
  assert.deepEqual([listener.connected, caughtUp], [true, 2]);
  await listener.close();
  database.terminateAll();
  await time.advance(HOUR, 60_000);
  assert.equal(listener.connected, false, "closed: it stays closed");
});

test("a follower whose database goes away for an hour reads about 120 times, not in a loop, then wakes on the next notification", async () => {
  const database = new FakeDatabase();
  let poolDown = false;
  let reads = 0;
  const events: { seq: number; event: string }[] = [];
  const setup = { query: async () => ({ rows: [{ secret: "s" }] }), release: () => {} }; // the bus's channel secret
  const pool = {
    connect: async () => setup,
    query: async (sql: string) => {
      if (sql.startsWith("SELECT seq")) reads++;
      if (poolDown) throw Object.assign(new Error("terminating connection due to administrator command"), { code: "57P01" });
      return { rows: sql.startsWith("SELECT seq") ? events.splice(0) : [], rowCount: 0 };
    },
  } as unknown as import("pg").Pool;
  const running = { kind: "task", id: "t", contextId: "c", status: { state: "working", timestamp: "" } } as const;
  const store = { get: async () => ({ graphId: "g", task: running }) } as unknown as TaskStore;
  const bus = await ReplicaBus.open(pool, database.client, silent);
  const follower = bus.follow("t", store)[Symbol.asyncIterator]();
  const first = follower.next();
  await time.settle();
  reads = 0;

  poolDown = true;
  database.down = true;
  database.terminateAll();
  await time.advance(HOUR, 1_000);
  assert.ok(reads >= 115 && reads <= 155, `${reads} reads tried in the hour it was down`);
  reads = 0;
  poolDown = false;
  database.down = false;
  await time.advance(31_000, 1_000);
  assert.ok(reads >= 1 && reads <= 8, `${reads} reads once it is back`);

  // The event of the run's end, published on another replica: the notification wakes the follower at once.
  const final = { kind: "status-update", taskId: "t", contextId: "c", status: { state: "completed" }, final: true };
  events.push({ seq: 0, event: JSON.stringify(final) });
  database.clients.at(-1)!.emit("notification", { channel: "a2a_events_s", payload: "t" });
  await time.settle();
  assert.deepEqual((await first).value, final, "the follower woke on the notification, after the reconnection");
  await bus.close();
});

test("what counts as the database being away: lost or refused connections, no room, a standby, a timeout; not a bad statement or a bad record", () => {
  for (const away of [
    { code: "57P01" },
    { code: "08006" },
    { code: "ECONNREFUSED" },
    { code: "53300" },
    { code: "53100" }, // disk full
    { code: "25006" }, // read-only: a failover to a standby
    { code: "57014" }, // a statement timeout
    { code: "40P01" },
    { code: "55P03" },
    new Error("Connection terminated unexpectedly"),
    new Error("timeout exceeded when trying to connect"),
    new AggregateError([refused(), refused()]),
  ])
    assert.equal(databaseUnavailable(away), true, JSON.stringify(away));
  for (const bug of [{ code: "23505" }, { code: "22021" }, { code: "42P01" }, new Error("boom"), undefined])
    assert.equal(databaseUnavailable(bug), false, JSON.stringify(bug));
});
