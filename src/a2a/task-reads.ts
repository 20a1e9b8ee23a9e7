import type { Task } from "../protocol/a2a.ts";
import { type HistoryView, presented } from "./task-history.ts";
import type { TaskCursor, TaskQuery } from "./task-list.ts";
import type { TaskStore } from "./task-store.ts";

// Tasks as answers show them (GetTask, ListTasks, a SendMessage's answer): the history they carry, and lists.

/** Each context's tasks, read once per answer however many of its tasks the answer shows. */
export type ContextTasks = Map<string, Promise<Task[]>>;

/** `task` with its context's history or its own, cut to `historyLength` (task-history.ts). */
export async function presentTask(store: TaskStore, task: Task, view: HistoryView, contexts: ContextTasks = new Map()): Promise<Task> {
  if (view.scope === "task") return presented(task, view);
  let tasks = contexts.get(task.contextId);
  if (!tasks) {
    tasks = store.contextTasks(task.contextId);
    contexts.set(task.contextId, tasks);
  }
  return presented(task, view, await tasks);
}

export interface TaskList {
  tasks: Task[];
  /** How many tasks the query matches, on every page. */
  total: number;
  /** Where the next page starts; none after the last. */
  next: TaskCursor | undefined;
}

/** A page of tasks, each as it is now (`current`: a running task's live status) and presented. */
export async function listTasks(
  store: TaskStore,
  current: (task: Task) => Promise<Task>,
  query: TaskQuery,
  view: HistoryView,
): Promise<TaskList> {
  // One more than the page: whether a next page exists, without a count.
  const page = await store.list({ ...query, limit: query.limit + 1 });
  const rows = page.tasks.slice(0, query.limit);
  const last = rows.at(-1);
  const next = last && page.tasks.length > rows.length ? { createdAt: last.createdAt, id: last.task.id } : undefined;
  const contexts: ContextTasks = new Map();
  const tasks = await Promise.all(rows.map(async (row) => presentTask(store, await current(row.task), view, contexts)));
  return { tasks, total: page.total, next };
}
