import type { FastifyInstance } from "fastify";
import type { ListenAddress } from "../config/units.ts";

/** Starts listening and returns the base URL actually bound (port 0 asks the OS for a free port). */
export async function listen(app: FastifyInstance, address: ListenAddress, scheme: "http" | "https" = "http"): Promise<string> {
  await app.listen({ host: address.host, port: address.port });
  const bound = app.server.address();
  const port = typeof bound === "object" && bound ? bound.port : address.port;
  const host = address.host.includes(":") ? `[${address.host}]` : address.host;
  return `${scheme}://${host}:${port}`;
}
