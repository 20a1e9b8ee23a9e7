import { METHODS } from "node:http";
import { A2A_V03_METHODS, A2A_V1_METHODS } from "../../protocol/a2a.ts";
import type { AnyValue, KeyValue } from "../../protocol/otlp.ts";
import { endpointTemplate } from "./endpoint-template.ts";
import { scrubText } from "./scrub.ts";
import type { Vocabulary } from "./vocabulary.ts";
import { normalise } from "./normalise.ts";
import { keepWord, NUM } from "./words.ts";

// Fields by kind: an attribute value that names one of a known set is checked against the set; an endpoint is
// templated; every other text goes through the free-text rule (scrub.ts).

/** What attribute filtering counts (see FilterResult in policy.ts). */
export interface AttributeTally {
  droppedAttributes: number;
}

/** HTTP methods (Node's list). */
const methods: ReadonlySet<string> = new Set(METHODS);
/**
 * The agent server's JSON-RPC methods (A2A v0.3 and v1.0, and its "unknown" and "invalid" for any other name or none),
 * which its request metrics carry as `method`. Anything else leaves as OpenTelemetry's `_OTHER`.
 */
const rpcMethods: ReadonlySet<string> = new Set([...A2A_V03_METHODS, ...A2A_V1_METHODS, "unknown", "invalid"]);
/** Attribute keys whose value is an HTTP status code, kept only from 100 to 599. */
const statusKeys: ReadonlySet<string> = new Set(["http.status_code", "http.response.status_code", "status_code", "http_status", "status"]);
// Units as OpenTelemetry and UCUM write them ("1", "s", "ms", "By", "KiBy/s"), and as the platform does ("seconds").
const ucum: ReadonlySet<string> = new Set(
  "1 % s ms us ns min h d By KiBy MiBy GiBy KBy MBy GBy bit Hz Cel".split(" ").concat("seconds milliseconds bytes".split(" ")),
);
// A library version ("1.0.0", "v0.11.2"): three numbers of at most three digits at most, so no phone, card or
// address fits (an IPv4 address has four).
const version = /^v?\d{1,3}(?:\.\d{1,3}){0,2}$/;

export function allowedAttributes(
  attributes: readonly KeyValue[],
  allow: ReadonlySet<string>,
  vocabulary: Vocabulary,
  tally: AttributeTally,
): { attributes: KeyValue[]; dropped: number } {
  const kept: KeyValue[] = [];
  for (const { key, value } of attributes) {
    const scalar = allow.has(key) ? scalarValue(key, value, vocabulary) : undefined;
    if (scalar) kept.push({ key, value: scalar });
  }
  const dropped = attributes.length - kept.length;
  tally.droppedAttributes += dropped;
  return { attributes: kept, dropped };
}

/**
 * A copy holding only the scalar, by kind: `method` one of the HTTP methods, a status code from 100 to 599,
 * `endpoint` templated, other text through the free-text rule; numbers and booleans are measurements and stay.
 * Undefined (dropped) for structured or empty values, which cannot be vetted, and for a status out of range.
 */
function scalarValue(key: string, value: AnyValue, vocabulary: Vocabulary): AnyValue | undefined {
  if (value.arrayValue !== undefined || value.kvlistValue !== undefined || value.bytesValue !== undefined) return undefined;
  if (statusKeys.has(key)) {
    const code = Number(value.intValue ?? value.stringValue ?? Number.NaN);
    if (!Number.isInteger(code) || code < 100 || code > 599) return undefined;
    return value.intValue !== undefined ? { intValue: String(code) } : { stringValue: String(code) };
  }
  if (value.stringValue !== undefined) {
    if (key === "method") return { stringValue: methodValue(value.stringValue) };
    return { stringValue: key === "endpoint" ? endpointTemplate(value.stringValue, vocabulary) : scrubText(value.stringValue, vocabulary) };
  }
  if (value.intValue !== undefined) return { intValue: value.intValue };
  if (value.boolValue !== undefined) return { boolValue: value.boolValue };
  if (value.doubleValue !== undefined) return { doubleValue: value.doubleValue };
  return undefined;
}

function methodValue(method: string): string {
  if (rpcMethods.has(method)) return method;
  return methods.has(method.toUpperCase()) ? method.toUpperCase() : "_OTHER";
}

/** Bodies leave as free text; a structured body cannot be vetted key by key, so only the fact of it leaves. */
export function scrubBody(body: AnyValue | undefined, vocabulary: Vocabulary): AnyValue {
  if (body === undefined) return { stringValue: "" };
  if (body.arrayValue !== undefined || body.kvlistValue !== undefined || body.bytesValue !== undefined) {
    return { stringValue: "[structured body removed]" };
  }
  if (body.stringValue !== undefined) return { stringValue: scrubText(body.stringValue, vocabulary) };
  if (body.boolValue !== undefined) return { stringValue: String(body.boolValue) };
  if (body.intValue !== undefined || body.doubleValue !== undefined) return { stringValue: NUM };
  return { stringValue: "" };
}

/** A metric unit: as it is when every part is a UCUM unit, a product word or a `{word}` annotation, else free text. */
export function scrubUnit(unit: string, vocabulary: Vocabulary): string {
  const known = (part: string): boolean => {
    if (ucum.has(part) || vocabulary.product.has(part.toLowerCase())) return true;
    const annotation = /^\{([a-z_.]{1,32})\}$/.exec(part);
    return (
      annotation !== null && annotation[1]!.split(/[_.]/).every((word) => vocabulary.english.has(word) || vocabulary.product.has(word))
    );
  };
  const parts = unit.split("/");
  return parts.length <= 2 && parts.every(known) ? unit : scrubText(unit, vocabulary);
}

const identifier = /^[A-Za-z0-9_.\-/]{1,255}$/;

/**
 * A metric name: an identifier (`http_server_duration`, `db.pool.size`) keeps each of its words the vocabulary knows,
 * numbers and other words become placeholders (`logins_<text>_<num>`); anything else is free text.
 */
export function scrubMetricName(name: string, vocabulary: Vocabulary): string {
  const normal = normalise(name);
  if (vocabulary.product.has(normal.toLowerCase()) || !identifier.test(normal)) return scrubText(name, vocabulary);
  return normal
    .split(/([_.\-/])/)
    .map((part, i) => (i % 2 === 1 || part === "" ? part : keepWord(part, vocabulary, { sentenceStart: false, value: false })))
    .join("");
}

/** An instrumentation scope's version: a short version number as it is, else free text. */
export function scrubVersion(text: string, vocabulary: Vocabulary): string {
  return version.test(text) ? text : scrubText(text, vocabulary);
}
