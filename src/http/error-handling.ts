import { asDatabaseUnavailable } from "../database-unavailable.ts";
import { ERRORS, type ErrorCode } from "../error-codes.ts";
import { HttpError } from "../errors.ts";
import { Answer, type HttpRequest } from "./exchange.ts";
import { RequestValidationError } from "./validate.ts";

/**
 * How a server words a refused or failed request: 422 `{detail: [...]}` for validation, `{detail, code}`
 * otherwise. 5xx never shows the cause: it is logged instead.
 */
export function errorAnswer(failure: unknown, request: HttpRequest): Answer {
  // The database away (a restart, a failover) is a 503 with Retry-After, never a 500.
  const error = asDatabaseUnavailable(failure);
  if (error instanceof RequestValidationError) return new Answer(error.statusCode, { detail: error.detail });
  if (error instanceof HttpError)
    return new Answer(error.statusCode, { detail: error.message, code: error.code }, undefined, error.headers);
  request.log.error({ err: error }, "request failed");
  return internalErrorAnswer();
}

/** The answer to a failure the server did not expect: the cause is in its log, never in the answer. */
export const internalErrorAnswer = () =>
  new Answer(ERRORS.EGRESS_ERR_INTERNAL.status, {
    detail: "internal error; see the server log",
    code: "EGRESS_ERR_INTERNAL" satisfies ErrorCode,
  });
