import { join } from "node:path";
import type { BaseCheckpointSaver } from "@langchain/langgraph";
import type { Logger } from "pino";
import { redactUrl } from "../config/redact.ts";
import { Closers } from "../closers.ts";
import { EgressError } from "../errors.ts";
import type { ReplicaBus } from "./replica-bus.ts";
import type { TaskStore } from "./task-store.ts";
import { SqliteTaskStore } from "./task-store-sqlite.ts";

/** Where the agent server keeps conversations (LangGraph's checkpointer) and tasks, on one engine. */
export interface Persistence {
  engine: "sqlite" | "postgresql";
  checkpointer: BaseCheckpointSaver;
  store: TaskStore;
  /** Replicas (PostgreSQL): what they tell each other about running tasks. */
  bus?: ReplicaBus | undefined;
  /** Throws (DatabaseUnavailableError) while the database cannot be reached: the server is not ready. */
  ready(): Promise<void>;
  close(): Promise<void>;
}

/** Any number taken once for the cluster: replicas starting together create the checkpointer's tables one at a time. */
const CHECKPOINTER_SETUP_LOCK = 0x6132_6370; // "a2cp"

/**
 * SQLite in the data dir by default (threads.db, tasks.db); with DATABASE_URI, PostgreSQL: the official LangGraph
 * checkpointer (@langchain/langgraph-checkpoint-postgres) and the task store on one connection pool.
 */
export async function openPersistence(settings: {
  dataDir: string;
  databaseUri?: string | undefined;
  /** Where every table goes (the checkpointer's and the task store's); created when missing. */
  databaseSchema?: string | undefined;
  intervalMs: number;
  /** Replicas: one silent this long is taken for dead. */
  replicaTimeoutMs: number;
  logger: Logger;
}): Promise<Persistence> {
  if (!settings.databaseUri) {
    const { SqliteSaver } = await import("@langchain/langgraph-checkpoint-sqlite");
    const closers = new Closers();
    return closers.starting(async () => {
      const checkpointer = SqliteSaver.fromConnString(join(settings.dataDir, "threads.db"));
      closers.add(() => checkpointer.db.close());
      const store = new SqliteTaskStore(join(settings.dataDir, "tasks.db"), settings.intervalMs);
      closers.add(() => store.close());
      return { engine: "sqlite", checkpointer, store, async ready() {}, close: () => closers.closeAll() };
    });
  }
  // Loaded only when used: an embedded agent server never pays for the PostgreSQL client.
  const [pgPool, { PostgresSaver }, { PostgresTaskStore }, { ReplicaBus }, { DatabaseUnavailableError }] = await Promise.all([
    import("../pg-pool.ts"),
    import("@langchain/langgraph-checkpoint-postgres"),
    import("./task-store-postgres.ts"),
    import("./replica-bus.ts"),
    import("../database-unavailable.ts"),
  ]);
  const schema = settings.databaseSchema ?? "public";
  // The task store's unqualified names resolve in the schema; the checkpointer names it itself.
  const searchPath = `-c search_path=${schema}`;
  const { logger } = settings;
  const pool = pgPool.openPool({ url: settings.databaseUri, max: 10, options: searchPath }, logger, "agent server");
  const closers = new Closers();
  closers.add(() => pool.end());
  const listenSettings = pgPool.connectionSettings(settings.databaseUri, { options: searchPath });
  try {
    const checkpointer = new PostgresSaver(pool, undefined, { schema });
    const client = await pool.connect();
    try {
      await client.query("SELECT pg_advisory_lock($1)", [CHECKPOINTER_SETUP_LOCK]);
      await checkpointer.setup();
    } finally {
      await client.query("SELECT pg_advisory_unlock($1)", [CHECKPOINTER_SETUP_LOCK]).catch(() => {});
      client.release();
    }
    const store = await PostgresTaskStore.open(pool, settings.intervalMs, settings.replicaTimeoutMs);
    closers.add(() => store.close());
    const bus = await ReplicaBus.open(pool, () => pgPool.guardedClient(listenSettings, logger, "agent server LISTEN"), logger);
    closers.add(() => bus.close());
    return {
      engine: "postgresql",
      checkpointer,
      store,
      bus,
      async ready() {
        await pool.query("SELECT 1").catch((err) => {
          throw new DatabaseUnavailableError(err);
        });
        if (!bus.connected) throw new DatabaseUnavailableError(new Error("the LISTEN connection is reconnecting"));
      },
      close: () => closers.closeAll(),
    };
  } catch (err) {
    await closers.closeAll().catch(() => {});
    const code = (err as { code?: string }).code;
    throw new EgressError(
      "EGRESS_ERR_DATABASE",
      `cannot open the agent server's database at ${redactUrl(settings.databaseUri)} (DATABASE_URI): ${code ? `${code} ` : ""}${(err as Error).message}`,
    );
  }
}
