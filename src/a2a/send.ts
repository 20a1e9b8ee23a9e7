import { ConfigError, EgressError } from "../errors.ts";
import { TERMINAL_STATES, type Task } from "../protocol/a2a.ts";
import { A2aConversation, answerText } from "./client.ts";

interface SendFlags {
  assistant: string;
  stream?: boolean;
  context?: string;
  task?: string;
  threadId?: string;
  data?: string;
  json?: boolean;
}

function dataPart(json: string | undefined): Record<string, unknown> | undefined {
  if (json === undefined) return undefined;
  let data: unknown;
  try {
    data = JSON.parse(json);
  } catch {
    throw new ConfigError("--data", ["--data: must be a JSON object"]);
  }
  if (data === null || typeof data !== "object" || Array.isArray(data)) throw new ConfigError("--data", ["--data: must be a JSON object"]);
  return data as Record<string, unknown>;
}

/** A task that did not complete is a failure of the command (exit 1), named with its state. */
function checkEnded(task: Task | undefined): void {
  if (!task) throw new EgressError("EGRESS_ERR_A2A", "the stream ended without a task");
  if (task.status.state !== "completed") {
    const why = task.status.message ? `: ${answerText({ ...task, artifacts: [] })}` : "";
    throw new EgressError("EGRESS_ERR_A2A_TASK", `task ${task.id} ended ${task.status.state}${why}`);
  }
}

/**
 * `a2a send`: one message, the answer text on stdout (or the task as JSON, or with --stream every event as a JSON
 * line as it arrives), and on stderr the ids that continue the conversation.
 */
export async function sendCommand(url: string, text: string, flags: SendFlags): Promise<void> {
  const data = dataPart(flags.data);
  const conversation = new A2aConversation({
    baseUrl: url,
    assistantId: flags.assistant,
    contextId: flags.context,
    taskId: flags.task,
    threadId: flags.threadId,
  });
  let task: Task | undefined;
  if (flags.stream) {
    for await (const event of conversation.stream(text, data)) {
      process.stdout.write(`${JSON.stringify(event)}\n`);
      if (event.kind === "task") task = event;
      else if (event.kind === "status-update" && task) task = { ...task, status: event.status };
      else if (event.kind === "artifact-update" && task) task = { ...task, artifacts: [...(task.artifacts ?? []), event.artifact] };
    }
    if (task && !TERMINAL_STATES.has(task.status.state))
      throw new EgressError("EGRESS_ERR_A2A", `the stream ended while task ${task.id} was ${task.status.state}`);
  } else {
    task = await conversation.send(text, data);
    if (flags.json) process.stdout.write(`${JSON.stringify(task, null, 2)}\n`);
    else if (task.status.state === "completed") process.stdout.write(`${answerText(task)}\n`);
  }
  process.stderr.write(`contextId: ${conversation.contextId}\ntaskId: ${conversation.taskId}\n`);
  checkEnded(task);
}
