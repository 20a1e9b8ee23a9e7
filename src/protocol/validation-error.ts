import * as z from "zod";

/** One problem with a request: where (`loc`), what (`msg`), and a machine-readable `type`. */
export const ValidationError = z.object({
  loc: z.array(z.union([z.string(), z.int()])),
  msg: z.string(),
  type: z.string(),
});
export type ValidationError = z.infer<typeof ValidationError>;

/** Body of every 422 response. */
export const HTTPValidationError = z.object({ detail: z.array(ValidationError) });
export type HTTPValidationError = z.infer<typeof HTTPValidationError>;

type Loc = ValidationError["loc"][number];

function hasKey(input: unknown, path: readonly PropertyKey[], key: PropertyKey): boolean {
  let node: unknown = input;
  for (const part of path) {
    if (node === null || typeof node !== "object") return false;
    node = (node as Record<PropertyKey, unknown>)[part];
  }
  return node !== null && typeof node === "object" && Object.hasOwn(node, key);
}

/** Problems listed at most: a body of many bad values is answered with its first ones, not a larger answer. */
export const MAX_VALIDATION_ERRORS = 100;

/**
 * Turns a zod failure into a ValidationError list (docs/PROTOCOL.md, "Error bodies"; the first
 * MAX_VALIDATION_ERRORS). `loc` starts with where the value came from ("body", "query", ...), then the path into
 * it. Input values are never echoed: they may hold a license key.
 */
export function toValidationErrors(error: z.ZodError, input: unknown, source: string): ValidationError[] {
  const detail: ValidationError[] = [];
  for (const issue of error.issues) {
    if (detail.length >= MAX_VALIDATION_ERRORS) break;
    const path = issue.path.filter((p): p is Loc => typeof p === "string" || typeof p === "number");
    if (issue.code === "unrecognized_keys") {
      for (const key of issue.keys.slice(0, MAX_VALIDATION_ERRORS - detail.length)) {
        detail.push({ loc: [source, ...path, key], msg: "Extra inputs are not permitted", type: "extra_forbidden" });
      }
    } else if (issue.code === "invalid_type" && path.length > 0 && !hasKey(input, path.slice(0, -1), path.at(-1)!)) {
      detail.push({ loc: [source, ...path], msg: "Field required", type: "missing" });
    } else {
      detail.push({ loc: [source, ...path], msg: issue.message, type: issue.code });
    }
  }
  return detail;
}
