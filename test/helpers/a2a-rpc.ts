import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";

// Raw A2A v0.3 JSON-RPC against a real agent server, for tests that drive replicas without an SDK client.

/** `method` on the assistant's endpoint at `url`: its result, the call failing the test on a JSON-RPC error. */
export async function a2aResult(url: string, assistant: string, method: string, params: unknown): Promise<any> {
  const response = await fetch(`${url}/a2a/${assistant}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: randomUUID(), method, params }),
  });
  const body = (await response.json()) as { result?: any; error?: { code: number; message: string } };
  assert.equal(body.error, undefined, JSON.stringify(body.error));
  return body.result;
}

/** message/send params of one user text message; `extra` goes into the message (a contextId, a taskId). */
export const userMessage = (text: string, extra: Record<string, unknown> = {}) => ({
  message: { kind: "message", role: "user", messageId: randomUUID(), parts: [{ kind: "text", text }], ...extra },
});
