import type { IncomingHttpHeaders } from "node:http";
import { MAX_HISTORY_LENGTH, type Task } from "../protocol/a2a.ts";
import { invalidParams } from "./rpc-error.ts";

// Which history an answer's task carries, as the platform's agent server answers it (its "history scope" extension):
// by default the whole context's (every message of the conversation up to and including this task); with
// `historyScope: "task"` (SendMessage: in `configuration`; GetTask, ListTasks: in `params`) or the header
// `LangGraph-A2A-History-Scope: task`, the task's own. The request's value wins over the header. The scope is
// applied before `historyLength` (the last N messages of that scope), which is at most 10.

export type HistoryScope = "context" | "task";

/** Which history an answer's tasks carry, and at most how much of it. */
export interface HistoryView {
  scope: HistoryScope;
  historyLength: number | undefined;
}

export const HISTORY_SCOPE_HEADER = "LangGraph-A2A-History-Scope";

/** The card's entry under capabilities.extensions: clients detect the option rather than assume it. */
export const HISTORY_SCOPE_EXTENSION = {
  uri: "https://langchain.com/a2a/extensions/history-scope/v1",
  description: "Choose task-only or full-context response history",
  required: false,
  params: {
    header: HISTORY_SCOPE_HEADER,
    values: ["context", "task"],
    default: "context",
    methods: ["SendMessage", "GetTask", "ListTasks", "message/send", "tasks/get"],
  },
};

/** What a request asks for: `historyScope` as sent (where its method reads it) and the header. */
export interface HistoryRequest {
  scope: unknown;
  headers: IncomingHttpHeaders;
  /** Where the request put `historyScope`, for the error: e.g. ["params", "configuration", "historyScope"]. */
  at: string[];
}

function scopeValue(value: unknown, where: string, loc: string[]): HistoryScope {
  if (value === "context" || value === "task") return value;
  throw invalidParams(`historyScope must be 'context' or 'task' (${where})`, [{ loc, msg: "must be 'context' or 'task'", type: "enum" }]);
}

/** The scope a request asks for: its own `historyScope`, else the header's, else the context's. -32602 for another value. */
export function historyScopeOf(request: HistoryRequest): HistoryScope {
  if (request.scope !== undefined) return scopeValue(request.scope, request.at.join("."), request.at);
  const header = request.headers[HISTORY_SCOPE_HEADER.toLowerCase()];
  if (header === undefined) return "context";
  return scopeValue(Array.isArray(header) ? header[0] : header.trim(), `header ${HISTORY_SCOPE_HEADER}`, ["header", HISTORY_SCOPE_HEADER]);
}

/** -32602 when `historyLength` asks for more than the server gives. */
export function checkHistoryLength(historyLength: number | undefined, loc: string[]): void {
  if (historyLength !== undefined && historyLength > MAX_HISTORY_LENGTH) {
    throw invalidParams(`historyLength cannot exceed ${MAX_HISTORY_LENGTH}`, [
      { loc, msg: `must be at most ${MAX_HISTORY_LENGTH}`, type: "less_than_equal" },
    ]);
  }
}

/** A copy of `task` with at most the last `historyLength` history messages (all when undefined). */
export function withHistory(task: Task, historyLength: number | undefined): Task {
  if (historyLength === undefined || !task.history) return task;
  return { ...task, history: historyLength === 0 ? [] : task.history.slice(-historyLength) };
}

/**
 * `task` as an answer shows it: its history the context's (the histories of its context's tasks up to and including
 * it, `contextTasks` in the order they were created) or its own, then cut to `historyLength`.
 */
export function presented(task: Task, view: HistoryView, contextTasks: readonly Task[] = []): Task {
  if (view.scope === "context") {
    const at = contextTasks.findIndex((t) => t.id === task.id);
    const earlier = (at === -1 ? contextTasks : contextTasks.slice(0, at)).flatMap((t) => t.history ?? []);
    if (earlier.length > 0) task = { ...task, history: [...earlier, ...(task.history ?? [])] };
  }
  return withHistory(task, view.historyLength);
}
