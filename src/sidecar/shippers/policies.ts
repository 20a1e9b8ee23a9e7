import type { AgentConfig } from "../config.ts";
import { OTLP_SIGNALS } from "../../protocol/otlp.ts";
import { billingPolicy } from "./billing.ts";
import type { StreamPolicy } from "./shipper.ts";
import { telemetryPolicy } from "./telemetry.ts";
import { usagePolicy } from "./usage.ts";

/** The streams this config ships, each with its policy; none offline (nothing leaves at all). */
export function streamPolicies(config: AgentConfig): StreamPolicy[] {
  if (config.offline.enabled) return [];
  return [
    billingPolicy(config.licenseKey, config.limits.batchTransactions),
    ...OTLP_SIGNALS.filter((signal) => config.telemetry[signal]).map((signal) =>
      telemetryPolicy(signal, config.limits.telemetryBatchBytes),
    ),
    ...(config.usageReporting ? [usagePolicy(config.licenseKey)] : []),
  ];
}
