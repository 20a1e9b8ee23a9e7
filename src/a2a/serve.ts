import type * as z from "zod";
import { createLogger } from "../log.ts";
import { serveUntilSignal } from "../serve-until-signal.ts";
import type { ServeSettings } from "./cli.ts";
import { loadGraphConfig } from "./graph-config.ts";
import { startAgentServer } from "./server.ts";

/** `a2a serve`: loads graph.json, serves until SIGTERM or SIGINT, then stops (tasks finish or are canceled). */
export async function runAgentServer(settings: z.output<typeof ServeSettings>): Promise<void> {
  const logger = createLogger(settings.logLevel);
  const graphs = await loadGraphConfig(settings.config);
  const start = () =>
    startAgentServer({
      graphs,
      listen: settings.listen,
      dataDir: settings.dataDir,
      databaseUri: settings.DATABASE_URI,
      databaseSchema: settings.DATABASE_SCHEMA,
      replicaTimeoutMs: settings.replicaTimeout,
      streamHeartbeatMs: settings.streamHeartbeat,
      publicUrl: settings.publicUrl,
      sidecar: settings.sidecarUrl
        ? {
            url: settings.sidecarUrl,
            tenantId: settings.tenantId!,
            organizationId: settings.organizationId!,
            intervalMs: settings.reportInterval,
          }
        : undefined,
      tracing: settings.PLATFORM_API_KEY
        ? {
            endpoint: settings.PLATFORM_ENDPOINT,
            apiKey: settings.PLATFORM_API_KEY,
            project: settings.PLATFORM_PROJECT,
            exportIntervalMs: settings.traceExportInterval,
          }
        : undefined,
      logger,
    });

  // Running tasks get 10 s of the deadline to finish, then are canceled (server.close).
  await serveUntilSignal({ name: "agent server", logger, start });
}
