import type { Logger } from "pino";
import type { Clock } from "../../clock.ts";
import type { AgentConfig } from "../config.ts";
import { OfflineLicense } from "../license/offline-license.ts";
import type { Egress } from "./egress.ts";

/** Offline (air-gapped): the offline license only; no beacon client and no shipper exist, records stay for export. */
export async function startOfflineEgress(config: AgentConfig, options: { logger: Logger; now: Clock }): Promise<Egress> {
  const license = new OfflineLicense({ ...config.offline, now: options.now });
  const status = await license.start();
  options.logger.info(
    { licenseId: status.licenseId, state: status.state, expiresAt: status.expiresAt, reason: status.lastError },
    "offline mode: no egress of any kind",
  );
  return { license, client: undefined, shipping: () => undefined, close: () => license.stop() };
}
