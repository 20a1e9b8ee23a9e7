import type { Logger } from "pino";

/** Under Kubernetes' default 30 s termination grace, so a stop that hangs ends with our message, not a SIGKILL. */
export const STOP_DEADLINE_MS = 25_000;

/**
 * How every serving command runs and ends: starts the service, waits for SIGTERM or SIGINT, then stops it. The
 * signal handlers go in before the start, so a supervisor's SIGTERM while the service is still starting (or just
 * after it logged "listening") is a clean stop once the start completes, never the default action that kills the
 * process mid-write. A stop that takes longer than the deadline exits 1 with a message instead of hanging; what
 * each service keeps across that (the sidecar's outbox, the agent server's tasks) is its own stop's business.
 */
export async function serveUntilSignal(service: {
  name: string;
  logger: Logger;
  start: () => Promise<{ close: () => Promise<void> }>;
  deadlineMs?: number;
}): Promise<void> {
  const { name, logger, deadlineMs = STOP_DEADLINE_MS } = service;
  let onSignal: (signal: NodeJS.Signals) => void = () => {};
  const signalled = new Promise<NodeJS.Signals>((resolve) => (onSignal = resolve));
  process.once("SIGTERM", onSignal);
  process.once("SIGINT", onSignal);
  let started: { close: () => Promise<void> };
  try {
    started = await service.start();
  } catch (err) {
    process.removeListener("SIGTERM", onSignal);
    process.removeListener("SIGINT", onSignal);
    throw err;
  }
  const signal = await signalled;
  logger.info({ signal }, `${name} stopping`);
  const deadline = setTimeout(() => {
    logger.error(`${name}: stop took over ${deadlineMs / 1000} s; exiting`);
    process.exit(1);
  }, deadlineMs);
  deadline.unref();
  await started.close();
  logger.info(`${name} stopped`);
}
