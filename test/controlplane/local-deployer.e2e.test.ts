import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { appendFileSync, chmodSync, existsSync, mkdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, test } from "node:test";
import Database from "better-sqlite3";
import pino from "pino";
import { DeployerError, type DeployTarget, type Serving } from "../../src/controlplane/deployer.ts";
import { resolveIsolation } from "../../src/controlplane/isolation.ts";
import { LocalDeployer } from "../../src/controlplane/local-deployer.ts";
import { DeploymentDatabases } from "../../src/controlplane/deployment-databases.ts";
import { freshDatabase, query } from "../helpers/postgres.ts";
import { processesWith, tempDir, waitFor } from "../helpers/processes.ts";

// The local deployer as the control plane drives it: real `egress-agent a2a check` and `a2a serve` processes on
// 127.0.0.1, spoken to over HTTP.

const CLI = new URL("../../src/cli.ts", import.meta.url).pathname;
const NOTES = new URL("../../examples/agent-server/graph.json", import.meta.url).pathname;
const TEST_GRAPHS = new URL("../fixtures/graphs/graph.json", import.meta.url).pathname;
const ENV_GRAPH = new URL("../fixtures/graphs/env-graph.json", import.meta.url).pathname;
const SNOOP_GRAPH = new URL("../fixtures/graphs/snoop-graph.json", import.meta.url).pathname;
const RETITLED = new URL("../fixtures/graphs/retitled-graph.json", import.meta.url).pathname;

const dirs: string[] = [];

function newDeployer(startTimeoutMs = 20_000, databases?: DeploymentDatabases) {
  const dataDir = tempDir("local-deployer-");
  dirs.push(dataDir);
  const deployer = new LocalDeployer({
    dataDir,
    cli: { node: process.execPath, args: [CLI] },
    // The control plane's default: namespaces through bubblewrap here (without it, this fails naming the key).
    agentServer: { startTimeoutMs, databases, isolation: resolveIsolation({ isolation: "auto" }, { logger: pino({ level: "silent" }) }) },
    logger: pino({ level: "silent" }),
  });
  return { deployer, dataDir };
}

let ordinals = 0;
function target(config: string, secrets: Record<string, string> = {}, deploymentId: string = randomUUID()): DeployTarget {
  return {
    deploymentId,
    revisionId: randomUUID(),
    source: "local",
    sourceRevisionConfig: { langgraph_config_path: config },
    secrets,
    ordinal: ++ordinals,
  };
}

function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return !/\) Z /.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return false;
  }
}

// Whatever a test left running (it failed half-way) is killed, and its directories removed.
after(() => {
  for (const dir of dirs) {
    for (const pid of processesWith(dir)) process.kill(pid, "SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  }
});

async function send(serving: Serving, assistant: string, text: string, contextId?: string) {
  const response = await fetch(`${serving.url}/a2a/${assistant}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: "1",
      method: "message/send",
      params: { message: { kind: "message", role: "user", messageId: randomUUID(), contextId, parts: [{ kind: "text", text }] } },
    }),
  });
  const body = (await response.json()) as any;
  assert.equal(body.result?.status?.state, "completed", JSON.stringify(body));
  return { contextId: body.result.contextId as string, text: body.result.artifacts[0].parts[0].text as string };
}

test("create, build and deploy serve graph.json on loopback; alive until stop, which ends the process and removes the directory", async () => {
  const { deployer, dataDir } = newDeployer();
  const deployment = target(NOTES);
  await deployer.create(deployment);
  const dir = join(dataDir, "deployments", deployment.deploymentId);
  assert.equal(statSync(dir).mode & 0o777, 0o700);
  await deployer.build(deployment);
  const serving = await deployer.deploy(deployment, undefined);
  assert.match(serving.url, /^http:\/\/127\.0\.0\.1:\d+$/);
  assert.ok(serving.pid && running(serving.pid));

  assert.match((await send(serving, "notes", "hi")).text, /Noted: "hi"/);
  assert.equal(await deployer.alive(serving), true);
  assert.match(readFileSync(join(dir, "agent-server.log"), "utf8"), /agent server listening/);

  await deployer.stop(deployment.deploymentId, serving);
  assert.equal(running(serving.pid), false);
  assert.equal(await deployer.alive(serving), false);
  assert.equal(existsSync(dir), false);
});

test("a redeploy replaces the process on the same port, and the conversation continues", async () => {
  const { deployer, dataDir } = newDeployer();
  const deployment = target(NOTES);
  await deployer.create(deployment);
  const first = await deployer.deploy(deployment, undefined);
  const { contextId } = await send(first, "notes", "the door code is 4711");

  const second = await deployer.deploy(
    { ...deployment, revisionId: randomUUID(), sourceRevisionConfig: { langgraph_config_path: TEST_GRAPHS } },
    first,
  );
  assert.equal(running(first.pid!), false, "the previous agent server is stopped");
  assert.notEqual(second.pid, first.pid);
  assert.equal(second.url, first.url);
  assert.equal((await send(second, "notes", "recall", contextId)).text, 'You told me: "the door code is 4711".');
  assert.match((await send(second, "two-step", "go")).text, /done thinking/, "the new revision's graphs serve");

  // A log past 10 MiB is rotated at the next deploy: one older file is kept.
  const log = join(dataDir, "deployments", deployment.deploymentId, "agent-server.log");
  appendFileSync(log, Buffer.alloc(10 * 1024 * 1024 + 1, "x"));
  const third = await deployer.deploy({ ...deployment, revisionId: randomUUID() }, second);
  assert.ok(statSync(`${log}.1`).size > 10 * 1024 * 1024);
  assert.ok(statSync(log).size < 1024 * 1024);
  await deployer.stop(deployment.deploymentId, third);
});

test("the agent server gets the deployment's secrets on an explicit base environment, not the control plane's", async () => {
  const { deployer, dataDir } = newDeployer();
  // PATH and HOME as secrets (the API refuses them; the deployer's base wins anyway).
  const deployment = target(ENV_GRAPH, { SOME_SECRET: "s3cret-value-42", PATH: "/tmp/evil", HOME: "/root" });
  await deployer.create(deployment);
  const saved = process.env.PLATFORM_API_KEY;
  process.env.PLATFORM_API_KEY = "control-plane-key-0123456789";
  let serving: Serving;
  try {
    serving = await deployer.deploy(deployment, undefined);
  } finally {
    if (saved === undefined) delete process.env.PLATFORM_API_KEY;
    else process.env.PLATFORM_API_KEY = saved;
  }
  const env = JSON.parse((await send(serving, "env", "env?")).text) as { names: string[]; SOME_SECRET: string; PATH: string; HOME: string };
  assert.equal(env.SOME_SECRET, "s3cret-value-42");
  assert.ok(!env.names.includes("PLATFORM_API_KEY"));
  // PWD: bubblewrap sets it to the working directory, the graph's.
  const allowed = new Set(["PATH", "HOME", "TMPDIR", "LANG", "NODE_EXTRA_CA_CERTS", "SOME_SECRET", "PWD"]);
  assert.deepEqual(
    env.names.filter((name) => !allowed.has(name)),
    [],
  );
  assert.equal(env.PATH, "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
  assert.equal(env.HOME, join(dataDir, "deployments", deployment.deploymentId, "home"));
  await deployer.stop(deployment.deploymentId, serving);
});

/** Another deployment beside, then the snoop graph deployed: what its attempts on the data dir met. */
async function snoopBeside(deployer: LocalDeployer) {
  const other = target(NOTES);
  await deployer.create(other);
  const deployment = target(SNOOP_GRAPH);
  await deployer.create(deployment);
  await deployer.build(deployment);
  const serving = await deployer.deploy(deployment, undefined);
  const seen = JSON.parse((await send(serving, "snoop", "look")).text) as Record<string, string>;
  return { other, deployment, serving, seen };
}

test("a deployment's processes cannot read the control plane's data dir nor start processes; their own directory they can", async () => {
  const { deployer, dataDir } = newDeployer();
  writeFileSync(join(dataDir, "secrets.key"), "control-plane-secret-key");
  writeFileSync(join(dataDir, "controlplane.db"), "control-plane-database");
  const { deployment, serving, seen } = await snoopBeside(deployer);
  // better-sqlite3 checks the path with Node's fs before it opens it natively: refused there too.
  assert.deepEqual(seen, {
    secretsKey: "ERR_ACCESS_DENIED",
    database: "ERR_ACCESS_DENIED",
    deployments: "ERR_ACCESS_DENIED",
    ownHome: "allowed",
    spawn: "ERR_ACCESS_DENIED",
    nativeDatabase: "ERR_ACCESS_DENIED",
  });
  await deployer.stop(deployment.deploymentId, serving);
});

test("with agentServer.runAsUidBase each deployment runs as a user of its own, in a directory of its own", async (t) => {
  if (process.getuid?.() !== 0) return t.skip("needs root, to start processes as other users");
  const dataDir = tempDir("local-deployer-");
  dirs.push(dataDir);
  const base = 300_000;
  const deployer = new LocalDeployer({
    dataDir,
    cli: { node: process.execPath, args: [CLI] },
    agentServer: { startTimeoutMs: 20_000, isolation: { mode: "user", uidBase: base } },
    logger: pino({ level: "silent" }),
  });
  // As the control plane leaves them (umask 077): owner-only, root's.
  new Database(join(dataDir, "controlplane.db")).close();
  writeFileSync(join(dataDir, "secrets.key"), "control-plane-secret-key");
  for (const file of ["controlplane.db", "secrets.key"]) chmodSync(join(dataDir, file), 0o600);
  const { other, deployment, serving, seen } = await snoopBeside(deployer);
  assert.deepEqual(
    [seen.secretsKey, seen.deployments, seen.nativeDatabase, seen.ownHome],
    ["ERR_ACCESS_DENIED", "ERR_ACCESS_DENIED", "ERR_ACCESS_DENIED", "allowed"],
  );
  // Beneath Node's model, the OS's: the files are root's and owner-only, the process another user.
  for (const file of ["controlplane.db", "secrets.key"])
    assert.deepEqual([statSync(join(dataDir, file)).uid, statSync(join(dataDir, file)).mode & 0o077], [0, 0], file);
  const ownDir = join(dataDir, "deployments", deployment.deploymentId);
  assert.deepEqual([statSync(ownDir).uid, statSync(ownDir).mode & 0o777], [base + deployment.ordinal, 0o700]);
  assert.equal(statSync(join(dataDir, "deployments", other.deploymentId)).uid, base + other.ordinal, "another deployment is another user");
  assert.equal(readFileSync(`/proc/${serving.pid}/status`, "utf8").match(/^Uid:\s+(\d+)/m)?.[1], String(base + deployment.ordinal));
  await deployer.stop(deployment.deploymentId, serving);
});

test("a graph whose directory holds the control plane's data dir, or lies inside it, is refused: the sandbox could not keep the data dir out", async () => {
  const { deployer, dataDir } = newDeployer();
  writeFileSync(
    join(dataDir, "graph.json"),
    JSON.stringify({ graphs: { notes: `${NOTES.replace(/graph\.json$/, "")}notes-agent.ts:graph` } }),
  );
  await assert.rejects(deployer.create(target(join(dataDir, "graph.json"))), {
    name: "DeployerError",
    message: /holds the control plane's data dir/,
  });
  // A graph.json inside another deployment's directory (which would make that directory readable): refused too.
  const victim = target(NOTES);
  await deployer.create(victim);
  const planted = join(dataDir, "deployments", victim.deploymentId, "graph.json");
  writeFileSync(planted, JSON.stringify({ graphs: { notes: `${NOTES.replace(/graph\.json$/, "")}notes-agent.ts:graph` } }));
  await assert.rejects(deployer.create(target(planted)), {
    name: "DeployerError",
    message: new RegExp(`${victim.deploymentId} is inside the control plane.s data dir`),
  });
});

test("a node_modules in the graph's tree that is a link (to /etc, say) is refused: it would be bound where it points", async () => {
  const { deployer } = newDeployer();
  const tree = tempDir("local-deployer-linked-");
  const graphDir = join(tree, "app", "graph");
  mkdirSync(graphDir, { recursive: true });
  symlinkSync("/etc", join(tree, "app", "node_modules"));
  writeFileSync(
    join(graphDir, "graph.json"),
    JSON.stringify({ graphs: { notes: `${NOTES.replace(/graph\.json$/, "")}notes-agent.ts:graph` } }),
  );
  await assert.rejects(deployer.create(target(join(graphDir, "graph.json"))), {
    name: "DeployerError",
    message: new RegExp(`${join(tree, "app", "node_modules")} is not a directory \\(a link\\?\\)`),
  });
});

test("an agent server whose graph rewrote its command line (process.title) is still known for the deployment's: stop and redeploy end it", async () => {
  const { deployer, dataDir } = newDeployer();
  const deployment = target(RETITLED);
  await deployer.create(deployment);
  await deployer.build(deployment);
  const serving = await deployer.deploy(deployment, undefined);
  const agentDataDir = join(dataDir, "deployments", deployment.deploymentId, "agent-server");
  // The graph's doing: its own command line no longer names its data dir.
  await waitFor(async () => !readFileSync(`/proc/${serving.pid}/cmdline`, "utf8").includes(agentDataDir), 5_000, "the new title");
  const next = { ...deployment, revisionId: randomUUID() }; // the same deployment (and user), a new revision
  await deployer.build(next);
  const redeployed = await deployer.deploy(next, serving);
  assert.equal(running(serving.pid!), false, "the redeploy left the old agent server running");
  await deployer.stop(deployment.deploymentId, redeployed);
  assert.equal(running(redeployed.pid!), false, "the stop left the agent server running");
});

test("create refuses another source and a graph.json that is not there", async () => {
  const { deployer } = newDeployer();
  await assert.rejects(deployer.create({ ...target(NOTES), source: "external_docker" }), {
    name: "DeployerError",
    message: /source "local" only/,
  });
  await assert.rejects(deployer.create(target("/nonexistent/graph.json")), {
    name: "DeployerError",
    message: /\/nonexistent\/graph\.json is not an existing file/,
  });
});

test("a build of a bad graph.json fails naming the key; the build gets no secrets; the message quotes no file", async () => {
  const { deployer } = newDeployer();
  const graphs = tempDir("local-deployer-graphs-");
  dirs.push(graphs);
  // biome-ignore lint/suspicious/noTemplateCurlyInString: the graph module's own source, which uses a template literal
  writeFileSync(join(graphs, "thrower.mjs"), "throw new Error(`no model for key ${process.env.SOME_SECRET}`);\n");
  writeFileSync(join(graphs, "graph.json"), JSON.stringify({ graphs: { thrower: "./thrower.mjs:graph" } }));
  const deployment = target(join(graphs, "graph.json"), { SOME_SECRET: "s3cret-value-42" });
  await deployer.create(deployment);
  const err = await deployer.build(deployment).then(
    () => assert.fail("build passed"),
    (e: unknown) => e,
  );
  assert.ok(err instanceof DeployerError);
  assert.match(err.message, /exit code 2/);
  assert.match(err.message, /graphs\.thrower: cannot load .*thrower\.mjs: no model for key undefined/, "the build step has no secrets");
  assert.doesNotMatch(err.message, /s3cret-value-42/);
  assert.match(err.message, /\(the whole output is in .*build\.log\)$/);

  // A graph.json pointed at a file that is not JSON (/etc/passwd, secrets.key): where it fails, never what is there.
  writeFileSync(join(graphs, "not-json"), "root-secret-line:x:0:0:root:/root:/bin/bash\n");
  const notJson = await deployer.build(target(join(graphs, "not-json"))).then(
    () => assert.fail("build passed"),
    (e: unknown) => e as Error,
  );
  assert.match(notJson.message, /not valid JSON/);
  assert.doesNotMatch(notJson.message, /root|secret-line|bash/);
  // A module that does not parse: the parser's quoted token is blanked.
  writeFileSync(join(graphs, "broken.mjs"), "export const graph = sk_live_0123456789abcdef token;\n");
  writeFileSync(join(graphs, "broken.json"), JSON.stringify({ graphs: { broken: "./broken.mjs:graph" } }));
  const broken = await deployer.build(target(join(graphs, "broken.json"))).then(
    () => assert.fail("build passed"),
    (e: unknown) => e as Error,
  );
  assert.match(broken.message, /graphs\.broken: cannot load/);
  assert.doesNotMatch(broken.message, /sk_live|0123456789abcdef|token/);

  writeFileSync(join(graphs, "empty.json"), JSON.stringify({ graphs: {} }));
  await assert.rejects(deployer.build(target(join(graphs, "empty.json"))), {
    name: "DeployerError",
    message: /graphs: must name at least one graph/,
  });
});

test("a build that hangs is killed at the start timeout, with everything it ran: the check dies with its bwrap", async () => {
  const { deployer, dataDir } = newDeployer(3_000);
  const graphs = tempDir("local-deployer-graphs-");
  dirs.push(graphs);
  // Keeps the event loop alive for good at import.
  writeFileSync(join(graphs, "hang.mjs"), "setInterval(() => {}, 1000); await new Promise(() => {});\n");
  writeFileSync(join(graphs, "graph.json"), JSON.stringify({ graphs: { hang: "./hang.mjs:graph" } }));
  const deployment = target(join(graphs, "graph.json"));
  await deployer.create(deployment);
  await assert.rejects(deployer.build(deployment), { name: "DeployerError", message: /did not finish within 3 s/ });
  await waitFor(() => processesWith(graphs).length === 0 && processesWith(dataDir).length === 0, 5_000, "nothing left running");
});

test("a deploy whose agent server exits before it is healthy fails with the end of its log", async () => {
  const { deployer, dataDir } = newDeployer();
  const deployment = target(NOTES);
  await deployer.create(deployment);
  await deployer.build(deployment);
  // The check passes, but serve cannot open its data dir: a file is in the way.
  writeFileSync(join(dataDir, "deployments", deployment.deploymentId, "agent-server"), "");
  await assert.rejects(deployer.deploy(deployment, undefined), {
    name: "DeployerError",
    message:
      /the agent server exited \(code 1\) before answering \/ok: egress-agent: .*(EEXIST|ENOTDIR).*\(the whole output is in .*agent-server\.log\)/s,
  });
  assert.deepEqual(processesWith(dataDir), []);
});

test("a deploy that is not healthy within the start timeout fails, and its process is killed", async () => {
  const { deployer, dataDir } = newDeployer(300);
  const deployment = target(NOTES);
  await deployer.create(deployment);
  await assert.rejects(deployer.deploy(deployment, undefined), { name: "DeployerError", message: /did not answer \/ok within 0\.3 s/ });
  assert.deepEqual(processesWith(dataDir), []);
});

test("agentServer.databaseUri: each deployment's agent server keeps its conversations in PostgreSQL, under a role and in a schema of its own", async () => {
  const database = await freshDatabase("egress_deployments");
  const databases = new DeploymentDatabases(database.url, (id) => `pw-${id}`, pino({ level: "silent" }));
  try {
    const { deployer } = newDeployer(20_000, databases);
    const [a, b] = [target(NOTES), target(NOTES)];
    const serving: Serving[] = [];
    for (const deployment of [a, b]) {
      await deployer.create(deployment);
      await deployer.build(deployment);
      serving.push(await deployer.deploy(deployment, undefined));
    }
    const first = await send(serving[0]!, "notes", "water the plants");
    await send(serving[1]!, "notes", "b's own note");
    // A redeploy gets a new process and the same conversation: from the database.
    const next = target(NOTES, {}, a.deploymentId);
    await deployer.build(next);
    serving[0] = await deployer.deploy(next, serving[0]);
    assert.match((await send(serving[0], "notes", "recall", first.contextId)).text, /water the plants/);

    const [schemaA, schemaB] = [a, b].map((d) => `deployment_${d.deploymentId.replaceAll("-", "_")}`);
    const [row] = await query<{ n: string }>(database.url, `SELECT count(*) AS n FROM ${schemaA}.a2a_tasks`);
    assert.equal(Number(row!.n), 2);
    // What A's graph code could do with its DATABASE_URI: its own schema, nothing of B's.
    const asA = databases.settingsFor(a.deploymentId).DATABASE_URI;
    assert.equal((await query<{ n: string }>(asA, `SELECT count(*) AS n FROM ${schemaA}.a2a_tasks`))[0]!.n, "2");
    await assert.rejects(query(asA, `SELECT * FROM ${schemaB}.a2a_tasks`), (err: { code?: string }) => err.code === "42501");

    // Deleting a deployment takes its schema and role with it.
    await deployer.stop(a.deploymentId, serving[0]);
    const left = await query<{ nspname: string }>(
      database.url,
      "SELECT nspname FROM pg_namespace WHERE nspname LIKE 'deployment_%' ORDER BY 1",
    );
    assert.deepEqual(
      left.map((r) => r.nspname),
      [schemaB],
    );
    assert.deepEqual(await query(database.url, "SELECT 1 FROM pg_roles WHERE rolname = $1", [schemaA]), []);
    await deployer.stop(b.deploymentId, serving[1]!);
  } finally {
    await database.drop();
  }
});
