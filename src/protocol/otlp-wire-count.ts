import protobuf from "protobufjs";
import { otlpProtoTypes } from "./otlp-proto-schema.ts";
import type { OtlpSignal } from "./otlp.ts";

// The messages an OTLP protobuf body holds, counted by reading tags and lengths only: what decoding it would make,
// known before making any of it. A JSON body's items are counted as it arrives (src/http/body.ts), so one over the
// limit is refused before it is parsed; this does the same for protobuf, whose 16 MiB of empty messages would
// otherwise be half a million objects (57 MiB, bench/RESULTS.md) made before the 413. The fields are the schema's of record
// (otlp-proto-schema.ts), which the decoding walk is held to: both count the same messages.

/** The walk's and protobufjs's recursion limit. */
const MAX_DEPTH = 100;

/** For each message type, the tags (field << 3 | 2) of its message fields, and each one's type. */
const messageTags = new Map<protobuf.Type, Map<number, protobuf.Type>>();

function tagsOf(type: protobuf.Type): Map<number, protobuf.Type> {
  let tags = messageTags.get(type);
  if (tags === undefined) {
    tags = new Map();
    for (const field of type.fieldsArray)
      if (field.resolvedType instanceof protobuf.Type) tags.set((field.id << 3) | 2, field.resolvedType);
    messageTags.set(type, tags);
  }
  return tags;
}

/**
 * The messages in an export request of `signal`, counted until the count passes `max` (then more than `max` is all
 * that is known). A body that cannot be read that far is counted up to where it breaks: decoding it says why.
 */
export function countOtlpMessages(signal: OtlpSignal, body: Uint8Array, max: number): number {
  const reader = protobuf.Reader.create(body);
  let count = 0;
  const walk = (type: protobuf.Type, end: number, depth: number): void => {
    const tags = tagsOf(type);
    // A type without fields skips with the whole tag where the field number goes, as the walk (and protobufjs) does:
    // field number 0 passes there, and a count that stopped on it would let a bomb past behind a few bytes.
    const fieldless = type.fieldsArray.length === 0;
    while (reader.pos < end && count <= max) {
      const tag = reader.tag();
      const child = tags.get(tag);
      if (child === undefined) {
        reader.skipType(tag & 7, depth, fieldless ? tag : tag >>> 3);
        continue;
      }
      const stop = reader.size() + reader.pos;
      if (stop > end || depth >= MAX_DEPTH) throw RangeError("unreadable");
      count++;
      walk(child, stop, depth + 1);
      reader.pos = stop;
    }
  };
  try {
    walk(otlpProtoTypes.requests[signal], reader.len, 0);
  } catch {
    // malformed past this point: the count so far stands
  }
  return count;
}
