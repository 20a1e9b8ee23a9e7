import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { loadBeaconConfig } from "../../src/beacon/config.ts";
import { ConfigError } from "../../src/errors.ts";
import { tempDir } from "../helpers/processes.ts";

const file = (yaml: string) => {
  const path = join(tempDir("beacon-config-"), "beacon.yaml");
  writeFileSync(path, yaml);
  return path;
};

/** The config's problems, asserting that none of them quotes `secret`. */
function problems(yaml: string, env: NodeJS.ProcessEnv = {}, secret?: string): string {
  try {
    loadBeaconConfig(file(yaml), {}, env);
  } catch (err) {
    assert.ok(err instanceof ConfigError);
    if (secret) assert.ok(!err.message.includes(secret), err.message);
    return err.message;
  }
  assert.fail("the config was taken");
}

test("telemetry.forward is off by default; metrics default to the platform's two published names", () => {
  assert.deepEqual(loadBeaconConfig(undefined, {}, {}).telemetry.forward, {
    endpoint: "",
    headers: {},
    metrics: ["platform_http_requests_latency", "platform_http_requests_failed"],
    retry: { minBackoff: 1_000, maxBackoff: 300_000, requestTimeout: 30_000 },
  });
  const forward = loadBeaconConfig(
    file("telemetry: {forward: {endpoint: 'https://otel.vendor.example:4318/', headers: {x-api-key: k1}, metrics: []}}\n"),
    {},
    {},
  ).telemetry.forward;
  assert.deepEqual([forward.endpoint, forward.headers, forward.metrics], ["https://otel.vendor.example:4318", { "x-api-key": "k1" }, []]);
});

test("a bad telemetry.forward key is refused naming it, and never quotes a header's value or the URL's password", () => {
  const cases: [string, RegExp, string?][] = [
    ["endpoint: 'https://user:hunter2-pw@otel.example'", /telemetry\.forward\.endpoint: must not carry credentials/, "hunter2-pw"],
    ["endpoint: 'ftp://otel.example'", /telemetry\.forward\.endpoint: must be an http:\/\/ or https:\/\/ URL/],
    ["endpoint: 'https://otel.example/?token=abc'", /telemetry\.forward\.endpoint: must have no query/],
    ['headers: {x-api-key: "secret-one\\r\\nx-evil: 1"}', /telemetry\.forward\.headers\.x-api-key: has a control character/, "secret-one"],
    ["headers: {'bad header': v}", /telemetry\.forward\.headers\.bad header: is not a valid HTTP header name/],
    ["headers: {Content-Type: text/plain}", /telemetry\.forward\.headers\.Content-Type: is set by the beacon itself/],
    ["metrics: ['platform_*']", /telemetry\.forward\.metrics\[0\]: must be an exact metric name/],
    ["retry: {minBackoff: 10m, maxBackoff: 1m}", /telemetry\.forward\.retry\.minBackoff: must not be longer/],
    ["endpoints: ''", /telemetry\.forward\.endpoints: unknown key; did you mean endpoint\?/],
  ];
  for (const [yaml, expected, secret] of cases) assert.match(problems(`telemetry: {forward: {${yaml}}}\n`, {}, secret), expected, yaml);
});

test("BEACON_FORWARD_HEADERS (a Secret's value) beats the file's header of that name; a malformed one is named, never quoted", () => {
  const path = file("telemetry: {forward: {endpoint: 'http://127.0.0.1:4318', headers: {x-api-key: from-file, x-team: ops}}}\n");
  const { headers } = loadBeaconConfig(path, {}, { BEACON_FORWARD_HEADERS: "x-api-key=from%20env, authorization=Bearer%20t0k" }).telemetry
    .forward;
  assert.deepEqual(headers, { "x-api-key": "from env", "x-team": "ops", authorization: "Bearer t0k" });
  assert.match(
    problems("{}\n", { BEACON_FORWARD_HEADERS: "no-equals-sign-s3cret" }, "s3cret"),
    /BEACON_FORWARD_HEADERS: must be name=value pairs/,
  );
});
