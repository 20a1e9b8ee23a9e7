import protobuf from "protobufjs";

// The walk that decodes OTLP protobuf straight into the OTLP JSON object form, one hand-written function per message
// type (src/protocol/otlp-wire-signals.ts has the signals' own): what a counting pass, protobufjs's decode and
// toObject({longs: String, enums: Number, arrays: true, json: true}) and a bytes-to-text pass did in four passes and
// two object graphs, in one. Its rules are protobufjs's, read off the code it generates: a field of another wire type than declared is
// skipped as unknown; a scalar outside a oneof that comes again wins, its zero value (proto3's default) removing it;
// a message field that comes again is merged into the first (its lists appended to); setting a oneof member removes
// the others. Tags are `field << 3 | wire type` (0 varint, 1 64-bit, 2 length-delimited, 5 32-bit); the fields are
// those src/protocol/otlp-proto-schema.ts declares, test/protocol/otlp-protobuf-equivalence.test.ts holds them alike.

/** A decoded message in the OTLP JSON form. */
/** protobufjs's strict decoder, as it makes it: invalid UTF-8 throws, a byte order mark stays. */
const strictUtf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

export type Json = Record<string, unknown>;

/** Decodes one message's fields up to `end` into `into` (a message field seen before, merged into) or a new object. */
export type MessageWalk = (wire: Wire, end: number, depth: number, into: Json | undefined) => Json;

/** protobufjs's recursion limit, protoc's too: a message nested deeper is refused. */
const MAX_DEPTH = 100;
const TWO_POW_32 = 4294967296;
/** Below 2^21 in the upper half, a 64-bit integer is a double exactly (|value| < 2^53). */
const EXACT_HIGH = 0x200000;

/** One decode: the protobufjs Reader over the body, and the count of the messages made, charged as they are made. */
export class Wire {
  readonly reader: protobuf.Reader;
  readonly #buffer: Buffer;
  readonly #recentTimes = [
    { low: -1, high: -1, signed: false, text: "" },
    { low: -1, high: -1, signed: false, text: "" },
  ];
  #nextSlot = 0;
  readonly #charge: (messages: number) => void;

  constructor(body: Uint8Array, charge: (messages: number) => void) {
    this.#buffer = Buffer.isBuffer(body) ? body : Buffer.from(body.buffer, body.byteOffset, body.byteLength);
    this.reader = protobuf.Reader.create(this.#buffer);
    this.#charge = charge;
  }

  /** A length-delimited field of message type `walk`: charged, then decoded within its length, one level deeper. */
  message(depth: number, walk: MessageWalk, into?: Json): Json {
    const reader = this.reader;
    const length = reader.size();
    if (depth >= MAX_DEPTH) throw Error("max depth exceeded");
    const end = reader.pos + length;
    if (end > reader.len) throw RangeError("index out of range");
    this.#charge(1);
    const len = reader.len;
    reader.len = end; // as protobufjs does: nothing inside reads past the message's end
    const message = walk(this, end, depth + 1, into);
    if (reader.pos !== end) throw RangeError("index out of range");
    reader.len = len;
    return message;
  }

  /** Skips a field the walk does not read (unknown, or not of its declared wire type), as protobufjs skips it. */
  skip(tag: number, depth: number): void {
    this.reader.skipType(tag & 7, depth, tag >>> 3);
  }

  /**
   * A string field: UTF-8 checked, as protobufjs's stringVerify checks it (the same decoder), but made in one native
   * call: protobufjs joins a short string eight characters at a time, and every OTLP attribute is a short string.
   */
  string(): string {
    const { start, end } = this.#span();
    const buffer = this.#buffer;
    for (let i = start; i < end; i++) if (buffer[i]! > 0x7f) return strictUtf8.decode(buffer.subarray(start, end));
    return buffer.toString("latin1", start, end);
  }

  /** A bytes field as text: "hex" for trace and span ids, "base64" for other bytes, as OTLP JSON has them. */
  bytes(encoding: "hex" | "base64"): string {
    const { start, end } = this.#span();
    return this.#buffer.toString(encoding, start, end);
  }

  /** A length-delimited field's bytes, read past (protobufjs's error when its length runs past the body). */
  #span(): { start: number; end: number } {
    const reader = this.reader;
    const length = reader.size();
    const start = reader.pos;
    const end = start + length;
    if (end > reader.len) throw RangeError("index out of range");
    reader.pos = end;
    return { start, end };
  }

  /** A fixed64 (or, `signed`, sfixed64) field as a decimal string. */
  fixed64(signed: boolean): string {
    const reader = this.reader;
    const at = reader.pos;
    if (at + 8 > reader.len) throw RangeError("index out of range");
    reader.pos = at + 8;
    const low = this.#buffer.readUInt32LE(at);
    const high = this.#buffer.readUInt32LE(at + 4);
    // Times are fixed64 nanoseconds, past 2^53: each a BigInt to write. A request's points mostly share their two
    // (start and time), so the last two conversions are kept.
    const slots = this.#recentTimes;
    for (const slot of slots) if (slot.low === low && slot.high === high && slot.signed === signed) return slot.text;
    const text = int64String(low, high, signed);
    slots[this.#nextSlot] = { low, high, signed, text };
    this.#nextSlot ^= 1;
    return text;
  }

  /** An int64 (varint) field as a decimal string. */
  int64(): string {
    // A Long (protobufjs depends on `long`); a number only were it missing, as toObject has it then.
    const value = this.reader.int64() as unknown as number | { low: number; high: number };
    return typeof value === "number" ? String(value) : int64String(value.low, value.high, true);
  }

  /** A double field: NaN and ±Infinity as the strings proto3 JSON has for them (the schema refuses them). */
  double(): number | string {
    const value = this.reader.double();
    return Number.isFinite(value) ? value : String(value);
  }
}

/** A 64-bit integer from its 32-bit halves as a decimal string, through a double when that is exact, else a BigInt. */
function int64String(low: number, high: number, signed: boolean): string {
  const top = signed ? high | 0 : high >>> 0;
  if (top < EXACT_HIGH && top >= -EXACT_HIGH) return String(top * TWO_POW_32 + (low >>> 0));
  const value = (BigInt(high >>> 0) << 32n) | BigInt(low >>> 0);
  return (signed ? BigInt.asIntN(64, value) : value).toString();
}

/** Decodes a whole body as the request message `walk`. */
export function walkBody(body: Uint8Array, walk: MessageWalk, charge: (messages: number) => void): Json {
  const wire = new Wire(body, charge);
  return walk(wire, wire.reader.len, 0, undefined);
}

const ANY_VALUE_MEMBERS = ["stringValue", "boolValue", "intValue", "doubleValue", "arrayValue", "kvlistValue", "bytesValue"];

/** Setting one member of a oneof removes the others (protobufjs's oneof setter). */
export function clearOneof(message: Json, members: readonly string[], keep: string): void {
  for (const member of members) if (member !== keep && member in message) delete message[member];
}

export const anyValue: MessageWalk = (wire, end, depth, into) => {
  const value = into ?? {};
  let set = into !== undefined; // a member may be there already
  const reader = wire.reader;
  while (reader.pos < end) {
    const tag = reader.tag();
    let member: string;
    switch (tag) {
      case 10: // 1 string_value
        value.stringValue = wire.string();
        member = "stringValue";
        break;
      case 16: // 2 bool_value
        value.boolValue = reader.bool();
        member = "boolValue";
        break;
      case 24: // 3 int_value
        value.intValue = wire.int64();
        member = "intValue";
        break;
      case 33: // 4 double_value
        value.doubleValue = wire.double();
        member = "doubleValue";
        break;
      case 42: // 5 array_value
        value.arrayValue = wire.message(depth, arrayValue, value.arrayValue as Json | undefined);
        member = "arrayValue";
        break;
      case 50: // 6 kvlist_value
        value.kvlistValue = wire.message(depth, keyValueList, value.kvlistValue as Json | undefined);
        member = "kvlistValue";
        break;
      case 58: // 7 bytes_value
        value.bytesValue = wire.bytes("base64");
        member = "bytesValue";
        break;
      default:
        wire.skip(tag, depth);
        continue;
    }
    if (set) clearOneof(value, ANY_VALUE_MEMBERS, member);
    set = true;
  }
  return value;
};

/** A message of one repeated field (field 1) of message type `item`, named `key`: ArrayValue, KeyValueList, Gauge. */
export function listOf(key: string, item: MessageWalk): MessageWalk {
  return (wire, end, depth, into) => {
    const message = into ?? { [key]: [] };
    const list = message[key] as Json[];
    const reader = wire.reader;
    while (reader.pos < end) {
      const tag = reader.tag();
      if (tag === 10) list.push(wire.message(depth, item));
      else wire.skip(tag, depth);
    }
    return message;
  };
}

export const keyValue: MessageWalk = (wire, end, depth, into) => {
  const pair = into ?? {};
  const reader = wire.reader;
  while (reader.pos < end) {
    const tag = reader.tag();
    if (tag === 10) {
      const key = wire.string();
      if (key !== "") pair.key = key;
      else delete pair.key;
    } else if (tag === 18) pair.value = wire.message(depth, anyValue, pair.value as Json | undefined);
    else wire.skip(tag, depth);
  }
  return pair;
};

const arrayValue = listOf("values", anyValue);
const keyValueList = listOf("values", keyValue);

/** A string field outside a oneof: the empty string is no field at all. */
export function putString(message: Json, key: string, value: string): void {
  if (value !== "") message[key] = value;
  else delete message[key];
}

/** A number field outside a oneof: zero is no field at all. */
export function putNumber(message: Json, key: string, value: number): void {
  if (value !== 0) message[key] = value;
  else delete message[key];
}

/** Resource {attributes = 1, dropped_attributes_count = 2}. */
export const resource: MessageWalk = (wire, end, depth, into) => {
  const message = into ?? { attributes: [] };
  const reader = wire.reader;
  while (reader.pos < end) {
    const tag = reader.tag();
    if (tag === 10) (message.attributes as Json[]).push(wire.message(depth, keyValue));
    else if (tag === 16) putNumber(message, "droppedAttributesCount", reader.uint32());
    else wire.skip(tag, depth);
  }
  return message;
};

/** InstrumentationScope {name = 1, version = 2, attributes = 3, dropped_attributes_count = 4}. */
export const scope: MessageWalk = (wire, end, depth, into) => {
  const message = into ?? { attributes: [] };
  const reader = wire.reader;
  while (reader.pos < end) {
    const tag = reader.tag();
    if (tag === 10) putString(message, "name", wire.string());
    else if (tag === 18) putString(message, "version", wire.string());
    else if (tag === 26) (message.attributes as Json[]).push(wire.message(depth, keyValue));
    else if (tag === 32) putNumber(message, "droppedAttributesCount", reader.uint32());
    else wire.skip(tag, depth);
  }
  return message;
};

/**
 * The three levels every signal has: the request (its resources, field 1), each resource (resource = 1, its scopes
 * = 2, schema_url = 3) and each scope (scope = 1, its items = 2, schema_url = 3); `keys` names the lists, top down.
 */
export function levels(keys: readonly [string, string, string], item: MessageWalk): MessageWalk {
  const inScope = level(keys[2], "scope", scope, item);
  return listOf(keys[0], level(keys[1], "resource", resource, inScope));
}

function level(listKey: string, headKey: string, head: MessageWalk, item: MessageWalk): MessageWalk {
  return (wire, end, depth, into) => {
    const message = into ?? { [listKey]: [] };
    const reader = wire.reader;
    while (reader.pos < end) {
      const tag = reader.tag();
      if (tag === 10) message[headKey] = wire.message(depth, head, message[headKey] as Json | undefined);
      else if (tag === 18) (message[listKey] as Json[]).push(wire.message(depth, item));
      else if (tag === 26) putString(message, "schemaUrl", wire.string());
      else wire.skip(tag, depth);
    }
    return message;
  };
}
