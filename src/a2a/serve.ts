import type * as z from "zod";
import { createLogger } from "../log.ts";
import { untilSignal } from "../signals.ts";
import type { ServeSettings } from "./cli.ts";
import { loadGraphConfig } from "./graph-config.ts";
import { startAgentServer } from "./server.ts";

/** Stopping never takes longer: running tasks get most of it, then are canceled. */
const STOP_DEADLINE_MS = 20_000;

/** `a2a serve`: loads graph.json, serves until SIGTERM or SIGINT, then stops (tasks finish or are canceled). */
export async function runAgentServer(settings: z.output<typeof ServeSettings>): Promise<void> {
  const logger = createLogger(settings.logLevel);
  const graphs = await loadGraphConfig(settings.config);
  const server = await startAgentServer({
    graphs,
    listen: settings.listen,
    dataDir: settings.dataDir,
    publicUrl: settings.publicUrl,
    sidecar: settings.sidecarUrl
      ? { url: settings.sidecarUrl, tenantId: settings.tenantId!, organizationId: settings.organizationId!, intervalMs: settings.reportInterval }
      : undefined,
    tracing: settings.PLATFORM_API_KEY
      ? { endpoint: settings.PLATFORM_ENDPOINT, apiKey: settings.PLATFORM_API_KEY, project: settings.PLATFORM_PROJECT, exportIntervalMs: settings.traceExportInterval }
      : undefined,
    logger,
  });
  const signal = await untilSignal();
  logger.info({ signal }, "agent server stopping");
  const deadline = setTimeout(() => {
    logger.error(`stop took over ${STOP_DEADLINE_MS / 1000} s; exiting`);
    process.exit(1);
  }, STOP_DEADLINE_MS);
  deadline.unref();
  await server.close();
  logger.info("agent server stopped");
}
