import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { defaultAllowlist, filterLogs, filterTraces, privacyPolicy } from "../../src/sidecar/privacy/policy.ts";
import { scrubText } from "../../src/sidecar/privacy/scrub.ts";
import { defaultVocabulary } from "../../src/sidecar/privacy/vocabulary.ts";
import { LogsRequest, TracesRequest } from "../../src/protocol/otlp.ts";
import { ENGLISH_WORDS_PATH, englishWordsText, PRODUCT_WORDS_PATH, productWordsJson } from "../../scripts/privacy-words.ts";

test("product-words.json is what scripts/privacy-words.ts gathers from the code now (run it after adding a route or key)", () => {
  assert.equal(readFileSync(PRODUCT_WORDS_PATH, "utf8"), productWordsJson());
});

test("english-words.txt is the word lists as scripts/privacy-words.ts joins them, and every word of it is found", () => {
  const written = readFileSync(ENGLISH_WORDS_PATH, "utf8");
  assert.equal(written, englishWordsText());
  const { english } = defaultVocabulary();
  const listed = written.trimEnd().split("\n");
  assert.ok(listed.length > 35_000, `${listed.length} words`);
  assert.deepEqual(
    listed.filter((word) => !english.has(word)),
    [],
    "bisection finds every listed word",
  );
  for (const absent of ["", "aardvarks", "zzzz", "a\naback", "johnsmith", "customer_orders"])
    assert.equal(english.has(absent), false, absent);
});

test("the seed's metric names, units, descriptions and allowlisted attribute keys leave unchanged", () => {
  for (const text of ["platform_http_requests_latency", "platform_http_requests_failed", "request latency", "counter of failed requests"]) {
    assert.equal(scrubText(text), text);
  }
  for (const key of Object.values(defaultAllowlist).flat()) assert.equal(scrubText(`${key}=${key}`), `${key}=${key}`, key);
  const { product, routes } = defaultVocabulary();
  for (const route of ["v1", "beacon", "ingest-traces", "usage-snapshot", "transactions", "a2a", ".well-known", "agent-card.json"]) {
    assert.ok(routes.has(route), route);
  }
  for (const word of ["egress_err_not_found", "econnrefused", "typeerror", "telemetrymaxbytes", "opentelemetry", "post"]) {
    assert.ok(product.has(word), word);
  }
});

test("privacy.vocabulary adds words to every text field, capitalised or not; it cannot let a name or number through", () => {
  const request = LogsRequest.parse({
    resourceLogs: [
      {
        scopeLogs: [
          {
            logRecords: [{ timeUnixNano: "1", severityNumber: 17, body: { stringValue: "Checkout for Maria failed at Acme: order 4711" } }],
          },
        ],
      },
    ],
  });
  const body = (words: string[]) =>
    filterLogs(request, privacyPolicy({ vocabulary: words })).request!.resourceLogs[0]!.scopeLogs[0]!.logRecords[0]!.body!.stringValue;
  assert.equal(body([]), "Checkout for <text> failed at <text>: order <num>");
  assert.equal(body(["checkout", "Acme"]), "Checkout for <text> failed at Acme: order <num>");
});

test("method is one of a set: HTTP methods (upper-cased) and the agent server's JSON-RPC methods; anything else is _OTHER", () => {
  const methodOf = (method: string) => {
    const request = TracesRequest.parse({
      resourceSpans: [
        {
          scopeSpans: [
            {
              spans: [
                {
                  traceId: "5b8efff798038103d269b633813fc60c",
                  spanId: "eee19b7ec3c1b174",
                  name: "POST /a2a/x",
                  startTimeUnixNano: "1",
                  endTimeUnixNano: "2",
                  attributes: [{ key: "method", value: { stringValue: method } }],
                  status: { code: 2 },
                },
              ],
            },
          ],
        },
      ],
    });
    return filterTraces(request, privacyPolicy({})).request!.resourceSpans[0]!.scopeSpans[0]!.spans[0]!.attributes[0]!.value.stringValue;
  };
  assert.deepEqual(["POST", "get", "message/send", "GetTask", "unknown", "alice@corp.example", "Maria"].map(methodOf), [
    "POST",
    "GET",
    "message/send",
    "GetTask",
    "unknown",
    "_OTHER",
    "_OTHER",
  ]);
});
