/** The fast path's AnyValue and KeyValue (see otlp-fast.ts and otlp-fast-values.ts), attributes and log bodies. */
import type { AnyValue, KeyValue } from "./otlp.ts";
import { counted, editMark, int64, isFiniteNumber, isObjectAt, reusable, skipped, validList } from "./otlp-fast-values.ts";

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

/** An AnyValue at `depth`: the raw one when unchanged, else its keys in the schema's order, only those sent. */
export function anyValue(v: unknown, depth: number): AnyValue | undefined {
  if (!isObjectAt(v, depth)) return undefined;
  const mark = editMark();
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
        if (!skipped(x, depth + 1)) return undefined;
    }
  }
  if (reusable(mark, true)) return v as AnyValue;
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
  const mark = editMark();
  let values: unknown[] | undefined;
  for (const key in v) {
    if (!counted()) return undefined;
    const x = v[key];
    if (key !== "values") {
      if (!skipped(x, depth + 1)) return undefined;
      continue;
    }
    values = keyValues ? attributes(x, depth + 1) : anyValues(x, depth + 1);
    if (values === undefined) return undefined;
  }
  return reusable(mark, values !== undefined) ? (v as { values: unknown[] }) : { values: values ?? [] };
}

const anyValues = (v: unknown, depth: number): AnyValue[] | undefined => validList(v, depth, anyValue);

/** A list of KeyValues (attributes, kvlistValue.values); the caller gives [] for a left-out list. */
export const attributes = (v: unknown, depth: number): KeyValue[] | undefined => validList(v, depth, keyValue);

function keyValue(v: unknown, depth: number): KeyValue | undefined {
  if (!isObjectAt(v, depth)) return undefined;
  const mark = editMark();
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
    } else if (!skipped(x, depth + 1)) return undefined;
  }
  if (key === undefined) return undefined;
  return reusable(mark, value !== undefined) ? (v as KeyValue) : { key, value: value ?? {} };
}
