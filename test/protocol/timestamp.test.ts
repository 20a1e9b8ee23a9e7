import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import { parseRequest, RequestValidationError } from "../../src/http/validate.ts";
import { AuditQuery } from "../../src/protocol/audit.ts";
import { Timestamp } from "../../src/protocol/common.ts";
import { TransactionsRequest } from "../../src/protocol/local-api.ts";
import { IngestTracesRequest } from "../../src/protocol/trace-transaction.ts";
import { UsageSnapshot } from "../../src/protocol/usage-snapshot.ts";
import { traceTransaction, usageMeasures } from "../helpers/fixtures.ts";

/** What platforms write, and the one UTC text each becomes. */
const accepted: [string, string, string][] = [
  ["2026-11-01T10:00:00Z", "2026-11-01T10:00:00.000Z", "Z, no fraction (JavaScript without milliseconds, Go)"],
  ["2026-11-01T10:00:00.000Z", "2026-11-01T10:00:00.000Z", "JavaScript's toISOString, unchanged"],
  ["2026-11-01T10:00:00+00:00", "2026-11-01T10:00:00.000Z", "Python's isoformat() of an aware UTC datetime"],
  ["2026-11-01T10:00:00.123456+00:00", "2026-11-01T10:00:00.123456Z", "Python with microseconds: kept to the digit"],
  ["2026-11-01 10:00:00.123456+00:00", "2026-11-01T10:00:00.123456Z", "Python's str(): a space for T (RFC 3339, 5.6)"],
  ["2026-11-01t10:00:00z", "2026-11-01T10:00:00.000Z", "lower-case t and z (RFC 3339, 5.6)"],
  ["2026-11-01T10:00:00-00:00", "2026-11-01T10:00:00.000Z", "-00:00: UTC, local offset unknown (RFC 3339, 4.3)"],
  ["2026-11-01T12:00:00+02:00", "2026-11-01T10:00:00.000Z", "a positive offset"],
  ["2026-11-01T05:00:00-05:00", "2026-11-01T10:00:00.000Z", "a negative offset"],
  ["2026-11-01T04:30:00-05:30", "2026-11-01T10:00:00.000Z", "an offset with minutes"],
  ["2026-11-01T10:00:00.5Z", "2026-11-01T10:00:00.500Z", "one fraction digit: padded to milliseconds"],
  ["2026-11-01T10:00:00.123000+00:00", "2026-11-01T10:00:00.123Z", "zeros past the millisecond: dropped"],
  ["2026-11-01T10:00:00.1230001Z", "2026-11-01T10:00:00.1230001Z", "a digit past them: kept"],
  ["2026-11-01T10:00:00.123456789-05:00", "2026-11-01T15:00:00.123456789Z", "nanoseconds with an offset"],
  ["2026-11-01T10:00:00.12345678901234Z", "2026-11-01T10:00:00.12345678901234Z", "35 characters, the bound"],
  ["2026-11-01T00:30:00+01:00", "2026-10-31T23:30:00.000Z", "into the previous month (the billing month is UTC's)"],
  ["2026-12-31T23:59:59.999-14:00", "2027-01-01T13:59:59.999Z", "into the next year"],
  ["2024-02-29T12:00:00Z", "2024-02-29T12:00:00.000Z", "a leap day"],
  ["2000-02-29T12:00:00Z", "2000-02-29T12:00:00.000Z", "a leap day of a 400th year"],
  ["0099-06-01T00:00:00Z", "0099-06-01T00:00:00.000Z", "a year below 100 stays itself"],
];

/** What is not an RFC 3339 date-time with an offset, or no real date or time, and what the answer says. */
const refused: [string, RegExp, string][] = [
  ["2026-11-01T10:00:00", /no UTC offset/, "naive: ambiguous (ISO 8601 reads it as local time)"],
  ["2026-11-01T10:00:00.123456", /no UTC offset/, "Python's datetime.utcnow().isoformat(): naive too"],
  ["2026-02-30T10:00:00Z", /month 02 of 2026 has days 01-28/, "February 30"],
  ["2026-02-29T10:00:00Z", /days 01-28/, "February 29 of a common year"],
  ["2100-02-29T10:00:00Z", /days 01-28/, "February 29 of a century that is no leap year"],
  ["2026-04-31T10:00:00Z", /days 01-30/, "April 31"],
  ["2026-11-00T10:00:00Z", /days 01-30/, "day 0"],
  ["2026-13-01T10:00:00Z", /month must be 01-12/, "month 13"],
  ["2026-11-01T25:00:00Z", /hour must be 00-23/, "hour 25"],
  ["2026-11-01T24:00:00Z", /hour must be 00-23/, "ISO 8601's 24:00 (not RFC 3339)"],
  ["2026-11-01T10:60:00Z", /minute must be 00-59/, "minute 60"],
  ["2016-12-31T23:59:60Z", /leap seconds are not taken/, "a leap second"],
  ["2026-11-01T10:00:00+24:00", /offset/, "an offset of 24 hours"],
  ["2026-11-01T10:00:00+05:60", /offset/, "an offset of 60 minutes"],
  ["2026-11-01T10:00:00+0000", /RFC 3339/, "an offset without its colon (strftime's %z)"],
  ["2026-11-01T10:00:00+00", /RFC 3339/, "an offset of hours only"],
  ["2026-11-01T10:00Z", /RFC 3339/, "no seconds"],
  ["2026-11-01", /RFC 3339/, "a date alone"],
  ["20261101T100000Z", /RFC 3339/, "ISO 8601's basic format"],
  ["2026-11-01T10:00:00.Z", /RFC 3339/, "a point without digits"],
  ["2026-11-01T10:00:00,5Z", /RFC 3339/, "a comma for the point"],
  ["2026-11-01T10:00:00Z\n", /RFC 3339/, "a trailing newline"],
  ["2026-11-01T10:00:00 Z", /RFC 3339/, "a space before Z"],
  ["٢٠٢٦-11-01T10:00:00Z", /RFC 3339/, "digits that are not ASCII"],
  ["9999-12-31T23:00:00-05:00", /outside the years 0000-9999/, "past year 9999 once in UTC"],
  ["0000-01-01T00:30:00+01:00", /outside the years 0000-9999/, "before year 0 once in UTC"],
];

const FIELDS = ["start_insertion_time", "end_insertion_time", "start_interval_time", "end_interval_time"] as const;

/** A transaction with every time set to `value`, so no start can be after its end. */
const allTimes = (value: string) => traceTransaction(Object.fromEntries(FIELDS.map((f) => [f, value])));

function validationDetail(schema: Parameters<typeof parseRequest>[0], input: unknown, source = "body") {
  try {
    parseRequest(schema, input, source);
  } catch (err) {
    assert.ok(err instanceof RequestValidationError);
    return err.detail;
  }
  assert.fail("accepted");
}

describe("timestamps at intake", () => {
  test("every RFC 3339 date-time with an offset is taken, as one canonical UTC text, by the sidecar's and the beacon's schema", () => {
    for (const [sent, stored, what] of accepted) {
      const atSidecar = parseRequest(TransactionsRequest, { trace_transactions: [allTimes(sent)] }).trace_transactions[0]!;
      const atBeacon = parseRequest(IngestTracesRequest, { license: "k", trace_transactions: [allTimes(sent)] }).trace_transactions[0]!;
      for (const field of FIELDS) {
        assert.equal(atSidecar[field], stored, `${what}: ${sent} at the sidecar`);
        assert.equal(atBeacon[field], stored, `${what}: ${sent} at the beacon`);
      }
    }
  });

  test("anything else is 422 at the field's path, saying what is wrong without echoing the value", () => {
    for (const [sent, problem, what] of refused) {
      for (const field of FIELDS) {
        const detail = validationDetail(TransactionsRequest, {
          trace_transactions: [traceTransaction(), traceTransaction({ [field]: sent })],
        });
        assert.deepEqual(
          detail.map((d) => [d.loc, d.type]),
          [[["body", "trace_transactions", 1, field], "invalid_format"]],
          `${what}: ${JSON.stringify(sent)} in ${field}`,
        );
        assert.match(detail[0]!.msg, problem, what);
        assert.ok(!detail[0]!.msg.includes(sent), `${what}: the value is not echoed`);
      }
    }
    const tooLong = validationDetail(TransactionsRequest, { trace_transactions: [allTimes("2026-11-01T10:00:00.123456789012345Z")] });
    assert.deepEqual(tooLong[0]!.loc, ["body", "trace_transactions", 0, "start_insertion_time"]);
    assert.equal(tooLong[0]!.type, "too_big", "36 characters is past the bound, whatever their form");
  });

  test("an end before its start is found by instant: across offsets, and past the millisecond", () => {
    const acrossOffsets = traceTransaction({ start_interval_time: "2026-11-01T10:00:00Z", end_interval_time: "2026-11-01T11:00:00+02:00" });
    assert.deepEqual(
      validationDetail(IngestTracesRequest, { license: "k", trace_transactions: [acrossOffsets] }).map((d) => [d.loc, d.type]),
      [[["body", "trace_transactions", 0, "end_interval_time"], "custom"]],
      "11:00+02:00 is 09:00Z, before 10:00Z, though its text sorts after",
    );
    const pastMilliseconds = traceTransaction({
      start_insertion_time: "2026-11-01T10:00:00.1235Z",
      end_insertion_time: "2026-11-01T10:00:00.1234999+00:00",
    });
    assert.deepEqual(
      validationDetail(TransactionsRequest, { trace_transactions: [pastMilliseconds] }).map((d) => d.loc),
      [["body", "trace_transactions", 0, "end_insertion_time"]],
    );
    const sameInstant = traceTransaction({
      start_insertion_time: "2026-11-01T12:00:00.5+02:00",
      end_insertion_time: "2026-11-01T10:00:00.500Z",
    });
    assert.ok(TransactionsRequest.safeParse({ trace_transactions: [sameInstant] }).success, "the same instant in two notations");
  });

  test("a usage snapshot's range is normalised the same way, and its order is checked by instant", () => {
    const snapshot = (from: string, to: string) => ({
      license_key: "k",
      from_timestamp: from,
      to_timestamp: to,
      measures: usageMeasures(),
    });
    const parsed = parseRequest(UsageSnapshot, snapshot("2026-11-01T01:00:00+01:00", "2026-10-31 20:00:00.000001-05:00"));
    assert.deepEqual([parsed.from_timestamp, parsed.to_timestamp], ["2026-11-01T00:00:00.000Z", "2026-11-01T01:00:00.000001Z"]);
    for (const [sent, problem] of refused) {
      const detail = validationDetail(UsageSnapshot, snapshot(sent, "2026-11-02T00:00:00Z"));
      assert.deepEqual(
        detail.map((d) => [d.loc, d.type]),
        [[["body", "from_timestamp"], "invalid_format"]],
      );
      assert.match(detail[0]!.msg, problem);
    }
    assert.deepEqual(
      validationDetail(UsageSnapshot, snapshot("2026-11-01T10:00:00Z", "2026-11-01T11:00:00+01:00")).map((d) => [d.loc, d.type]),
      [[["body", "to_timestamp"], "custom"]],
      "the same instant is no range",
    );
  });

  test("any instant written at any offset, separator and letter case, with sub-millisecond digits, comes back as that instant in Z", () => {
    const MINUTE = 60_000;
    fc.assert(
      fc.property(
        fc.integer({ min: Date.parse("0001-01-01T00:00:00Z"), max: Date.parse("9998-12-31T00:00:00Z") }),
        fc.stringMatching(/^\d{0,6}$/),
        fc.integer({ min: -(23 * 60 + 59), max: 23 * 60 + 59 }),
        fc.constantFrom("T", "t", " "),
        (ms, subMillisecond, offsetMinutes, separator) => {
          const local = new Date(ms + offsetMinutes * MINUTE).toISOString().slice(0, 23).replace("T", separator);
          const abs = Math.abs(offsetMinutes);
          const offset = `${offsetMinutes < 0 ? "-" : "+"}${String(Math.floor(abs / 60)).padStart(2, "0")}:${String(abs % 60).padStart(2, "0")}`;
          const sent = `${local}${subMillisecond}${offsetMinutes === 0 && separator === "t" ? "z" : offset}`;
          const digits = subMillisecond.replace(/0+$/, "");
          assert.equal(Timestamp.parse(sent), `${new Date(ms).toISOString().slice(0, 23)}${digits}Z`, sent);
        },
      ),
      { numRuns: 2000, seed: 20261126 },
    );
  });

  test("the audit query's since takes the same forms, in the query's path", () => {
    assert.equal(parseRequest(AuditQuery, { since: "2026-11-01 12:00:00-02:00" }, "query").since, "2026-11-01T14:00:00.000Z");
    const detail = validationDetail(AuditQuery, { since: "2026-11-01T10:00:00" }, "query");
    assert.deepEqual(detail[0]!.loc, ["query", "since"]);
    assert.match(detail[0]!.msg, /no UTC offset/);
  });
});
