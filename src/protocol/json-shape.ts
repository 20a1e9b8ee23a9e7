/**
 * Size guards for parsed JSON, checked before a schema sees it. A zod schema recurses once per nesting level (a
 * deep enough body overflows the stack) and makes an issue of about half a kilobyte per bad value (a body of a
 * million bad values exhausts the heap), so both are bounded first, by a walk that uses no recursion.
 */

/** Nesting deeper than this is refused: no wire shape needs it (an OTLP log body of values nested ten deep is under 50). */
export const MAX_JSON_DEPTH = 64;

/** Values (objects, arrays, scalars) one OTLP resource, scope or item may hold; a larger one is rejected unread. */
export const MAX_ITEM_VALUES = 50_000;

/** What is wrong with a value's shape: too deep, or more than `maxValues` values (objects, arrays, scalars). */
export type JsonShapeProblem = "too_deep" | "too_many_values";

export function jsonShapeProblem(value: unknown, maxValues = Infinity, maxDepth = MAX_JSON_DEPTH): JsonShapeProblem | undefined {
  // Two parallel stacks and index or key loops: this runs on every request body, and a stack of [node, depth]
  // pairs or Object.values() copies would allocate once per value.
  const nodes: unknown[] = [value];
  const depths: number[] = [1];
  let values = 0;
  while (nodes.length > 0) {
    const node = nodes.pop();
    const depth = depths.pop()!;
    if (++values > maxValues) return "too_many_values";
    if (node === null || typeof node !== "object") continue;
    if (depth > maxDepth) return "too_deep";
    if (Array.isArray(node)) {
      for (let i = 0; i < node.length; i++) {
        nodes.push(node[i]);
        depths.push(depth + 1);
      }
    } else {
      for (const key in node) {
        if (!Object.hasOwn(node, key)) continue;
        nodes.push((node as Record<string, unknown>)[key]);
        depths.push(depth + 1);
      }
    }
  }
  return undefined;
}
