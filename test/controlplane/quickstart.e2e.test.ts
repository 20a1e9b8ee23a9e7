import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { stringify } from "yaml";
import Database from "better-sqlite3";
import { processesWith, startService, tempDir, waitFor, type ServiceProcess } from "../helpers/processes.ts";

// The control plane's quick-start flow (docs/PROTOCOL.md, "Deployments") against the real control plane and its
// local deployer: real agent server processes on loopback, spoken to over A2A at the end.

const API_KEY = `cp-test-key-${randomUUID()}`;
const NOTES_GRAPH = new URL("../../examples/agent-server/graph.json", import.meta.url).pathname;
const TEST_GRAPHS = new URL("../fixtures/graphs/test-graphs.ts", import.meta.url).pathname;
const dir = tempDir("controlplane-");
const configPath = join(dir, "controlplane.yaml");
writeFileSync(configPath, stringify({ listen: "127.0.0.1:0", dataDir: join(dir, "data"), apiKeys: [API_KEY], logLevel: "info" }));

let controlPlane: ServiceProcess;
const start = () => startService(["controlplane", "serve", "--config", configPath], "control plane listening");
before(async () => (controlPlane = await start()));
after(async () => {
  // Deleting stops each deployment's agent server: nothing outlives the tests.
  const list = await api("GET", "/v2/deployments?limit=100");
  for (const deployment of list.body?.resources ?? []) await api("DELETE", `/v2/deployments/${deployment.id}`);
  await controlPlane.stop();
  // Whatever a failed test left running.
  for (const pid of processesWith(dir)) process.kill(pid, "SIGKILL");
});

async function api(method: string, path: string, body?: unknown, key: string | null = API_KEY) {
  const response = await fetch(`${controlPlane.url}${path}`, {
    method,
    headers: { ...(key === null ? {} : { "x-api-key": key }), ...(body === undefined ? {} : { "content-type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : undefined };
}

/** A graph.json whose assistant `notes` runs `exportName` of the test graphs (a different agent under the same id). */
function graphJson(exportName: string): string {
  const graphDir = join(dir, `graph-${randomUUID()}`);
  mkdirSync(graphDir);
  const path = join(graphDir, "graph.json");
  writeFileSync(path, JSON.stringify({ graphs: { notes: `${TEST_GRAPHS}:${exportName}` } }));
  return path;
}

/** Polls a revision until it is final; returns it and every status seen on the way. */
async function settle(deploymentId: string, revisionId: string) {
  const seen: string[] = [];
  const revision = await waitFor(
    async () => {
      const { body } = await api("GET", `/v2/deployments/${deploymentId}/revisions/${revisionId}`);
      if (seen.at(-1) !== body.status) seen.push(body.status);
      return ["DEPLOYED", "CREATE_FAILED", "BUILD_FAILED", "DEPLOY_FAILED", "SKIPPED", "INTERRUPTED"].includes(body.status)
        ? body
        : undefined;
    },
    60_000,
    `revision ${revisionId} to settle`,
  );
  return { revision, seen };
}

async function a2aSend(url: string, text: string, extra: Record<string, unknown> = {}) {
  const response = await fetch(`${url}/a2a/notes`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: randomUUID(),
      method: "message/send",
      params: { message: { kind: "message", role: "user", messageId: randomUUID(), parts: [{ kind: "text", text }], ...extra } },
    }),
  });
  assert.equal(response.status, 200);
  return ((await response.json()) as any).result;
}

const ORDER = ["QUEUED", "CREATING", "AWAITING_BUILD", "BUILDING", "AWAITING_DEPLOY", "DEPLOYING", "DEPLOYED"];

test("quick start: create, get, poll the latest revision until DEPLOYED, then talk to the deployed agent over A2A", async () => {
  const created = await api("POST", "/v2/deployments", {
    name: "notes-agent",
    source: "local",
    source_revision_config: { langgraph_config_path: NOTES_GRAPH },
    secrets: [{ name: "NOTES_TOKEN", value: "s3cret-value" }],
  });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  const { id, latest_revision_id: revisionId } = created.body;
  assert.ok(id && revisionId);
  assert.deepEqual(created.body.secrets, [{ name: "NOTES_TOKEN" }], "secrets come back as names only");
  assert.ok(!JSON.stringify(created.body).includes("s3cret-value"));

  const got = await api("GET", `/v2/deployments/${id}`);
  assert.deepEqual([got.status, got.body.id, got.body.latest_revision_id], [200, id, revisionId]);
  // The docs' Deployment: tenant_id, every source_revision_config field (null when not set), its own status enum.
  assert.match(got.body.tenant_id, /^[0-9a-f-]{36}$/);
  assert.deepEqual(got.body.source_revision_config, {
    repo_ref: null,
    langgraph_config_path: NOTES_GRAPH,
    image_uri: null,
    source_tarball_path: null,
    repo_commit_sha: null,
  });
  assert.ok(["AWAITING_DATABASE", "READY"].includes(got.body.status), got.body.status);
  assert.deepEqual([got.body.secret_references, got.body.image_version], [null, null]);

  const { revision, seen } = await settle(id, revisionId);
  assert.equal(revision.status, "DEPLOYED", JSON.stringify(revision));
  const positions = seen.map((status) => ORDER.indexOf(status));
  assert.ok(
    positions.every((p, i) => p >= 0 && (i === 0 || p > positions[i - 1]!)),
    `statuses in pipeline order: ${seen.join(" -> ")}`,
  );

  const deployment = (await api("GET", `/v2/deployments/${id}`)).body;
  assert.deepEqual([deployment.status, deployment.latest_revision_status], ["READY", "DEPLOYED"]);
  assert.equal(revision.source, "local");
  assert.equal(deployment.active_revision_id, revisionId);
  assert.match(deployment.url, /^http:\/\/127\.0\.0\.1:\d+$/);
  const task = await a2aSend(deployment.url, "ship the release");
  assert.equal(task.artifacts[0].parts[0].text, 'Noted: "ship the release". That is note 1 of this conversation.');
});

test("PATCH: a non-null config or secrets makes a revision, unchanged or not; the agent answers from the new graph; redeploy answers the deployment", async () => {
  const created = (
    await api("POST", "/v2/deployments", {
      name: "patched",
      source: "local",
      source_revision_config: { langgraph_config_path: NOTES_GRAPH },
    })
  ).body;
  await settle(created.id, created.latest_revision_id);
  const before = (await api("GET", `/v2/deployments/${created.id}`)).body;
  const first = await a2aSend(before.url, "remember the milk");

  // Nulls are "not set": no revision, nothing changes. A name cannot change.
  const nothing = await api("PATCH", `/v2/deployments/${created.id}`, {
    source_config: null,
    source_revision_config: null,
    secrets: null,
    secret_references: null,
  });
  assert.deepEqual([nothing.status, nothing.body.latest_revision_id], [200, created.latest_revision_id]);
  const renamed = await api("PATCH", `/v2/deployments/${created.id}`, { name: "other" });
  assert.deepEqual([renamed.status, renamed.body.detail[0].loc], [422, ["body", "name"]]);
  const secretsOnly = await api("PATCH", `/v2/deployments/${created.id}`, { secrets: [{ name: "API_TOKEN", value: "t0ken" }] });
  assert.equal(secretsOnly.status, 200);
  assert.notEqual(
    secretsOnly.body.latest_revision_id,
    created.latest_revision_id,
    "new secrets reach the server only through a new revision",
  );
  assert.deepEqual(secretsOnly.body.secrets, [{ name: "API_TOKEN" }]);
  const same = await api("PATCH", `/v2/deployments/${created.id}`, {
    source_revision_config: { langgraph_config_path: NOTES_GRAPH, image_uri: null },
  });
  assert.notEqual(
    same.body.latest_revision_id,
    secretsOnly.body.latest_revision_id,
    "the same path again is a new revision: new code at the same path",
  );
  assert.equal((await settle(created.id, same.body.latest_revision_id)).revision.status, "DEPLOYED");

  const patched = await api("PATCH", `/v2/deployments/${created.id}`, {
    source_revision_config: { langgraph_config_path: graphJson("twoStep") },
  });
  assert.equal(patched.status, 200);
  assert.notEqual(patched.body.latest_revision_id, created.latest_revision_id);
  const { revision } = await settle(created.id, patched.body.latest_revision_id);
  assert.equal(revision.status, "DEPLOYED", JSON.stringify(revision));
  const after = (await api("GET", `/v2/deployments/${created.id}`)).body;
  assert.equal((await a2aSend(after.url, "go")).artifacts[0].parts[0].text, "done thinking");
  assert.equal(after.url, before.url, "the new revision took the old one's port");

  const revisions = (await api("GET", `/v2/deployments/${created.id}/revisions`)).body;
  assert.deepEqual(
    revisions.resources.map((r: any) => r.id),
    [patched.body.latest_revision_id, same.body.latest_revision_id, secretsOnly.body.latest_revision_id, created.latest_revision_id],
  );
  assert.equal(revisions.offset, 4, "the offset of the next page: past the four revisions");
  const deployedOnly = (await api("GET", `/v2/deployments/${created.id}/revisions?status=DEPLOYED,DEPLOY_FAILED`)).body.resources;
  assert.ok(
    deployedOnly.every((r: any) => r.status === "DEPLOYED") && deployedOnly.some((r: any) => r.id === patched.body.latest_revision_id),
  );
  // The conversation's thread outlived the redeploy (same data dir): the old context is still known.
  assert.equal((await a2aSend(after.url, "again", { contextId: first.contextId })).contextId, first.contextId);

  // Redeploying the first revision runs its graph again, as a new revision.
  // As the docs define it: 200 with the deployment, its latest_revision_id the new revision.
  const redeployed = await api("POST", `/v2/deployments/${created.id}/revisions/${created.latest_revision_id}/redeploy`);
  assert.equal(redeployed.status, 200);
  assert.equal(redeployed.body.source_revision_config.langgraph_config_path, NOTES_GRAPH);
  const newest = redeployed.body.latest_revision_id;
  assert.ok(![created.latest_revision_id, patched.body.latest_revision_id].includes(newest));
  assert.equal((await settle(created.id, newest)).revision.status, "DEPLOYED");
  assert.match((await a2aSend(after.url, "back to notes")).artifacts[0].parts[0].text, /^Noted: "back to notes"/);
  assert.equal((await api("POST", `/v2/deployments/${created.id}/revisions/${randomUUID()}/redeploy`)).status, 404);
});

test("a newer revision supersedes an unfinished one (SKIPPED or INTERRUPTED); a build failure is BUILD_FAILED with its reason", async () => {
  const created = (
    await api("POST", "/v2/deployments", {
      name: "superseded",
      source: "local",
      source_revision_config: { langgraph_config_path: NOTES_GRAPH },
    })
  ).body;
  const newer = (
    await api("PATCH", `/v2/deployments/${created.id}`, { source_revision_config: { langgraph_config_path: graphJson("twoStep") } })
  ).body;
  const old = (await settle(created.id, created.latest_revision_id)).revision;
  assert.ok(["SKIPPED", "INTERRUPTED"].includes(old.status), old.status);
  assert.match(old.status_message, new RegExp(`superseded by revision ${newer.latest_revision_id}`));
  assert.equal((await settle(created.id, newer.latest_revision_id)).revision.status, "DEPLOYED");

  // Beside the data dir, not above it: a graph's directory is readable to its deployment (process-sandbox.ts).
  mkdirSync(join(dir, "broken"));
  const broken = join(dir, "broken", "graph.json");
  writeFileSync(broken, JSON.stringify({ graphs: { notes: "./missing.ts:graph" } }));
  const failing = (
    await api("POST", "/v2/deployments", { name: "broken", source: "local", source_revision_config: { langgraph_config_path: broken } })
  ).body;
  const { revision } = await settle(failing.id, failing.latest_revision_id);
  assert.equal(revision.status, "BUILD_FAILED");
  assert.match(revision.status_message, /graphs\.notes: cannot load .*missing\.ts/);
  // Nothing serves and its only revision failed: the deployment's own status is UNKNOWN.
  const listed = (await api("GET", "/v2/deployments?status=UNKNOWN&name_contains=broken")).body.resources.map((d: any) => d.id);
  assert.deepEqual(listed, [failing.id]);
  const ready = (
    await api("GET", `/v2/deployments?status=READY,AWAITING_DATABASE&deployment_ids=${created.id},${failing.id}`)
  ).body.resources.map((d: any) => d.id);
  assert.deepEqual(ready, [created.id]);
});

test("list: limit, offset, name_contains and status; delete stops the agent server and forgets the deployment", async () => {
  const names = ["list-alpha", "list-beta", "list-gamma"];
  const ids: string[] = [];
  for (const name of names)
    ids.push(
      (await api("POST", "/v2/deployments", { name, source: "local", source_revision_config: { langgraph_config_path: NOTES_GRAPH } })).body
        .id,
    );
  const filtered = (await api("GET", "/v2/deployments?name_contains=list-")).body;
  assert.deepEqual(
    filtered.resources.map((d: any) => d.name),
    [...names].reverse(),
    "newest first",
  );
  const page = (await api("GET", "/v2/deployments?name_contains=list-&limit=1&offset=1")).body;
  assert.deepEqual([page.resources.map((d: any) => d.name), page.offset], [["list-beta"], 2], "offset: where the next page starts");
  assert.deepEqual((await api("GET", "/v2/deployments?name_contains=no-such-name")).body.resources, []);
  assert.deepEqual((await api("GET", "/v2/deployments?name_contains=%25")).body.resources, [], "% is matched literally");

  const target = ids[0]!;
  const deployed = (await settle(target, (await api("GET", `/v2/deployments/${target}`)).body.latest_revision_id)).revision;
  assert.equal(deployed.status, "DEPLOYED");
  const url = (await api("GET", `/v2/deployments/${target}`)).body.url;
  assert.equal((await fetch(`${url}/ok`)).status, 200);
  assert.equal((await api("DELETE", `/v2/deployments/${target}`)).status, 204);
  assert.equal((await api("GET", `/v2/deployments/${target}`)).status, 404);
  await assert.rejects(fetch(`${url}/ok`), "the agent server is stopped");
});

test("validation: 422 HTTPValidationError with the field's loc, nothing stored; 404 for unknown ids; 401 without a valid key", async () => {
  const count = async () => (await api("GET", "/v2/deployments?limit=100")).body.resources.length;
  let before = await count();
  const cases: [unknown, (string | number)[]][] = [
    [{ source: "local", source_revision_config: { langgraph_config_path: NOTES_GRAPH } }, ["body", "name"]],
    [{ name: "x", source: "ftp", source_revision_config: { langgraph_config_path: NOTES_GRAPH } }, ["body", "source"]],
    [
      { name: "x", source: "local", source_revision_config: { langgraph_config_path: "relative/graph.json" } },
      ["body", "source_revision_config", "langgraph_config_path"],
    ],
    [{ name: "x", source: "local", source_revision_config: {} }, ["body", "source_revision_config", "langgraph_config_path"]],
    [
      {
        name: "x",
        source: "local",
        source_revision_config: { langgraph_config_path: NOTES_GRAPH },
        secrets: [
          { name: "A", value: "1" },
          { name: "A", value: "2" },
        ],
      },
      ["body", "secrets", 1, "name"],
    ],
    [
      {
        name: "x",
        source: "local",
        source_revision_config: { langgraph_config_path: NOTES_GRAPH },
        secrets: [{ name: "1BAD", value: "1" }],
      },
      ["body", "secrets", 0, "name"],
    ],
    [{ name: "x", source: "local", source_revision_config: { langgraph_config_path: NOTES_GRAPH }, extra: true }, ["body", "extra"]],
    // Names that change how the agent server's runtime loads code, or are its own settings: refused, named.
    ...[
      "NODE_OPTIONS",
      "node_path",
      "LD_PRELOAD",
      "PATH",
      "HOME",
      "OPENSSL_CONF",
      "EGRESS_SIDECAR_URL",
      "PLATFORM_TENANT_ID",
      "DATABASE_URI",
      "database_schema",
    ].map((name): [unknown, (string | number)[]] => [
      {
        name: "x",
        source: "local",
        source_revision_config: { langgraph_config_path: NOTES_GRAPH },
        secrets: [
          { name: "OPENAI_API_KEY", value: "k" },
          { name, value: "--import=data:text/javascript,1" },
        ],
      },
      ["body", "secrets", 1, "name"],
    ]),
  ];
  for (const [body, loc] of cases) {
    const answer = await api("POST", "/v2/deployments", body);
    assert.equal(answer.status, 422, JSON.stringify(body));
    assert.ok(
      answer.body.detail.some(
        (d: any) => JSON.stringify(d.loc) === JSON.stringify(loc) && typeof d.msg === "string" && typeof d.type === "string",
      ),
      `${JSON.stringify(loc)} in ${JSON.stringify(answer.body)}`,
    );
  }
  assert.equal(await count(), before, "nothing was stored");

  const query = async (path: string, loc: (string | number)[]) => {
    const answer = await api("GET", path);
    assert.equal(answer.status, 422, path);
    assert.deepEqual(answer.body.detail[0].loc, loc);
  };
  await query("/v2/deployments?limit=0", ["query", "limit"]);
  await query("/v2/deployments?limit=101", ["query", "limit"]);
  await query("/v2/deployments?limit=ten", ["query", "limit"]);
  await query("/v2/deployments?offset=-1", ["query", "offset"]);
  await query("/v2/deployments?status=RUNNING", ["query", "status"]);
  await query("/v2/deployments?status=DEPLOYED", ["query", "status"]); // a revision's status, not a deployment's
  await query("/v2/deployments?deployment_ids=a,b", ["query", "deployment_ids"]);
  // Documented filters this control plane cannot honour, and unknown ones: refused, never ignored.
  await query("/v2/deployments?remote_reconciled=true", ["query", "remote_reconciled"]);
  await query("/v2/deployments?image_version=1", ["query", "image_version"]);
  await query("/v2/deployments?tag_value_ids=x", ["query", "tag_value_ids"]);
  await query("/v2/deployments?colour=blue", ["query", "colour"]);
  const existingForDelete = (
    await api("POST", "/v2/deployments", {
      name: "delete-query",
      source: "local",
      source_revision_config: { langgraph_config_path: NOTES_GRAPH },
    })
  ).body;
  const refusedDelete = await api("DELETE", `/v2/deployments/${existingForDelete.id}?delete_tracing_project=true`);
  assert.deepEqual([refusedDelete.status, refusedDelete.body.detail[0].loc], [422, ["query", "delete_tracing_project"]]);
  assert.equal((await api("DELETE", `/v2/deployments/${existingForDelete.id}?delete_tracing_project=false`)).status, 204);
  await query("/v2/deployments/not-a-uuid", ["path", "deployment_id"]);

  const existing = (
    await api("POST", "/v2/deployments", {
      name: "patch-target",
      source: "local",
      source_revision_config: { langgraph_config_path: NOTES_GRAPH },
    })
  ).body;
  const patchCases: [unknown, (string | number)[]][] = [
    [{ name: "renamed" }, ["body", "name"]],
    [{ source_config: { repo_url: "https://example.invalid/other" } }, ["body", "source_config", "repo_url"]],
    [{ source_revision_config: { image_uri: "registry/image:1" } }, ["body", "source_revision_config", "image_uri"]],
    [{ secret_references: [{ name: "A", secret_name: "s", secret_key: "k" }] }, ["body", "secret_references"]],
    [{ revision_source: "github" }, ["body", "revision_source"]],
    [{ source_revision_config: { langgraph_config_path: "graph.json" } }, ["body", "source_revision_config", "langgraph_config_path"]],
    [{ secrets: [{ name: "OK" }] }, ["body", "secrets", 0, "value"]],
    [{ secrets: [{ name: "NODE_OPTIONS", value: "--require=/tmp/x.js" }] }, ["body", "secrets", 0, "name"]],
    [{ source: "external_docker" }, ["body", "source"]],
  ];
  for (const [body, loc] of patchCases) {
    const answer = await api("PATCH", `/v2/deployments/${existing.id}`, body);
    assert.equal(answer.status, 422, JSON.stringify(body));
    assert.deepEqual(answer.body.detail[0].loc, loc, JSON.stringify(answer.body));
  }
  before += 1;
  const unchanged = (await api("GET", `/v2/deployments/${existing.id}`)).body;
  assert.deepEqual(
    [unchanged.name, unchanged.latest_revision_id],
    ["patch-target", existing.latest_revision_id],
    "a refused PATCH changes nothing",
  );
  await query(`/v2/deployments/${existing.id}/revisions/not-a-uuid`, ["path", "revision_id"]);

  const unknown = randomUUID();
  assert.equal((await api("GET", `/v2/deployments/${unknown}`)).status, 404);
  assert.equal((await api("PATCH", `/v2/deployments/${unknown}`, { name: "y" })).status, 404);
  assert.equal((await api("DELETE", `/v2/deployments/${unknown}`)).status, 404);
  assert.equal((await api("GET", `/v2/deployments/${unknown}/revisions/${randomUUID()}`)).status, 404);

  for (const key of [null, "wrong-key", `${API_KEY}x`]) {
    const answer = await api("GET", "/v2/deployments", undefined, key);
    assert.equal(answer.status, 401, String(key));
    assert.equal(typeof answer.body.detail, "string");
    const create = await api(
      "POST",
      "/v2/deployments",
      { name: "nope", source: "local", source_revision_config: { langgraph_config_path: NOTES_GRAPH } },
      key,
    );
    assert.equal(create.status, 401);
  }
  assert.equal(await count(), before);
  assert.ok(!controlPlane.output().includes(API_KEY), "the API key never appears in the log");
});

test("a control plane restart keeps deployments, adopts agent servers still running, and starts again those that are gone", async () => {
  const created = (
    await api("POST", "/v2/deployments", {
      name: "survivor",
      source: "local",
      source_revision_config: { langgraph_config_path: NOTES_GRAPH },
    })
  ).body;
  await settle(created.id, created.latest_revision_id);
  const before = (await api("GET", `/v2/deployments/${created.id}`)).body;
  const conversation = await a2aSend(before.url, "keep this");

  assert.equal(await controlPlane.stop("SIGTERM"), 0);
  assert.equal((await fetch(`${before.url}/ok`)).status, 200, "the agent server outlives the control plane");
  controlPlane = await start();
  const adopted = (await api("GET", `/v2/deployments/${created.id}`)).body;
  assert.deepEqual([adopted.url, adopted.status, adopted.active_revision_id], [before.url, "READY", created.latest_revision_id]);

  // The agent server dies while the control plane is down: the next start brings it back, its threads intact.
  await controlPlane.stop("SIGKILL");
  await killAgentServer(created.id, before.url);
  controlPlane = await start();
  const restarted = (await api("GET", `/v2/deployments/${created.id}`)).body;
  assert.equal(restarted.status, "READY");
  const recalled = await a2aSend(restarted.url, "recall", { contextId: conversation.contextId });
  assert.equal(recalled.artifacts[0].parts[0].text, 'You told me: "keep this".');
});

/** Kills a deployment's agent server (its pid from the control plane's database) and waits until it is gone. */
async function killAgentServer(deploymentId: string, url: string): Promise<void> {
  const db = new Database(join(dir, "data", "controlplane.db"), { readonly: true });
  const { pid } = db.prepare("SELECT pid FROM deployments WHERE id = ?").get(deploymentId) as { pid: number };
  db.close();
  process.kill(pid, "SIGKILL");
  await waitFor(
    async () =>
      fetch(`${url}/ok`).then(
        () => false,
        () => true,
      ),
    10_000,
    "the agent server to die",
  );
}
