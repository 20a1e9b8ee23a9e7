import assert from "node:assert/strict";
import { test } from "node:test";
import pg from "pg";
import { a2aResult, userMessage } from "../helpers/a2a-rpc.ts";
import { freshDatabase } from "../helpers/postgres.ts";
import { startService, tempDir, waitFor } from "../helpers/processes.ts";

// Deployments share one PostgreSQL database, each in a schema of its own (DATABASE_SCHEMA); PostgreSQL lets any role
// LISTEN and NOTIFY on any channel. Another deployment's code must neither hear this one's task ids nor cancel its runs.

const GRAPHS = new URL("../fixtures/graphs/graph.json", import.meta.url).pathname;

test("a connection to the same database hears none of the replicas' notifications and cannot cancel their runs through the old channel names", async () => {
  const database = await freshDatabase("egress_bus_channels");
  const server = await startService(
    ["a2a", "serve", "--config", GRAPHS, "--listen", "127.0.0.1:0", "--data-dir", tempDir("a2a-bus-")],
    "agent server listening",
    { DATABASE_URI: database.url, DATABASE_SCHEMA: "deployment_a" },
  );
  const snoop = new pg.Client({ connectionString: database.url });
  snoop.on("error", () => {});
  const heard: string[] = [];
  try {
    await snoop.connect();
    snoop.on("notification", (notification) => heard.push(`${notification.channel} ${notification.payload}`));
    await snoop.query("LISTEN a2a_events; LISTEN a2a_cancel");
    const running = await a2aResult(server.url, "waiter", "message/send", {
      ...userMessage("wait 3000"),
      configuration: { blocking: false },
    });
    await waitFor(
      async () => (await a2aResult(server.url, "waiter", "tasks/get", { id: running.id })).status.state === "working",
      10_000,
      "the run",
    );
    await snoop.query("SELECT pg_notify('a2a_cancel', $1)", [running.id]);
    const ended = await waitFor(
      async () => {
        const task = await a2aResult(server.url, "waiter", "tasks/get", { id: running.id });
        return task.status.state === "working" ? undefined : task;
      },
      15_000,
      "the run to end",
    );
    assert.equal(ended.status.state, "completed", "a NOTIFY on the old channel canceled nothing");
    assert.deepEqual(
      heard.filter((line) => !line.startsWith("a2a_cancel ")),
      [],
      "nothing of the run was heard on the guessable channels",
    );
  } finally {
    await snoop.end().catch(() => {});
    await server.stop();
    await database.drop();
  }
});
