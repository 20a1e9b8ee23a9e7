import { TaskState as V1TaskState, type ListTasksRequest } from "@a2a-js/sdk";
import type { TaskState } from "../protocol/a2a.ts";
import { invalidParams } from "./rpc-error.ts";
import { checkHistoryLength } from "./task-history.ts";
import { cursorOf, type TaskQuery } from "./task-list.ts";
import { V1_STATES } from "./v1-convert.ts";

// ListTasks' params (as the SDK parsed them) as a query of the task store, checked: a bad one is -32602 and reads
// nothing.

/** A page holds 50 tasks unless the request asks for 1 to 100 (A2A v1.0's bounds). */
export const DEFAULT_PAGE_SIZE = 50;
export const MAX_PAGE_SIZE = 100;

/**
 * The stored states a status filter selects. A running task's row says submitted until its run ends (its live state
 * is working within moments of its start): SUBMITTED and WORKING both select the running tasks.
 */
function storedStates(status: V1TaskState | undefined): TaskState[] | undefined {
  if (status === undefined || status === V1TaskState.TASK_STATE_UNSPECIFIED) return undefined;
  if (status === V1TaskState.TASK_STATE_SUBMITTED || status === V1TaskState.TASK_STATE_WORKING) return ["submitted", "working"];
  const state = (Object.keys(V1_STATES) as TaskState[]).find((ours) => V1_STATES[ours] === status);
  if (state === undefined) {
    throw invalidParams("status must be a TaskState, e.g. TASK_STATE_COMPLETED", [
      { loc: ["params", "status"], msg: "not a task state", type: "enum" },
    ]);
  }
  return [state];
}

export function listQueryFromV1(request: ListTasksRequest): { query: Omit<TaskQuery, "graphId">; includeArtifacts: boolean } {
  const limit = request.pageSize ?? DEFAULT_PAGE_SIZE;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE_SIZE) {
    throw invalidParams(`pageSize must be between 1 and ${MAX_PAGE_SIZE}`, [
      { loc: ["params", "pageSize"], msg: `must be an integer from 1 to ${MAX_PAGE_SIZE}`, type: "value_error" },
    ]);
  }
  checkHistoryLength(request.historyLength, ["params", "historyLength"]);
  if (request.statusTimestampAfter) {
    throw invalidParams("statusTimestampAfter is not supported: filter by contextId and status, and page with pageToken", [
      { loc: ["params", "statusTimestampAfter"], msg: "not supported", type: "value_error" },
    ]);
  }
  return {
    query: {
      contextId: request.contextId === "" ? undefined : request.contextId,
      states: storedStates(request.status),
      after: request.pageToken === "" ? undefined : cursorOf(request.pageToken),
      limit,
    },
    includeArtifacts: request.includeArtifacts ?? false,
  };
}
