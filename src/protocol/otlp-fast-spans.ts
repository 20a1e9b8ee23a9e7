/** The fast path's spans (see otlp-fast.ts): Span with its events, links and status, as otlp.ts's Span outputs them. */
import type { KeyValue, Span } from "./otlp.ts";
import {
  attributes,
  counted,
  countedBelow,
  countedList,
  hexId,
  isIntIn,
  isListAt,
  isObjectAt,
  startPart,
  unixNano,
} from "./otlp-fast-values.ts";

type SpanEvent = Span["events"][number];
type SpanLink = Span["links"][number];

const MAX = Number.MAX_SAFE_INTEGER;

export function fastSpan(raw: unknown): Span | undefined {
  startPart();
  if (!isObjectAt(raw, 1)) return undefined;
  let traceId: string | undefined,
    spanId: string | undefined,
    parentSpanId = "",
    traceState: string | undefined,
    name = "";
  let start: string | undefined, end: string | undefined, flags: number | undefined, kind: number | undefined;
  let attrs: KeyValue[] | undefined, events: SpanEvent[] | undefined, links: SpanLink[] | undefined, status: Span["status"] | undefined;
  let droppedAttributes = 0,
    droppedEvents = 0,
    droppedLinks = 0;
  for (const key in raw) {
    if (!counted()) return undefined;
    const x = raw[key];
    if (key === "traceId" || key === "spanId" || key === "parentSpanId") {
      const id = hexId(x, key === "traceId" ? 32 : 16, key === "parentSpanId");
      if (id === undefined) return undefined;
      if (key === "traceId") traceId = id;
      else if (key === "spanId") spanId = id;
      else parentSpanId = id;
    } else if (key === "startTimeUnixNano" || key === "endTimeUnixNano") {
      const nanos = unixNano(x);
      if (nanos === undefined) return undefined;
      if (key === "startTimeUnixNano") start = nanos;
      else end = nanos;
    } else if (key === "name" || key === "traceState") {
      if (typeof x !== "string") return undefined;
      if (key === "name") name = x;
      else traceState = x;
    } else if (key === "droppedAttributesCount" || key === "droppedEventsCount" || key === "droppedLinksCount" || key === "flags") {
      if (!isIntIn(x, 0, MAX)) return undefined;
      if (key === "droppedAttributesCount") droppedAttributes = x;
      else if (key === "droppedEventsCount") droppedEvents = x;
      else if (key === "droppedLinksCount") droppedLinks = x;
      else flags = x;
    } else if (key === "kind") {
      if (!isIntIn(x, 0, 5)) return undefined;
      kind = x;
    } else if (key === "attributes") {
      attrs = attributes(x, 2);
      if (attrs === undefined) return undefined;
    } else if (key === "events") {
      events = listOf(x, eventOf);
      if (events === undefined) return undefined;
    } else if (key === "links") {
      links = listOf(x, linkOf);
      if (links === undefined) return undefined;
    } else if (key === "status") {
      status = statusOf(x);
      if (status === undefined) return undefined;
    } else if (!countedBelow(x, 2)) return undefined;
  }
  if (traceId === undefined || spanId === undefined || start === undefined || end === undefined) return undefined;
  const span = { traceId, spanId } as Span;
  if (traceState !== undefined) span.traceState = traceState;
  span.parentSpanId = parentSpanId;
  if (flags !== undefined) span.flags = flags;
  span.name = name;
  if (kind !== undefined) span.kind = kind;
  return Object.assign(span, {
    startTimeUnixNano: start,
    endTimeUnixNano: end,
    attributes: attrs ?? [],
    droppedAttributesCount: droppedAttributes,
    events: events ?? [],
    droppedEventsCount: droppedEvents,
    links: links ?? [],
    droppedLinksCount: droppedLinks,
    status: status ?? { code: 0 },
  });
}

/** A span's events or links (a list at depth 2 of objects at depth 3). */
function listOf<T>(v: unknown, element: (v: unknown) => T | undefined): T[] | undefined {
  if (!isListAt(v, 2) || !countedList(v)) return undefined;
  const list: T[] = [];
  for (let i = 0; i < v.length; i++) {
    const item = element(v[i]);
    if (item === undefined) return undefined;
    list.push(item);
  }
  return list;
}

function eventOf(v: unknown): SpanEvent | undefined {
  if (!isObjectAt(v, 3)) return undefined;
  let time: string | undefined;
  let name = "";
  let attrs: KeyValue[] | undefined;
  let dropped = 0;
  for (const key in v) {
    if (!counted()) return undefined;
    const x = v[key];
    if (key === "timeUnixNano") {
      time = unixNano(x);
      if (time === undefined) return undefined;
    } else if (key === "name") {
      if (typeof x !== "string") return undefined;
      name = x;
    } else if (key === "attributes") {
      attrs = attributes(x, 4);
      if (attrs === undefined) return undefined;
    } else if (key === "droppedAttributesCount") {
      if (!isIntIn(x, 0, MAX)) return undefined;
      dropped = x;
    } else if (!countedBelow(x, 4)) return undefined;
  }
  if (time === undefined) return undefined;
  return { timeUnixNano: time, name, attributes: attrs ?? [], droppedAttributesCount: dropped };
}

function linkOf(v: unknown): SpanLink | undefined {
  if (!isObjectAt(v, 3)) return undefined;
  let traceId: string | undefined;
  let spanId: string | undefined;
  let traceState: string | undefined;
  let attrs: KeyValue[] | undefined;
  let dropped = 0;
  for (const key in v) {
    if (!counted()) return undefined;
    const x = v[key];
    if (key === "traceId" || key === "spanId") {
      const id = hexId(x, key === "traceId" ? 32 : 16, false);
      if (id === undefined) return undefined;
      if (key === "traceId") traceId = id;
      else spanId = id;
    } else if (key === "traceState") {
      if (typeof x !== "string") return undefined;
      traceState = x;
    } else if (key === "attributes") {
      attrs = attributes(x, 4);
      if (attrs === undefined) return undefined;
    } else if (key === "droppedAttributesCount") {
      if (!isIntIn(x, 0, MAX)) return undefined;
      dropped = x;
    } else if (!countedBelow(x, 4)) return undefined;
  }
  if (traceId === undefined || spanId === undefined) return undefined;
  return traceState === undefined
    ? { traceId, spanId, attributes: attrs ?? [], droppedAttributesCount: dropped }
    : { traceId, spanId, traceState, attributes: attrs ?? [], droppedAttributesCount: dropped };
}

/** Status: `{ code: 0 }` when left out (the schema's prefault), message only when sent. */
function statusOf(v: unknown): Span["status"] | undefined {
  if (!isObjectAt(v, 2)) return undefined;
  let message: string | undefined;
  let code = 0;
  for (const key in v) {
    if (!counted()) return undefined;
    const x = v[key];
    if (key === "message") {
      if (typeof x !== "string") return undefined;
      message = x;
    } else if (key === "code") {
      if (!isIntIn(x, 0, 2)) return undefined;
      code = x;
    } else if (!countedBelow(x, 3)) return undefined;
  }
  return message === undefined ? { code } : { message, code };
}
