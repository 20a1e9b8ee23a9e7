import assert from "node:assert/strict";
import { test } from "node:test";
import pino from "pino";
import { DataDirSpace } from "../../src/sidecar/storage/disk-space.ts";
import type { BillingWriter } from "../../src/sidecar/storage/billing-writer.ts";
import { HttpError } from "../../src/errors.ts";
import { postToTransactionsRoute } from "../helpers/transactions-route.ts";

const MiB = 2 ** 20;

/** A logger that keeps its lines, and a volume whose free space the test sets. */
function setup(reserveBytes = 16 * MiB) {
  const lines: { msg: string }[] = [];
  const logger = pino({ level: "info" }, { write: (line: string) => void lines.push(JSON.parse(line)) });
  const volume = { free: 100 * MiB };
  const space = new DataDirSpace("/data", { logger, reserveBytes, statfs: () => ({ bavail: volume.free / 4096, bsize: 4096 }) });
  return { lines, volume, space };
}

test("free space: billing refused (507, saying what to do) below the reserve, telemetry below twice it; each change logged once", () => {
  const { lines, volume, space } = setup();
  space.assertRoomForBilling();
  assert.equal(space.roomForTelemetry(), true);

  volume.free = 20 * MiB;
  assert.equal(space.roomForTelemetry(), false, "telemetry gives way first");
  space.assertRoomForBilling();

  volume.free = 15 * MiB;
  for (let i = 0; i < 3; i++) {
    assert.throws(
      () => space.assertRoomForBilling(),
      (err: unknown) =>
        err instanceof HttpError &&
        err.statusCode === 507 &&
        err.code === "EGRESS_ERR_DISK_FULL" &&
        /free space on that volume/.test(err.message),
    );
  }
  volume.free = 100 * MiB;
  space.assertRoomForBilling();
  assert.deepEqual(
    lines.map((l) => l.msg),
    [
      "data dir nearly full: operational telemetry dropped, billing still taken",
      "data dir full: billing intake refused with 507, operational telemetry dropped",
      "data dir has room again: intake resumed",
    ],
  );
});

test("POST /v1/transactions: a commit that fails with SQLITE_FULL (the disk filled past the reserve) is a 507, not a 500", async () => {
  const { space } = setup(0);
  // Unit test: a billing writer whose commit fails as on a full disk.
  const writer = {
    enqueue: async () => {
      throw Object.assign(new Error("database or disk is full"), { code: "SQLITE_FULL" });
    },
  } as unknown as BillingWriter;
  const answer = await postToTransactionsRoute(writer, space);
  assert.equal(answer.status, 507);
  assert.equal(answer.body.code, "EGRESS_ERR_DISK_FULL");
  assert.match(answer.body.detail, /nothing of this batch was stored/);
  assert.equal(answer.woken, 0, "nothing enqueued, no shipper woken");
});

test("telemetry's check reuses a reading for at most 100 ms, only when the volume is far from its threshold; billing's never", () => {
  let reads = 0;
  const volume = { free: 1024 * MiB };
  let now = 0;
  const statfs = () => {
    reads++;
    return { bavail: volume.free / 4096, bsize: 4096 };
  };
  const space = new DataDirSpace("/data", { logger: pino({ level: "silent" }), reserveBytes: 16 * MiB, statfs, now: () => now });
  // An OTLP request every simulated millisecond for a second: the file system is asked ten times, not a thousand.
  for (; now < 1000; now++) assert.equal(space.roomForTelemetry(), true);
  assert.equal(reads, 10);
  // The volume fills (another tenant): within 100 ms telemetry is refused.
  volume.free = 20 * MiB;
  let refusedAt: number | undefined;
  for (const start = now; now < start + 200 && refusedAt === undefined; now++) if (!space.roomForTelemetry()) refusedAt = now - start;
  assert.ok(refusedAt !== undefined && refusedAt <= 100, `refused after ${refusedAt} ms`);
  // Near the threshold (100 MiB free, telemetry's threshold 32 MiB): every request asks.
  volume.free = 100 * MiB;
  reads = 0;
  for (const start = now; now < start + 1000; now++) space.roomForTelemetry();
  assert.equal(reads, 1000);
  // Billing always asks, however roomy the last reading.
  volume.free = 1024 * MiB;
  space.roomForTelemetry();
  reads = 0;
  for (let i = 0; i < 5; i++) space.assertRoomForBilling();
  assert.equal(reads, 5);
  // A clock set back does not stretch a reading's life.
  now -= 5000;
  reads = 0;
  space.roomForTelemetry();
  assert.equal(reads, 1);
});

test("billing's reading of a fuller disk, or a failed write, ends the reuse of telemetry's last roomy reading at once", () => {
  const volume = { free: 1024 * MiB };
  const space = new DataDirSpace("/data", {
    logger: pino({ level: "silent" }),
    reserveBytes: 16 * MiB,
    statfs: () => ({ bavail: volume.free / 4096, bsize: 4096 }),
    now: () => 0,
  });
  assert.equal(space.roomForTelemetry(), true);
  volume.free = 10 * MiB;
  assert.throws(() => space.assertRoomForBilling());
  assert.equal(space.roomForTelemetry(), false, "billing saw the disk full: telemetry asks again");
  volume.free = 1024 * MiB;
  assert.equal(space.roomForTelemetry(), true);
  volume.free = 20 * MiB;
  space.full();
  assert.equal(space.roomForTelemetry(), false, "a write failed for want of space: telemetry asks again");
});
