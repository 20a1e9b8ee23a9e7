import assert from "node:assert/strict";
import { after, describe, test } from "node:test";
import { BeaconConfig } from "../../src/beacon/config.ts";
import { openBeaconStorage, type BeaconStorage } from "../../src/beacon/storage.ts";
import type { OtlpSignal } from "../../src/protocol/otlp.ts";
import { freshDatabase } from "../helpers/postgres.ts";
import { tempDir } from "../helpers/processes.ts";

// The forward queue on both engines, against a few-line model: random sequences of stores (queued or not), rounds
// that settle some of what they claimed, rounds that fail (rolled back) and reopenings (a restart), with the
// backlog checked after each step. PostgreSQL is the real server on 127.0.0.1:5432, a database of its own.

const cleanups: (() => Promise<void>)[] = [];
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

const engines: { name: string; location(): Promise<() => Promise<BeaconStorage>> }[] = [
  {
    name: "sqlite",
    location: async () =>
      (
        (dataDir) => () =>
          openBeaconStorage(BeaconConfig.parse({ dataDir }))
      )(tempDir("forward-queue-")),
  },
  {
    name: "postgresql",
    location: async () => {
      const database = await freshDatabase("egress_forward_queue");
      cleanups.push(database.drop);
      return () => openBeaconStorage(BeaconConfig.parse({ dataDir: tempDir(), database: { url: database.url } }));
    },
  },
];

/** A small seeded generator, so that a failing sequence can be run again. */
function random(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 1_103_515_245 + 12_345) % 2 ** 31;
    return state / 2 ** 31;
  };
}

const SIGNALS: OtlpSignal[] = ["metrics", "traces", "logs"];

for (const engine of engines) {
  describe(`forward queue on ${engine.name}`, () => {
    test("random stores, rounds, failed rounds and restarts agree with the model: oldest first, nothing lost", async () => {
      const open = await engine.location();
      let store = await open();
      const next = random(34);
      /** The model: the markers queued, oldest first. */
      const model: string[] = [];
      let stored = 0;
      for (let step = 0; step < 300; step++) {
        const roll = next();
        if (roll < 0.45) {
          const marker = `m${stored++}`;
          const forward = next() < 0.8;
          // The route hands over a body's own bytes when they are the text to store, else a string: both read back alike.
          const text = JSON.stringify({ marker, note: "Grüße 😀" });
          await store.insertOtlp(
            SIGNALS[stored % 3]!,
            next() < 0.9 ? "acme" : null,
            1,
            next() < 0.5 ? text : Buffer.from(text),
            new Date(Date.UTC(2026, 10, 1, 0, 0, stored)),
            forward,
          );
          if (forward) model.push(marker);
        } else if (roll < 0.85) {
          const limit = 1 + Math.floor(next() * 5);
          const fails = next() < 0.2;
          let removed: string[] = [];
          const failed = await store.forwardQueue
            .round(limit, async ({ batches, done }) => {
              assert.deepEqual(
                batches.map((b) => JSON.parse(b.body).marker),
                model.slice(0, limit),
                `step ${step}: the oldest ${limit}`,
              );
              const some = batches.filter(() => next() < 0.6);
              await done(some.map((b) => b.seq));
              removed = some.map((b) => JSON.parse(b.body).marker as string);
              if (fails) throw new Error("the round failed");
              return false;
            })
            .catch((err: Error) => {
              if (err.message !== "the round failed") throw err;
              return true;
            });
          // SQLite removes at done(); PostgreSQL at the round's commit, so there a failed round removes nothing.
          if (!failed || engine.name === "sqlite") for (const marker of removed) model.splice(model.indexOf(marker), 1);
        } else if (roll < 0.9) {
          await store.close();
          store = await open();
        }
        const backlog = await store.forwardQueue.backlog();
        assert.equal(backlog.batches, model.length, `step ${step}: backlog`);
      }
      await store.close();
    });
  });
}

test("postgresql: two replicas' rounds at once never hold the same batch; what a round did not settle stays queued", async () => {
  const open = await engines[1]!.location();
  const [one, two] = [await open(), await open()];
  cleanups.push(
    () => one.close(),
    () => two.close(),
  );
  for (let i = 0; i < 10; i++) await one.insertOtlp("logs", "acme", 1, JSON.stringify({ i }), new Date(), true);
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  const first = one.forwardQueue.round(4, async ({ batches }) => {
    await held;
    return batches.map((b) => b.seq);
  });
  await new Promise((resolve) => setTimeout(resolve, 200));
  const second = await two.forwardQueue.round(100, async ({ batches, done }) => {
    await done(batches.map((b) => b.seq));
    return batches.map((b) => b.seq);
  });
  release();
  const firstSeqs = await first;
  assert.equal(firstSeqs.length, 4);
  assert.equal(second.length, 6);
  assert.deepEqual(
    firstSeqs.filter((seq) => second.includes(seq)),
    [],
  );
  // The first round settled nothing: its four are queued still, for whichever replica comes next.
  assert.equal((await two.forwardQueue.backlog()).batches, 4);
});
