import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { parse, stringify } from "yaml";
import { Ajv } from "ajv";
import { CHART_OWNED, SCHEMA_PATH, schemaText } from "../../scripts/helm-values-schema.ts";
import { find, helmTemplate } from "./helm-render.ts";

const ROOT = new URL("../../", import.meta.url).pathname;
const CHART = join(ROOT, "helm/egress-agent");
const TEMPLATES = join(CHART, "templates");

type Values = Record<string, unknown>;
const readValues = (): Values => parse(readFileSync(join(CHART, "values.yaml"), "utf8")) as Values;
const templateFiles = () =>
  readdirSync(TEMPLATES, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => ({ name: entry.name, text: readFileSync(join(entry.parentPath, entry.name), "utf8") }));

test("Chart.yaml and values.yaml parse; the chart is apiVersion v2 and its image tag is its appVersion", () => {
  const chart = parse(readFileSync(join(CHART, "Chart.yaml"), "utf8")) as Record<string, unknown>;
  assert.equal(chart.apiVersion, "v2");
  assert.equal(chart.name, "egress-agent");
  assert.match(String(chart.version), /^\d+\.\d+\.\d+/);
  const values = readValues();
  assert.equal(typeof values, "object");
  assert.equal((values.image as Values).tag, chart.appVersion, "image.tag and Chart.yaml appVersion");
});

test("every .Values path a template references exists in values.yaml", () => {
  const values = readValues();
  const missing = new Set<string>();
  for (const { name, text } of templateFiles()) {
    for (const match of text.matchAll(/\.Values((?:\.[A-Za-z0-9_]+)+)/g)) {
      const path = match[1]!.slice(1).split(".");
      let node: unknown = values;
      for (const part of path) {
        if (node === null || typeof node !== "object" || !(part in node)) {
          missing.add(`${name}: .Values.${path.join(".")}`);
          break;
        }
        node = (node as Values)[part];
      }
    }
  }
  assert.deepEqual([...missing], [], `paths missing from values.yaml:\n${[...missing].join("\n")}`);
});

/** "a.b.c" for every leaf of a parsed YAML mapping (an empty mapping or any list is a leaf). */
function leafPaths(node: unknown, prefix = ""): string[] {
  if (node === null || typeof node !== "object" || Array.isArray(node) || Object.keys(node).length === 0) return [prefix];
  return Object.entries(node).flatMap(([key, value]) => leafPaths(value, prefix ? `${prefix}.${key}` : key));
}

test("values.yaml mirrors config/egress.yaml: each key is chart-owned or under agent:", () => {
  // The keys templates/_helpers.tpl (egress-agent.config) writes itself, from top-level values or literally.
  const chartOwned = new Set<string>(CHART_OWNED);
  const documented = parse(readFileSync(join(ROOT, "config/egress.yaml"), "utf8")) as Values;
  const agent = new Set(leafPaths(readValues().agent));
  const missing = leafPaths(documented).filter((path) => !chartOwned.has(path.split(".")[0]!) && !agent.has(path));
  assert.deepEqual(missing, [], `config/egress.yaml keys neither chart-owned nor in values.yaml agent:\n${missing.join("\n")}`);
  const helpers = readFileSync(join(TEMPLATES, "_helpers.tpl"), "utf8");
  for (const key of chartOwned) assert.match(helpers, new RegExp(`"${key}"`), `validateValues refuses agent.${key}`);
});

/** templates/configmap.yaml rendered with `values`: the sidecar's egress.yaml text, as the ConfigMap carries it. */
function renderConfigFile(values: Values): string {
  const rendered = helmTemplate(
    { ...values, image: { ...(values.image as Values), repository: "registry.test/egress-agent" } },
    { skipSchema: true },
  );
  const file = (find(rendered, "ConfigMap").data as Record<string, string>)["egress.yaml"];
  assert.ok(file, "the ConfigMap has an egress.yaml key");
  return file;
}

/** The env the sidecar container gets from `values` (templates/_sidecar.tpl egress-agent.sidecarContainer). */
function chartEnv(values: Values): Record<string, string> {
  const env: Record<string, string> = { EGRESS_CONFIG: "/etc/egress-agent/egress.yaml" };
  const telemetry = ((values.config as Values | undefined)?.telemetry ?? {}) as Values;
  const switches = { logs: "BEACON_LOGGING_ENABLED", metrics: "BEACON_METRICS_ENABLED", traces: "BEACON_TRACING_ENABLED" };
  for (const [key, name] of Object.entries(switches)) {
    if (telemetry[key] !== null && telemetry[key] !== undefined) env[name] = String(telemetry[key]);
  }
  for (const entry of [...((values.commonEnv as Values[]) ?? []), ...((values.extraEnv as Values[]) ?? [])]) {
    if (typeof entry.value === "string") env[entry.name as string] = entry.value;
  }
  return env;
}

test("the sidecar template sets BEACON_*_ENABLED from config.telemetry and passes commonEnv and extraEnv", () => {
  const helpers = readFileSync(join(TEMPLATES, "_sidecar.tpl"), "utf8");
  const container = /define "egress-agent.sidecarContainer.render"[\s\S]*?\n\{\{- end -\}\}/.exec(helpers)?.[0] ?? "";
  for (const [name, key] of [
    ["BEACON_LOGGING_ENABLED", "logs"],
    ["BEACON_METRICS_ENABLED", "metrics"],
    ["BEACON_TRACING_ENABLED", "traces"],
  ]) {
    assert.match(container, new RegExp(`name: ${name}\\n\\s+value: \\{\\{ \\.${key} \\| quote \\}\\}`), name);
  }
  assert.match(container, /with \.Values\.config\.telemetry/);
  assert.match(container, /with \.Values\.commonEnv/);
  assert.match(container, /with \.Values\.extraEnv/);
  assert.match(container, /name: EGRESS_CONFIG\n\s+value: \/etc\/egress-agent\/egress\.yaml/);
});

test("every file the rendered config names lies on a volume the sidecar mounts", () => {
  const helpers = readFileSync(join(TEMPLATES, "_sidecar.tpl"), "utf8");
  const mounts = [...helpers.matchAll(/mountPath: (\S+)/g)].map((m) => m[1]!);
  const configmap = readFileSync(join(TEMPLATES, "configmap.yaml"), "utf8");
  assert.match(configmap, /^ {2}egress\.yaml: \|/m, "the ConfigMap key is egress.yaml");
  assert.ok(mounts.includes("/etc/egress-agent"), "the ConfigMap is mounted at /etc/egress-agent");
  const online = parse(renderConfigFile(readValues())) as Values;
  const values = readValues();
  (values.offline as Values).enabled = true;
  const offline = parse(renderConfigFile(values)) as Values & { offline: Values };
  const paths = [online.dataDir, online.licenseKeyFile, offline.offline.licenseFile, offline.offline.publicKeyFile];
  for (const path of paths) {
    assert.equal(typeof path, "string", String(path));
    assert.ok(
      mounts.some((mount) => path === mount || (path as string).startsWith(`${mount}/`)),
      `${String(path)} is under a mountPath`,
    );
  }
  assert.equal(offline.licenseKeyFile, undefined, "offline: no licenseKeyFile (an unmounted file would fail the start)");
  assert.match(String(online.listen), /^127\.0\.0\.1:4318$/, "loopback: the exec probes and the instance use 127.0.0.1:4318");
});

function validate(config: Values, values: Values) {
  const dir = mkdtempSync(join(tmpdir(), "egress-chart-"));
  try {
    // The chart mounts the license Secret at licenseKeyFile; here a file of our own stands in for it.
    const licenseFile = join(dir, "license-key");
    writeFileSync(licenseFile, "lic-chart-test-0000\n");
    if (config.licenseKeyFile) config.licenseKeyFile = licenseFile;
    const file = join(dir, "egress.yaml");
    writeFileSync(file, stringify(config));
    // Only the chart's env reaches the sidecar's variables: none inherited from whoever runs the tests.
    const inherited = Object.fromEntries(
      Object.entries(process.env).filter(([name]) => !/^(EGRESS_|BEACON_|PLATFORM_|PHONE_HOME_|HTTPS?_PROXY|NO_PROXY)/i.test(name)),
    );
    const env = { ...inherited, ...chartEnv(values), EGRESS_CONFIG: file };
    return spawnSync(process.execPath, [join(ROOT, "src/cli.ts"), "validate", "--config", file], {
      cwd: ROOT,
      env,
      encoding: "utf8",
      timeout: 20_000,
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

test("the config the chart writes from its default values passes `egress-agent validate`", () => {
  const values = readValues();
  const config = parse(renderConfigFile(values)) as Values;
  assert.equal(config.licenseKeyFile, "/var/run/secrets/egress-agent/license-key");
  assert.equal(config.dataDir, "/data");
  const result = validate(config, values);
  assert.equal(result.status, 0, `validate exit ${result.status}\nstderr: ${result.stderr}\nstdout: ${result.stdout}`);
  // The effective config names each value's source: the telemetry switches come from the chart's env.
  assert.match(result.stdout, /BEACON_LOGGING_ENABLED/);
});

test("a broken agent value fails `egress-agent validate` with exit 2, naming the keys", () => {
  const values = readValues();
  const agent = values.agent as Values & { limits: Values };
  agent.limits.batchTransactions = 0;
  agent.limits.bogus = 1;
  const result = validate(parse(renderConfigFile(values)) as Values, values);
  assert.equal(result.status, 2, `validate exit ${result.status}\nstderr: ${result.stderr}`);
  assert.match(result.stderr, /limits\.batchTransactions: /);
  assert.match(result.stderr, /limits\.bogus: unknown key/);
});

test("a plain-http beaconUrl to a host that is not loopback fails `egress-agent validate` unless agent.allowInsecureBeaconUrl", () => {
  const values: Values = { ...readValues(), beaconUrl: "http://beacon.vendor.internal:8080" };
  const refused = validate(parse(renderConfigFile(values)) as Values, values);
  assert.equal(refused.status, 2, `validate exit ${refused.status}\nstderr: ${refused.stderr}`);
  assert.match(refused.stderr, /beaconUrl: http:\/\/ to beacon\.vendor\.internal:8080 would send the license key in clear/);
  (values.agent as Values).allowInsecureBeaconUrl = true;
  const allowed = validate(parse(renderConfigFile(values)) as Values, values);
  assert.equal(allowed.status, 0, `validate exit ${allowed.status}\nstderr: ${allowed.stderr}`);
});

test("values.schema.json is the one scripts/helm-values-schema.ts writes (agent: is the sidecar's own config schema)", () => {
  assert.equal(readFileSync(SCHEMA_PATH, "utf8"), schemaText(), "run `node scripts/helm-values-schema.ts`");
});

test("values.schema.json takes values.yaml and commonEnv as a list or a map, and names a typo's path", () => {
  const validate = new Ajv({ allErrors: true, strict: false }).compile(JSON.parse(readFileSync(SCHEMA_PATH, "utf8")));
  const check = (values: Values) =>
    validate(values) ? [] : validate.errors!.map((e) => `${e.instancePath} ${e.message} ${JSON.stringify(e.params)}`);
  assert.deepEqual(check(readValues()), []);
  const withEnv = (commonEnv: unknown) => check({ ...readValues(), commonEnv });
  assert.deepEqual(
    withEnv({ PHONE_HOME_USAGE_REPORTING_ENABLED: "false", HTTPS_PROXY: { valueFrom: { secretKeyRef: { name: "proxy", key: "url" } } } }),
    [],
  );
  assert.deepEqual(withEnv([{ name: "HTTPS_PROXY", value: "http://proxy:3128" }]), []);
  assert.notDeepEqual(withEnv("HTTPS_PROXY=x"), []);
  const typos = { ...readValues(), persistance: { enabled: true }, global: { imageRegistry: "r" } } as Values;
  (typos.agent as Values).intervals = { flus: "1s" };
  (typos.agent as Values).logLevel = "loud";
  const problems = check(typos).join("\n");
  assert.match(problems, /additionalProperty":"persistance"/);
  assert.match(problems, /\/agent\/intervals must NOT have additional properties \{"additionalProperty":"flus"\}/);
  assert.match(problems, /\/agent\/logLevel must be equal to one of the allowed values/);
  assert.doesNotMatch(problems, /global/, "a parent chart's globals are allowed");
});

test("the image must be named: no placeholder default, a render-time failure that says how to build and push it", () => {
  assert.equal((readValues().image as Values).repository, "");
  const helpers = readFileSync(join(TEMPLATES, "_helpers.tpl"), "utf8");
  assert.match(helpers, /fail "image\.repository: set it to the registry you pushed this repository's image to \(docker build -t/);
});
