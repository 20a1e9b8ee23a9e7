import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { a2aResult, userMessage } from "../helpers/a2a-rpc.ts";
import { freshDatabase, query } from "../helpers/postgres.ts";
import { runCli, startService, startTogether, tempDir, waitFor } from "../helpers/processes.ts";
import { RoundRobinProxy } from "../helpers/round-robin-proxy.ts";

// The agent server on PostgreSQL (DATABASE_URI, the LangGraph convention): real `a2a serve` processes, the real
// server on 127.0.0.1:5432 with a database of its own. Conversations and tasks live in the database, not the data dir.

const GRAPHS = new URL("../fixtures/graphs/graph.json", import.meta.url).pathname;
let databaseUrl: string;
let dropDatabase: () => Promise<void>;

before(async () => {
  const database = await freshDatabase("egress_agent_server");
  databaseUrl = database.url;
  dropDatabase = database.drop;
});
after(() => dropDatabase?.());

/** A replica: its own (empty) data dir, the shared database. */
const serve = (...extra: string[]) =>
  startService(
    ["a2a", "serve", "--config", GRAPHS, "--listen", "127.0.0.1:0", "--data-dir", tempDir("a2a-pg-"), ...extra],
    "agent server listening",
    { DATABASE_URI: databaseUrl },
  );

test("a conversation and its tasks outlive the process and its data dir: they are in PostgreSQL", async () => {
  let server = await serve();
  assert.match(server.output(), /"database":"postgresql"/);
  const first = await a2aResult(server.url, "notes", "message/send", userMessage("the door code is 4711"));
  assert.equal(first.status.state, "completed");
  assert.equal(await server.stop(), 0);

  server = await serve(); // a fresh data dir: nothing of the first process on disk
  try {
    const recall = await a2aResult(server.url, "notes", "message/send", userMessage("recall", { contextId: first.contextId }));
    assert.equal(recall.artifacts[0].parts[0].text, 'You told me: "the door code is 4711".');
    const old = await a2aResult(server.url, "notes", "tasks/get", { id: first.id });
    assert.deepEqual([old.id, old.status.state], [first.id, "completed"]);
  } finally {
    await server.stop();
  }
});

test("two replicas behind a balancer: a conversation goes on whichever replica a turn reaches; tasks read the same from either", async () => {
  const replicas = await startTogether([serve(), serve()]);
  const balancer = await RoundRobinProxy.start(replicas.map((replica) => replica.url));
  try {
    let contextId: string | undefined;
    const tasks: string[] = [];
    for (const text of ["one", "two", "three", "recall"]) {
      const turn = await a2aResult(balancer.url, "notes", "message/send", userMessage(text, contextId ? { contextId } : {}));
      contextId = turn.contextId;
      tasks.push(turn.id);
      if (text === "recall") assert.equal(turn.artifacts[0].parts[0].text, 'You told me: "one", "two", "three".');
    }
    for (const replica of replicas) assert.ok((balancer.served.get(replica.url) ?? 0) >= 2, "both replicas took turns");
    // ListTasks (A2A v1.0) reads the tasks from PostgreSQL: newest first, a page at a time, from either replica.
    const page1 = await a2aResult(replicas[0]!.url, "notes", "ListTasks", { contextId, pageSize: 3 });
    assert.deepEqual([page1.tasks.map((t: any) => t.id), page1.totalSize], [tasks.slice(1).reverse(), 4]);
    assert.equal(page1.tasks[0].history.length, 8, "the context's history (four turns), the default scope");
    const page2 = await a2aResult(replicas[1]!.url, "notes", "ListTasks", { contextId, pageSize: 3, pageToken: page1.nextPageToken });
    assert.deepEqual([page2.tasks.map((t: any) => t.id), page2.nextPageToken], [[tasks[0]], ""]);
    for (const replica of replicas) {
      for (const id of tasks) assert.equal((await a2aResult(replica.url, "notes", "tasks/get", { id })).status.state, "completed");
    }

    // A graph's question asked on one replica is answered through the other.
    const asked = await a2aResult(replicas[0]!.url, "approval", "message/send", userMessage("pay 9 EUR"));
    assert.equal(asked.status.state, "input-required");
    const resumed = await a2aResult(
      replicas[1]!.url,
      "approval",
      "message/send",
      userMessage("yes", { contextId: asked.contextId, taskId: asked.id }),
    );
    assert.deepEqual([resumed.id, resumed.status.state, resumed.artifacts[0].parts[0].text], [asked.id, "completed", "Done: pay 9 EUR"]);
  } finally {
    await balancer.close();
    for (const replica of replicas) await replica.stop();
  }
});

test("a DATABASE_URI that cannot be opened stops the server with EGRESS_ERR_DATABASE, the password hidden", async () => {
  const run = await runCli(["a2a", "serve", "--config", GRAPHS, "--listen", "127.0.0.1:0", "--data-dir", tempDir("a2a-pg-bad-")], {
    env: { DATABASE_URI: "postgres://agent:s3cret-pw@127.0.0.1:4/agents" },
  });
  assert.notEqual(run.code, 0);
  const output = run.stdout + run.stderr;
  assert.match(output, /EGRESS_ERR_DATABASE/);
  assert.match(output, /DATABASE_URI/);
  assert.doesNotMatch(output, /s3cret-pw/);
  const invalid = await runCli(["a2a", "serve", "--config", GRAPHS, "--data-dir", tempDir("a2a-pg-bad-")], {
    env: { DATABASE_URI: "mysql://x" },
  });
  assert.equal(invalid.code, 2);
  assert.match(invalid.stderr, /DATABASE_URI: must be a postgres:\/\/ URL/);
});

test("kill -9 of a replica mid-run: the others fail its task with a message and go on; a replica starting fails no live one's", async () => {
  const [a, b] = await startTogether([serve("--replica-timeout", "2s"), serve("--replica-timeout", "2s")]);
  try {
    // A replica starting (a rolling update) while another runs a task leaves that task alone.
    const short = await a2aResult(a.url, "waiter", "message/send", { ...userMessage("wait 3000"), configuration: { blocking: false } });
    const c = await serve("--replica-timeout", "2s");
    await c.stop();
    const done = await waitFor(
      async () => {
        const task = await a2aResult(b.url, "waiter", "tasks/get", { id: short.id });
        return task.status.state === "completed" || task.status.state === "failed" ? task : undefined;
      },
      15_000,
      "the short task to end",
    );
    assert.equal(done.status.state, "completed", "not failed by a replica that started meanwhile");

    const long = await a2aResult(a.url, "waiter", "message/send", { ...userMessage("wait 60000"), configuration: { blocking: false } });
    assert.equal(await a.stop("SIGKILL"), null);
    const failed = await waitFor(
      async () => {
        const task = await a2aResult(b.url, "waiter", "tasks/get", { id: long.id });
        return task.status.state === "failed" ? task : undefined;
      },
      15_000,
      "the dead replica's task to be failed by the live one",
    );
    assert.match(failed.status.message.parts[0].text, /stopped while this task ran/);
    const next = await a2aResult(b.url, "waiter", "message/send", userMessage("wait 1", { contextId: long.contextId }));
    assert.equal(next.artifacts[0].parts[0].text, "waited 1 ms", "the conversation goes on, on the live replica");
  } finally {
    await a.stop("SIGKILL");
    await b.stop();
  }
});

test("DATABASE_SCHEMA: two agent servers on one database, each in its own schema, see nothing of each other", async () => {
  const inSchema = (schema: string) =>
    startService(
      ["a2a", "serve", "--config", GRAPHS, "--listen", "127.0.0.1:0", "--data-dir", tempDir("a2a-pg-schema-")],
      "agent server listening",
      { DATABASE_URI: databaseUrl, DATABASE_SCHEMA: schema },
    );
  const [a, b] = await startTogether([inSchema("deployment_a"), inSchema("deployment_b")]);
  try {
    const told = await a2aResult(a.url, "notes", "message/send", userMessage("a secret of deployment a"));
    const response = await fetch(`${b.url}/a2a/notes`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tasks/get", params: { id: told.id } }),
    });
    assert.equal(((await response.json()) as { error: { code: number } }).error.code, -32001, "another deployment's task is not found");
    const recall = await a2aResult(b.url, "notes", "message/send", userMessage("recall", { contextId: told.contextId }));
    assert.equal(recall.artifacts[0].parts[0].text, "You have not told me anything yet.", "nor is its conversation");
    const tables = await query<{ schemaname: string }>(
      databaseUrl,
      "SELECT schemaname FROM pg_tables WHERE tablename IN ('a2a_tasks', 'checkpoints') AND schemaname LIKE 'deployment_%' ORDER BY 1",
    );
    assert.deepEqual(
      tables.map((t) => t.schemaname),
      ["deployment_a", "deployment_a", "deployment_b", "deployment_b"],
      "the task store's and the checkpointer's tables, in each deployment's schema",
    );
  } finally {
    await a.stop();
    await b.stop();
  }
});

test("a task running on one replica: the other shows its live status, refuses a second run in its context, follows its events and cancels it", async () => {
  const [a, b] = await startTogether([serve(), serve()]);
  try {
    const running = await a2aResult(a.url, "waiter", "message/send", { ...userMessage("wait 20000"), configuration: { blocking: false } });
    await waitFor(
      async () => (await a2aResult(b.url, "waiter", "tasks/get", { id: running.id })).status.state === "working",
      10_000,
      "the other replica to show the run working",
    );
    // The context runs one task at a time across replicas too.
    const second = await fetch(`${b.url}/a2a/waiter`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 6,
        method: "message/send",
        params: userMessage("wait 1", { contextId: running.contextId }),
      }),
    });
    const busy = ((await second.json()) as { error: { code: number; message: string } }).error;
    assert.equal(busy.code, -32004);
    assert.match(busy.message, /another replica/);
    const followed = fetch(`${b.url}/a2a/waiter`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 7, method: "tasks/resubscribe", params: { id: running.id } }),
    }).then((response) => response.text());
    const started = Date.now();
    const canceled = await a2aResult(b.url, "waiter", "tasks/cancel", { id: running.id });
    assert.equal(canceled.status.state, "canceled");
    assert.ok(Date.now() - started < 10_000, "stopped on its replica, not after its 20 s");
    assert.equal((await a2aResult(a.url, "waiter", "tasks/get", { id: running.id })).status.state, "canceled");
    const events = (await followed)
      .split("\n\n")
      .filter((chunk) => chunk.startsWith("data: "))
      .map((chunk) => JSON.parse(chunk.slice(6)).result);
    assert.deepEqual([events[0].kind, events[0].status.state], ["task", "working"], "first the task as it is now");
    assert.deepEqual(
      events.slice(1).map((event: any) => event.kind),
      ["status-update"],
      "then only what came after (the end): the run's earlier events are not replayed",
    );
    assert.deepEqual([events.at(-1).kind, events.at(-1).status.state, events.at(-1).final], ["status-update", "canceled", true]);
  } finally {
    await a.stop();
    await b.stop();
  }
});
