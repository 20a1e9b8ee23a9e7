import assert from "node:assert/strict";
import { test } from "node:test";
import { BeaconStore } from "../../src/beacon/store.ts";
import { testLicense } from "../helpers/fixtures.ts";
import { texts } from "../helpers/otlp-fields.ts";
import { CORPUS } from "../helpers/private-values.ts";
import { agentConfig, beaconConfig, startAgentProcess, startBeacon, waitFor } from "../helpers/processes.ts";
import { postOtlp } from "../helpers/telemetry.ts";

// The corpus through the real path: the instance's exporter -> the sidecar's receiver and filter -> outbox ->
// shipper -> the real beacon, whose stored batches must hold none of the private values, while the telemetry arrives.

const T0 = 1_793_000_000n * 1_000_000_000n;
const str = (key: string, stringValue: string) => ({ key, value: { stringValue } });

test("end to end: private values in every text field of metrics, spans and logs never reach the beacon's database", async (t) => {
  const license = testLicense();
  const beaconFixture = beaconConfig([license]);
  const beacon = await startBeacon(beaconFixture);
  t.after(() => beacon.stop());
  const agent = await startAgentProcess(
    agentConfig(beacon.url, { selfTelemetry: { enabled: false }, intervals: { flush: "200ms" }, privacy: { vocabulary: ["checkout"] } }),
    {
      PLATFORM_LICENSE_KEY: license.key,
    },
  );
  t.after(() => agent.stop());

  const values = Object.values(CORPUS);
  const metrics = {
    resourceMetrics: values.map(({ value }, i) => ({
      resource: { attributes: [str("service.name", value), str("env", `marker-${i}`)] },
      scopeMetrics: [
        {
          scope: { name: value, version: value },
          metrics: [
            {
              name: value,
              unit: value,
              description: value,
              gauge: {
                dataPoints: [{ asDouble: 1, timeUnixNano: T0.toString(), attributes: [str("endpoint", value), str("method", value)] }],
              },
            },
          ],
        },
      ],
    })),
  };
  const traces = {
    resourceSpans: [
      {
        resource: {},
        scopeSpans: [
          {
            scope: {},
            spans: values.map(({ value }, i) => ({
              traceId: "5b8efff798038103d269b633813fc60c",
              spanId: (0x1000 + i).toString(16).padStart(16, "0"),
              name: value,
              startTimeUnixNano: T0.toString(),
              endTimeUnixNano: (T0 + 1n).toString(),
              attributes: [str("endpoint", value)],
              events: [{ timeUnixNano: T0.toString(), name: value }],
              status: { code: 2, message: value },
            })),
          },
        ],
      },
    ],
  };
  const logs = {
    resourceLogs: [
      {
        resource: {},
        scopeLogs: [
          {
            scope: {},
            logRecords: [
              ...values.map(({ value }) => ({
                timeUnixNano: T0.toString(),
                severityNumber: 17,
                severityText: value,
                body: { stringValue: value },
                attributes: [str("component", value)],
              })),
              // The operator's privacy.vocabulary reaches the filter: "Checkout" stays, the name does not.
              { timeUnixNano: T0.toString(), severityNumber: 17, body: { stringValue: "Checkout failed for Maria Garcia" } },
            ],
          },
        ],
      },
    ],
  };
  for (const [signal, body] of [
    ["metrics", metrics],
    ["traces", traces],
    ["logs", logs],
  ] as const) {
    assert.deepEqual((await postOtlp(agent.url, signal, body)).status, 200);
  }

  const batches = await waitFor(
    async () => {
      let store: BeaconStore;
      try {
        store = new BeaconStore(beaconFixture.dataDir, { readonly: true });
      } catch {
        return undefined;
      }
      try {
        const batches = (["metrics", "traces", "logs"] as const).map((signal) => store.otlpBatches(signal));
        return batches.every((list) => list.length > 0)
          ? batches.flat().map((batch) => ({ json: JSON.stringify(batch.body), texts: texts(batch.body) }))
          : undefined;
      } finally {
        store.close();
      }
    },
    15_000,
    "all three signals at the beacon",
  );

  const stored = batches.map((batch) => batch.json).join("\n");
  // The telemetry arrived: every planted resource, span and log record.
  // (The env marker leaves as "marker-<num>": numbers are parameters; the data points are counted instead.)
  assert.equal(stored.match(/"asDouble":1\b/g)?.length, values.length, "every metrics resource arrived");
  assert.equal(stored.match(/"droppedLinksCount"/g)?.length, values.length, "every span arrived");
  assert.equal(stored.match(/"severityNumber"/g)?.length, values.length + 1, "every log record arrived");
  assert.ok(stored.includes('"Checkout failed for <text> <text>"'), "privacy.vocabulary adds words");
  // Every text the beacon stored (ids and times aside: hex and digits that may hold "0100" by chance), compared
  // without case: the filter keeps a word as written, a secret must not leave in any case.
  const storedText = batches
    .map((batch) => batch.texts)
    .join("\n")
    .toLowerCase();
  const leaks = Object.entries(CORPUS).flatMap(([name, { secrets }]) =>
    secrets.filter((secret) => storedText.includes(secret.toLowerCase())).map((secret) => `${name}: ${secret}`),
  );
  assert.deepEqual(leaks, []);
});
