import { Command } from "commander";
import * as z from "zod";
import { parseConfig } from "../config/load.ts";
import { Duration, ListenAddress } from "../config/units.ts";
import { LogLevel } from "../log.ts";
import { Uuid } from "../protocol/common.ts";

const DEFAULT_TRACING_ENDPOINT = "https://api.platform.example.invalid";

/** `a2a serve` settings: flags, then the platform's environment variables; parsed once, here. */
export const ServeSettings = z
  .object({
    config: z.string().min(1),
    listen: ListenAddress,
    dataDir: z.string().min(1),
    publicUrl: z.url({ message: "must be a URL" }).optional(),
    sidecarUrl: z.url({ message: "must be a URL, e.g. http://127.0.0.1:4318" }).optional(),
    tenantId: Uuid.optional(),
    organizationId: Uuid.optional(),
    reportInterval: Duration,
    replicaTimeout: Duration,
    streamHeartbeat: Duration,
    traceExportInterval: Duration,
    logLevel: LogLevel,
    PLATFORM_API_KEY: z.string().optional(),
    PLATFORM_PROJECT: z.string().min(1).default("default"),
    PLATFORM_ENDPOINT: z.url({ message: "must be a URL" }).default(DEFAULT_TRACING_ENDPOINT),
    // The LangGraph convention: conversations (the official PostgreSQL checkpointer) and tasks in PostgreSQL.
    DATABASE_URI: z
      .string()
      .regex(/^postgres(ql)?:\/\//, { message: "must be a postgres:// URL" })
      .optional(),
    // The schema every table of this agent server goes in: one per deployment when several share a database.
    DATABASE_SCHEMA: z
      .string()
      .regex(/^[a-z_][a-z0-9_]{0,62}$/, { message: "must be a schema name: lower-case letters, digits and '_', at most 63" })
      .default("public"),
  })
  .superRefine((settings, ctx) => {
    if (settings.sidecarUrl === undefined) return;
    // Billing records name who ran: no silent default for either.
    if (!settings.tenantId)
      ctx.addIssue({ code: "custom", path: ["tenantId"], message: "--tenant-id (or PLATFORM_TENANT_ID) is required with --sidecar-url" });
    if (!settings.organizationId)
      ctx.addIssue({
        code: "custom",
        path: ["organizationId"],
        message: "--organization-id (or PLATFORM_ORGANIZATION_ID) is required with --sidecar-url",
      });
  });

interface ServeFlags {
  config: string;
  listen: string;
  dataDir: string;
  publicUrl?: string;
  sidecarUrl?: string;
  tenantId?: string;
  organizationId?: string;
  reportInterval: string;
  replicaTimeout: string;
  streamHeartbeat: string;
  traceExportInterval: string;
  logLevel: string;
}

async function serve(flags: ServeFlags): Promise<void> {
  const env = process.env;
  const settings = parseConfig(
    ServeSettings,
    {
      ...flags,
      sidecarUrl: flags.sidecarUrl ?? env.EGRESS_SIDECAR_URL,
      tenantId: flags.tenantId ?? env.PLATFORM_TENANT_ID,
      organizationId: flags.organizationId ?? env.PLATFORM_ORGANIZATION_ID,
      PLATFORM_API_KEY: env.PLATFORM_API_KEY || undefined,
      PLATFORM_PROJECT: env.PLATFORM_PROJECT || undefined,
      PLATFORM_ENDPOINT: env.PLATFORM_ENDPOINT || undefined,
      DATABASE_URI: env.DATABASE_URI || undefined,
      DATABASE_SCHEMA: env.DATABASE_SCHEMA || undefined,
    },
    "a2a serve",
  );
  // Loaded on use: the sidecar's own commands never pay for LangGraph and the checkpointer.
  const { runAgentServer } = await import("./serve.ts");
  await runAgentServer(settings);
}

/**
 * `a2a check`: loads graph.json and every graph module it names, prints the assistants as one JSON line. The local
 * deployer's build step runs it as a child process, so the control plane never imports (and caches) a user's graphs.
 */
async function check(flags: { config: string }): Promise<void> {
  const { loadGraphConfig } = await import("./graph-config.ts");
  const { assistants } = await loadGraphConfig(flags.config);
  const graphs = assistants.map((a) => ({ graph_id: a.graphId, assistant_id: a.uuid, has_messages: a.hasMessages }));
  await new Promise<void>((resolve) => process.stdout.write(`${JSON.stringify({ graphs })}\n`, () => resolve()));
  // A graph module may hold the event loop open (a client, a timer it started on import): the check is done.
  process.exit(0);
}

async function send(
  url: string,
  text: string,
  flags: { assistant: string; stream?: boolean; context?: string; task?: string; threadId?: string; data?: string; json?: boolean },
): Promise<void> {
  const { sendCommand } = await import("./send.ts");
  await sendCommand(url, text, flags);
}

export function a2aCommand(): Command {
  const a2a = new Command("a2a").description("the agent server's A2A endpoint for LangGraph graphs, and an A2A client");
  a2a
    .command("serve")
    .description("serve each graph of graph.json as an A2A assistant (JSON-RPC 2.0 at POST /a2a/{assistant_id})")
    .option("--config <graph.json>", "the platform's graph.json", "graph.json")
    .option("--listen <host:port>", "address to listen on", "127.0.0.1:2024")
    .option("--data-dir <dir>", "threads.db (conversation state) and tasks.db live here", "./data/agent-server")
    .option("--public-url <url>", "base URL the agent cards name (default: the Host the caller used)")
    .option("--sidecar-url <url>", "report runs and request metrics to this egress sidecar (env EGRESS_SIDECAR_URL)")
    .option("--tenant-id <uuid>", "tenant of the reported runs (env PLATFORM_TENANT_ID)")
    .option("--organization-id <uuid>", "organization of the reported runs (env PLATFORM_ORGANIZATION_ID)")
    .option("--report-interval <duration>", "runs are counted per interval and reported when it closes", "60s")
    .option(
      "--replica-timeout <duration>",
      "with DATABASE_URI: a replica silent this long is taken for dead and its unfinished tasks fail",
      "30s",
    )
    .option("--stream-heartbeat <duration>", "a quiet message/stream or tasks/resubscribe stream gets a comment line this often", "15s")
    .option("--trace-export-interval <duration>", "how often spans are exported when tracing is on", "5s")
    .option("--log-level <level>", "fatal, error, warn, info, debug, trace or silent", "info")
    .addHelpText(
      "after",
      "\nTracing is on when PLATFORM_API_KEY is set: spans go to PLATFORM_ENDPOINT/otel/v1/traces (project PLATFORM_PROJECT).",
    )
    .action(serve);
  a2a
    .command("check")
    .description("load graph.json and every graph it names, print the assistants as JSON (exit 2 when one fails)")
    .option("--config <graph.json>", "the platform's graph.json", "graph.json")
    .action(check);
  a2a
    .command("send")
    .description("send a message to an A2A assistant and print its answer")
    .argument("<url>", "the agent server's base URL, e.g. http://127.0.0.1:2024")
    .argument("<text>", "the message text")
    .requiredOption("--assistant <id>", "assistant (graph) id")
    .option("--stream", "use message/stream and print each event as it arrives (one JSON line each)")
    .option("--context <contextId>", "continue this conversation (the contextId of an earlier answer)")
    .option(
      "--task <taskId>",
      "the taskId of the last answer, as the platform's client sends it: a task waiting for input resumes, one that ended is followed by a new task",
    )
    .option("--thread-id <id>", "trace thread id of a first message (default: random)")
    .option("--data <json>", "also send this JSON object as a data part")
    .option("--json", "print the whole task as JSON")
    .action(send);
  return a2a;
}
