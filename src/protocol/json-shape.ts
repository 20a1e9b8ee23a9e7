/**
 * Size guards for parsed JSON, checked before a schema sees it. A zod schema recurses once per nesting level (a
 * deep enough body overflows the stack) and makes an issue of about half a kilobyte per bad value (a body of a
 * million bad values exhausts the heap), so both are bounded first, by a walk that uses no recursion.
 */

/** Nesting deeper than this is refused: no wire shape needs it (an OTLP log body of values nested ten deep is under 50). */
export const MAX_JSON_DEPTH = 64;

/** What is wrong with a value's shape: too deep, or more than `maxValues` values (objects, arrays, scalars). */
export type JsonShapeProblem = "too_deep" | "too_many_values";

export function jsonShapeProblem(value: unknown, maxValues = Infinity, maxDepth = MAX_JSON_DEPTH): JsonShapeProblem | undefined {
  const stack: [unknown, number][] = [[value, 1]];
  let values = 0;
  while (stack.length > 0) {
    const [node, depth] = stack.pop()!;
    if (++values > maxValues) return "too_many_values";
    if (node === null || typeof node !== "object") continue;
    if (depth > maxDepth) return "too_deep";
    for (const child of Object.values(node)) stack.push([child, depth + 1]);
  }
  return undefined;
}
