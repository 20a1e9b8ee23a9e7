import type { Logger } from "pino";
import { ApiKeys } from "../../http/api-keys.ts";
import { defaultHttpLimits } from "../../http/limits.ts";
import { HttpServer } from "../../http/server.ts";
import type { Closers } from "../../closers.ts";
import type { ListenAddress } from "../../config/units.ts";
import { AdminAuth, type AdminDeps } from "./deps.ts";
import { registerConsoleRoutes } from "../console/routes.ts";
import { registerAdminRoutes } from "./routes.ts";

/** How long one admin request, its body included, may take to arrive: a 512 MiB import at under 1 MB/s. */
const ADMIN_REQUEST_TIMEOUT_MS = 10 * 60_000;

/**
 * The vendor's admin listener, on `admin.listen` and nowhere else, when there is an admin key to open it (else it
 * stays closed: the beacon serves its sidecars all the same). Registers its closer on `closers`; resolves with its
 * URL, or undefined when it stays closed.
 */
export async function startAdminListener(
  deps: Omit<AdminDeps, "auth">,
  options: { logger: Logger; closers: Closers; register?: (app: HttpServer, deps: AdminDeps) => void },
): Promise<string | undefined> {
  const { config } = deps;
  const { logger, closers } = options;
  if (config.admin.listen === "") return undefined;
  const keys = new ApiKeys(config.admin.apiKeys);
  if (keys.size === 0) {
    logger.info("admin listener closed: no admin key (admin.apiKeys, env BEACON_ADMIN_API_KEY)");
    return undefined;
  }
  const server = new HttpServer({
    logger: logger.child({ listener: "admin" }),
    bodyLimit: { bytes: config.bodyLimit, key: "bodyLimit" },
    // An offline import's file may take minutes to arrive through a port-forward (its route bounds it otherwise).
    limits: { ...defaultHttpLimits, requestTimeoutMs: ADMIN_REQUEST_TIMEOUT_MS },
    logRequests: true,
  });
  const all = { ...deps, auth: new AdminAuth(keys) };
  registerAdminRoutes(server, all);
  registerConsoleRoutes(server, all);
  options.register?.(server, all);
  closers.add(() => server.close());
  return server.listen(config.admin.listen as ListenAddress);
}
