import packageJson from "../../package.json" with { type: "json" };
import { A2A_PROTOCOL_VERSION, type AgentCard } from "../protocol/a2a.ts";
import type { Assistant } from "./graph-config.ts";

/** The agent card of one assistant, its endpoint under `baseUrl` named by the id the caller used. */
export function agentCard(assistant: Assistant, assistantId: string, baseUrl: string): AgentCard {
  return {
    protocolVersion: A2A_PROTOCOL_VERSION,
    name: assistant.graphId,
    description: assistant.description,
    url: `${baseUrl}/a2a/${encodeURIComponent(assistantId)}`,
    preferredTransport: "JSONRPC",
    version: packageJson.version,
    capabilities: { streaming: true, pushNotifications: false, stateTransitionHistory: false },
    defaultInputModes: ["text/plain", "application/json"],
    defaultOutputModes: ["text/plain"],
    skills: [{ id: assistant.graphId, name: assistant.graphId, description: assistant.description, tags: ["langgraph", "assistant"] }],
  };
}
