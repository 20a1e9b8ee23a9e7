/**
 * The zod-free fast path's primitives (see otlp-fast.ts): the part's value budget, OTLP's 64-bit integers and hex
 * ids, and AnyValue/KeyValue. Every function returns the value exactly as the zod schema in otlp.ts would output
 * it, or undefined ("refused"): the caller then asks zod, which either finds the reason or, for the odd input this
 * path is stricter on (a present key holding `undefined`), accepts. No valid value normalises to undefined.
 */
import { MAX_ITEM_VALUES, MAX_JSON_DEPTH } from "./json-shape.ts";
import type { AnyValue, KeyValue } from "./otlp.ts";

export type Fields = Record<string, unknown>;

// jsonShapeProblem's bound, counted in the validating walk: a parent counts its children (one per key or element),
// an object or array deeper than MAX_JSON_DEPTH is refused. Module state, not a parameter: the walk is synchronous.
let seen = 0;

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
  if (typeof v !== "number") return undefined;
  if (Number.isSafeInteger(v)) return String(v); // -0 too: "0"
  if (!Number.isInteger(v)) return undefined;
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
  return v.charCodeAt(start) !== 48 || n === 1 ? v : BigInt(v).toString();
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
  return upper ? v.toLowerCase() : v;
}

/** z.base64(): what atob takes with no whitespace and a length that is a multiple of 4 (padding only at the end). */
function isBase64(v: string): boolean {
  const n = v.length;
  if (n % 4 !== 0) return false;
  let end = n;
  if (n > 0 && v.charCodeAt(n - 1) === 61) end = v.charCodeAt(n - 2) === 61 ? n - 2 : n - 1; // "="
  for (let i = 0; i < end; i++) {
    const c = v.charCodeAt(i);
    const ok = (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || (c >= 48 && c <= 57) || c === 43 || c === 47; // A-Z a-z 0-9 + /
    if (!ok) return false;
  }
  return true;
}

/** An AnyValue at `depth`: its keys in the schema's order, only those sent; unknown ones dropped. */
export function anyValue(v: unknown, depth: number): AnyValue | undefined {
  if (!isObjectAt(v, depth)) return undefined;
  let stringValue: string | undefined;
  let boolValue: boolean | undefined;
  let intValue: string | undefined;
  let doubleValue: number | undefined;
  let bytesValue: string | undefined;
  let arrayValue: AnyValue["arrayValue"];
  let kvlistValue: AnyValue["kvlistValue"];
  for (const key in v) {
    if (!counted()) return undefined;
    const x = v[key];
    switch (key) {
      case "stringValue":
        if (typeof x !== "string") return undefined;
        stringValue = x;
        break;
      case "boolValue":
        if (typeof x !== "boolean") return undefined;
        boolValue = x;
        break;
      case "intValue":
        intValue = int64(x);
        if (intValue === undefined) return undefined;
        break;
      case "doubleValue":
        if (!isFiniteNumber(x)) return undefined;
        doubleValue = x;
        break;
      case "bytesValue":
        if (typeof x !== "string" || !isBase64(x)) return undefined;
        bytesValue = x;
        break;
      case "arrayValue":
        arrayValue = valuesOf(x, depth + 1, false) as AnyValue["arrayValue"];
        if (arrayValue === undefined) return undefined;
        break;
      case "kvlistValue":
        kvlistValue = valuesOf(x, depth + 1, true) as AnyValue["kvlistValue"];
        if (kvlistValue === undefined) return undefined;
        break;
      default:
        if (!countedBelow(x, depth + 1)) return undefined;
    }
  }
  const out: AnyValue = {};
  if (stringValue !== undefined) out.stringValue = stringValue;
  if (boolValue !== undefined) out.boolValue = boolValue;
  if (intValue !== undefined) out.intValue = intValue;
  if (doubleValue !== undefined) out.doubleValue = doubleValue;
  if (bytesValue !== undefined) out.bytesValue = bytesValue;
  if (arrayValue !== undefined) out.arrayValue = arrayValue;
  if (kvlistValue !== undefined) out.kvlistValue = kvlistValue;
  return out;
}

/** arrayValue or kvlistValue: `{ values }`, the listed AnyValues or KeyValues, [] when left out. */
function valuesOf(v: unknown, depth: number, keyValues: boolean): { values: unknown[] } | undefined {
  if (!isObjectAt(v, depth)) return undefined;
  let values: unknown[] | undefined;
  for (const key in v) {
    if (!counted()) return undefined;
    const x = v[key];
    if (key !== "values") {
      if (!countedBelow(x, depth + 1)) return undefined;
      continue;
    }
    values = keyValues ? attributes(x, depth + 1) : anyValues(x, depth + 1);
    if (values === undefined) return undefined;
  }
  return { values: values ?? [] };
}

function anyValues(v: unknown, depth: number): AnyValue[] | undefined {
  if (!isListAt(v, depth) || !countedList(v)) return undefined;
  const out: AnyValue[] = [];
  for (let i = 0; i < v.length; i++) {
    const value = anyValue(v[i], depth + 1);
    if (value === undefined) return undefined;
    out.push(value);
  }
  return out;
}

/** A list of KeyValues (attributes, kvlistValue.values); the caller gives [] for a left-out list. */
export function attributes(v: unknown, depth: number): KeyValue[] | undefined {
  if (!isListAt(v, depth) || !countedList(v)) return undefined;
  const out: KeyValue[] = [];
  for (let i = 0; i < v.length; i++) {
    const kv = keyValue(v[i], depth + 1);
    if (kv === undefined) return undefined;
    out.push(kv);
  }
  return out;
}

function keyValue(v: unknown, depth: number): KeyValue | undefined {
  if (!isObjectAt(v, depth)) return undefined;
  let key: string | undefined;
  let value: AnyValue | undefined;
  for (const k in v) {
    if (!counted()) return undefined;
    const x = v[k];
    if (k === "key") {
      if (typeof x !== "string") return undefined;
      key = x;
    } else if (k === "value") {
      value = anyValue(x, depth + 1);
      if (value === undefined) return undefined;
    } else if (!countedBelow(x, depth + 1)) return undefined;
  }
  return key === undefined ? undefined : { key, value: value ?? {} };
}
