// Model-based test of the outbox queue (as Vector tests its disk buffer): random operation sequences run against the
// real Outbox on a real SQLite file and against a few lines of in-memory model; after every step both must agree on
// what each stream holds, and every claim must return exactly the records the model says are next.
import assert from "node:assert/strict";
import { test } from "node:test";
import { bodyText, Outbox, type OutboxRecord, type RecordState, type Stream } from "../../src/sidecar/storage/outbox.ts";
import { tempDir } from "../helpers/processes.ts";

interface ModelRecord {
  /** Insertion order. The real seqs are SQLite's (AUTOINCREMENT may skip one on a skipped duplicate): records are
   * known by their bodies, each unique. */
  order: number;
  stream: Stream;
  recordId: string | null;
  body: string;
  attempts: number;
  state: RecordState;
  enqueuedAt: number;
  updatedAt: number;
}

/** The queue's rules, stated as simply as possible. */
class Model {
  records: ModelRecord[] = [];
  delivered = new Map<Stream, number>();
  #seq = 0;

  enqueue(stream: Stream, records: { recordId?: string; body: string; attempts?: number }[], now: number): number {
    let inserted = 0;
    for (const r of records) {
      if (r.recordId && this.records.some((m) => m.stream === stream && m.recordId === r.recordId)) continue;
      this.records.push({
        order: ++this.#seq,
        stream,
        recordId: r.recordId ?? null,
        body: r.body,
        attempts: r.attempts ?? 0,
        state: "pending",
        enqueuedAt: now,
        updatedAt: now,
      });
      inserted++;
    }
    return inserted;
  }

  next(stream: Stream, limit: number, maxBytes: number): ModelRecord[] {
    const batch: ModelRecord[] = [];
    let bytes = 0;
    for (const r of this.records.filter((m) => m.stream === stream && m.state === "pending").slice(0, limit)) {
      bytes += Buffer.byteLength(r.body);
      if (bytes > maxBytes && batch.length > 0) break;
      batch.push(r);
    }
    return batch;
  }

  settle(bodies: string[], state: RecordState, now: number, attempt = false): void {
    for (const r of this.records.filter((m) => bodies.includes(m.body))) {
      r.state = state;
      r.updatedAt = now;
      if (attempt) r.attempts++;
    }
  }

  remove(bodies: string[]): number {
    const before = this.records.length;
    this.records = this.records.filter((m) => !bodies.includes(m.body));
    return before - this.records.length;
  }

  counts(stream: Stream) {
    const mine = this.records.filter((m) => m.stream === stream);
    const count = (state: RecordState) => mine.filter((m) => m.state === state).length;
    const undelivered = mine.filter((m) => m.state === "pending" || m.state === "sending");
    return {
      pending: count("pending"),
      sending: count("sending"),
      completed: count("completed"),
      failed: count("failed"),
      oldestPendingAt: undelivered.length > 0 ? Math.min(...undelivered.map((m) => m.enqueuedAt)) : null,
      delivered: this.delivered.get(stream) ?? 0,
    };
  }
}

/** A small seeded PRNG (mulberry32): a failing sequence is reproduced from its seed. */
function prng(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return { int: (n: number) => Math.floor(next() * n), pick: <T>(list: readonly T[]) => list[Math.floor(next() * list.length)]! };
}

const STREAMS: Stream[] = ["billing", "metrics"];

function runSequence(seed: number, steps: number): void {
  const random = prng(seed);
  const dir = tempDir();
  let now = 1_000;
  let outbox = new Outbox(dir, { now: () => now });
  const model = new Model();
  const claimed: OutboxRecord[] = [];
  let bodyCount = 0;
  const where = (step: number, op: string) => `seed ${seed}, step ${step}: ${op}`;
  try {
    for (let step = 0; step < steps; step++) {
      now += random.int(3);
      const stream = random.pick(STREAMS);
      const op = random.pick([
        "enqueue",
        "enqueue",
        "claim",
        "claim",
        "ack",
        "remove",
        "fail",
        "deadLetter",
        "release",
        "discard",
        "reopen",
        "prune",
      ]);
      const mine = claimed.filter((r) => model.records.find((m) => m.body === bodyText(r))?.stream === stream);
      const some = mine.filter(() => random.int(2) === 0);
      const drop = (records: OutboxRecord[]) => {
        for (const r of records) claimed.splice(claimed.indexOf(r), 1);
      };
      const seqs = some.map((r) => r.seq);
      const bodies = some.map(bodyText);
      if (op === "enqueue") {
        const records = Array.from({ length: 1 + random.int(4) }, () => ({
          recordId: random.int(3) === 0 ? undefined : `id-${random.int(40)}`,
          body: `${"x".repeat(1 + random.int(60))}#${++bodyCount}`,
        }));
        assert.equal(outbox.enqueue(stream, records), model.enqueue(stream, records, now), where(step, op));
      } else if (op === "claim") {
        const [limit, maxBytes] = [1 + random.int(5), 1 + random.int(150)];
        const expected = model.next(stream, limit, maxBytes);
        model.settle(
          expected.map((r) => r.body),
          "sending",
          now,
        );
        const got = outbox.claim(stream, limit, maxBytes);
        assert.deepEqual(
          got.map((r) => [r.recordId, bodyText(r), r.attempts]),
          expected.map((r) => [r.recordId, r.body, r.attempts]),
          where(step, op),
        );
        claimed.push(...got);
      } else if (op === "ack" || op === "remove") {
        if (op === "ack") outbox.ack(stream, seqs);
        else outbox.remove(stream, seqs);
        const n = op === "ack" ? seqs.length : model.remove(bodies);
        if (op === "ack") model.settle(bodies, "completed", now);
        model.delivered.set(stream, (model.delivered.get(stream) ?? 0) + n);
        drop(some);
      } else if (op === "fail") {
        outbox.fail(stream, some, "503");
        model.settle(bodies, "pending", now, true);
        for (const r of some) assert.equal(r.attempts, model.records.find((m) => m.body === bodyText(r))!.attempts, where(step, op));
        drop(some);
      } else if (op === "deadLetter" || op === "release") {
        if (op === "deadLetter") outbox.deadLetter(stream, seqs, "422");
        else outbox.release(stream, seqs);
        model.settle(bodies, op === "deadLetter" ? "failed" : "pending", now);
        drop(some);
      } else if (op === "discard") {
        const gone = model.records.filter((m) => m.stream === stream && m.state !== "completed").map((m) => m.body);
        assert.equal(outbox.discard(stream), model.remove(gone), where(step, op));
        drop(claimed.filter((r) => gone.includes(bodyText(r))));
      } else if (op === "reopen") {
        // A restart: what was being sent is pending again, nothing else changes.
        outbox.close();
        outbox = new Outbox(dir, { now: () => now });
        model.settle(
          model.records.filter((m) => m.state === "sending").map((m) => m.body),
          "pending",
          now,
        );
        claimed.length = 0;
      } else {
        const before = now - random.int(10);
        const old = model.records.filter((m) => m.state === "completed" && m.updatedAt < before).map((m) => m.body);
        assert.equal(outbox.history.pruneCompleted(before), model.remove(old), where(step, op));
      }
      for (const s of STREAMS) assert.deepEqual(outbox.stats.counts(s), model.counts(s), `${where(step, op)}; counts of ${s}`);
    }
    for (const s of STREAMS) {
      assert.deepEqual(
        [...outbox.history.records(s)].map((r) => [r.recordId, r.body, r.attempts]),
        model.records.filter((m) => m.stream === s).map((m) => [m.recordId, m.body, m.attempts]),
        `seed ${seed}: every record kept, in order`,
      );
    }
  } finally {
    outbox.close();
  }
}

test("the outbox queue agrees with its model over random sequences of every operation, restarts included", () => {
  for (let seed = 1; seed <= 15; seed++) runSequence(seed, 150);
});
