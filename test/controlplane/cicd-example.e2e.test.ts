import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { stringify } from "yaml";
import { processesWith, startService, tempDir, type ServiceProcess } from "../helpers/processes.ts";

// The CI/CD example of LangSmith Deployment's control plane API page (docs.langchain.com/langsmith/api-ref-control-plane),
// step by step against the real control plane and its local deployer. What differs is only what a local source
// needs: an absolute langgraph_config_path on this machine instead of a GitHub integration and repository.

const API_KEY = `cp-cicd-key-${randomUUID()}`;
const dir = tempDir("controlplane-cicd-");
const configPath = join(dir, "controlplane.yaml");
writeFileSync(configPath, stringify({ listen: "127.0.0.1:0", dataDir: join(dir, "data"), apiKeys: [API_KEY] }));
// The repository under test: inside this checkout, so that @langchain resolves from its node_modules.
const repo = new URL(`../../.build-test-cicd-${process.pid}/`, import.meta.url).pathname;
const GRAPH_CONFIG = join(repo, "langgraph.json");
const MAX_WAIT_MS = 60_000;

let controlPlane: ServiceProcess;
before(async () => {
  mkdirSync(repo, { recursive: true });
  writeFileSync(GRAPH_CONFIG, JSON.stringify({ graphs: { agent: "./agent.mjs:graph" } }));
  commit("v1");
  controlPlane = await startService(["controlplane", "serve", "--config", configPath], "control plane listening");
});
after(async () => {
  await controlPlane?.stop();
  for (const pid of [...processesWith(dir), ...processesWith(repo)]) process.kill(pid, "SIGKILL");
  rmSync(repo, { recursive: true, force: true });
});

/** New code at the same path, as a push to the branch would bring it. */
function commit(version: string): void {
  writeFileSync(
    join(repo, "agent.mjs"),
    `import { AIMessage } from "@langchain/core/messages";
import { END, MessagesAnnotation, START, StateGraph } from "@langchain/langgraph";
export const graph = new StateGraph(MessagesAnnotation)
  .addNode("answer", () => ({ messages: [new AIMessage(\`${version}; key ends \${String(process.env.OPENAI_API_KEY).slice(-4)}\`)] }))
  .addEdge(START, "answer")
  .addEdge("answer", END)
  .compile();
`,
  );
}

const headers = { "X-Api-Key": API_KEY, "Content-Type": "application/json" };
const url = (path: string) => `${controlPlane.url}${path}`;

/** create_deployment: POST /v2/deployments, 201, the deployment's id. */
async function createDeployment(): Promise<string> {
  const response = await fetch(url("/v2/deployments"), {
    method: "POST",
    headers,
    body: JSON.stringify({
      name: "my_deployment",
      source: "local",
      source_config: { deployment_type: "dev", build_on_push: false, custom_url: null, resource_spec: null },
      source_revision_config: { repo_ref: "main", langgraph_config_path: GRAPH_CONFIG, image_uri: null },
      secrets: [
        { name: "OPENAI_API_KEY", value: "test_openai_api_key-1111" },
        { name: "ANTHROPIC_API_KEY", value: "test_anthropic_api_key" },
        { name: "TAVILY_API_KEY", value: "test_tavily_api_key" },
      ],
    }),
  });
  assert.equal(response.status, 201);
  return ((await response.json()) as { id: string }).id;
}

/** list_revisions: GET .../revisions, 200; the example takes resources[0] as the latest. */
async function latestRevisionId(deploymentId: string): Promise<string> {
  const response = await fetch(url(`/v2/deployments/${deploymentId}/revisions`), { headers });
  assert.equal(response.status, 200);
  return ((await response.json()) as { resources: { id: string }[] }).resources[0]!.id;
}

/** wait_for_deployment: poll the revision until DEPLOYED; a status with FAILED in it raises; so does the timeout. */
async function waitForDeployment(deploymentId: string, revisionId: string): Promise<void> {
  const start = Date.now();
  let status = "";
  while (Date.now() - start < MAX_WAIT_MS) {
    const response = await fetch(url(`/v2/deployments/${deploymentId}/revisions/${revisionId}`), { headers });
    assert.equal(response.status, 200);
    status = ((await response.json()) as { status: string }).status;
    if (status === "DEPLOYED") break;
    if (status.includes("FAILED")) throw new Error(`Revision ${revisionId} failed: ${status}`);
    await new Promise((resolve) => setTimeout(resolve, 200)); // the example sleeps 60 s
  }
  if (status !== "DEPLOYED") throw new Error(`Timeout waiting for revision ${revisionId}`);
}

/** patch_deployment: PATCH /v2/deployments/{id}, 200. */
async function patchDeployment(deploymentId: string, body: unknown): Promise<void> {
  const response = await fetch(url(`/v2/deployments/${deploymentId}`), { method: "PATCH", headers, body: JSON.stringify(body) });
  assert.equal(response.status, 200, await response.clone().text());
}

/** What the deployed agent answers now (over A2A, at the deployment's url). */
async function ask(deploymentId: string): Promise<string> {
  const deployment = (await (await fetch(url(`/v2/deployments/${deploymentId}`), { headers })).json()) as { url: string; status: string };
  assert.equal(deployment.status, "READY");
  const response = await fetch(`${deployment.url}/a2a/agent`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: "1",
      method: "message/send",
      params: { message: { kind: "message", role: "user", messageId: randomUUID(), parts: [{ kind: "text", text: "hi" }] } },
    }),
  });
  return ((await response.json()) as any).result.artifacts[0].parts[0].text;
}

test("the docs' CI/CD example: create, wait on the newest revision, new code at the same path, PATCH, wait; rotate a secret the same way; delete", async () => {
  const deploymentId = await createDeployment();
  const first = await latestRevisionId(deploymentId);
  await waitForDeployment(deploymentId, first);
  assert.equal(await ask(deploymentId), "v1; key ends 1111");

  // The pipeline's next run: new code at the same path, then the example's PATCH ("This creates a new revision
  // because source_revision_config is included").
  commit("v2");
  await patchDeployment(deploymentId, {
    source_config: { build_on_push: true },
    source_revision_config: { repo_ref: "main", langgraph_config_path: GRAPH_CONFIG },
  });
  const second = await latestRevisionId(deploymentId);
  assert.notEqual(second, first);
  await waitForDeployment(deploymentId, second);
  assert.equal(await ask(deploymentId), "v2; key ends 1111", "the new code serves");

  // Rotating a secret: non-null secrets make a revision, and the new value reaches the server only through it.
  await patchDeployment(deploymentId, {
    secrets: [
      { name: "OPENAI_API_KEY", value: "test_openai_api_key-2222" },
      { name: "ANTHROPIC_API_KEY", value: "test_anthropic_api_key" },
      { name: "TAVILY_API_KEY", value: "test_tavily_api_key" },
    ],
  });
  const third = await latestRevisionId(deploymentId);
  assert.notEqual(third, second);
  await waitForDeployment(deploymentId, third);
  assert.equal(await ask(deploymentId), "v2; key ends 2222", "the rotated secret serves");

  const deployment = (await (await fetch(url(`/v2/deployments/${deploymentId}`), { headers })).json()) as any;
  assert.deepEqual(deployment.source_config, { deployment_type: "dev", build_on_push: true }, "source_config recorded, nulls left out");
  assert.equal(deployment.source_revision_config.repo_ref, "main");

  // delete_deployment: 204.
  assert.equal((await fetch(url(`/v2/deployments/${deploymentId}`), { method: "DELETE", headers })).status, 204);
});
