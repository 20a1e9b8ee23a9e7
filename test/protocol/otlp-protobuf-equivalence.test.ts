import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import protobuf from "protobufjs";
import { otlpBodies, protobufBodies } from "../../bench/workloads.ts";
import { HttpError } from "../../src/errors.ts";
import { otlpProtoTypes } from "../../src/protocol/otlp-proto-schema.ts";
import { OtlpDecodeError, decodeOtlpProtobuf } from "../../src/protocol/otlp-protobuf.ts";
import { countOtlpMessages } from "../../src/protocol/otlp-wire-count.ts";
import type { OtlpSignal } from "../../src/protocol/otlp.ts";
import { fcOptions } from "../bad-input/arbitraries.ts";
import { logsRequest, metricsRequest, tracesRequest } from "../helpers/fixtures.ts";
import { referenceDecode } from "../helpers/otlp-protobuf-reference.ts";

// The one-pass decoder against the one it replaced (protobufjs's decode and toObject, then bytes as text): on any
// bytes, both give the same object or both refuse, and the walk counts the messages the counting pass counted.
// Requests are made field by field along the schema with protobufjs's Writer, so they hold what an encoder never
// writes but a receiver must read: fields in any order, a field that should come once coming again (the last wins,
// a message is merged), oneof members one after another, zero values written out, fields of another wire type than
// declared, unknown fields and groups, 64-bit extremes, NaN, ±Infinity and -0, strings that are not UTF-8.

const SIGNALS: readonly OtlpSignal[] = ["metrics", "traces", "logs"];
const WIRE: Record<string, number> = protobuf.types.basic;

const int64 = fc.oneof(fc.constant(0n), fc.bigInt(-(2n ** 63n), 2n ** 63n - 1n), fc.bigInt(-(2n ** 53n), 2n ** 53n));
const uint64 = fc.oneof(
  fc.constant(0n),
  fc.bigInt(0n, 2n ** 64n - 1n),
  fc.bigInt(0n, 2n ** 53n),
  fc.bigInt(2n ** 53n - 2n, 2n ** 53n + 2n),
);
/** A 64-bit integer as protobufjs's Writer takes it (a Long's two halves): exact, whatever its size or sign. */
const long = (value: bigint) =>
  ({ low: Number(BigInt.asIntN(32, value)), high: Number(BigInt.asIntN(32, value >> 32n)) }) as unknown as number;
// Now and then a lone surrogate, which is no UTF-8 once written.
const string = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.oneof(fc.constant(""), fc.string(), fc.string({ unit: "grapheme" }), fc.string({ minLength: 60, maxLength: 90 })),
  },
  { weight: 1, arbitrary: fc.string({ unit: "binary", maxLength: 8 }) },
);

/** A value of a scalar type written with its tag. */
function scalar(type: string, id: number): fc.Arbitrary<(writer: protobuf.Writer) => void> {
  const tag = (writer: protobuf.Writer) => writer.uint32(((id << 3) | WIRE[type]!) >>> 0);
  const write = <T>(values: fc.Arbitrary<T>, put: (writer: protobuf.Writer, value: T) => void) =>
    values.map((value) => (writer: protobuf.Writer) => put(tag(writer), value));
  switch (type) {
    case "string":
      // and bytes that are no UTF-8 at all
      return fc.oneof(
        { weight: 20, arbitrary: write(string, (w, v) => w.string(v)) },
        { weight: 1, arbitrary: write(fc.uint8Array({ maxLength: 6 }), (w, v) => w.bytes(v)) },
      );
    case "bytes":
      return write(fc.oneof(fc.uint8Array({ maxLength: 0 }), fc.uint8Array({ maxLength: 20 })), (w, v) => w.bytes(v));
    case "bool":
      return write(fc.oneof(fc.boolean(), fc.integer({ min: 0, max: 2 ** 31 - 1 })), (w, v) => w.uint32(Number(v)));
    case "int32":
      return write(fc.oneof(fc.constant(0), fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 })), (w, v) => w.int32(v));
    case "uint32":
      return write(fc.oneof(fc.constant(0), fc.nat(), fc.integer({ min: 0, max: 2 ** 32 - 1 })), (w, v) => w.uint32(v));
    case "fixed32":
      return write(fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 2 ** 32 - 1 })), (w, v) => w.fixed32(v));
    case "int64":
      return write(int64, (w, v) => w.int64(long(v)));
    case "sfixed64":
      return write(int64, (w, v) => w.sfixed64(long(v)));
    case "fixed64":
      return write(uint64, (w, v) => w.fixed64(long(v)));
    case "double":
      return write(fc.oneof(fc.double(), fc.constantFrom(0, -0, Number.NaN, Infinity, -Infinity)), (w, v) => w.double(v));
  }
  throw new Error(`no arbitrary for ${type}`);
}

/** A field of any number and wire type with a well-formed value, mostly unknown to the type; or a group. */
function anyField(): fc.Arbitrary<(writer: protobuf.Writer) => void> {
  const id = fc.oneof(fc.integer({ min: 1, max: 20 }), fc.integer({ min: 1, max: 2 ** 29 - 1 }));
  const valued = fc.tuple(id, fc.constantFrom(0, 1, 2, 5), fc.uint8Array({ maxLength: 12 }), fc.bigInt(0n, 2n ** 64n - 1n));
  const field = valued.map(([number, wire, bytes, value]) => (writer: protobuf.Writer) => {
    writer.uint32(((number << 3) | wire) >>> 0);
    if (wire === 0) writer.uint64(long(value));
    else if (wire === 1) writer.fixed64(long(value));
    else if (wire === 2) writer.bytes(bytes);
    else writer.fixed32(Number(value & 0xffffffffn));
  });
  const group = fc.tuple(id, fc.array(field, { maxLength: 3 })).map(([number, inner]) => (writer: protobuf.Writer) => {
    writer.uint32(((number << 3) | 3) >>> 0);
    for (const write of inner) write(writer);
    writer.uint32(((number << 3) | 4) >>> 0);
  });
  return fc.oneof({ weight: 9, arbitrary: field }, { weight: 1, arbitrary: group });
}

/** Deeper than this, message fields are left out: the requests stay small. */
const MAX_DEPTH = 9;
const messages = new Map<string, fc.Arbitrary<Uint8Array>>();

/** The bytes of a message of `type`: its fields, any of them any number of times, in any order, and unknown ones. */
function message(type: protobuf.Type, depth: number): fc.Arbitrary<Uint8Array> {
  const key = `${type.fullName}@${depth}`;
  const known = messages.get(key);
  if (known) return known;
  const fields = type.fieldsArray.flatMap((field) => {
    const nested = field.resolvedType;
    if (!(nested instanceof protobuf.Type)) return [scalar(field.type, field.id)];
    if (depth >= MAX_DEPTH) return [];
    return [message(nested, depth + 1).map((bytes) => (writer: protobuf.Writer) => writer.uint32((field.id << 3) | 2).bytes(bytes))];
  });
  const field = fields.length > 0 ? fc.oneof({ weight: 6, arbitrary: fc.oneof(...fields) }, anyField()) : anyField();
  const arbitrary = fc.array(field, { maxLength: depth < 4 ? 5 : 2 }).map((writes) => {
    const writer = protobuf.Writer.create();
    for (const write of writes) write(writer);
    return writer.finish();
  });
  messages.set(key, arbitrary);
  return arbitrary;
}

const request = fc
  .constantFrom(...SIGNALS)
  .chain((signal) => message(otlpProtoTypes.requests[signal], 0).map((bytes) => ({ signal, bytes })));

/** Bytes changed as a careless or hostile sender would: flipped, cut, inserted, removed. */
const damaged = fc
  .tuple(
    request,
    fc.array(fc.tuple(fc.constantFrom("flip", "cut", "insert", "remove"), fc.nat(), fc.integer({ min: 1, max: 255 })), {
      minLength: 1,
      maxLength: 3,
    }),
  )
  .map(([{ signal, bytes }, changes]) => {
    let body = Array.from(bytes);
    for (const [change, at, byte] of changes) {
      const i = body.length === 0 ? 0 : at % body.length;
      if (change === "flip" && body.length > 0) body[i] = body[i]! ^ byte;
      else if (change === "cut") body = body.slice(0, i);
      else if (change === "insert") body.splice(i, 0, byte);
      else body.splice(i, 1);
    }
    return { signal, bytes: Uint8Array.from(body) };
  });

/** Both decoders on `bytes` (as a Buffer or a plain Uint8Array): the same object and count, or both refuse. */
function assertSame(signal: OtlpSignal, bytes: Uint8Array, asBuffer = true): "decoded" | "refused" {
  const body = asBuffer ? Buffer.from(bytes) : Uint8Array.from(bytes);
  let expected: unknown;
  try {
    expected = referenceDecode(signal, body);
  } catch {
    assert.throws(() => decodeOtlpProtobuf(signal, body), OtlpDecodeError, "the old decoder refuses it: the new one must too");
    return "refused";
  }
  let messages = 0;
  const decoded = decodeOtlpProtobuf(signal, body, (count) => {
    messages += count;
  });
  assert.deepStrictEqual(decoded, expected);
  assert.equal(messages, countOtlpMessages(signal, body, Number.POSITIVE_INFINITY), "the messages counted ahead of decoding");
  return "decoded";
}

describe("decodeOtlpProtobuf equals protobufjs's decode + toObject + bytes as text", () => {
  test("the fixtures' requests and the bench workload", () => {
    const fixtures = { metrics: metricsRequest(), traces: tracesRequest(), logs: logsRequest() };
    for (const signal of SIGNALS) {
      const type = otlpProtoTypes.requests[signal];
      assert.equal(assertSame(signal, type.encode(type.fromObject(fixtures[signal])).finish()), "decoded");
    }
    for (const body of protobufBodies(otlpBodies(5))) assert.equal(assertSame("metrics", body), "decoded");
    for (const signal of SIGNALS) assert.equal(assertSame(signal, new Uint8Array()), "decoded");
  });

  test("random requests of every field, as Buffer and as Uint8Array", () => {
    const outcomes = { decoded: 0, refused: 0 };
    fc.assert(
      fc.property(request, fc.boolean(), ({ signal, bytes }, asBuffer) => {
        outcomes[assertSame(signal, bytes, asBuffer)]++;
      }),
      fcOptions(1500),
    );
    // Some hold strings that are no UTF-8 or ill-formed groups: most decode.
    console.log(`# random requests: ${JSON.stringify(outcomes)}`);
    assert.ok(outcomes.decoded > outcomes.refused && outcomes.refused > 0, JSON.stringify(outcomes));
  });

  test("random requests flipped, cut, grown and shrunk: the same refusals", () => {
    const outcomes = { decoded: 0, refused: 0 };
    fc.assert(
      fc.property(damaged, ({ signal, bytes }) => {
        outcomes[assertSame(signal, bytes)]++;
      }),
      fcOptions(1500),
    );
    console.log(`# damaged requests: ${JSON.stringify(outcomes)}`);
    assert.ok(outcomes.decoded > 0 && outcomes.refused > 0, JSON.stringify(outcomes));
  });

  test("nesting: refused from the same depth on, for messages and for unknown groups", () => {
    const delimited = (tag: number, contents: Uint8Array) => protobuf.Writer.create().uint32(tag).bytes(contents).finish();
    /** A logs request whose record's body is an AnyValue array nested `depth` times around `innermost`. */
    const nestedValues = (innermost: Uint8Array) => (depth: number) => {
      let value = innermost;
      for (let i = 0; i < depth; i++) value = delimited(0x2a, delimited(0x0a, value));
      return delimited(0x0a, delimited(0x12, delimited(0x12, delimited(0x2a, value))));
    };
    /** A logs request whose record holds an unknown group nested `depth` times. */
    const nestedGroups = (depth: number) => {
      const writer = protobuf.Writer.create();
      for (let i = 0; i < depth; i++) writer.uint32((99 << 3) | 3);
      for (let i = 0; i < depth; i++) writer.uint32((99 << 3) | 4);
      return delimited(0x0a, delimited(0x12, delimited(0x12, writer.finish())));
    };
    // AnyValues sit at even depths, ArrayValues at odd ones: the deepest message is either.
    const deepest = [nestedValues(delimited(0x0a, Uint8Array.of(0x78))), nestedValues(delimited(0x2a, new Uint8Array())), nestedGroups];
    for (const nested of deepest) {
      const outcomes = Array.from({ length: 110 }, (_, depth) => assertSame("logs", nested(depth)));
      assert.ok(outcomes.includes("decoded") && outcomes.includes("refused"), outcomes.join());
      assert.equal(outcomes.lastIndexOf("decoded") + 1, outcomes.indexOf("refused"), "one depth from where on all are refused");
    }
  });
});

describe("decodeOtlpProtobuf charges each message as it makes it", () => {
  const chargeAtMost = (max: number) => {
    let messages = 0;
    return (count: number) => {
      messages += count;
      if (messages > max) throw new HttpError("EGRESS_ERR_BODY_TOO_MANY_ITEMS", `more than ${max} messages`);
    };
  };
  const emptyResources = (count: number) => Buffer.alloc(2 * count, Buffer.from([0x0a, 0x00]));

  test("the charge's refusal ends the decode and passes through; within the bound it decodes", () => {
    assert.equal((decodeOtlpProtobuf("metrics", emptyResources(1000), chargeAtMost(1000)) as any).resourceMetrics.length, 1000);
    assert.throws(
      () => decodeOtlpProtobuf("metrics", emptyResources(1001), chargeAtMost(1000)),
      (error) => {
        assert.ok(error instanceof HttpError && error.message === "more than 1000 messages");
        return true;
      },
    );
  });

  test("a protobuf bomb (8 million empty messages in 16 MiB) is refused once past the bound, before it is built", () => {
    let charged = 0;
    const started = performance.now();
    assert.throws(
      () =>
        decodeOtlpProtobuf("traces", emptyResources(8_000_000), (count) => {
          charged += count;
          if (charged > 500_000) throw new HttpError("EGRESS_ERR_BODY_TOO_MANY_ITEMS", "too many");
        }),
      HttpError,
    );
    assert.equal(charged, 500_001);
    assert.ok(performance.now() - started < 5000);
  });
});
