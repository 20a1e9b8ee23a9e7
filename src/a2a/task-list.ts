import type { Task, TaskState } from "../protocol/a2a.ts";
import { invalidParams } from "./rpc-error.ts";

// ListTasks: which tasks a page holds (the query both task stores read), and the page token that carries on from
// where a page ended: opaque to the client, here the last task's creation time and id (keyset paging: a page stays
// right while tasks are added).

/** Which tasks of an assistant a list reads: newest first (creation time, then id), after `after` when given. */
export interface TaskQuery {
  graphId: string;
  contextId?: string | undefined;
  /** Stored states (a running task's row says submitted until its run ends). */
  states?: readonly TaskState[] | undefined;
  after?: TaskCursor | undefined;
  limit: number;
}

/** Where a page ended: the creation time and id of its last task. */
export interface TaskCursor {
  createdAt: number;
  id: string;
}

/** One page of a list: its tasks (each with its creation time) and how many the query matches in all. */
export interface TaskPage {
  tasks: { task: Task; createdAt: number }[];
  total: number;
}

/** A list query's WHERE clause on tasks.db, without its cursor. */
export function sqliteFilter(query: TaskQuery): { where: string; params: unknown[] } {
  const clauses = ["graph_id = ?"];
  const params: unknown[] = [query.graphId];
  if (query.contextId !== undefined) {
    clauses.push("context_id = ?");
    params.push(query.contextId);
  }
  if (query.states !== undefined) {
    clauses.push(`state IN (${query.states.map(() => "?").join(", ")})`);
    params.push(...query.states);
  }
  return { where: clauses.join(" AND "), params };
}

/** The nextPageToken of a page that ended at `cursor`. */
export function pageToken(cursor: TaskCursor): string {
  return Buffer.from(JSON.stringify({ c: cursor.createdAt, i: cursor.id })).toString("base64url");
}

/** The cursor of a pageToken this server gave; -32602 for any other. */
export function cursorOf(token: string): TaskCursor {
  let parsed: { c?: unknown; i?: unknown } | undefined;
  try {
    parsed = JSON.parse(Buffer.from(token, "base64url").toString("utf8")) as { c?: unknown; i?: unknown };
  } catch {
    parsed = undefined;
  }
  if (
    !Number.isSafeInteger(parsed?.c) ||
    typeof parsed?.i !== "string" ||
    pageToken({ createdAt: parsed.c as number, id: parsed.i }) !== token
  ) {
    throw invalidParams("pageToken is not one this server gave: pass a ListTasks answer's nextPageToken as it is", [
      { loc: ["params", "pageToken"], msg: "not a page token of this server", type: "value_error" },
    ]);
  }
  return { createdAt: parsed.c as number, id: parsed.i };
}
