import assert from "node:assert/strict";
import { test } from "node:test";
import { testLicense, traceTransactions } from "../helpers/fixtures.ts";
import { agentConfig, beaconConfig, postJson, runCli, startAgentProcess, startBeacon, waitFor } from "../helpers/processes.ts";
import { find, helmTemplate } from "./helm-render.ts";

/** The metric names a /metrics answer exposes (histograms also as NAME_bucket, _sum, _count). */
function exposed(text: string): Set<string> {
  const names = new Set<string>();
  for (const match of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    names.add(match[1]!);
    if (match[2] === "histogram") for (const suffix of ["_bucket", "_sum", "_count"]) names.add(match[1]! + suffix);
  }
  return names;
}

/** Every egress_* series name a PromQL expression reads. */
const metricNames = (expr: string) => [...expr.matchAll(/\begress_[a-z0-9_]+/g)].map((m) => m[0]);

test("metrics.listen: Prometheus scrapes the real sidecar on a second address that serves /metrics alone; the chart's alerts and dashboard read metrics it exports", async () => {
  const license = testLicense();
  const beacon = await startBeacon(beaconConfig([license]));
  const fixture = agentConfig(beacon.url, { metrics: { listen: "127.0.0.1:0" } });
  const agent = await startAgentProcess(fixture, { PLATFORM_LICENSE_KEY: license.key });
  try {
    const line = agent
      .output()
      .split("\n")
      .find((l) => l.includes('"metrics listening"'));
    assert.ok(line, `the sidecar logs where it serves metrics:\n${agent.output()}`);
    const metricsUrl = (JSON.parse(line) as { url: string }).url;
    assert.notEqual(new URL(metricsUrl).port, new URL(agent.url).port, "a listener of its own");
    assert.equal((await postJson(`${agent.url}/v1/transactions`, { trace_transactions: traceTransactions(2) })).status, 202);

    const scrape = async () => {
      const response = await fetch(`${metricsUrl}/metrics`);
      assert.equal(response.status, 200);
      assert.match(response.headers.get("content-type") ?? "", /^text\/plain/);
      return response.text();
    };
    const text: string = await waitFor(
      async () => {
        const t = await scrape();
        const ready = /^egress_license_state\{state="valid"\} 1$/m.test(t) && /^egress_records_sent_total\{stream="billing"\} 2$/m.test(t);
        return ready ? t : "";
      },
      15_000,
      "a valid license and 2 billing records delivered, on the metrics listener",
    );
    assert.match(text, /^egress_data_dir_free_bytes \d+/m, "the data dir's free space");
    assert.match(text, /^egress_data_dir_size_bytes [1-9]\d*/m, "and its size");

    // Nothing else is served there: the intake and the operator routes stay on the loopback API.
    const transactions = await postJson(`${metricsUrl}/v1/transactions`, { trace_transactions: traceTransactions(1) });
    assert.ok(transactions.status === 404 || transactions.status === 405, `POST /v1/transactions: ${transactions.status}`);
    for (const path of ["/v1/status", "/v1/audit", "/healthz", "/readyz"]) {
      assert.equal((await fetch(`${metricsUrl}${path}`)).status, 404, path);
    }
    assert.equal((await fetch(`${agent.url}/metrics`)).status, 200, "the loopback API keeps its /metrics");

    // Every metric the PrometheusRule and the dashboard read is one this sidecar exports: renaming one fails here.
    const names = exposed(text);
    const rendered = helmTemplate({
      image: { repository: "registry.test/egress-agent" },
      metrics: { enabled: true, prometheusRule: { enabled: true }, dashboard: { enabled: true } },
    });
    const rules = (find(rendered, "PrometheusRule").spec as { groups: { rules: { alert: string; expr: string }[] }[] }).groups.flatMap(
      (g) => g.rules,
    );
    const dashboard = JSON.parse(
      (find(rendered, "ConfigMap", "test-egress-agent-dashboard").data as Record<string, string>)["egress-agent.json"]!,
    ) as {
      panels: { title: string; targets: { expr: string }[] }[];
    };
    const exprs = [
      ...rules.map((rule) => ({ where: `alert ${rule.alert}`, expr: String(rule.expr) })),
      ...dashboard.panels.flatMap((panel) => panel.targets.map((target) => ({ where: `panel ${panel.title}`, expr: target.expr }))),
    ];
    assert.ok(exprs.length >= 10);
    for (const { where, expr } of exprs) {
      const used = metricNames(expr);
      assert.ok(used.length > 0, `${where} reads an egress_ metric`);
      for (const name of used) assert.ok(names.has(name), `${where}: ${name} is not exported (${expr})`);
    }
  } finally {
    await agent.stop();
    await beacon.stop();
  }
});

test("metrics.listen: the same address as listen is refused by `validate`, naming the key", async () => {
  const fixture = agentConfig("https://beacon.example.invalid", { listen: "127.0.0.1:4318", metrics: { listen: "127.0.0.1:4318" } });
  const result = await runCli(["validate", "--config", fixture.configPath], { env: { PLATFORM_LICENSE_KEY: "lic-x" } });
  assert.equal(result.code, 2, result.stderr);
  assert.match(result.stderr, /metrics\.listen: must differ from listen/);
});
