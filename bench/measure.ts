// What the benchmarks read off a process and how they load it. Linux /proc only; loopback only.
import { readFileSync } from "node:fs";
import { cpus, totalmem, release } from "node:os";
import { Agent, request } from "undici";

export const CLIENTS = 8;

/**
 * POSTs every body with CLIENTS concurrent clients (keep-alive connections); returns the seconds it took. Any
 * non-2xx stops the run. undici's `request` rather than `fetch`: the load generator shares the machine's cores
 * with what it measures, and fetch costs it about twice the CPU. Several URLs (replicas): the clients are spread
 * over them evenly, as a balancer would spread connections, without a balancer's own cost.
 */
export async function postAll(
  urls: string | readonly string[],
  bodies: readonly (string | Buffer)[],
  headers: Record<string, string> = {},
): Promise<number> {
  const dispatcher = new Agent({ connections: CLIENTS });
  let next = 0;
  const started = performance.now();
  const targets = typeof urls === "string" ? [urls] : urls;
  await Promise.all(
    Array.from({ length: CLIENTS }, async (_, client) => {
      const url = targets[client % targets.length]!;
      while (next < bodies.length) {
        const body = bodies[next++]!;
        const response = await request(url, {
          method: "POST",
          headers: { "content-type": "application/json", ...headers },
          body,
          dispatcher,
        });
        await response.body.dump();
        if (response.statusCode < 200 || response.statusCode > 299) throw new Error(`${url} answered ${response.statusCode}`);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  await dispatcher.close();
  return seconds;
}

function statusField(pid: number, field: string): number {
  const line = readFileSync(`/proc/${pid}/status`, "utf8")
    .split("\n")
    .find((l) => l.startsWith(`${field}:`));
  return Number(line?.split(/\s+/)[1] ?? NaN) * 1024;
}

/** Resident set size now, and its peak since the process started (bytes). */
export const rss = (pid: number) => statusField(pid, "VmRSS");
export const peakRss = (pid: number) => statusField(pid, "VmHWM");

/** User + system CPU seconds the process has used (clock ticks are 1/100 s on Linux). */
export function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

export function machine(): string {
  const cpu = cpus();
  const fs =
    readFileSync("/proc/mounts", "utf8")
      .split("\n")
      .find((l) => l.split(" ")[1] === "/")
      ?.split(" ")[2] ?? "?";
  return `${cpu.length} × ${cpu[0]?.model.trim()}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB RAM, Linux ${release()}, root fs ${fs}, Node ${process.version}`;
}

export const mb = (bytes: number) => bytes / 1e6;
export const fmt = (n: number, digits = 0) => n.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits });
export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

/** The run whose `ratio` is the median of the runs' (the upper one of an even count): its figures are reported whole. */
export function medianRun<T>(runs: readonly T[], ratio: (run: T) => number): T {
  const sorted = [...runs].sort((a, b) => ratio(a) - ratio(b));
  return sorted[Math.floor(sorted.length / 2)]!;
}

let collections: { start: number; duration: number }[] | undefined;

/**
 * Runs `work` between two quiet moments and returns its wall time and the garbage collections inside it (the
 * micro-benchmarks' rounds). The observer starts on the first call; its entries arrive after the work, so it waits.
 */
export async function timedWithGc<T>(work: () => T): Promise<{ value: T; ms: number; gcMs: number; gcCount: number }> {
  if (!collections) {
    const seen: { start: number; duration: number }[] = [];
    new PerformanceObserver((list) => {
      for (const entry of list.getEntries()) seen.push({ start: entry.startTime, duration: entry.duration });
    }).observe({ entryTypes: ["gc"] });
    collections = seen;
  }
  await sleep(50);
  const start = performance.now();
  const value = work();
  const end = performance.now();
  await sleep(50);
  const inside = collections.filter((gc) => gc.start >= start && gc.start < end);
  return { value, ms: end - start, gcMs: inside.reduce((n, gc) => n + gc.duration, 0), gcCount: inside.length };
}
