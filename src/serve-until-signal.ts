import type { Logger } from "pino";

/** Under Kubernetes' default 30 s termination grace, so a stop that hangs ends with our message, not a SIGKILL. */
export const STOP_DEADLINE_MS = 25_000;

/**
 * How every serving command ends: waits for SIGTERM or SIGINT, then stops the service. A stop that takes longer
 * than the deadline exits 1 with a message instead of hanging; what each service keeps across that (the
 * sidecar's outbox, the agent server's tasks) is its own stop's business.
 */
export async function serveUntilSignal(service: {
  name: string;
  logger: Logger;
  stop: () => Promise<void>;
  deadlineMs?: number;
}): Promise<void> {
  const { name, logger, deadlineMs = STOP_DEADLINE_MS } = service;
  const signal = await new Promise<NodeJS.Signals>((resolve) => {
    process.once("SIGTERM", resolve);
    process.once("SIGINT", resolve);
  });
  logger.info({ signal }, `${name} stopping`);
  const deadline = setTimeout(() => {
    logger.error(`${name}: stop took over ${deadlineMs / 1000} s; exiting`);
    process.exit(1);
  }, deadlineMs);
  deadline.unref();
  await service.stop();
  logger.info(`${name} stopped`);
}
