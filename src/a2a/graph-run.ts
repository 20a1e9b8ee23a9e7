import { randomUUID } from "node:crypto";
import type { Logger } from "pino";
import type { Artifact, Message, Part, TaskState } from "../protocol/a2a.ts";
import type { Assistant } from "./graph-config.ts";
import { interruptParts, isAssistantMessage, messageText, nodeOutputs, textParts } from "./messages.ts";
import { failureText } from "./task-end.ts";

/** Where one run of a graph stands in its task: ids for its messages and its trace, and its cancel signal. */
export interface GraphRunContext {
  taskId: string;
  contextId: string;
  threadId: string;
  signal: AbortSignal;
  logger: Logger;
}

/** How a run ended: the task's state and closing message, every message the graph added, and the response. */
export interface GraphRunEnd {
  state: TaskState;
  message: Message | undefined;
  added: Message[];
  artifacts: Artifact[];
  /** The graph threw (not a cancel): its error's name, for the span's status. */
  failure?: string;
}

/** An agent message of this run's task. */
export function agentMessage(run: Pick<GraphRunContext, "taskId" | "contextId">, parts: Part[]): Message {
  return { kind: "message", role: "agent", messageId: randomUUID(), parts, contextId: run.contextId, taskId: run.taskId };
}

/**
 * Streams the graph on the context's LangGraph thread and turns what it says into the task's messages: each
 * assistant message as it comes (`onMessage`, for the status updates), an interrupt as input-required, a throw as
 * failed (or canceled, when the run was), never a throw of its own.
 */
export async function runGraph(
  assistant: Assistant,
  input: unknown,
  run: GraphRunContext,
  onMessage: (message: Message) => void,
): Promise<GraphRunEnd> {
  const added: Message[] = [];
  try {
    // "updates": each node's own output as it finishes, so the run's new messages and its interrupts come with
    // the stream itself (no state reads before and after the run).
    const config = {
      configurable: { thread_id: run.contextId },
      metadata: { thread_id: run.threadId, assistant_id: assistant.graphId, run_id: run.taskId },
      signal: run.signal,
      streamMode: "updates",
    };
    let last: unknown;
    const interrupts: unknown[] = [];
    for await (const chunk of await assistant.graph.stream(input, config)) {
      const { messages, interrupts: asked } = nodeOutputs(chunk);
      interrupts.push(...asked);
      for (const message of messages.filter(isAssistantMessage)) {
        last = message;
        added.push(agentMessage(run, textParts(messageText(message))));
        onMessage(added.at(-1)!);
      }
    }
    // The graph asks before it goes on: the task waits for the next message with its taskId.
    if (interrupts.length > 0)
      return { state: "input-required", message: agentMessage(run, interruptParts(interrupts)), added, artifacts: [] };
    const artifacts = last === undefined ? [] : [{ artifactId: randomUUID(), name: "response", parts: textParts(messageText(last)) }];
    return { state: "completed", message: added.at(-1), added, artifacts };
  } catch (err) {
    if (run.signal.aborted) {
      return { state: "canceled", message: agentMessage(run, textParts("The task was canceled.")), added, artifacts: [] };
    }
    run.logger.error({ err, taskId: run.taskId, graphId: assistant.graphId }, "graph run failed");
    return {
      state: "failed",
      message: agentMessage(run, textParts(failureText(err, run.taskId))),
      added,
      artifacts: [],
      failure: (err as Error).name,
    };
  }
}
