import assert from "node:assert/strict";
import { test } from "node:test";
import { describeRemoteError, isHtmlAnswer } from "../src/remote-answer.ts";

const KEY = "lic-6b1f0c2e-SECRET";
const ECHO = JSON.stringify({ license: KEY, trace_transactions: [{ tenant_id: "t-1" }] });

test("an error answer is shown as its status and a well-formed code; free text, echoed or not, never", () => {
  const cases: [status: number, body: unknown, contentType: string, shown: string][] = [
    [503, { detail: `overloaded: ${ECHO}`, code: "EGRESS_ERR_BUSY" }, "application/json", "503 EGRESS_ERR_BUSY"],
    [403, { detail: "refused", code: "EGRESS_ERR_LICENSE_EXPIRED" }, "application/json", "403 EGRESS_ERR_LICENSE_EXPIRED"],
    // A code that is not a code (lower case, spaces, an escape, over 64 characters) is left out with the rest.
    [503, { detail: "x", code: KEY }, "application/json", "503"],
    [503, { code: "\u001b[2J" }, "application/json", "503"],
    [503, { code: "A".repeat(65) }, "application/json", "503"],
    [503, { code: 42, detail: { nested: ECHO } }, "application/json", "503"],
    [500, `<!DOCTYPE html><html><pre>${ECHO}</pre></html>`, "", "500 (HTML: a proxy or login page?)"],
    [502, `<p>${ECHO}</p>`, "text/html", "502 (HTML: a proxy or login page?)"],
    [404, `no route for ${ECHO}`, "text/plain", "404"],
    [404, undefined, "", "404"],
    [400, [ECHO], "application/json", "400"],
  ];
  for (const [status, body, contentType, shown] of cases) {
    assert.equal(describeRemoteError({ status, body, contentType }), shown, JSON.stringify(body));
  }
});

test("a 422 shows each problem's field path and type, at most five, never its msg", () => {
  const problem = (loc: unknown, type: unknown) => ({ loc, msg: `bad: ${ECHO}`, type });
  const body = {
    detail: [
      problem(["body", "trace_transactions", 3, "tenant_id"], "invalid_format"),
      problem(["body", KEY], "missing"), // a segment that is not a field name: the path is not shown
      problem(["body", "measures"], "too big\u001b[31m"), // nor a type that is not one
      problem("body.license", "missing"),
      problem(["body", ["nested"]], "value_error.number"),
      problem(["body", "x"], "missing"),
      problem(["body", "y"], "missing"),
    ],
  };
  assert.equal(
    describeRemoteError({ status: 422, body }),
    "422: body.trace_transactions.3.tenant_id invalid_format; ? missing; body.measures; ? missing; ? value_error.number (and 2 more)",
  );
  assert.equal(describeRemoteError({ status: 422, body: { detail: `bad: ${ECHO}` } }), "422");
  assert.equal(describeRemoteError({ status: 400, body }), "400", "field paths are read from a 422 only");
});

test("a page is known by its media type or by how its text starts, in any case; JSON, XML, protobuf or nothing are not pages", () => {
  const pages: [body: unknown, contentType: string][] = [
    ["{}", "text/html"],
    [{ inserted_count: 1 }, "text/html"],
    [undefined, "application/xhtml+xml"],
    ["<!DOCTYPE html><title>Sign in</title>", ""],
    ["\ufeff\r\n  <!doctype HTML>", "application/json"],
    ["<HTML lang=en>", "text/plain"],
    ["<html", ""],
    ["<head><meta http-equiv=refresh content='0;url=/login'>", "application/octet-stream"],
    ["<body onload=go()>", ""],
    ["<!-- portal --><form action=/login>", ""],
    ["<p>Please sign in</p>", ""],
  ];
  for (const [body, contentType] of pages) assert.ok(isHtmlAnswer({ status: 200, body, contentType }), `${contentType} ${String(body)}`);
  const answers: [body: unknown, contentType: string][] = [
    [{ partialSuccess: {} }, "application/json"],
    [undefined, ""],
    ["", "application/x-protobuf"],
    ["\n\u0012\u0000", "application/x-protobuf"],
    ['<?xml version="1.0"?><ok/>', "application/xml"],
    ["<htmlish>", ""],
    ["<pre>", ""],
    ["ok <html>", "text/plain"],
  ];
  for (const [body, contentType] of answers) assert.ok(!isHtmlAnswer({ status: 200, body, contentType }), `${contentType} ${String(body)}`);
});
