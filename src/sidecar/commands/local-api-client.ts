import type { Command } from "commander";
import type { z } from "zod";
import { isRecord } from "../../protocol/common.ts";
import { readYamlFile } from "../../config/load.ts";
import { ListenAddress } from "../../config/units.ts";
import { ConfigError, EgressError } from "../../errors.ts";
import { MiB, readCappedText } from "../../http/capped-answer.ts";
import { describeRemoteError, mediaType, parseAnswerText } from "../../remote-answer.ts";

export const DEFAULT_LOCAL_URL = "http://127.0.0.1:4318";

/** `--url` and `--config` as status and audit take them. */
export function withLocalUrlOptions(command: Command): Command {
  return command
    .option("--url <url>", `the sidecar's local API (default: from --config or EGRESS_CONFIG, else ${DEFAULT_LOCAL_URL})`)
    .option("--config <file>", "the sidecar's YAML, to find its local API from `listen` (default: env EGRESS_CONFIG)");
}

/**
 * The local API a command talks to: `--url`, else the `listen` of the sidecar's own config (`--config`, else env
 * EGRESS_CONFIG), as `start` reads it; else the default. A wildcard listen address is reached on loopback.
 */
export function localUrl(options: { url?: string; config?: string }, env: NodeJS.ProcessEnv = process.env): string {
  if (options.url) return options.url;
  const file = options.config || env.EGRESS_CONFIG;
  const raw = readYamlFile(file);
  const written = isRecord(raw) ? raw.listen : undefined;
  if (written === undefined) return DEFAULT_LOCAL_URL;
  const listen = ListenAddress.safeParse(written);
  if (!listen.success) throw new ConfigError(file!, ["listen: must be HOST:PORT, e.g. 127.0.0.1:8080 or [::1]:8080"]);
  const { host, port } = listen.data;
  const reachable = host === "0.0.0.0" ? "127.0.0.1" : host === "::" ? "::1" : host;
  return `http://${reachable.includes(":") ? `[${reachable}]` : reachable}:${port}`;
}

/** The most of one local API answer read: the largest is an audit page of at most 1000 entries, well under 2 MiB. */
export const LOCAL_ANSWER_CAP = 16 * MiB;

/** GETs a sidecar's local API route and parses the answer with its schema; a clear error when it is not there. */
export async function getLocal<S extends z.ZodType>(baseUrl: string, path: string, schema: S): Promise<z.output<S>> {
  const url = `${baseUrl.replace(/\/+$/, "")}${path}`;
  let response: Response;
  try {
    response = await fetch(url, { redirect: "manual", signal: AbortSignal.timeout(10_000) });
  } catch (err) {
    const cause = (err as { cause?: { code?: string } }).cause?.code ?? (err as Error).name;
    throw new EgressError("EGRESS_ERR_SIDECAR_UNREACHABLE", `cannot reach the sidecar at ${baseUrl} (${cause}): is it running? (--url)`);
  }
  const text = await readCappedText(response, LOCAL_ANSWER_CAP, url);
  if (response.status !== 200) {
    const answer = { status: response.status, body: parseAnswerText(text), contentType: mediaType(response) };
    throw new EgressError("EGRESS_ERR_SIDECAR_ANSWER", `${url} answered ${describeRemoteError(answer)}`);
  }
  return schema.parse(JSON.parse(text));
}
