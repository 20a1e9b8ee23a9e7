import assert from "node:assert/strict";
import { test } from "node:test";
import { BeaconStore } from "../../src/beacon/store.ts";
import { testLicense } from "../helpers/fixtures.ts";
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
  const agent = await startAgentProcess(agentConfig(beacon.url, { selfTelemetry: { enabled: false }, intervals: { flush: "200ms" } }), {
    PLATFORM_LICENSE_KEY: license.key,
  });
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
            logRecords: values.map(({ value }) => ({
              timeUnixNano: T0.toString(),
              severityNumber: 17,
              severityText: value,
              body: { stringValue: value },
              attributes: [str("component", value)],
            })),
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

  const stored = await waitFor(
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
          ? batches
              .flat()
              .map((batch) => JSON.stringify(batch.body))
              .join("\n")
          : undefined;
      } finally {
        store.close();
      }
    },
    15_000,
    "all three signals at the beacon",
  );

  // The telemetry arrived: every planted resource (by its env marker), span and log record.
  for (let i = 0; i < values.length; i++) assert.ok(stored.includes(`marker-${i}`), `metrics resource ${i} arrived`);
  assert.equal(stored.match(/"droppedLinksCount"/g)?.length, values.length, "every span arrived");
  assert.equal(stored.match(/"severityNumber"/g)?.length, values.length, "every log record arrived");
  const leaks = Object.entries(CORPUS).flatMap(([name, { secrets }]) =>
    secrets.filter((secret) => stored.includes(secret)).map((secret) => `${name}: ${secret}`),
  );
  assert.deepEqual(leaks, []);
});
