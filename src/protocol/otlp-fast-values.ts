/**
 * The zod-free fast path's primitives (see otlp-fast.ts): the part's value budget, the edit count that says what can
 * be reused, OTLP's 64-bit integers and hex ids (AnyValue and KeyValue are in otlp-fast-attributes.ts). Every
 * function returns the value exactly as the zod schema in otlp.ts would output it (the raw value itself when it
 * already is that), or undefined ("refused"): the caller then asks zod, which either finds the reason or, for the odd
 * input this path is stricter on (a present key holding `undefined`), accepts. No valid value normalises to undefined.
 */
import { MAX_ITEM_VALUES, MAX_JSON_DEPTH } from "./json-shape.ts";

export type Fields = Record<string, unknown>;

// jsonShapeProblem's bound, counted in the validating walk: a parent counts its children (one per key or element),
// an object or array deeper than MAX_JSON_DEPTH is refused. Module state, not a parameter: the walk is synchronous.
let seen = 0;

// Edits made so far: a value normalised, a default filled in, an unknown key dropped. An object or list is its own
// output (no copy: a request is mostly canonical already, and a copy is garbage to collect) when no edit was made
// while walking it; an edit anywhere below makes every object above it a new one. Module state, as `seen` is.
let edits = 0;

/** Where an object's walk starts: compared with the count at its end (reusable). */
export function editMark(): number {
  return edits;
}

/**
 * Whether the object walked since `mark` is its own output: nothing below it edited and `complete` (every key with a
 * default was sent). If not, the new object the caller builds is an edit, for the objects above it.
 */
export function reusable(mark: number, complete: boolean): boolean {
  if (complete && edits === mark) return true;
  edits++;
  return false;
}

/** A key the schema does not know: dropped (an edit), what it holds counted. */
export function skipped(x: unknown, depth: number): boolean {
  edits++;
  return countedBelow(x, depth);
}

/**
 * A list at `depth` whose elements (at depth + 1) `element` checks: the raw list itself while every element comes out
 * as it went in, else a copy; undefined when one is refused.
 */
export function validList<T>(v: unknown, depth: number, element: (item: unknown, depth: number) => T | undefined): T[] | undefined {
  if (!isListAt(v, depth) || !countedList(v)) return undefined;
  let out: unknown[] | undefined;
  for (let i = 0; i < v.length; i++) {
    const item = element(v[i], depth + 1);
    if (item === undefined) return undefined;
    out = nextOutput(out, v, i, item);
  }
  return (out ?? v) as T[];
}

/**
 * A list's outputs, built lazily: undefined (the raw list is its own output) while each output is its raw element,
 * a copy from the first one that is not. `value` undefined: the element is left out.
 */
export function nextOutput(out: unknown[] | undefined, raw: readonly unknown[], i: number, value: unknown): unknown[] | undefined {
  if (out === undefined) {
    if (value !== undefined && value === raw[i]) return undefined;
    out = raw.slice(0, i);
  }
  if (value !== undefined) out.push(value);
  return out;
}

/** Starts a part (resource, scope or item): the part itself is its first value. */
export function startPart(): void {
  seen = 1;
}

/** Counts one more value; false once the part holds more than MAX_ITEM_VALUES. */
export function counted(): boolean {
  return ++seen <= MAX_ITEM_VALUES;
}

/** Counts a list's elements at once. */
export function countedList(list: unknown[]): boolean {
  seen += list.length;
  return seen <= MAX_ITEM_VALUES;
}

/** An object (as zod's z.object takes it: not null, not an array) no deeper than the bound. */
export function isObjectAt(v: unknown, depth: number): v is Fields {
  return typeof v === "object" && v !== null && !Array.isArray(v) && depth <= MAX_JSON_DEPTH;
}

export function isListAt(v: unknown, depth: number): v is unknown[] {
  return Array.isArray(v) && depth <= MAX_JSON_DEPTH;
}

/** Counts what a dropped (unknown) key's value holds, below it: the bound covers what is dropped too. */
export function countedBelow(node: unknown, depth: number): boolean {
  if (node === null || typeof node !== "object") return true;
  if (depth > MAX_JSON_DEPTH) return false;
  if (Array.isArray(node)) {
    if (!countedList(node)) return false;
    for (let i = 0; i < node.length; i++) if (!countedBelow(node[i], depth + 1)) return false;
    return true;
  }
  for (const key in node) {
    if (!Object.hasOwn(node, key)) continue;
    if (!counted() || !countedBelow((node as Fields)[key], depth + 1)) return false;
  }
  return true;
}

/** z.int() with bounds: a safe integer, kept as it is (-0 included). */
export function isIntIn(v: unknown, min: number, max: number): v is number {
  return typeof v === "number" && Number.isSafeInteger(v) && v >= min && v <= max;
}

/** z.number(): finite. */
export function isFiniteNumber(v: unknown): v is number {
  return typeof v === "number" && Number.isFinite(v);
}

const INT64_MIN = -(2n ** 63n);
const UINT64_MAX = 2n ** 64n - 1n;
const INT64_MIN_DIGITS = "9223372036854775808";
const UINT64_MAX_DIGITS = "18446744073709551615";

/** otlp.ts's Int64: a decimal string of at most 21 characters or an integer number, within 64 bits, as a canonical string. */
export function int64(v: unknown): string | undefined {
  if (typeof v === "string") return int64String(v);
  if (typeof v !== "number" || !Number.isInteger(v)) return undefined;
  edits++; // a number becomes a string
  if (Number.isSafeInteger(v)) return String(v); // -0 too: "0"
  const big = BigInt(v);
  return big >= INT64_MIN && big <= UINT64_MAX ? big.toString() : undefined;
}

function int64String(v: string): string | undefined {
  const n = v.length;
  if (n === 0 || n > 21) return undefined;
  const start = v.charCodeAt(0) === 45 ? 1 : 0; // "-"
  if (start === n) return undefined;
  for (let i = start; i < n; i++) {
    const c = v.charCodeAt(i);
    if (c < 48 || c > 57) return undefined;
  }
  if (!digitsAtMost(v, start, start === 1 ? INT64_MIN_DIGITS : UINT64_MAX_DIGITS)) return undefined;
  // Canonical (no leading zero, no "-0") is most values: kept as sent, as the schema keeps them.
  if (v.charCodeAt(start) !== 48 || n === 1) return v;
  edits++;
  return BigInt(v).toString();
}

/** Whether the digits of `v` from `start` are at most `limit` (digits, no leading zero), without a BigInt. */
function digitsAtMost(v: string, start: number, limit: string): boolean {
  const extra = v.length - start - limit.length;
  if (extra < 0) return true;
  for (let i = start; i < start + extra; i++) if (v.charCodeAt(i) !== 48) return false;
  for (let i = 0; i < limit.length; i++) {
    const a = v.charCodeAt(start + extra + i);
    const b = limit.charCodeAt(i);
    if (a !== b) return a < b;
  }
  return true;
}

/** otlp.ts's UnixNano: an Int64 that is not negative ("-0" is "0"). */
export function unixNano(v: unknown): string | undefined {
  const s = int64(v);
  return s === undefined || s.charCodeAt(0) === 45 ? undefined : s;
}

/** otlp.ts's hex ids: exactly `digits` hex digits (or "" if allowed), lower-cased. */
export function hexId(v: unknown, digits: number, allowEmpty: boolean): string | undefined {
  if (typeof v !== "string") return undefined;
  if (v.length !== digits) return allowEmpty && v.length === 0 ? v : undefined;
  let upper = false;
  for (let i = 0; i < digits; i++) {
    const c = v.charCodeAt(i);
    if ((c >= 48 && c <= 57) || (c >= 97 && c <= 102)) continue;
    if (c < 65 || c > 70) return undefined;
    upper = true;
  }
  if (!upper) return v;
  edits++;
  return v.toLowerCase();
}
