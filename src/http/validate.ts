import type { z } from "zod";
import { HttpError } from "../errors.ts";
import { jsonShapeProblem, MAX_JSON_DEPTH } from "../protocol/json-shape.ts";
import { toValidationErrors, type ValidationError } from "../protocol/validation-error.ts";

/** A request whose body, query or params fail their schema: answered 422 with an HTTPValidationError. */
export class RequestValidationError extends HttpError {
  readonly detail: ValidationError[];
  constructor(detail: ValidationError[]) {
    super("EGRESS_ERR_VALIDATION", detail.map((d) => `${d.loc.join(".")}: ${d.msg}`).join("; "));
    this.detail = detail;
  }
}

/**
 * Parses `input` with `schema`, or throws a RequestValidationError whose `loc` paths start with `source`. `fast`, for
 * a hot route, is a hand-written equivalent of `schema.parse` (undefined where the schema refuses): its value is
 * taken when it has one, and the schema runs only to explain a refusal.
 */
export function parseRequest<S extends z.ZodType>(
  schema: S,
  input: unknown,
  source = "body",
  fast?: (input: unknown) => z.output<S> | undefined,
): z.output<S> {
  if (jsonShapeProblem(input) === "too_deep") {
    throw new RequestValidationError([{ loc: [source], msg: `nested deeper than ${MAX_JSON_DEPTH} levels`, type: "json_invalid" }]);
  }
  const fastValue = fast?.(input);
  if (fastValue !== undefined) return fastValue;
  let result: z.ZodSafeParseResult<z.output<S>>;
  try {
    result = schema.safeParse(input);
  } catch (err) {
    // zod passes issue lists up as call arguments: a few hundred thousand bad values overflow the stack.
    if (!(err instanceof RangeError)) throw err;
    throw new RequestValidationError([
      { loc: [source], msg: "too many invalid values to list; send fewer at a time", type: "too_many_errors" },
    ]);
  }
  if (!result.success) throw new RequestValidationError(toValidationErrors(result.error, input, source));
  return result.data;
}
