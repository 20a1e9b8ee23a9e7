import { randomUUID } from "node:crypto";
import { join } from "node:path";
import pino from "pino";
import { A2aConversation, answerText } from "./a2a/client.ts";
import { BeaconStore } from "./beacon/store.ts";
import { createLogger } from "./log.ts";

const EXAMPLE = new URL("../examples/agent-server/graph.json", import.meta.url).pathname;

function beaconTraces(beaconDataDir: string): number {
  const store = new BeaconStore(beaconDataDir, { readonly: true });
  try {
    return store.traceReport().reduce((sum, row) => sum + row.traces, 0);
  } finally {
    store.close();
  }
}

/**
 * The demo's last leg, the whole platform in one line: an A2A conversation with the example agent server, whose
 * runs reach the beacon as billing through the sidecar.
 */
export async function demoAgentServer(options: {
  dir: string;
  sidecarUrl: string;
  beaconDataDir: string;
  organizationId: string;
  out: (line?: string) => void;
  delivered: () => Promise<unknown>;
}): Promise<void> {
  const { out } = options;
  // Loaded here: LangGraph and the checkpointer are for the agent server alone.
  const { loadGraphConfig } = await import("./a2a/graph-config.ts");
  const { startAgentServer } = await import("./a2a/server.ts");
  const server = await startAgentServer({
    graphs: await loadGraphConfig(EXAMPLE),
    listen: { host: "127.0.0.1", port: 0 },
    dataDir: join(options.dir, "agent-server"),
    sidecar: { url: options.sidecarUrl, tenantId: randomUUID(), organizationId: options.organizationId, intervalMs: 60_000 },
    logger: createLogger("info", pino.destination(join(options.dir, "agent-server.log"))),
  });
  const before = beaconTraces(options.beaconDataDir);
  out(`A2A client -> agent server ${server.url} (examples/agent-server, assistant "notes"):`);
  const conversation = new A2aConversation({ baseUrl: server.url, assistantId: "notes" });
  const texts = ["buy milk", "call Ada at five", "recall"];
  try {
    for (const text of texts) out(`  ${JSON.stringify(text).padEnd(20)} -> ${answerText(await conversation.send(text))}`);
  } finally {
    // Stopping reports the runs counted so far to the sidecar.
    await server.close();
  }
  out(`  one conversation (contextId ${conversation.contextId}), ${texts.length} tasks`);
  await options.delivered();
  out(
    `agent server -> sidecar -> beacon: ${texts.length} runs as a trace transaction; the beacon's total went from ${before} to ${beaconTraces(options.beaconDataDir)} traces`,
  );
}
