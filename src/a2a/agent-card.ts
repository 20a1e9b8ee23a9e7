import packageJson from "../../package.json" with { type: "json" };
import { A2A_PROTOCOL_VERSION, A2A_SERVED_VERSIONS, type AgentCard } from "../protocol/a2a.ts";
import type { Assistant } from "./graph-config.ts";
import { HISTORY_SCOPE_EXTENSION } from "./task-history.ts";

/**
 * The agent card of one assistant, its endpoint under `baseUrl` named by the id the caller used: a v1.0 card
 * (supportedInterfaces) that keeps v0.3's fields, so either version's client reads it.
 */
export function agentCard(assistant: Assistant, assistantId: string, baseUrl: string): AgentCard {
  const url = `${baseUrl}/a2a/${encodeURIComponent(assistantId)}`;
  return {
    protocolVersion: A2A_PROTOCOL_VERSION,
    name: assistant.graphId,
    description: assistant.description,
    // One endpoint, both versions: a v1.0 client picks "1.0", a v0.3 client reads `url` below.
    supportedInterfaces: A2A_SERVED_VERSIONS.map((protocolVersion) => ({ url, protocolBinding: "JSONRPC", protocolVersion })),
    url,
    preferredTransport: "JSONRPC",
    version: packageJson.version,
    capabilities: {
      streaming: true,
      pushNotifications: false,
      stateTransitionHistory: false,
      extendedAgentCard: false,
      extensions: [HISTORY_SCOPE_EXTENSION],
    },
    defaultInputModes: ["text/plain", "application/json"],
    defaultOutputModes: ["text/plain"],
    skills: [{ id: assistant.graphId, name: assistant.graphId, description: assistant.description, tags: ["langgraph", "assistant"] }],
  };
}
