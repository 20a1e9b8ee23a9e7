/** Resolves with the signal when the process gets SIGTERM or SIGINT: how every serving command stops. */
export function untilSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    process.once("SIGTERM", resolve);
    process.once("SIGINT", resolve);
  });
}
