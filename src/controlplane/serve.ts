import { createLogger } from "../log.ts";
import { serveUntilSignal } from "../serve-until-signal.ts";
import { loadControlPlaneConfig } from "./config.ts";
import { startControlPlane } from "./server.ts";

/** `controlplane serve`: runs until SIGTERM or SIGINT. Deployed agent servers keep running; a restart adopts them. */
export async function runControlPlane(options: { config?: string; listen?: string }): Promise<void> {
  const config = loadControlPlaneConfig(options.config, process.env, { listen: options.listen });
  const logger = createLogger(config.logLevel);
  await serveUntilSignal({
    name: "control plane",
    logger,
    start: () => startControlPlane(config, { logger }),
  });
}
