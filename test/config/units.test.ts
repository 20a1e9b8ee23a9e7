import assert from "node:assert/strict";
import { test } from "node:test";
import { ByteSize, Duration, ListenAddress } from "../../src/config/units.ts";

test("durations parse to milliseconds; nonsense is refused", () => {
  assert.deepEqual(
    ["250ms", "5s", "10m", "1h", "7d", "1.5h", 42].map((d) => Duration.parse(d)),
    [250, 5000, 600000, 3600000, 604800000, 5400000, 42],
  );
  for (const bad of ["", "5", "1w", "-1s", "0s", "soon"]) assert.ok(!Duration.safeParse(bad).success, bad);
});

test("sizes parse to bytes in both decimal and binary units", () => {
  assert.deepEqual(
    ["512KiB", "8MiB", "1GB", "256MiB", 10].map((s) => ByteSize.parse(s)),
    [524288, 8388608, 1e9, 268435456, 10],
  );
  assert.ok(!ByteSize.safeParse("8 megs").success);
});

test("listen addresses take IPv4, names and bracketed IPv6", () => {
  assert.deepEqual(ListenAddress.parse("127.0.0.1:8080"), { host: "127.0.0.1", port: 8080 });
  assert.deepEqual(ListenAddress.parse("[::1]:0"), { host: "::1", port: 0 });
  assert.deepEqual(ListenAddress.parse("localhost:4318"), { host: "localhost", port: 4318 });
  for (const bad of ["8080", "::1:80", "host:99999", "127.0.0.1"]) assert.ok(!ListenAddress.safeParse(bad).success, bad);
});
