import { readFileSync } from "node:fs";
import { Command } from "commander";
import * as z from "zod";
import { table } from "../../cli-table.ts";
import { ConfigError, EgressError } from "../../errors.ts";
import { MiB } from "../../http/capped-answer.ts";
import { INSTANCE_ID_PATTERN } from "../../protocol/instance.ts";
import { keyedJsonCall } from "../../http/keyed-call.ts";
import { ADMIN_INSTANCES_PATH } from "./instances-routes.ts";

/** The admin listener's default address (`admin.listen`). */
export const DEFAULT_ADMIN_URL = "http://127.0.0.1:8081";
/** The largest admin answer read: a list of some ten thousand instances. */
const ADMIN_ANSWER_CAP = 16 * MiB;

/** The answer's schema: the client checks what it prints. */
export const InstancesAnswer = z.object({
  instances: z.array(
    z.object({
      instanceId: z.string().regex(INSTANCE_ID_PATTERN),
      licenseId: z.string(),
      version: z.string().nullable(),
      mode: z.enum(["online", "offline"]),
      firstSeenAt: z.string(),
      lastSeenAt: z.string(),
      state: z.enum(["active", "silent"]),
    }),
  ),
  /** Absent from a beacon before paging. */
  total: z.number().int().nonnegative().optional(),
});
export type InstancesAnswer = z.output<typeof InstancesAnswer>;

/** The admin key: `--api-key-file` (a mounted Secret), else env BEACON_ADMIN_API_KEY. Never from a flag's value. */
export function adminApiKey(options: { apiKeyFile?: string }, env: NodeJS.ProcessEnv = process.env): string {
  if (options.apiKeyFile) {
    let text: string;
    try {
      text = readFileSync(options.apiKeyFile, "utf8");
    } catch (err) {
      throw new ConfigError("--api-key-file", [
        `--api-key-file: cannot read ${options.apiKeyFile} (${(err as NodeJS.ErrnoException).code})`,
      ]);
    }
    const key = text.trim();
    if (key) return key;
    throw new ConfigError("--api-key-file", [`--api-key-file: ${options.apiKeyFile} is empty`]);
  }
  if (env.BEACON_ADMIN_API_KEY) return env.BEACON_ADMIN_API_KEY;
  throw new ConfigError("admin key", ["no admin key: set BEACON_ADMIN_API_KEY or give --api-key-file"]);
}

/** GETs an admin route with `X-Api-Key`; its answer parsed by `schema`, or a clear error naming the URL and the answer. */
export async function getAdmin<S extends z.ZodType>(baseUrl: string, path: string, apiKey: string, schema: S): Promise<z.output<S>> {
  const url = baseUrl.replace(/\/+$/, "");
  const call = { baseUrl: url, apiKey, method: "GET", path, timeoutMs: 10_000, capBytes: ADMIN_ANSWER_CAP };
  const parsed = await keyedJsonCall(call, (failure) =>
    failure.kind === "unreachable"
      ? new EgressError(
          "EGRESS_ERR_ADMIN_UNREACHABLE",
          `cannot reach the beacon's admin API at ${baseUrl} (${failure.cause}): is admin.listen set? (--url)`,
        )
      : new EgressError(
          "EGRESS_ERR_ADMIN_ANSWER",
          `${url}${path} answered ${failure.kind === "refused" ? failure.said : failure.kind === "unreadable" ? failure.reason : `${failure.status} with something that is not JSON`}`,
        ),
  );
  return schema.parse(parsed);
}

export function listInstances(options: { url: string; apiKey: string; license?: string }): Promise<InstancesAnswer> {
  const query = options.license ? `?license=${encodeURIComponent(options.license)}` : "";
  return getAdmin(options.url, `${ADMIN_INSTANCES_PATH}${query}`, options.apiKey, InstancesAnswer);
}

/** The table `beacon instances` prints. */
export function formatInstances({ instances, total }: InstancesAnswer): string {
  if (instances.length === 0) return "no instances seen yet\n";
  const rows = instances.map((i) => [i.instanceId, i.licenseId, i.version ?? "-", i.mode, i.state, i.firstSeenAt, i.lastSeenAt]);
  const more =
    total !== undefined && total > instances.length
      ? `${instances.length} of ${total} instances, the most recently seen (GET ${ADMIN_INSTANCES_PATH}?limit=&offset= pages through them)\n`
      : "";
  return `${table([["INSTANCE", "LICENSE", "VERSION", "MODE", "STATE", "FIRST SEEN", "LAST SEEN"], ...rows])}\n${more}`;
}

async function instances(options: { url: string; apiKeyFile?: string; license?: string; json?: boolean }): Promise<void> {
  const answer = await listInstances({ url: options.url, apiKey: adminApiKey(options), license: options.license });
  process.stdout.write(options.json ? `${JSON.stringify(answer, null, 2)}\n` : formatInstances(answer));
}

/** `egress-agent beacon instances`. */
export function instancesCommand(): Command {
  return new Command("instances")
    .description("the sidecar instances the beacon has heard from, per license: version, mode, first and last seen, active or silent")
    .option("--url <url>", "the beacon's admin API (admin.listen)", DEFAULT_ADMIN_URL)
    .option("--api-key-file <file>", "a file holding the admin key (default: env BEACON_ADMIN_API_KEY)")
    .option("--license <id>", "only this license's instances")
    .option("--json", "print JSON instead of a table")
    .action(instances);
}
