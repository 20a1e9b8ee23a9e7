import { readFileSync } from "node:fs";
import * as z from "zod";
import { ByteSize, Duration } from "../config/units.ts";

/** What one HTTP server lets its clients hold: connections, time and body memory. */
export interface HttpLimits {
  /** Open connections at most; at the cap, the oldest idle one is closed to let a new one in. */
  maxConnections: number;
  /** Of those, the last ones are kept for the routes that must answer (health, billing): others get 503. */
  reservedConnections: number;
  /** A new connection must send its request's headers within this (also: a connection that sends nothing). */
  headersTimeoutMs: number;
  /** A whole request, body included, must arrive within this; else 408. */
  requestTimeoutMs: number;
  /** A body that sends nothing for this long is refused (408) and gives its bytes back: a stalled client holds nothing long. */
  bodyIdleTimeoutMs: number;
  /** An idle keep-alive connection is closed after this. */
  keepAliveTimeoutMs: number;
  /** JSON objects and arrays (or protobuf messages) one body may hold; more: 413. */
  bodyItems: number;
  /**
   * Memory the bodies of routes without a budget class of their own may hold at once (see BodyBudget); over it: 503
   * with Retry-After.
   */
  bodyBytesInFlight: number;
  /**
   * Budgets of their own, by class (`billing`, `anonymous`, ...): what the bodies of a class's routes may hold at
   * once, which no other route's bodies can take. Config key `<class>BodyBytesInFlight`.
   */
  bodyBudgets: Record<string, number>;
}

/** The config key of a budget class's bytes in flight ("billing" -> "billingBodyBytesInFlight"). */
export const budgetKey = (budgetClass: string) => `${budgetClass}BodyBytesInFlight`;

/** The `http:` block of a service's config, with that service's defaults (`bodyBudgets`: its classes and their sizes). */
export function httpLimitsSchema(defaults: {
  maxConnections: number;
  reservedConnections: number;
  bodyBytesInFlight: string;
  bodyBudgets?: Record<string, string>;
}) {
  const classes = Object.entries(defaults.bodyBudgets ?? {});
  const classKeys = Object.fromEntries(classes.map(([name, size]) => [budgetKey(name), ByteSize.prefault(size)]));
  return z
    .strictObject({
      maxConnections: z.int().min(8).max(1_000_000).default(defaults.maxConnections),
      reservedConnections: z.int().min(1).default(defaults.reservedConnections),
      headersTimeout: Duration.prefault("10s"),
      requestTimeout: Duration.prefault("60s"),
      bodyIdleTimeout: Duration.prefault("10s"),
      keepAliveTimeout: Duration.prefault("72s"),
      bodyItems: z.int().min(1000).default(500_000),
      bodyBytesInFlight: ByteSize.prefault(defaults.bodyBytesInFlight),
      ...classKeys,
    })
    .refine((http) => http.reservedConnections < http.maxConnections, {
      message: "must be below http.maxConnections",
      path: ["reservedConnections"],
    })
    .transform(
      (http): HttpLimits => ({
        maxConnections: http.maxConnections,
        reservedConnections: http.reservedConnections,
        headersTimeoutMs: http.headersTimeout,
        requestTimeoutMs: http.requestTimeout,
        bodyIdleTimeoutMs: http.bodyIdleTimeout,
        keepAliveTimeoutMs: http.keepAliveTimeout,
        bodyItems: http.bodyItems,
        bodyBytesInFlight: http.bodyBytesInFlight,
        bodyBudgets: Object.fromEntries(classes.map(([name]) => [name, (http as Record<string, unknown>)[budgetKey(name)] as number])),
      }),
    )
    .prefault({});
}

/** Defaults for servers without a config of their own (the agent server, the control plane) and for tests. */
export const defaultHttpLimits: HttpLimits = httpLimitsSchema({
  maxConnections: 1024,
  reservedConnections: 64,
  bodyBytesInFlight: "32MiB",
}).parse(undefined);

/** File descriptors kept for everything but connections: SQLite files and journals, logs, outgoing requests. */
const FILES_KEPT = 128;

/**
 * maxConnections, never above the process's open-file limit (less what the process needs besides): past that
 * limit, accept() fails and nothing is served at all, health checks and billing included.
 */
export function connectionCap(maxConnections: number, limitsFile = "/proc/self/limits"): number {
  let soft: number | undefined;
  try {
    const match = /^Max open files\s+(\d+|unlimited)/m.exec(readFileSync(limitsFile, "utf8"));
    soft = match && match[1] !== "unlimited" ? Number(match[1]) : undefined;
  } catch {
    // not Linux: the configured value stands
  }
  return soft === undefined ? maxConnections : Math.max(16, Math.min(maxConnections, soft - FILES_KEPT));
}
