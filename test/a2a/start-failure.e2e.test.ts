import assert from "node:assert/strict";
import { join } from "node:path";
import { test } from "node:test";
import pino from "pino";
import { loadGraphConfig } from "../../src/a2a/graph-config.ts";
import { startAgentServer } from "../../src/a2a/server.ts";
import { HttpServer } from "../../src/http/server.ts";
import { connectionsTo, exclusiveLock, lifeAfterFailedStart, srcModule, takenPort } from "../helpers/leaks.ts";
import { freshDatabase } from "../helpers/postgres.ts";
import { tempDir } from "../helpers/processes.ts";

// An agent server that cannot start (its port taken) leaves nothing open: not tasks.db or threads.db, not a
// PostgreSQL connection (its pool, its LISTEN client), not a timer that keeps its process alive. And a close whose
// first step throws still closes the rest.

const GRAPHS = new URL("../fixtures/graphs/graph.json", import.meta.url).pathname;
const silent = pino({ level: "silent" });

async function settings(listenPort: number, databaseUri?: string) {
  const dataDir = tempDir("a2a-start-");
  return { graphs: await loadGraphConfig(GRAPHS), listen: { host: "127.0.0.1", port: listenPort }, dataDir, databaseUri, logger: silent };
}

test("an agent server whose port is taken fails to start and leaves tasks.db and threads.db closed", async (t) => {
  const taken = await settings(await takenPort(t));
  await assert.rejects(startAgentServer(taken), /EADDRINUSE/);
  for (const file of ["tasks.db", "threads.db"]) assert.equal(exclusiveLock(join(taken.dataDir, file)), "ok", file);
});

test("on PostgreSQL, a failed start leaves no connection (pool, LISTEN) to the database, and the process exits by itself", async (t) => {
  const database = await freshDatabase("egress_a2a_start");
  t.after(database.drop);
  const port = await takenPort(t);
  await assert.rejects(startAgentServer(await settings(port, database.url)), /EADDRINUSE/);
  assert.equal(await connectionsTo(database.name), 0);

  const { lingeredMs, output } = await lifeAfterFailedStart(`
    import { createLogger } from ${JSON.stringify(srcModule("log.ts"))};
    import { loadGraphConfig } from ${JSON.stringify(srcModule("a2a/graph-config.ts"))};
    import { startAgentServer } from ${JSON.stringify(srcModule("a2a/server.ts"))};
    await startAgentServer({
      graphs: await loadGraphConfig(${JSON.stringify(GRAPHS)}),
      listen: { host: "127.0.0.1", port: ${port} },
      dataDir: ${JSON.stringify(tempDir("a2a-start-child-"))},
      databaseUri: ${JSON.stringify(database.url)},
      logger: createLogger("silent"),
    }).catch((err) => console.log("start failed:", err.code));
  `);
  assert.match(output, /start failed: EADDRINUSE/);
  assert.ok(lingeredMs !== undefined && lingeredMs < 3_000, `the process lived on after its failed start: ${lingeredMs} ms; ${output}`);
});

test("a close whose HTTP server throws still closes the task store and the checkpointer, and reports the server's error", async (t) => {
  const free = await settings(0);
  const server = await startAgentServer(free);
  const close = HttpServer.prototype.close;
  t.mock.method(HttpServer.prototype, "close", async function (this: HttpServer) {
    await close.call(this);
    throw new Error("the server would not close");
  });
  await assert.rejects(server.close(), /the server would not close/);
  for (const file of ["tasks.db", "threads.db"]) assert.equal(exclusiveLock(join(free.dataDir, file)), "ok", file);
});
