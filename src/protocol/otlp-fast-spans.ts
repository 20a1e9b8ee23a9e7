/** The fast path's spans (see otlp-fast.ts): Span with its events, links and status, as otlp.ts's Span outputs them. */
import type { KeyValue, Span } from "./otlp.ts";
import { attributes } from "./otlp-fast-attributes.ts";
import { counted, editMark, hexId, isIntIn, isObjectAt, reusable, skipped, startPart, unixNano, validList } from "./otlp-fast-values.ts";

type SpanEvent = Span["events"][number];
type SpanLink = Span["links"][number];

const MAX = Number.MAX_SAFE_INTEGER;

export function fastSpan(raw: unknown): Span | undefined {
  startPart();
  if (!isObjectAt(raw, 1)) return undefined;
  const mark = editMark();
  let traceId: string | undefined, spanId: string | undefined, parentSpanId: string | undefined, traceState: string | undefined;
  let name: string | undefined, start: string | undefined, end: string | undefined, flags: number | undefined, kind: number | undefined;
  let attrs: KeyValue[] | undefined, events: SpanEvent[] | undefined, links: SpanLink[] | undefined, status: Span["status"] | undefined;
  let droppedAttributes: number | undefined, droppedEvents: number | undefined, droppedLinks: number | undefined;
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
      events = validList(x, 2, eventOf);
      if (events === undefined) return undefined;
    } else if (key === "links") {
      links = validList(x, 2, linkOf);
      if (links === undefined) return undefined;
    } else if (key === "status") {
      status = statusOf(x);
      if (status === undefined) return undefined;
    } else if (!skipped(x, 2)) return undefined;
  }
  if (traceId === undefined || spanId === undefined || start === undefined || end === undefined) return undefined;
  const lists = attrs !== undefined && events !== undefined && links !== undefined && status !== undefined;
  const counts = droppedAttributes !== undefined && droppedEvents !== undefined && droppedLinks !== undefined;
  if (reusable(mark, lists && counts && parentSpanId !== undefined && name !== undefined)) return raw as Span;
  const span = { traceId, spanId } as Span;
  if (traceState !== undefined) span.traceState = traceState;
  span.parentSpanId = parentSpanId ?? "";
  if (flags !== undefined) span.flags = flags;
  span.name = name ?? "";
  if (kind !== undefined) span.kind = kind;
  return Object.assign(span, {
    startTimeUnixNano: start,
    endTimeUnixNano: end,
    attributes: attrs ?? [],
    droppedAttributesCount: droppedAttributes ?? 0,
    events: events ?? [],
    droppedEventsCount: droppedEvents ?? 0,
    links: links ?? [],
    droppedLinksCount: droppedLinks ?? 0,
    status: status ?? { code: 0 },
  });
}

function eventOf(v: unknown): SpanEvent | undefined {
  if (!isObjectAt(v, 3)) return undefined;
  const mark = editMark();
  let time: string | undefined;
  let name: string | undefined;
  let attrs: KeyValue[] | undefined;
  let dropped: number | undefined;
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
    } else if (!skipped(x, 4)) return undefined;
  }
  if (time === undefined) return undefined;
  if (reusable(mark, name !== undefined && attrs !== undefined && dropped !== undefined)) return v as SpanEvent;
  return { timeUnixNano: time, name: name ?? "", attributes: attrs ?? [], droppedAttributesCount: dropped ?? 0 };
}

function linkOf(v: unknown): SpanLink | undefined {
  if (!isObjectAt(v, 3)) return undefined;
  const mark = editMark();
  let traceId: string | undefined;
  let spanId: string | undefined;
  let traceState: string | undefined;
  let attrs: KeyValue[] | undefined;
  let dropped: number | undefined;
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
    } else if (!skipped(x, 4)) return undefined;
  }
  if (traceId === undefined || spanId === undefined) return undefined;
  if (reusable(mark, attrs !== undefined && dropped !== undefined)) return v as SpanLink;
  return traceState === undefined
    ? { traceId, spanId, attributes: attrs ?? [], droppedAttributesCount: dropped ?? 0 }
    : { traceId, spanId, traceState, attributes: attrs ?? [], droppedAttributesCount: dropped ?? 0 };
}

/** Status: `{ code: 0 }` when left out (the schema's prefault) or its code is, message only when sent. */
function statusOf(v: unknown): Span["status"] | undefined {
  if (!isObjectAt(v, 2)) return undefined;
  const mark = editMark();
  let message: string | undefined;
  let code: number | undefined;
  for (const key in v) {
    if (!counted()) return undefined;
    const x = v[key];
    if (key === "message") {
      if (typeof x !== "string") return undefined;
      message = x;
    } else if (key === "code") {
      if (!isIntIn(x, 0, 2)) return undefined;
      code = x;
    } else if (!skipped(x, 3)) return undefined;
  }
  if (reusable(mark, code !== undefined)) return v as Span["status"];
  return message === undefined ? { code: code ?? 0 } : { message, code: code ?? 0 };
}
