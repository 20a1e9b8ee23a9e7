import type { z } from "zod";
import { HttpError } from "../errors.ts";
import { toValidationErrors, type ValidationError } from "../protocol/validation-error.ts";

/** A request whose body, query or params fail their schema: answered 422 with an HTTPValidationError. */
export class RequestValidationError extends HttpError {
  readonly detail: ValidationError[];
  constructor(detail: ValidationError[]) {
    super(422, "ERR_VALIDATION", detail.map((d) => `${d.loc.join(".")}: ${d.msg}`).join("; "));
    this.detail = detail;
  }
}

/** Parses `input` with `schema`, or throws a RequestValidationError whose `loc` paths start with `source`. */
export function parseRequest<S extends z.ZodType>(schema: S, input: unknown, source = "body"): z.output<S> {
  const result = schema.safeParse(input);
  if (!result.success) throw new RequestValidationError(toValidationErrors(result.error, input, source));
  return result.data;
}
