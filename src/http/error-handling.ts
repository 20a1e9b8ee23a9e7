import { ERRORS, type ErrorCode } from "../error-codes.ts";
import { HttpError } from "../errors.ts";
import { Answer, type HttpRequest } from "./exchange.ts";
import { RequestValidationError } from "./validate.ts";

/**
 * How a server words a refused or failed request: 422 `{detail: [...]}` for validation, `{detail, code}`
 * otherwise. 5xx never shows the cause: it is logged instead.
 */
export function errorAnswer(error: unknown, request: HttpRequest): Answer {
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
