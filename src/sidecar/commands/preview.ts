import { Command } from "commander";
import { loadAgentConfig, type AgentConfig } from "../config.ts";
import { EgressError } from "../../errors.ts";
import { destinations } from "../egress/destinations.ts";
import { Outbox } from "../storage/outbox.ts";
import { streamPolicies } from "../shippers/policies.ts";
import { table } from "../../cli-table.ts";
import { userAgent } from "../../protocol/instance.ts";
import { EGRESS_VERSION } from "../../version.ts";
import { readInstanceId } from "../storage/instance-id.ts";

const REDACTED = "[REDACTED]";

export interface PreviewedPayload {
  stream: string;
  url: string;
  records: number;
  /** The headers that say who sends (every request carries them); the instance id is null before the first start. */
  headers: { "User-Agent": string; "X-Egress-Instance-Id": string | null };
  /** The body as it would be sent, the license key replaced; null when nothing of the stream is queued. */
  payload: unknown;
}

/** The outbox read-only, or none when the sidecar has not run with this dataDir yet (nothing queued). */
function openOutbox(dataDir: string): Outbox | undefined {
  try {
    return new Outbox(dataDir, { readonly: true });
  } catch (err) {
    if (err instanceof EgressError && err.code === "EGRESS_ERR_NO_OUTBOX") return undefined;
    throw err;
  }
}

/** The next request of each enabled stream, built by the stream's own policy from what is queued. */
export function nextPayloads(config: AgentConfig): PreviewedPayload[] {
  const policies = streamPolicies({ ...config, licenseKey: REDACTED });
  const urls = new Map(destinations(config).map((destination) => [destination.stream, destination.url]));
  const outbox = policies.length > 0 ? openOutbox(config.dataDir) : undefined;
  const headers = {
    "User-Agent": userAgent(EGRESS_VERSION, config.offline.enabled ? "offline" : "online"),
    "X-Egress-Instance-Id": readInstanceId(config.dataDir),
  };
  try {
    const previews: PreviewedPayload[] = [];
    if (urls.has("license")) {
      previews.push({ stream: "license", url: urls.get("license")!, records: 1, headers, payload: { license: REDACTED } });
    }
    for (const policy of policies) {
      const records = outbox?.peek(policy.stream, policy.batchSize, policy.batchBytes) ?? [];
      previews.push({
        stream: policy.stream,
        url: urls.get(policy.stream)!,
        records: records.length,
        headers,
        payload: records.length > 0 ? JSON.parse(policy.buildPayload(records).toString()) : null,
      });
    }
    return previews;
  } finally {
    outbox?.close();
  }
}

async function preview(options: { config?: string; destinations?: boolean; json?: boolean }): Promise<void> {
  // Preview never sends and shows the key redacted: it runs without one, so a key need not be handed out to look.
  const config = loadAgentConfig({ file: options.config, env: process.env, keyOptional: true });
  const out = (text: string): void => {
    process.stdout.write(`${text}\n`);
  };
  if (options.destinations) {
    const list = destinations(config);
    if (options.json) return out(JSON.stringify(list, null, 2));
    if (list.length === 0) return out("offline mode: no destination; nothing leaves this host");
    out(table([["STREAM", "DESTINATION", "VIA"], ...list.map((d) => [d.stream, `POST ${d.url}`, d.proxy ?? "direct"])]));
    return;
  }
  const payloads = nextPayloads(config);
  if (options.json) return out(JSON.stringify(payloads, null, 2));
  if (config.offline.enabled) return out("offline mode: nothing is ever sent; billing records stay local for `egress-agent export`");
  for (const { stream, url, records, headers, payload } of payloads) {
    out(
      `# ${stream}: POST ${url}${stream === "license" ? "" : ` (${records} record${records === 1 ? "" : "s"} queued for the next request)`}`,
    );
    out(`User-Agent: ${headers["User-Agent"]}`);
    out(`X-Egress-Instance-Id: ${headers["X-Egress-Instance-Id"] ?? "(none yet: made at the sidecar's first start)"}`);
    out(payload === null ? "(nothing queued)" : JSON.stringify(payload, null, 2));
    out("");
  }
}

export function previewCommand(): Command {
  return new Command("preview")
    .description("print the exact next payload of each enabled stream (license key redacted); sends nothing")
    .option("--config <file>", "sidecar YAML config (default: env EGRESS_CONFIG, else embedded defaults)")
    .option("--destinations", "list every destination this config can contact, and the proxy used")
    .option("--json", "print JSON")
    .action(preview);
}
