import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { createHash, randomUUID } from "node:crypto";
import { chmodSync, existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, readlinkSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { after, test } from "node:test";
import Database from "better-sqlite3";
import { stringify } from "yaml";
import type { Outcome } from "../fixtures/graphs/escape-graph.ts";
import { processesWith, startService, tempDir, waitFor, type ServiceProcess } from "../helpers/processes.ts";

// The control plane in its default configuration (agentServer.isolation: auto, no runAsUidBase: bubblewrap
// namespaces), its local deployer and a deployed graph that, at import, tries every way out it knows: better-sqlite3's
// ATTACH and VACUUM INTO, an SQLite extension of its own (native code), Node's fs, a child process, a worker. None of
// it may reach the control plane's files, another deployment's, or anything outside its own directory.

const API_KEY = `cp-isolation-key-${randomUUID()}`;
const NOTES_GRAPH = new URL("../../examples/agent-server/graph.json", import.meta.url).pathname;
const ESCAPE_GRAPH = new URL("../fixtures/graphs/escape-graph.ts", import.meta.url).pathname;
const tmpPath = join(tmpdir(), `escaped-${randomUUID()}.db`);

// Native code of the graph's own: an SQLite extension that, loaded, copies ESCAPE_FROM to ESCAPE_TO and writes what
// it could do into ESCAPE_REPORT. It also leaves links in its directory where the control plane writes (the build's
// and the agent server's logs), to the control plane's key and to a file outside: a confused deputy would follow them.
const EXTENSION = `
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
int sqlite3_extension_init(void *db, char **error, const void *api) {
  char buffer[4096];
  int in = open(getenv("ESCAPE_FROM"), O_RDONLY);
  const char *result = "read it";
  if (in < 0) result = strerror(errno);
  else {
    ssize_t n = read(in, buffer, sizeof buffer);
    int out = open(getenv("ESCAPE_TO"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (out < 0 || n <= 0 || write(out, buffer, n) != n) result = "read it, could not write it";
    else result = "read it and copied it";
  }
  const char *build_log = symlink(getenv("ESCAPE_FROM"), getenv("ESCAPE_BUILD_LOG")) ? strerror(errno) : "linked";
  const char *agent_log = symlink(getenv("ESCAPE_LOG_TARGET"), getenv("ESCAPE_AGENT_LOG")) ? strerror(errno) : "linked";
  FILE *report = fopen(getenv("ESCAPE_REPORT"), "w");
  if (report) { fprintf(report, "%s; build.log %s; agent-server.log %s", result, build_log, agent_log); fclose(report); }
  return 0;
}
`;

/** A control plane of its own (the default configuration plus `agentServer`), in a directory beside a sentinel one. */
async function startPlane(agentServer: Record<string, unknown>) {
  const root = tempDir("controlplane-isolation-");
  // Traversable: with a user per deployment, the deployments' users read the graph's directory in here.
  chmodSync(root, 0o711);
  const dataDir = join(root, "data");
  const outsideDir = join(root, "outside");
  mkdirSync(outsideDir);
  writeFileSync(join(outsideDir, "sentinel.txt"), "outside every deployment");
  const config = { listen: "127.0.0.1:0", dataDir, apiKeys: [API_KEY], agentServer: { startTimeout: "60s", ...agentServer } };
  writeFileSync(join(root, "controlplane.yaml"), stringify(config));
  // Started with Node flags of its own: an env file holding a secret of the control plane's, and a preload.
  writeFileSync(join(root, "controlplane.env"), "CONTROL_PLANE_ONLY=control-plane-only-secret\n");
  writeFileSync(join(root, "preload.mjs"), "globalThis.preloaded = true;\n");
  const nodeFlags = [`--env-file=${join(root, "controlplane.env")}`, `--import=${join(root, "preload.mjs")}`];
  const args = ["controlplane", "serve", "--config", join(root, "controlplane.yaml")];
  const service = await startService(args, "control plane listening", {}, [], nodeFlags);
  const api: Api = async (method, path, body) => {
    const response = await fetch(`${service.url}${path}`, {
      method,
      headers: { "x-api-key": API_KEY, ...(body === undefined ? {} : { "content-type": "application/json" }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    return { status: response.status, body: text ? JSON.parse(text) : undefined };
  };
  const plane = { root, dataDir, outsideDir, api, deploy: (graphJson: string) => deploy(api, graphJson) };
  planes.push({ api, service, root });
  return plane;
}

const planes: { api: Api; service: ServiceProcess; root: string }[] = [];
after(async () => {
  for (const { api, service, root } of planes) {
    const list = await api("GET", "/v2/deployments?limit=100");
    for (const deployment of list.body?.resources ?? []) await api("DELETE", `/v2/deployments/${deployment.id}`);
    await service.stop();
    for (const pid of processesWith(root)) process.kill(pid, "SIGKILL");
  }
});

type Api = (method: string, path: string, body?: unknown) => Promise<{ status: number; body: any }>;

async function deploy(api: Api, graphJson: string): Promise<{ id: string; status: string; message: string }> {
  const created = await api("POST", "/v2/deployments", {
    name: `d-${randomUUID().slice(0, 8)}`,
    source: "local",
    source_revision_config: { langgraph_config_path: graphJson },
    secrets: [{ name: "MY_TOKEN", value: "deployment-secret-value" }],
  });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  const { id, latest_revision_id: revisionId } = created.body;
  const revision = await waitFor(
    async () => {
      const { body } = await api("GET", `/v2/deployments/${id}/revisions/${revisionId}`);
      return /DEPLOYED|FAILED/.test(body.status) ? body : undefined;
    },
    90_000,
    `deployment ${id}`,
  );
  return { id, status: revision.status, message: revision.status_message };
}

/** Every file, directory and link under `dir` but `skip`: its path and what it holds. */
function snapshot(dir: string, skip: (path: string) => boolean): Map<string, string> {
  const found = new Map<string, string>();
  const walk = (at: string) => {
    for (const name of readdirSync(at)) {
      const path = join(at, name);
      if (skip(path)) continue;
      const stat = lstatSync(path);
      const key = relative(dir, path);
      if (stat.isDirectory()) {
        found.set(key, `dir ${stat.mode}`);
        walk(path);
      } else if (stat.isSymbolicLink()) found.set(key, `link ${readlinkSync(path)}`);
      else found.set(key, `file ${stat.mode} ${createHash("sha256").update(readFileSync(path)).digest("hex")}`);
    }
  };
  walk(dir);
  return found;
}

const tables = (path: string) => {
  const db = new Database(path, { readonly: true });
  try {
    return db.prepare("SELECT name FROM sqlite_master ORDER BY name").pluck().all() as string[];
  } finally {
    db.close();
  }
};

/**
 * Deploys another deployment, then the escape graph, and checks what it reached. `keyError`: what its own native code
 * met opening secrets.key. Returns the attacker's directory.
 */
async function escapeScenario(plane: Awaited<ReturnType<typeof startPlane>>, keyError: string): Promise<string> {
  const { root, dataDir, outsideDir } = plane;
  const other = await plane.deploy(NOTES_GRAPH);
  assert.equal(other.status, "DEPLOYED", other.message);
  const otherDir = join(dataDir, "deployments", other.id);

  const graphDir = join(root, "graph");
  mkdirSync(graphDir, { mode: 0o755 });
  writeFileSync(join(graphDir, "escape.c"), EXTENSION);
  execFileSync("gcc", ["-shared", "-fPIC", "-o", join(graphDir, "escape.so"), join(graphDir, "escape.c")]);
  writeFileSync(join(graphDir, "graph.json"), JSON.stringify({ graphs: { escape: `${ESCAPE_GRAPH}:escaper` } }));
  const controlPlaneDb = join(dataDir, "controlplane.db");
  const secretsKey = join(dataDir, "secrets.key");
  writeFileSync(
    join(graphDir, "targets.json"),
    JSON.stringify({ controlPlaneDb, secretsKey, otherDeploymentDir: otherDir, outsideDir, tmpPath }),
  );
  for (const file of ["escape.so", "graph.json", "targets.json"]) chmodSync(join(graphDir, file), 0o644);

  // Everything but the control plane's database (the control plane itself writes the new deployment's rows) and
  // the other deployment's conversations (its own server's): byte for byte, before and after.
  const others = (path: string) => path.startsWith(controlPlaneDb) || path === join(otherDir, "agent-server");
  const before = snapshot(root, others);
  const tablesBefore = tables(controlPlaneDb);
  const otherTablesBefore = tables(join(otherDir, "agent-server", "tasks.db"));

  const attacker = await plane.deploy(join(graphDir, "graph.json"));
  assert.equal(attacker.status, "DEPLOYED", attacker.message);
  const ownDir = join(dataDir, "deployments", attacker.id);

  for (const phase of ["check", "serve"]) {
    const report = JSON.parse(readFileSync(join(ownDir, `escape-${phase}.json`), "utf8")) as Record<string, Outcome>;
    const { attach, attachOther, vacuumIntoTmp, loadExtension, ownDir: own, inherited, ...refused } = report;
    // Of the control plane's own Node flags, only memory sizing is passed on: not its env file, not its preload.
    const { secret, flags } = (inherited as { value: { secret: string | null; flags: string[] } }).value;
    assert.equal(secret, null, `${phase}: the control plane's --env-file reached the graph`);
    assert.deepEqual(
      flags.filter(
        (flag) => !/^--(permission|disable-warning=|max-semi-space-size=|initial-old-space-size=|heap-growing-percent=)/.test(flag),
      ),
      [],
      phase,
    );
    // SQLite may make a database of that name in a namespace's private /tmp: never the control plane's.
    if (attach!.ok) assert.deepEqual(attach!.value, [], `${phase}: ATTACH reached a database with tables`);
    if (attachOther!.ok) assert.deepEqual(attachOther!.value, [], `${phase}: ATTACH reached another deployment's database`);
    // The graph's own native code runs: secrets.key is not there to open, or not its to open. Its links where the
    // control plane writes logs were made in the build; the control plane replaced them by files of its own.
    const links = phase === "check" ? "build.log linked; agent-server.log linked" : "build.log File exists; agent-server.log File exists";
    assert.deepEqual(loadExtension, { ok: true, value: `${keyError}; ${links}` }, phase);
    for (const [name, outcome] of Object.entries(refused)) assert.equal(outcome.ok, false, `${phase}: ${name} ${JSON.stringify(outcome)}`);
    assert.match(String((refused.spawn as { error: string }).error), /ERR_ACCESS_DENIED/);
    assert.match(String((refused.worker as { error: string }).error), /ERR_ACCESS_DENIED/);
    assert.equal(own!.ok, true, `${phase}: its own directory is writable`);
    assert.ok(vacuumIntoTmp, "tried");
  }

  for (const log of ["build.log", "agent-server.log"]) assert.ok(lstatSync(join(ownDir, log)).isFile(), log);
  const after = snapshot(root, (path) => others(path) || path.startsWith(ownDir));
  // The graph's directory and the deployment's directory appeared meanwhile (the test wrote the one, the deployer made
  // the other): nothing else did, and nothing changed.
  assert.deepEqual(
    [...after].filter(([path]) => !path.startsWith("graph")),
    [...before].filter(([path]) => !path.startsWith("graph")),
  );
  assert.deepEqual(tables(controlPlaneDb), tablesBefore, "the control plane's database has no table of the graph's");
  assert.deepEqual(tables(join(otherDir, "agent-server", "tasks.db")), otherTablesBefore);
  return ownDir;
}

test("default configuration (namespaces): a graph's escapes at import (ATTACH, VACUUM INTO, its own SQLite extension, links, files, processes, workers) reach nothing outside its directory", async () => {
  const ownDir = await escapeScenario(await startPlane({}), "No such file or directory");
  // Its /tmp was a private one: nothing reached the host's.
  assert.equal(existsSync(tmpPath), false, "VACUUM INTO wrote into the host's temp dir");
  // The agent server is its namespace's pid 1, with no capabilities: nothing of the host's it could regain.
  const statuses = processesWith(join(ownDir, "agent-server")).map((pid) => readFileSync(`/proc/${pid}/status`, "utf8"));
  const inside = statuses.filter((status) => /^NSpid:\s+\d+\s+1$/m.test(status));
  assert.equal(inside.length, 1, statuses.join("\n"));
  assert.match(inside[0]!, /^CapEff:\s+0+$/m);
  // As root, the namespace's user is not the host's root (to whom /proc/sys and any bound file would answer as their
  // owner): bwrap itself runs as a user of the deployment's own.
  if (process.getuid?.() === 0) assert.match(inside[0]!, /^Uid:\s+15\d{8}\s/m);
});

test("isolation user (runAsUidBase, the control plane as root): the same escapes reach nothing of the control plane's or another deployment's", async (t) => {
  if (process.getuid?.() !== 0) return t.skip("needs root, to start processes as other users");
  const ownDir = await escapeScenario(await startPlane({ runAsUidBase: 310_000 }), "Permission denied");
  // A user of its own may write the host's /tmp as any user may: that is all.
  rmSync(tmpPath, { force: true });
  const [pid] = processesWith(join(ownDir, "agent-server"));
  assert.match(readFileSync(`/proc/${pid}/status`, "utf8"), /^Uid:\s+31\d{4}\s/m);
});
