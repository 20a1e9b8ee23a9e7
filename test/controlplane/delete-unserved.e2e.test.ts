import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { stringify } from "yaml";
import { freshDatabase, query } from "../helpers/postgres.ts";
import { startService, tempDir, waitFor } from "../helpers/processes.ts";

// Deleting a deployment that never served: what the deployer made for it (its directory, its PostgreSQL role and
// schema) goes with it, as for one that served.

const API_KEY = `cp-delete-key-${randomUUID()}`;

test("deleting a deployment whose build failed removes its directory, its PostgreSQL schema and its role", async () => {
  const database = await freshDatabase("egress_unserved");
  const dir = tempDir("controlplane-unserved-");
  const dataDir = join(dir, "data");
  writeFileSync(
    join(dir, "controlplane.yaml"),
    stringify({ listen: "127.0.0.1:0", dataDir, apiKeys: [API_KEY], agentServer: { databaseUri: database.url } }),
  );
  const controlPlane = await startService(["controlplane", "serve", "--config", join(dir, "controlplane.yaml")], "control plane listening");
  const api = async (method: string, path: string, body?: unknown) => {
    const response = await fetch(`${controlPlane.url}${path}`, {
      method,
      headers: { "x-api-key": API_KEY, ...(body === undefined ? {} : { "content-type": "application/json" }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    return { status: response.status, body: text ? JSON.parse(text) : undefined };
  };
  try {
    const graphDir = join(dir, "graph");
    mkdirSync(graphDir);
    writeFileSync(join(graphDir, "broken.mjs"), "throw new Error('this graph does not load');\n");
    writeFileSync(join(graphDir, "graph.json"), JSON.stringify({ graphs: { broken: "./broken.mjs:graph" } }));
    const created = await api("POST", "/v2/deployments", {
      name: "never-served",
      source: "local",
      source_revision_config: { langgraph_config_path: join(graphDir, "graph.json") },
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const { id, latest_revision_id: revisionId } = created.body;
    await waitFor(
      async () => (await api("GET", `/v2/deployments/${id}/revisions/${revisionId}`)).body.status === "BUILD_FAILED",
      60_000,
      "BUILD_FAILED",
    );
    const schema = `deployment_${id.replaceAll("-", "_")}`;
    const deploymentDir = join(dataDir, "deployments", id);
    const left = async () => ({
      dir: existsSync(deploymentDir),
      schema: (await query(database.url, "SELECT 1 FROM pg_namespace WHERE nspname = $1", [schema])).length,
      role: (await query(database.url, "SELECT 1 FROM pg_roles WHERE rolname = $1", [schema])).length,
    });
    assert.deepEqual(await left(), { dir: true, schema: 1, role: 1 }, "the create step made them");

    assert.equal((await api("DELETE", `/v2/deployments/${id}`)).status, 204);
    assert.deepEqual(await left(), { dir: false, schema: 0, role: 0 });
    assert.equal((await api("GET", `/v2/deployments/${id}`)).status, 404);
  } finally {
    await controlPlane.stop();
    await database.drop();
  }
});
