import * as z from "zod";

const durationUnits: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const sizeUnits: Record<string, number> = {
  B: 1,
  KB: 1e3,
  MB: 1e6,
  GB: 1e9,
  KiB: 1024,
  MiB: 1024 ** 2,
  GiB: 1024 ** 3,
};

function parseWithUnits(text: string, units: Record<string, number>): number | undefined {
  const match = /^\s*(\d+(?:\.\d+)?)\s*([A-Za-z]+)\s*$/.exec(text);
  if (!match) return undefined;
  const factor = units[match[2]!];
  return factor === undefined ? undefined : Math.round(Number(match[1]) * factor);
}

/** A duration such as `250ms`, `5s`, `10m`, `1h`, `7d`, or a number of milliseconds. Parses to milliseconds. */
export const Duration = z.union([z.int().positive(), z.string()]).transform((value, ctx) => {
  const ms = typeof value === "number" ? value : parseWithUnits(value, durationUnits);
  if (ms === undefined || ms <= 0) {
    ctx.addIssue({ code: "custom", message: "must be a positive duration like 250ms, 5s, 10m, 1h or 7d" });
    return z.NEVER;
  }
  return ms;
});

/** A size such as `512KiB`, `8MiB`, `1GB`, or a number of bytes. Parses to bytes. */
export const ByteSize = z.union([z.int().positive(), z.string()]).transform((value, ctx) => {
  const bytes = typeof value === "number" ? value : parseWithUnits(value, sizeUnits);
  if (bytes === undefined || bytes <= 0) {
    ctx.addIssue({ code: "custom", message: "must be a positive size like 512KiB, 8MiB or 1GB" });
    return z.NEVER;
  }
  return bytes;
});

/** `host:port`, with IPv6 hosts in brackets. Port 0 asks the OS for a free port. */
export const ListenAddress = z.string().transform((value, ctx) => {
  const match = /^(?:\[([0-9a-fA-F:.]+)\]|([^:[\]]+)):(\d{1,5})$/.exec(value);
  const port = match ? Number(match[3]) : NaN;
  if (!match || port > 65535) {
    ctx.addIssue({ code: "custom", message: "must be HOST:PORT, e.g. 127.0.0.1:8080 or [::1]:8080" });
    return z.NEVER;
  }
  return { host: (match[1] ?? match[2])!, port };
});
export type ListenAddress = z.output<typeof ListenAddress>;
