import type { AgentConfig } from "../config.ts";
import { redactUrl } from "../../config/redact.ts";
import { beaconPaths } from "../../protocol/beacon-paths.ts";
import { proxyFor } from "./proxy.ts";
import { streamPolicies } from "../shippers/policies.ts";

export interface Destination {
  /** `license` for verification, else the stream shipped there. */
  stream: string;
  url: string;
  /** The forward proxy the request goes through (credentials removed), or null when the connection is direct (no proxy, or NO_PROXY exempts the host). */
  proxy: string | null;
}

/**
 * Every network destination this config can contact: the beacon's verify path and one path per shipped
 * stream, nothing else (the sidecar's own telemetry goes to its own loopback receiver). Empty offline.
 */
export function destinations(config: AgentConfig): Destination[] {
  if (config.offline.enabled) return [];
  const base = config.beaconUrl.replace(/\/+$/, "");
  const paths = [{ stream: "license", path: beaconPaths.verify }, ...streamPolicies(config).map(({ stream, path }) => ({ stream, path }))];
  return paths.map(({ stream, path }) => {
    const proxy = proxyFor(`${base}${path}`, config.proxy);
    return { stream, url: redactUrl(`${base}${path}`), proxy: proxy ? redactUrl(proxy) : null };
  });
}
