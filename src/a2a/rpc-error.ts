import { RpcErrorCode } from "../protocol/a2a.ts";

/** A JSON-RPC error the agent server answers: `code` and `message` go to the client, `data` too when set. */
export class RpcError extends Error {
  readonly code: number;
  readonly data: unknown;
  /** HTTP status of the answer: 200 but for an unknown assistant (404) and a body that is not JSON (400). */
  readonly httpStatus: number;
  constructor(code: number, message: string, options: { data?: unknown; httpStatus?: number } = {}) {
    super(message);
    this.name = "RpcError";
    this.code = code;
    this.data = options.data;
    this.httpStatus = options.httpStatus ?? 200;
  }
}

export const taskNotFound = (taskId: string) =>
  new RpcError(RpcErrorCode.taskNotFound, `Task not found: ${taskId} is not a task of this assistant`);
export const invalidParams = (message: string, data?: unknown) =>
  new RpcError(RpcErrorCode.invalidParams, `Invalid params: ${message}`, { data });

/** A v1.0 message names a task that ended: it is not reopened. -32004 (unsupported operation) as A2A v1.0 says. */
export class TaskEndedError extends RpcError {
  constructor(taskId: string, state: string) {
    super(
      RpcErrorCode.unsupportedOperation,
      `Task ${taskId} is in a terminal state (${state}) and cannot be modified; send the next message with the contextId only, to start a new task in the conversation`,
    );
  }
}
