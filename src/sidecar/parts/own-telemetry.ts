import type { Logger } from "pino";
import type { WarningLogTap } from "../../log.ts";
import { OTLP_SIGNALS } from "../../protocol/otlp.ts";
import type { AgentConfig } from "../config.ts";
import type { SelfTelemetry } from "../self-telemetry.ts";
import type { Egress } from "./egress.ts";
import type { LocalApi } from "./local-api.ts";

/** The address the sidecar's own exporters reach its local API at: loopback even when it listens on all. */
function loopbackUrl(url: string): string {
  return url.replace("//0.0.0.0:", "//127.0.0.1:").replace("//[::]:", "//[::1]:");
}

/**
 * The sidecar's own telemetry, exported to its own receiver (so it takes the relay's path and switches). Loaded
 * after the listener is up: the OpenTelemetry SDK takes a while to load and readiness must not wait. Reporting
 * about itself is optional: billing and the relay never depend on it.
 */
export function startOwnTelemetry(
  config: AgentConfig,
  parts: { url: string; localApi: LocalApi; egress: Egress; logger: Logger; logTap: WarningLogTap | undefined },
): { close(): Promise<void> } {
  if (!config.selfTelemetry.enabled || !OTLP_SIGNALS.some((signal) => config.telemetry[signal])) return { close: async () => {} };
  let closing = false;
  let telemetry: SelfTelemetry | undefined;
  const starting = import("../self-telemetry.ts")
    .then(({ SelfTelemetry }) => {
      if (closing) return;
      telemetry = new SelfTelemetry({
        localUrl: loopbackUrl(parts.url),
        signals: config.telemetry,
        env: config.selfTelemetry.env,
        exportIntervalMs: config.selfTelemetry.exportInterval,
        slowMs: config.privacy.slowSpan,
        logTap: parts.logTap,
      });
      parts.localApi.app.onResponse = (served) =>
        telemetry?.observe({
          endpoint: served.route,
          method: served.method,
          serviceName: "egress-agent",
          status: served.status,
          startMs: served.startMs,
          durationMs: served.durationMs,
        });
      parts.egress.client?.listeners.push((sent) =>
        telemetry?.observe({
          endpoint: sent.path,
          method: "POST",
          serviceName: "beacon",
          status: sent.status,
          startMs: sent.startMs,
          durationMs: sent.durationMs,
        }),
      );
    })
    .catch((err) => parts.logger.warn({ err }, "own telemetry could not start; running without it"));
  const close = async () => {
    closing = true;
    // Its last export goes to the local receiver, so this comes before the listener closes.
    await starting;
    await telemetry?.stop();
    telemetry = undefined;
  };
  return { close };
}
