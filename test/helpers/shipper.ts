import pino from "pino";
import type { Outbox } from "../../src/sidecar/storage/outbox.ts";
import { billingPolicy } from "../../src/sidecar/shippers/billing.ts";
import { Shipper, type ShipperOptions } from "../../src/sidecar/shippers/shipper.ts";
import { StreamHealth } from "../../src/sidecar/storage/stream-health.ts";

/** Unit tests: a billing shipper (batches of 10, millisecond timings) over `outbox`, posting through a stand-in `post` (given the parsed body). */
export function billingShipper(
  outbox: Outbox,
  post: (path: string, body: any) => Promise<{ status: number; body: unknown }>,
  overrides: Partial<ShipperOptions> = {},
) {
  const logger = pino({ level: "silent" });
  const health = new StreamHealth(logger, "billing");
  const shipper = new Shipper({
    policy: billingPolicy("lic-key", 10),
    outbox,
    client: { post: (path, json) => post(path, JSON.parse(json.toString())) },
    health,
    logger,
    token: () => undefined,
    onUnauthorized: () => {},
    flushMs: 1,
    concurrency: 2,
    minBackoffMs: 1,
    maxBackoffMs: 10,
    ...overrides,
  });
  return { shipper, health };
}
