import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { stringify } from "yaml";
import { NOWHERE, processesWith, runCli, startService, tempDir, type ServiceProcess } from "../helpers/processes.ts";

// `egress-agent deployments ...` as a CI/CD job runs it, against the real control plane and its local deployer.

const API_KEY = `cp-cli-key-${randomUUID()}`;
const NOTES_GRAPH = new URL("../../examples/agent-server/graph.json", import.meta.url).pathname;
const dir = tempDir("controlplane-cli-");
let controlPlane: ServiceProcess;

before(async () => {
  const configPath = join(dir, "controlplane.yaml");
  // The key as the config keeps it at rest: hashed by the CLI.
  const hashed = await runCli(["controlplane", "hash-key"], { input: `${API_KEY}\n` });
  assert.match(hashed.stdout, /^sha256:[0-9a-f]{64}\n$/);
  writeFileSync(configPath, stringify({ listen: "127.0.0.1:0", dataDir: join(dir, "data"), apiKeys: [hashed.stdout.trim()] }));
  controlPlane = await startService(["controlplane", "serve", "--config", configPath], "control plane listening");
});
after(async () => {
  const list = await cli(["list", "--json", "--limit", "100"]);
  for (const deployment of JSON.parse(list.stdout || '{"resources":[]}').resources) await cli(["delete", deployment.id]);
  await controlPlane.stop();
  // Whatever a failed test left running.
  for (const pid of processesWith(dir)) process.kill(pid, "SIGKILL");
});

/** `egress-agent deployments ARGS` with the base URL and the key from the environment, as a CI job sets them. */
const cli = (args: string[], env: NodeJS.ProcessEnv = {}) =>
  runCli(["deployments", ...args], { env: { PLATFORM_API_KEY: API_KEY, PLATFORM_CONTROL_PLANE_URL: controlPlane.url, ...env } });

test("create --wait does the quick start in one command; get, list, revisions and wait report it", async () => {
  const created = await cli(["create", "--name", "ci-notes", "--graph", NOTES_GRAPH, "--secret", "TOKEN=abc123", "--wait", "--json"]);
  assert.equal(created.code, 0, created.stderr);
  const deployment = JSON.parse(created.stdout);
  assert.deepEqual([deployment.status, deployment.latest_revision_status], ["READY", "DEPLOYED"]);
  assert.match(created.stderr, /revision [0-9a-f-]+: DEPLOYED/);
  assert.ok(!created.stdout.includes("abc123") && !created.stderr.includes("abc123"), "a secret value is never printed");

  const answer = await runCli(["a2a", "send", deployment.url, "--assistant", "notes", "deployed by CI"]);
  assert.equal(answer.stdout, 'Noted: "deployed by CI". That is note 1 of this conversation.\n');

  const got = await cli(["get", deployment.id]);
  assert.match(
    got.stdout,
    new RegExp(`deployment ${deployment.id} "ci-notes" READY: revision ${deployment.latest_revision_id} DEPLOYED at ${deployment.url}`),
  );
  assert.match(got.stdout, /secrets: TOKEN/);
  const listed = await cli(["list", "--name-contains", "ci-", "--status", "READY,UNKNOWN"]);
  assert.match(listed.stdout, new RegExp(`${deployment.id}\\s+ci-notes\\s+READY\\s+DEPLOYED`));
  const revisions = await cli(["revisions", deployment.id]);
  assert.match(revisions.stdout, new RegExp(`${deployment.latest_revision_id}\\s+DEPLOYED`));
  const waited = await cli(["wait", deployment.id]);
  assert.equal(waited.code, 0);
  assert.match(waited.stdout, /^deployed: /);

  // --secret NAME takes the value from the environment (kept out of the process list); new secrets are a new
  // revision, and update --wait waits for that one.
  const updated = await cli(["update", deployment.id, "--secret", "FROM_ENV", "--wait", "--json"], { FROM_ENV: "env-value" });
  assert.equal(updated.code, 0, updated.stderr);
  const rolled = JSON.parse(updated.stdout);
  assert.deepEqual(rolled.secrets, [{ name: "FROM_ENV" }]);
  assert.notEqual(rolled.latest_revision_id, deployment.latest_revision_id);
  assert.deepEqual([rolled.active_revision_id, rolled.latest_revision_status], [rolled.latest_revision_id, "DEPLOYED"]);
  assert.match(updated.stderr, new RegExp(`revision ${rolled.latest_revision_id}: DEPLOYED`));
  const renamed = await cli(["update", deployment.id, "--name", "other"]);
  assert.equal(renamed.code, 2);
  assert.match(renamed.stderr, /unknown option '--name'/, "a name cannot change once created");
});

test("a failed build fails the wait with exit 1 naming BUILD_FAILED and the reason", async () => {
  // Beside the data dir, not above it: a graph's directory is readable to its deployment (process-sandbox.ts).
  mkdirSync(join(dir, "broken"));
  const broken = join(dir, "broken", "graph.json");
  writeFileSync(broken, JSON.stringify({ graphs: { notes: "./nowhere.ts:graph" } }));
  const created = await cli(["create", "--name", "ci-broken", "--graph", broken, "--wait", "--timeout", "60s"]);
  assert.equal(created.code, 1);
  assert.match(created.stderr, /ended BUILD_FAILED: [\s\S]*graphs\.notes: cannot load/);
});

test("wait --timeout gives up with exit 1 naming the status the revision is still in", async () => {
  // A graph module that takes 2 s to import: the build is still running when the wait gives up.
  const slowDir = join(dir, "slow");
  mkdirSync(slowDir);
  const notes = new URL("../../examples/agent-server/notes-agent.ts", import.meta.url).pathname;
  writeFileSync(
    join(slowDir, "slow.ts"),
    `await new Promise((resolve) => setTimeout(resolve, 2000));\nexport { graph } from ${JSON.stringify(notes)};\n`,
  );
  writeFileSync(join(slowDir, "graph.json"), JSON.stringify({ graphs: { notes: "./slow.ts:graph" } }));
  const created = await cli(["create", "--name", "ci-slow", "--graph", join(slowDir, "graph.json"), "--json"]);
  const { id } = JSON.parse(created.stdout);
  const waited = await cli(["wait", id, "--timeout", "300ms"]);
  assert.equal(waited.code, 1);
  assert.match(waited.stderr, /is still (QUEUED|CREATING|AWAITING_BUILD|BUILDING) after 300 ms/);
  const finished = await cli(["wait", id, "--timeout", "60s"]);
  assert.equal(finished.code, 0, finished.stderr);
});

test("client errors: a wrong key, an unknown deployment, a bad flag, no control plane", async () => {
  const wrongKey = await cli(["list"], { PLATFORM_API_KEY: "not-the-key" });
  assert.equal(wrongKey.code, 1);
  assert.match(wrongKey.stderr, /answered 401 EGRESS_ERR_API_KEY_INVALID/);
  const missing = await cli(["get", randomUUID()]);
  assert.equal(missing.code, 1);
  assert.match(missing.stderr, /answered 404/);
  const badStatus = await cli(["list", "--status", "RUNNING"]);
  assert.equal(badStatus.code, 2);
  assert.match(badStatus.stderr, /--status: each must be one of AWAITING_DATABASE, READY/);
  const invalid = await cli(["create", "--name", "bad name!", "--graph", NOTES_GRAPH]);
  assert.equal(invalid.code, 1);
  assert.match(invalid.stderr, /answered 422: body\.name invalid_format/);
  const noKey = await runCli(["deployments", "list"], { env: { PLATFORM_API_KEY: "", PLATFORM_CONTROL_PLANE_URL: controlPlane.url } });
  assert.equal(noKey.code, 2);
  assert.match(noKey.stderr, /--api-key: give the control plane's API key/);
  const down = await cli(["list", "--base-url", NOWHERE]);
  assert.equal(down.code, 1);
  assert.match(down.stderr, new RegExp(`cannot reach the control plane at ${NOWHERE} \\(ECONNREFUSED\\)`));
});
