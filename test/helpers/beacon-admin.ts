import type { ServiceProcess } from "./processes.ts";

/** An admin key for tests: long and distinctive, so a leak into any output is easy to find. */
export const ADMIN_KEY = "admin-SECRET-0123456789-abcdef";

/** The admin listener's URL, from the beacon's "beacon listening" line. */
export function adminUrlOf(beacon: ServiceProcess): string {
  for (const line of beacon.output().split("\n")) {
    try {
      const entry = JSON.parse(line) as { msg?: string; adminUrl?: string };
      if (entry.msg === "beacon listening" && entry.adminUrl) return entry.adminUrl;
    } catch {
      // not a JSON line
    }
  }
  throw new Error(`the beacon logged no adminUrl:\n${beacon.output()}`);
}

/** One admin API call: status and parsed body. */
export async function admin(
  url: string,
  method: string,
  path: string,
  body?: unknown,
  /** null: no X-Api-Key at all. */
  key: string | null = ADMIN_KEY,
): Promise<{ status: number; body: any }> {
  const response = await fetch(`${url}${path}`, {
    method,
    headers: { ...(key === null ? {} : { "x-api-key": key }), ...(body === undefined ? {} : { "content-type": "application/json" }) },
    body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : undefined };
}
