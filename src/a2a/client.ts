import { randomUUID } from "node:crypto";
import { EgressError } from "../errors.ts";
import { MiB, readCappedText } from "../http/capped-answer.ts";
import { sseData } from "../http/sse-reader.ts";
import { RpcResponse, StreamEvent, Task, type Message, type Part, type RpcErrorBody } from "../protocol/a2a.ts";

/** An A2A call that failed: not HTTP 200, a JSON-RPC error, or an answer that is not A2A. */
export class A2aClientError extends EgressError {
  readonly rpcError: RpcErrorBody | undefined;
  constructor(message: string, rpcError?: RpcErrorBody) {
    super("EGRESS_ERR_A2A", message);
    this.rpcError = rpcError;
  }
}

export interface ConversationOptions {
  /** The agent server's base URL, e.g. http://127.0.0.1:2024. */
  baseUrl: string;
  assistantId: string;
  /** Continue a conversation: its contextId and the id of its last task (the last answer's `id`). */
  contextId?: string | undefined;
  taskId?: string | undefined;
  /** The trace thread id of the first message (random when not given). */
  threadId?: string | undefined;
  timeoutMs?: number;
  /** The most one answer, or one event of a stream, may hold (default A2A_ANSWER_CAP). */
  maxAnswerBytes?: number;
}

/**
 * What the client reads of one answer or one stream event at most: a task carries its whole history, the user's
 * messages among it (the agent server takes requests up to 10 MiB) beside the answers and artifacts, so the cap
 * leaves room for a maximal message with a long answer, and no more.
 */
export const A2A_ANSWER_CAP = 32 * MiB;

/** The answer text of a task: its artifacts' text parts, else its status message's. */
export function answerText(task: Task): string {
  const fromParts = (parts: Part[] | undefined) => (parts ?? []).flatMap((part) => (part.kind === "text" ? [part.text] : []));
  const texts = (task.artifacts ?? []).flatMap((artifact) => fromParts(artifact.parts));
  return (texts.length > 0 ? texts : fromParts(task.status.message?.parts)).join("\n");
}

/**
 * One A2A conversation with one assistant, by the platform's rules (SEED-SPEC A2A rules 1-2; docs/PROTOCOL.md,
 * "Conversations, tasks and thread ids"): the first message carries no contextId or taskId and a random
 * `metadata.thread_id`; every later one carries the contextId and the taskId of the last answer, and the contextId as
 * its thread id, so all turns (and every agent they reach) trace as one thread. It speaks v0.3 method names, with
 * which a message naming a task that ended opens a new task in its context, and one naming a task waiting for
 * input resumes it.
 */
export class A2aConversation {
  readonly endpoint: string;
  contextId: string | undefined;
  /** The last answer's task: the next message names it. */
  taskId: string | undefined;
  #threadId: string;
  readonly #timeoutMs: number;
  readonly #maxAnswerBytes: number;

  constructor(options: ConversationOptions) {
    this.endpoint = `${options.baseUrl.replace(/\/+$/, "")}/a2a/${encodeURIComponent(options.assistantId)}`;
    this.contextId = options.contextId;
    this.taskId = options.taskId;
    this.#threadId = options.threadId ?? options.contextId ?? randomUUID();
    this.#timeoutMs = options.timeoutMs ?? 300_000;
    this.#maxAnswerBytes = options.maxAnswerBytes ?? A2A_ANSWER_CAP;
  }

  get threadId(): string {
    return this.contextId ?? this.#threadId;
  }

  #message(text: string, data: Record<string, unknown> | undefined): Message {
    const parts: Part[] = [{ kind: "text", text }];
    if (data) parts.push({ kind: "data", data });
    return {
      kind: "message",
      role: "user",
      messageId: randomUUID(),
      parts,
      ...(this.contextId ? { contextId: this.contextId } : {}),
      ...(this.taskId ? { taskId: this.taskId } : {}),
    };
  }

  async #post(method: string, params: unknown, accept: string): Promise<Response> {
    const body = { jsonrpc: "2.0", id: randomUUID(), method, params, metadata: { thread_id: this.threadId } };
    let response: Response;
    try {
      response = await fetch(this.endpoint, {
        method: "POST",
        headers: { "content-type": "application/json", accept },
        body: JSON.stringify(body),
        redirect: "manual",
        signal: AbortSignal.timeout(this.#timeoutMs),
      });
    } catch (err) {
      const cause = (err as { cause?: { code?: string; message?: string } }).cause;
      throw new A2aClientError(`cannot reach ${this.endpoint} (${cause?.code ?? cause?.message ?? (err as Error).name})`);
    }
    if (response.status !== 200) {
      const text = await this.#text(response);
      const error = errorOf(text);
      throw new A2aClientError(
        `${this.endpoint} answered HTTP ${response.status}${error ? `: ${error.message} (${error.code})` : `: ${text.slice(0, 300)}`}`,
        error,
      );
    }
    return response;
  }

  #text(response: Response): Promise<string> {
    return readCappedText(response, this.#maxAnswerBytes, this.endpoint);
  }

  #remember(event: { id?: string; taskId?: string; contextId?: string }): void {
    this.contextId = event.contextId ?? this.contextId;
    this.taskId = event.taskId ?? event.id ?? this.taskId;
  }

  /** message/send: the task once it has ended; the conversation then continues from it. */
  async send(text: string, data?: Record<string, unknown>): Promise<Task> {
    const response = await this.#post("message/send", { message: this.#message(text, data) }, "application/json");
    const task = parseTask(resultOf(await this.#text(response), this.endpoint), this.endpoint);
    this.#remember(task);
    return task;
  }

  /** message/stream: each event's result as it arrives (a Task, status or artifact updates). */
  async *stream(text: string, data?: Record<string, unknown>): AsyncGenerator<StreamEvent> {
    const response = await this.#post("message/stream", { message: this.#message(text, data) }, "text/event-stream");
    if (!response.headers.get("content-type")?.startsWith("text/event-stream")) {
      resultOf(await this.#text(response), this.endpoint); // a JSON-RPC error answered instead of a stream
      throw new A2aClientError(`${this.endpoint} did not answer message/stream with an event stream`);
    }
    for await (const data of sseData(response.body!, { maxEventLength: this.#maxAnswerBytes, url: this.endpoint })) {
      const parsed = StreamEvent.safeParse(resultOf(data, this.endpoint));
      if (!parsed.success)
        throw new A2aClientError(`${this.endpoint} sent a stream event that is not A2A: ${parsed.error.issues[0]?.message}`);
      this.#remember(parsed.data as { id?: string; taskId?: string; contextId?: string });
      yield parsed.data;
    }
  }

  async getTask(taskId: string, historyLength?: number): Promise<Task> {
    const response = await this.#post(
      "tasks/get",
      { id: taskId, ...(historyLength === undefined ? {} : { historyLength }) },
      "application/json",
    );
    return parseTask(resultOf(await this.#text(response), this.endpoint), this.endpoint);
  }

  async cancel(taskId: string): Promise<Task> {
    const response = await this.#post("tasks/cancel", { id: taskId }, "application/json");
    return parseTask(resultOf(await this.#text(response), this.endpoint), this.endpoint);
  }
}

function errorOf(text: string): RpcErrorBody | undefined {
  try {
    const parsed = RpcResponse.safeParse(JSON.parse(text));
    return parsed.success && "error" in parsed.data ? parsed.data.error : undefined;
  } catch {
    return undefined;
  }
}

/** The result of a JSON-RPC response text, or an A2aClientError with its error. */
function resultOf(text: string, endpoint: string): unknown {
  let parsed: ReturnType<typeof RpcResponse.safeParse>;
  try {
    parsed = RpcResponse.safeParse(JSON.parse(text));
  } catch {
    throw new A2aClientError(`${endpoint} answered something that is not JSON: ${text.slice(0, 200)}`);
  }
  if (!parsed.success) throw new A2aClientError(`${endpoint} answered something that is not a JSON-RPC response`);
  if ("error" in parsed.data)
    throw new A2aClientError(`${endpoint}: ${parsed.data.error.message} (${parsed.data.error.code})`, parsed.data.error);
  return parsed.data.result;
}

function parseTask(result: unknown, endpoint: string): Task {
  const parsed = Task.safeParse(result);
  if (!parsed.success) throw new A2aClientError(`${endpoint} answered a result that is not an A2A task`);
  return parsed.data;
}
