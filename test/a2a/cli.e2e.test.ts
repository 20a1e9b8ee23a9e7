import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { NOWHERE, runCli, startService, tempDir, type ServiceProcess } from "../helpers/processes.ts";

// `egress-agent a2a send` against a real agent server, and `a2a serve` refusing a bad graph.json.

const GRAPHS = new URL("../fixtures/graphs/graph.json", import.meta.url).pathname;
let server: ServiceProcess;
before(async () => {
  server = await startService(
    ["a2a", "serve", "--config", GRAPHS, "--listen", "127.0.0.1:0", "--data-dir", tempDir("a2a-cli-")],
    "agent server listening",
  );
});
after(() => server.stop());

const idsOf = (stderr: string) => ({ contextId: /contextId: (\S+)/.exec(stderr)?.[1], taskId: /taskId: (\S+)/.exec(stderr)?.[1] });

test("a2a send prints the answer, and the ids that continue the conversation", async () => {
  const first = await runCli(["a2a", "send", server.url, "--assistant", "notes", "water the plants"]);
  assert.equal(first.code, 0, first.stderr);
  assert.equal(first.stdout, 'Noted: "water the plants". That is note 1 of this conversation.\n');
  const { contextId, taskId } = idsOf(first.stderr);
  assert.ok(contextId && taskId, first.stderr);
  const second = await runCli([
    "a2a",
    "send",
    server.url,
    "--assistant",
    "notes",
    "--context",
    contextId,
    "recall",
    "--data",
    '{"tone":"loud"}',
  ]);
  assert.equal(second.code, 0, second.stderr);
  assert.equal(second.stdout, 'YOU TOLD ME: "WATER THE PLANTS".\n');
  assert.equal(idsOf(second.stderr).contextId, contextId);
});

/** The words of one docs shell line, as sh splits them: its `# comment` dropped, double quotes kept together. */
function shellWords(line: string): string[] {
  const words: string[] = [];
  for (const match of line.matchAll(/"([^"]*)"|(#.*$)|(\S+)/g)) {
    if (match[2] !== undefined) break;
    words.push(match[1] ?? match[3]!);
  }
  return words;
}

test("docs/agent-server.md's example runs as written: its --context/--task line continues the conversation", async () => {
  const doc = readFileSync(new URL("../../docs/agent-server.md", import.meta.url), "utf8");
  const block = /```sh\n([\s\S]*?)```/.exec(doc)![1]!.trim().split("\n");
  const [serve, first, next] = block.map(shellWords);
  assert.deepEqual(serve!.slice(0, 3), ["egress-agent", "a2a", "serve"], block.join("\n"));
  // The serve line as written, on a free port and a fresh data dir (later flags win); the example graph of the repo.
  const example = await startService(
    [...serve!.slice(1), "--listen", "127.0.0.1:0", "--data-dir", tempDir("a2a-readme-")],
    "agent server listening",
  );
  try {
    const run = (words: string[], ids: { contextId?: string; taskId?: string } = {}) => {
      assert.equal(words[0], "egress-agent");
      const args = words
        .slice(1)
        .map((word) =>
          word === "http://127.0.0.1:2024" ? example.url : word === "CONTEXT_ID" ? ids.contextId! : word === "TASK_ID" ? ids.taskId! : word,
        );
      return runCli(args);
    };
    const noted = await run(first!);
    assert.equal(noted.code, 0, noted.stderr);
    assert.equal(noted.stdout, 'Noted: "buy milk". That is note 1 of this conversation.\n');
    const ids = idsOf(noted.stderr);
    assert.ok(next!.includes("--task") && next!.includes("TASK_ID"), `the example's third line: ${block[2]}`);
    const recalled = await run(next!, ids);
    assert.equal(recalled.code, 0, recalled.stderr);
    assert.equal(recalled.stdout, 'You told me: "buy milk".\n');
    const after = idsOf(recalled.stderr);
    assert.equal(after.contextId, ids.contextId, "the same conversation");
    assert.notEqual(after.taskId, ids.taskId, "a new task after the completed one");
  } finally {
    await example.stop();
  }
});

test("a2a send --stream prints each event as a JSON line as it arrives; --json prints the task", async () => {
  const streamed = await runCli(["a2a", "send", server.url, "--assistant", "two-step", "--stream", "go"]);
  assert.equal(streamed.code, 0, streamed.stderr);
  const kinds = streamed.stdout
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line).kind);
  assert.deepEqual(kinds, ["task", "status-update", "status-update", "status-update", "artifact-update", "status-update"]);
  const json = await runCli(["a2a", "send", server.url, "--assistant", "notes", "--json", "hi"]);
  assert.equal(JSON.parse(json.stdout).status.state, "completed");
});

test("a2a send fails with exit 1 on a failed task, a JSON-RPC error, a non-200 answer or no server", async () => {
  const failed = await runCli(["a2a", "send", server.url, "--assistant", "failing", "hi"]);
  assert.deepEqual([failed.code, failed.stdout], [1, ""]);
  assert.match(failed.stderr, /ended failed/);
  const rpc = await runCli(["a2a", "send", server.url, "--assistant", "notes", "--context", "not-a-uuid", "hi"]);
  assert.equal(rpc.code, 1);
  assert.match(rpc.stderr, /message\.contextId must be a UUID .*\(-32602\)/);
  const missing = await runCli(["a2a", "send", server.url, "--assistant", "nobody", "hi"]);
  assert.equal(missing.code, 1);
  assert.match(missing.stderr, /HTTP 404: Assistant not found: nobody \(-32001\)/);
  const down = await runCli(["a2a", "send", NOWHERE, "--assistant", "notes", "hi"]);
  assert.equal(down.code, 1);
  assert.match(down.stderr, new RegExp(`cannot reach ${NOWHERE}/a2a/notes \\(ECONNREFUSED\\)`));
  const badData = await runCli(["a2a", "send", server.url, "--assistant", "notes", "--data", "[1]", "hi"]);
  assert.equal(badData.code, 2);
  assert.match(badData.stderr, /--data: must be a JSON object/);
});

test("a2a serve refuses a bad graph.json with exit 2, naming the key", async () => {
  const dir = tempDir("a2a-bad-");
  const cases: [unknown, RegExp][] = [
    [{}, /graphs: /],
    [{ graphs: { notes: "./nowhere.ts:graph" } }, /graphs\.notes: cannot load .*nowhere\.ts/],
    [{ graphs: { notes: "no-export-part" } }, /graphs\.notes: must be FILE:EXPORT/],
    [
      { graphs: { notes: `${new URL("../../examples/agent-server/notes-agent.ts", import.meta.url).pathname}:nothing` } },
      /graphs\.notes: .* has no export named nothing/,
    ],
    [
      {
        graphs: { notes: `${new URL("../../examples/agent-server/notes-agent.ts", import.meta.url).pathname}:graph` },
        http: { disable_a2a: "yes" },
      },
      /http\.disable_a2a: /,
    ],
  ];
  for (const [content, expected] of cases) {
    const config = join(dir, "graph.json");
    writeFileSync(config, JSON.stringify(content));
    const run = await runCli(["a2a", "serve", "--config", config, "--listen", "127.0.0.1:0", "--data-dir", join(dir, "data")]);
    assert.equal(run.code, 2, `${JSON.stringify(content)}: ${run.stderr}`);
    assert.match(run.stderr, expected);
  }
  const sidecarWithoutIds = await runCli([
    "a2a",
    "serve",
    "--config",
    GRAPHS,
    "--sidecar-url",
    "http://127.0.0.1:4318",
    "--data-dir",
    join(dir, "data"),
  ]);
  assert.equal(sidecarWithoutIds.code, 2);
  assert.match(sidecarWithoutIds.stderr, /tenantId: --tenant-id .* is required with --sidecar-url/);
});
