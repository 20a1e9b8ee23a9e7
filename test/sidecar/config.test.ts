import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { stringify } from "yaml";
import { loadAgentConfig } from "../../src/sidecar/config.ts";
import { sendConcurrencyOf } from "../../src/sidecar/config-schema.ts";
import type { ConfigError } from "../../src/errors.ts";
import { tempDir } from "../helpers/processes.ts";

function load(file: Record<string, unknown>, env: NodeJS.ProcessEnv = {}) {
  const path = join(tempDir(), "egress.yaml");
  writeFileSync(path, stringify({ licenseKey: "lic-test", ...file }));
  return loadAgentConfig({ file: path, env });
}

test("telemetry switches: defaults follow instanceVersion, each switch alone, env beats file, offline turns all off", () => {
  assert.deepEqual(load({ instanceVersion: "0.11.0" }).telemetry, { logs: true, metrics: true, traces: true });
  assert.deepEqual(load({ instanceVersion: "0.10.9" }).telemetry, { logs: false, metrics: false, traces: false });
  assert.deepEqual(load({ instanceVersion: "0.9.0", config: { telemetry: { metrics: true } } }).telemetry, {
    logs: false,
    metrics: true,
    traces: false,
  });
  assert.deepEqual(load({ config: { telemetry: { traces: false } } }).telemetry, { logs: true, metrics: true, traces: false });
  assert.deepEqual(
    load({ config: { telemetry: { logs: true } } }, { BEACON_LOGGING_ENABLED: "false", BEACON_METRICS_ENABLED: "0" }).telemetry,
    { logs: false, metrics: false, traces: true },
  );
  const offline = load({
    offline: { enabled: true, licenseFile: "l.jwt", publicKeyFile: "k.pem" },
    config: { telemetry: { logs: true, metrics: true, traces: true } },
  });
  assert.deepEqual(offline.telemetry, { logs: false, metrics: false, traces: false });
  assert.equal(offline.usageReporting, false, "offline: no usage snapshots either");
});

test("limits.sendConcurrency: unset, 8 batches in flight for billing and 2 for the others; set, that for every stream; 0 names the key", () => {
  const streams = ["billing", "metrics", "traces", "logs", "usage"];
  assert.deepEqual(
    streams.map((stream) => sendConcurrencyOf(load({}).limits, stream)),
    [8, 2, 2, 2, 2],
  );
  assert.deepEqual(
    streams.map((stream) => sendConcurrencyOf(load({ limits: { sendConcurrency: null } }).limits, stream)),
    [8, 2, 2, 2, 2],
    "~ is unset (config/egress.yaml writes it so)",
  );
  assert.deepEqual(
    streams.map((stream) => sendConcurrencyOf(load({ limits: { sendConcurrency: 2 } }).limits, stream)),
    [2, 2, 2, 2, 2],
  );
  assert.throws(
    () => load({ limits: { sendConcurrency: 0 } }),
    (err: ConfigError) => /limits\.sendConcurrency/.test(err.message),
  );
});

test("privacy and self-telemetry keys: defaults, and a bad value names its key", () => {
  const config = load({});
  assert.deepEqual(config.privacy, {
    allowAttributes: { resource: [], metrics: [], spans: [], logs: [] },
    logSeverity: "warning",
    slowSpan: 1_000,
    vocabulary: [],
  });
  assert.deepEqual(config.selfTelemetry, { enabled: true, env: "self-hosted", exportInterval: 60_000 });
  assert.equal(config.limits.telemetryMaxBytes, 256 * 1024 ** 2);
  assert.throws(
    () =>
      load({
        privacy: {
          logSeverity: "debug",
          allowAttributes: { metrics: [""] },
          slowSpan: "soon",
          vocabulary: ["checkout", "alice@corp.example"],
        },
        limits: { telemetryMaxBytes: "lots" },
      }),
    (err: ConfigError) => {
      const text = err.problems.join("\n");
      const keys = [
        "privacy.logSeverity",
        "privacy.allowAttributes.metrics[0]",
        "privacy.slowSpan",
        "privacy.vocabulary[1]",
        "limits.telemetryMaxBytes",
      ];
      for (const key of keys) {
        assert.match(text, new RegExp(`^${key.replace(/[.[\]]/g, "\\$&")}:`, "m"), key);
      }
      return true;
    },
  );
});

test("usage source keys: file needs usage.file; postgres needs a URL and a query for every measure, and no unknown measure", () => {
  const problems = (file: Record<string, unknown>) => {
    try {
      load(file);
      return "";
    } catch (err) {
      return (err as ConfigError).problems.join("\n");
    }
  };
  assert.match(problems({ usage: { source: "file" } }), /^usage\.file: required when usage\.source is file$/m);
  const postgres = problems({ usage: { source: "postgres", postgres: { queries: { users: "SELECT 1", user_ids: "SELECT 2" } } } });
  assert.match(postgres, /^usage\.postgres\.queries\.user_ids: /m);
  assert.equal(problems({ usage: { source: "postgres", postgres: { queries: { users: "SELECT 1" } } } }).split("\n").length, 2);
  assert.match(
    problems({ usage: { source: "postgres", postgres: { queries: { users: "SELECT 1" } } } }),
    /^usage\.postgres\.url: required/m,
  );
  assert.match(
    problems({ usage: { source: "postgres", postgres: { url: "postgres://x@127.0.0.1/db", queries: { users: "SELECT 1" } } } }),
    /^usage\.postgres\.queries: a query is required for every measure; missing workspaces, projects/m,
  );
  assert.equal(problems({ usage: { source: "push" } }), "");
});

test("secret and certificate files: usage.postgres.urlFile and tls.caFile are read at load, a bad one names its key", () => {
  const dir = tempDir();
  const urlFile = join(dir, "pg-url");
  writeFileSync(urlFile, "postgres://reader:pw@127.0.0.1:5432/test\n");
  const config = load({ usage: { postgres: { urlFile } } });
  assert.equal(config.usage.postgres.url, "postgres://reader:pw@127.0.0.1:5432/test");
  const inline = load({ usage: { postgres: { url: "postgres://inline@127.0.0.1/db", urlFile } } });
  assert.equal(inline.usage.postgres.url, "postgres://inline@127.0.0.1/db", "an inline url wins");

  const notPem = join(dir, "ca.txt");
  writeFileSync(notPem, "hello");
  const problemsOf = (file: Record<string, unknown>) => {
    try {
      load(file);
      return [];
    } catch (err) {
      return (err as ConfigError).problems;
    }
  };
  assert.deepEqual(problemsOf({ tls: { caFile: notPem } }), [`tls.caFile: ${notPem} holds no PEM certificate`]);
  assert.deepEqual(problemsOf({ usage: { postgres: { urlFile: join(dir, "missing") } } }), [
    `usage.postgres.urlFile: cannot read ${join(dir, "missing")} (ENOENT)`,
  ]);
  // Lower-case proxy variables win over upper case, as in curl and undici.
  const proxied = load({}, { HTTPS_PROXY: "http://upper:3128", https_proxy: "http://lower:3128", NO_PROXY: "localhost" });
  assert.deepEqual(proxied.proxy, { https: "http://lower:3128", http: "", noProxy: "localhost" });
});

test("http budget keys: defaults, units, and a reserve that leaves nothing to others names its key", () => {
  assert.deepEqual(load({}).http, {
    maxConnections: 512,
    reservedConnections: 64,
    headersTimeoutMs: 10_000,
    requestTimeoutMs: 60_000,
    bodyIdleTimeoutMs: 10_000,
    keepAliveTimeoutMs: 72_000,
    bodyItems: 500_000,
    bodyBytesInFlight: 16 * 1024 ** 2,
    bodyBudgets: { billing: 16 * 1024 ** 2 },
  });
  assert.deepEqual(load({ http: { billingBodyBytesInFlight: "4MiB" } }).http.bodyBudgets, { billing: 4 * 1024 ** 2 });
  assert.equal(load({ http: { headersTimeout: "2s", bodyBytesInFlight: "64MiB" } }).http.headersTimeoutMs, 2_000);
  assert.throws(
    () => load({ http: { maxConnections: 100, reservedConnections: 100 } }),
    (err: ConfigError) => /^http\.reservedConnections: must be below http\.maxConnections/m.test(err.problems.join("\n")),
  );
  assert.throws(
    () => load({ http: { bodyItems: 5, requestTimeout: "never" } }),
    (err: ConfigError) => {
      const text = err.problems.join("\n");
      assert.match(text, /^http\.bodyItems:/m);
      assert.match(text, /^http\.requestTimeout:/m);
      return true;
    },
  );
});
