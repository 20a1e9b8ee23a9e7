import type pg from "pg";
import type { Logger } from "pino";
import { connectionSettings, guardedClient } from "../pg-pool.ts";
import { deploymentSchema } from "./deployer.ts";

/**
 * Each deployment's agent server on the shared PostgreSQL server gets a role and a schema of its own (the role
 * owns the schema): its graph code, whatever it does with DATABASE_URI, reaches its own conversations and no other
 * deployment's. The control plane connects with `adminUri` (a role that may create roles); each deployment's
 * password is derived from the control plane's key, so nothing new is stored.
 */
export class DeploymentDatabases {
  readonly #adminUri: string;
  readonly #password: (deploymentId: string) => string;
  readonly #logger: Logger;

  /** `logger`: where a connection the server drops is logged (the statement running on it fails with it too). */
  constructor(adminUri: string, password: (deploymentId: string) => string, logger: Logger) {
    this.#adminUri = adminUri;
    this.#password = password;
    this.#logger = logger;
  }

  /** The deployment's DATABASE_URI (its own role) and DATABASE_SCHEMA. */
  settingsFor(deploymentId: string): { DATABASE_URI: string; DATABASE_SCHEMA: string } {
    const role = deploymentSchema(deploymentId);
    const uri = new URL(this.#adminUri);
    uri.username = role;
    uri.password = this.#password(deploymentId);
    return { DATABASE_URI: uri.toString(), DATABASE_SCHEMA: role };
  }

  /** Creates the deployment's role and schema when missing (and sets the role's password again). */
  async ensure(deploymentId: string): Promise<void> {
    const role = deploymentSchema(deploymentId);
    await this.#admin(async (client) => {
      const name = client.escapeIdentifier(role);
      const password = client.escapeLiteral(this.#password(deploymentId));
      const { rowCount } = await client.query("SELECT 1 FROM pg_roles WHERE rolname = $1", [role]);
      await client.query(rowCount ? `ALTER ROLE ${name} LOGIN PASSWORD ${password}` : `CREATE ROLE ${name} LOGIN PASSWORD ${password}`);
      await client.query(`CREATE SCHEMA IF NOT EXISTS ${name} AUTHORIZATION ${name}`);
      // The LangGraph checkpointer's setup says CREATE SCHEMA IF NOT EXISTS, which asks for CREATE on the database.
      const { rows } = await client.query<{ db: string }>("SELECT current_database() AS db");
      await client.query(`GRANT CREATE ON DATABASE ${client.escapeIdentifier(rows[0]!.db)} TO ${name}`);
    });
  }

  /** The deployment is deleted: its schema (conversations, tasks) and its role go. */
  async drop(deploymentId: string): Promise<void> {
    const role = deploymentSchema(deploymentId);
    await this.#admin(async (client) => {
      const name = client.escapeIdentifier(role);
      await client.query(`DROP SCHEMA IF EXISTS ${name} CASCADE`);
      const { rowCount } = await client.query("SELECT 1 FROM pg_roles WHERE rolname = $1", [role]);
      if (!rowCount) return;
      const { rows } = await client.query<{ db: string }>("SELECT current_database() AS db");
      await client.query(`REVOKE ALL ON DATABASE ${client.escapeIdentifier(rows[0]!.db)} FROM ${name}`);
      await client.query(`DROP OWNED BY ${name}`);
      await client.query(`DROP ROLE ${name}`);
    });
  }

  async #admin(work: (client: pg.Client) => Promise<void>): Promise<void> {
    const client = guardedClient(connectionSettings(this.#adminUri), this.#logger, "control plane");
    await client.connect();
    try {
      await work(client);
    } finally {
      await client.end();
    }
  }
}
