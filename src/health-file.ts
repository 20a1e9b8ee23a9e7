import { readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";
import { Command } from "commander";
import type { Logger } from "pino";

// One image runs four services (sidecar, beacon, agent server, control plane) on ports and paths of their own, so
// its HEALTHCHECK cannot name one URL: each serving command writes its health URL to EGRESS_HEALTH_FILE (the image
// sets it) once it listens, and `egress-agent healthcheck` probes whatever URL is there.

/**
 * Records the URL `healthcheck` probes, when EGRESS_HEALTH_FILE names a file (written whole, by rename). A file that
 * cannot be written (a read-only filesystem, a directory of another user) stops nothing: the service serves on, and
 * says once that the health check will not find it.
 */
export function announceHealth(baseUrl: string, path: string, logger: Pick<Logger, "warn">, env: NodeJS.ProcessEnv = process.env): void {
  const file = env.EGRESS_HEALTH_FILE;
  if (!file) return;
  // A wildcard listen address is reached on loopback.
  const url = new URL(path, baseUrl.replace("//0.0.0.0:", "//127.0.0.1:").replace("//[::]:", "//[::1]:"));
  try {
    // A temporary file left by a killed process of another UID (a rescheduled pod) is replaced, not written into.
    rmSync(`${file}.tmp`, { force: true });
    writeFileSync(`${file}.tmp`, `${url.href}\n`);
    renameSync(`${file}.tmp`, file);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
    logger.warn(
      { healthFile: file, code },
      "EGRESS_HEALTH_FILE cannot be written: `egress-agent healthcheck` (the image's HEALTHCHECK) will not find this service; " +
        "point EGRESS_HEALTH_FILE at a writable path (the image's is on the /data volume), or unset it where nothing runs the check",
    );
  }
}

/** 0 when the announced URL answers 2xx within `timeoutMs`, else 1 with the reason on stderr. */
export async function healthcheck(env: NodeJS.ProcessEnv = process.env, timeoutMs = 4_000): Promise<number> {
  const file = env.EGRESS_HEALTH_FILE;
  if (!file) return fail("EGRESS_HEALTH_FILE is not set: no serving command announced a health URL");
  let url: string;
  try {
    url = readFileSync(file, "utf8").trim();
  } catch {
    return fail(`nothing listens yet (${file} is not there; a service that could not write it says so in its log)`);
  }
  const status = await new Promise<number | string>((resolve) => {
    const send = url.startsWith("https:") ? httpsRequest : httpRequest;
    // Loopback, the process's own certificate: liveness, not identity, is what this checks.
    const request = send(url, { timeout: timeoutMs, rejectUnauthorized: false }, (response) => {
      // The status is all it needs: the body is never read, and the connection goes (an endless body keeps nothing).
      resolve(response.statusCode ?? 0);
      response.destroy();
    });
    request.on("timeout", () => request.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    request.on("error", (err) => resolve(err.message));
    request.end();
  });
  if (typeof status === "number" && status >= 200 && status < 300) return 0;
  return fail(`${url}: ${typeof status === "number" ? `answered ${status}` : status}`);
}

function fail(reason: string): number {
  process.stderr.write(`egress-agent healthcheck: ${reason}\n`);
  return 1;
}

export function healthcheckCommand(): Command {
  return new Command("healthcheck")
    .description("exit 0 if the service this container runs answers its health check (the image's HEALTHCHECK)")
    .action(async () => {
      process.exitCode = await healthcheck();
    });
}
