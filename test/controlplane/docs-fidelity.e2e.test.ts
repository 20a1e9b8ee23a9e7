import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { stringify } from "yaml";
import { ControlPlaneClient } from "../../src/controlplane/client.ts";
import { runCli, startService, tempDir, waitFor, type ServiceProcess } from "../helpers/processes.ts";

// The control plane as its docs describe it, driven as a CI script following them would: paging by the answer's
// offset, the OpenAPI's validation of a create, and the key as X-Api-Key or Authorization: Bearer. The real control
// plane with the kubernetes deployer (it renders manifests: no agent server processes to start).

const API_KEY = `cp-docs-key-${randomUUID()}`;
const WRONG_KEY = `cp-wrong-key-${randomUUID()}`;
const IMAGE = "registry.example/agents/notes:1";
const dir = tempDir("controlplane-docs-");
let controlPlane: ServiceProcess;

before(async () => {
  const configPath = join(dir, "controlplane.yaml");
  const config = { listen: "127.0.0.1:0", dataDir: join(dir, "data"), apiKeys: [API_KEY], deployer: "kubernetes", logLevel: "debug" };
  writeFileSync(configPath, stringify(config));
  controlPlane = await startService(["controlplane", "serve", "--config", configPath], "control plane listening");
});
after(async () => {
  await controlPlane.stop();
});

async function call(method: string, path: string, options: { body?: unknown; headers?: Record<string, string> } = {}) {
  const response = await fetch(`${controlPlane.url}${path}`, {
    method,
    headers: {
      ...(options.body === undefined ? {} : { "content-type": "application/json" }),
      ...(options.headers ?? { "x-api-key": API_KEY }),
    },
    body: typeof options.body === "string" ? options.body : options.body === undefined ? undefined : JSON.stringify(options.body),
  });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : undefined };
}

/** A create as the OpenAPI's DeploymentCreateRequest has it: every required field. */
const createBody = (name: string, extra: Record<string, unknown> = {}) => ({
  name,
  source: "external_docker",
  source_config: { deployment_type: "prod", resource_spec: null },
  source_revision_config: { image_uri: IMAGE },
  secrets: [],
  ...extra,
});

/** What a CI script following the docs does: offset 0, then each answer's offset passed back, until an empty page. */
async function pageAsTheDocsSay(path: string, limit: number, headers?: Record<string, string>) {
  const answers: { resources: { id: string }[]; offset: number }[] = [];
  let offset = 0;
  for (let request = 0; request < 20; request++) {
    const answer = await call("GET", `${path}${path.includes("?") ? "&" : "?"}limit=${limit}&offset=${offset}`, { headers });
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    answers.push(answer.body);
    if (answer.body.resources.length === 0) return answers;
    offset = answer.body.offset;
  }
  assert.fail(`20 pages and no end: offsets ${answers.map((a) => a.offset).join(", ")}`);
}

const count = async (prefix: string) => (await call("GET", `/v2/deployments?limit=100&name_contains=${prefix}`)).body.resources.length;

test("paging as the docs say: 7 deployments, limit 3, each seen once, then an empty page ends it", async () => {
  const ids: string[] = [];
  for (let i = 1; i <= 7; i++) {
    const created = await call("POST", "/v2/deployments", { body: createBody(`page-${i}`) });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    ids.push(created.body.id);
  }
  const answers = await pageAsTheDocsSay("/v2/deployments?name_contains=page-", 3);
  assert.deepEqual(
    answers.map((a) => [a.resources.length, a.offset]),
    [
      [3, 3],
      [3, 6],
      [1, 7],
      [0, 7],
    ],
    "each answer's offset is where the next page starts; past the last item, an empty page at the same offset",
  );
  const seen = answers.flatMap((a) => a.resources.map((d) => d.id));
  assert.deepEqual(seen, [...ids].reverse(), "every deployment once, newest first");

  // The client and `deployments list` walk the same pages to the same end.
  const client = new ControlPlaneClient({ baseUrl: controlPlane.url, apiKey: API_KEY });
  const all = await client.listAll({ nameContains: "page-" });
  assert.deepEqual([all.resources.map((d) => d.id), all.offset], [[...ids].reverse(), 7]);
  const env = { PLATFORM_API_KEY: API_KEY, PLATFORM_CONTROL_PLANE_URL: controlPlane.url };
  const listed = await runCli(["deployments", "list", "--json", "--name-contains", "page-"], { env });
  assert.equal(listed.code, 0, listed.stderr);
  assert.deepEqual(
    JSON.parse(listed.stdout).resources.map((d: { id: string }) => d.id),
    [...ids].reverse(),
  );
  const onePage = await runCli(["deployments", "list", "--name-contains", "page-", "--limit", "3", "--offset", "3"], { env });
  assert.equal(onePage.code, 0, onePage.stderr);
  assert.deepEqual(
    ids
      .slice()
      .reverse()
      .filter((id) => onePage.stdout.includes(id)),
    [...ids].reverse().slice(3, 6),
  );
  assert.match(onePage.stdout, /next page: --offset 6\n$/);

  // A deployment's revisions page the same way.
  const target = ids[0]!;
  const revisionIds = [(await call("GET", `/v2/deployments/${target}`)).body.latest_revision_id];
  for (let i = 0; i < 4; i++) {
    await waitFor(async () => {
      const { body } = await call("GET", `/v2/deployments/${target}/revisions/${revisionIds.at(-1)}`);
      return ["DEPLOYED", "DEPLOY_FAILED", "CREATE_FAILED"].includes(body.status) ? body : undefined;
    });
    const patched = await call("PATCH", `/v2/deployments/${target}`, { body: { source_revision_config: { image_uri: `${IMAGE}-${i}` } } });
    assert.equal(patched.status, 200, JSON.stringify(patched.body));
    revisionIds.push(patched.body.latest_revision_id);
  }
  const revisionPages = await pageAsTheDocsSay(`/v2/deployments/${target}/revisions`, 2);
  assert.deepEqual(
    revisionPages.map((a) => a.offset),
    [2, 4, 5, 5],
  );
  assert.deepEqual(
    revisionPages.flatMap((a) => a.resources.map((r) => r.id)),
    [...revisionIds].reverse(),
  );
  assert.deepEqual(
    (await client.revisionsAll(target)).resources.map((r) => r.id),
    [...revisionIds].reverse(),
  );
});

test("validation as the OpenAPI: deployment_type in its enum, resource_spec within its bounds, required fields; 422 at the field's loc, nothing stored", async () => {
  const spec = (resource_spec: Record<string, unknown>) => createBody("bad-spec", { source_config: { resource_spec } });
  const without = (field: string) => {
    const body: Record<string, unknown> = createBody("bad-missing");
    delete body[field];
    return body;
  };
  const cases: [unknown, (string | number)[]][] = [
    [createBody("bad-type", { source_config: { deployment_type: "staging" } }), ["body", "source_config", "deployment_type"]],
    [spec({ cpu: 0.05 }), ["body", "source_config", "resource_spec", "cpu"]],
    [spec({ cpu: 9 }), ["body", "source_config", "resource_spec", "cpu"]],
    [spec({ cpu: "1" }), ["body", "source_config", "resource_spec", "cpu"]],
    [spec({ cpu_limit: 17 }), ["body", "source_config", "resource_spec", "cpu_limit"]],
    [spec({ queue_cpu: 0 }), ["body", "source_config", "resource_spec", "queue_cpu"]],
    [spec({ redis_cpu_limit: 32 }), ["body", "source_config", "resource_spec", "redis_cpu_limit"]],
    [spec({ min_scale: -1 }), ["body", "source_config", "resource_spec", "min_scale"]],
    [spec({ max_scale: 1.5 }), ["body", "source_config", "resource_spec", "max_scale"]],
    [spec({ memory_mb: 0 }), ["body", "source_config", "resource_spec", "memory_mb"]],
    [spec({ min_scale: 3, max_scale: 1 }), ["body", "source_config", "resource_spec", "max_scale"]],
    [spec({ cpu: 2, cpu_limit: 1 }), ["body", "source_config", "resource_spec", "cpu_limit"]],
    [spec({ gpus: 1 }), ["body", "source_config", "resource_spec", "gpus"]],
    [spec({ volumes: [{ name: "host", hostPath: { path: "/" } }] }), ["body", "source_config", "resource_spec", "volumes"]],
    [spec({ labels: { team: 7 } }), ["body", "source_config", "resource_spec", "labels", "team"]],
    [without("name"), ["body", "name"]],
    [without("source"), ["body", "source"]],
    [without("source_revision_config"), ["body", "source_revision_config"]],
    [without("source_config"), ["body", "source_config"]],
    [without("secrets"), ["body", "secrets"]],
    [createBody("bad-null", { secrets: null }), ["body", "secrets"]],
  ];
  for (const [body, loc] of cases) {
    const answer = await call("POST", "/v2/deployments", { body });
    assert.equal(answer.status, 422, JSON.stringify(body));
    assert.ok(
      answer.body.detail.some(
        (d: any) => JSON.stringify(d.loc) === JSON.stringify(loc) && typeof d.msg === "string" && typeof d.type === "string",
      ),
      `${JSON.stringify(loc)} in ${JSON.stringify(answer.body)}`,
    );
  }
  assert.equal(await count("bad-"), 0, "nothing was stored");

  // Within the bounds: taken, and recorded as given.
  const resourceSpec = { min_scale: 1, max_scale: 3, cpu: 0.1, cpu_limit: 16, memory_mb: 1024, labels: { team: "notes" } };
  const good = await call("POST", "/v2/deployments", {
    body: createBody("spec-ok", { source_config: { deployment_type: "dev", resource_spec: resourceSpec } }),
  });
  assert.equal(good.status, 201, JSON.stringify(good.body));
  assert.deepEqual(good.body.source_config, { deployment_type: "dev", resource_spec: resourceSpec });

  // A PATCH out of bounds changes nothing: no new revision.
  const patch = await call("PATCH", `/v2/deployments/${good.body.id}`, { body: { source_config: { resource_spec: { cpu: 8.5 } } } });
  assert.equal(patch.status, 422);
  assert.deepEqual(patch.body.detail[0].loc, ["body", "source_config", "resource_spec", "cpu"]);
  const after = (await call("GET", `/v2/deployments/${good.body.id}`)).body;
  assert.deepEqual([after.latest_revision_id, after.source_config], [good.body.latest_revision_id, good.body.source_config]);

  // The list filter takes the same enum.
  const filter = await call("GET", "/v2/deployments?deployment_type=staging");
  assert.deepEqual([filter.status, filter.body.detail[0].loc], [422, ["query", "deployment_type"]]);
  const devs = (await call("GET", "/v2/deployments?deployment_type=dev")).body.resources.map((d: any) => d.name);
  assert.deepEqual(devs, ["spec-ok"]);
});

test("Authorization: Bearer beside X-Api-Key: the same key check, from the headers before the body; never logged", async () => {
  const bearer = (key: string) => ({ authorization: `Bearer ${key}` });
  assert.equal((await call("GET", "/v2/deployments", { headers: bearer(API_KEY) })).status, 200);
  assert.equal(
    (await call("GET", "/v2/deployments", { headers: { authorization: `bearer  ${API_KEY}` } })).status,
    200,
    "the scheme in any case",
  );
  const created = await call("POST", "/v2/deployments", {
    body: createBody("bearer-made"),
    headers: { ...bearer(API_KEY), "content-type": "application/json" },
  });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  const pages = await pageAsTheDocsSay("/v2/deployments?name_contains=bearer-", 1, bearer(API_KEY));
  assert.deepEqual(
    pages.map((p) => p.offset),
    [1, 1],
  );

  const refused = async (headers: Record<string, string>, code: string, body?: string) => {
    const answer = await call(body === undefined ? "GET" : "POST", "/v2/deployments", {
      headers: { ...headers, ...(body === undefined ? {} : { "content-type": "application/json" }) },
      ...(body === undefined ? {} : { body }),
    });
    assert.deepEqual([answer.status, answer.body.code], [401, code], JSON.stringify(headers));
  };
  await refused(bearer(WRONG_KEY), "EGRESS_ERR_API_KEY_INVALID");
  await refused({}, "EGRESS_ERR_API_KEY_MISSING");
  await refused({ authorization: `Basic ${Buffer.from(`user:${API_KEY}`).toString("base64")}` }, "EGRESS_ERR_API_KEY_INVALID");
  await refused({ authorization: "Bearer " }, "EGRESS_ERR_API_KEY_INVALID");
  // Both headers: they must agree, whichever of the two holds the right key.
  await refused({ "x-api-key": API_KEY, ...bearer(WRONG_KEY) }, "EGRESS_ERR_API_KEY_CONFLICT");
  await refused({ "x-api-key": WRONG_KEY, ...bearer(API_KEY) }, "EGRESS_ERR_API_KEY_CONFLICT");
  assert.equal((await call("GET", "/v2/deployments", { headers: { "x-api-key": API_KEY, ...bearer(API_KEY) } })).status, 200);
  // Checked before the body: a wrong key with a broken body is 401, not 422.
  await refused(bearer(WRONG_KEY), "EGRESS_ERR_API_KEY_INVALID", "{not json");
  assert.equal(await count("bearer-"), 1, "the refused requests stored nothing");

  const output = controlPlane.output();
  for (const key of [API_KEY, WRONG_KEY]) assert.ok(!output.includes(key), "no key in the control plane's log");
});
