import { execFile, spawn } from "node:child_process";
import { chmodSync, closeSync, fstatSync, lchownSync, lstatSync, mkdirSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import type { Logger } from "pino";
import type { DeploymentDatabases } from "./deployment-databases.ts";
import { DeployerError, type Deployer, type DeployTarget, type Serving } from "./deployer.ts";
import {
  ALIVE_TIMEOUT_MS,
  answersOk,
  childExited,
  exited,
  isAgentServerOf,
  loopbackPort,
  processAlive,
  signalGroup,
  untilHealthy,
} from "./agent-process.ts";
import { openDeploymentFile, readFrom } from "./deployment-files.ts";
import { failureSummary } from "./failure-summary.ts";
import { graphJson, serveArgs } from "./serve-args.ts";
import type { Isolation } from "./isolation.ts";
import { bwrapArgs, sandboxedPid } from "./namespace-sandbox.ts";
import { type Sandbox, sandboxFor, thisCli } from "./process-sandbox.ts";

/** How long a stopped agent server gets for its running tasks (it allows them 10 s) before SIGKILL. */
const STOP_GRACE_MS = 15_000;
/** An agent server's log is rotated (one older file kept) when a deploy finds it larger than this. */
const LOG_ROTATE_BYTES = 10 * 1024 * 1024;
/**
 * A deployment's processes (the build check and the agent server) start from this PATH, their own HOME and TMPDIR,
 * LANG and, if the operator set it, NODE_EXTRA_CA_CERTS (a path, for a TLS-inspecting proxy): nothing else of the
 * control plane's environment. Its PLATFORM_API_KEY would switch on tracing with the operator's key, EGRESS_* and
 * PLATFORM_TENANT_ID would bill the runs to whoever the control plane names, and cloud or proxy credentials are not
 * the deployment's. A deployment adds its own through its secrets.
 */
const CHILD_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

export interface LocalDeployerOptions {
  /** The control plane's data dir: each deployment gets `deployments/<id>/` in it. */
  dataDir: string;
  /** How to run egress-agent (default: as this process was run). */
  cli?: { node: string; args: string[] };
  agentServer: {
    sidecarUrl?: string | undefined;
    tenantId?: string | undefined;
    organizationId?: string | undefined;
    /** PostgreSQL for the agent servers: each deployment a role and a schema of its own; else SQLite in its data dir. */
    databases?: DeploymentDatabases | undefined;
    startTimeoutMs: number;
    /** What keeps each deployment's processes out of the control plane's files and each other's (isolation.ts). */
    isolation: Isolation;
  };
  logger: Logger;
  /** The environment NODE_EXTRA_CA_CERTS is taken from (default process.env). */
  env?: NodeJS.ProcessEnv;
}

/**
 * Runs each deployment's agent server as a process on loopback: `a2a check` builds, `a2a serve` serves. The servers
 * are detached, so they keep serving across a control plane restart; `alive` finds them again by pid and URL.
 */
export class LocalDeployer implements Deployer {
  readonly #dataDir: string;
  readonly #cli: { node: string; args: string[] };
  readonly #options: LocalDeployerOptions;
  readonly #logger: Logger;

  constructor(options: LocalDeployerOptions) {
    this.#options = options;
    this.#dataDir = resolve(options.dataDir);
    this.#cli = options.cli ?? thisCli();
    this.#logger = options.logger;
  }

  async create(target: DeployTarget): Promise<void> {
    if (target.source !== "local") throw new DeployerError(`the local deployer runs source "local" only, not "${target.source}"`);
    const config = graphJson(target);
    if (!statSync(config, { throwIfNoEntry: false })?.isFile())
      throw new DeployerError(`langgraph_config_path ${config} is not an existing file`);
    this.#sandbox(target); // refuses a graph whose directory holds the control plane's data dir
    this.#ownDir(target);
    await this.#database(target.deploymentId);
  }

  /** The deployment's own role and schema in the agent servers' database, when there is one. */
  async #database(deploymentId: string): Promise<void> {
    try {
      await this.#options.agentServer.databases?.ensure(deploymentId);
    } catch (err) {
      const code = (err as { code?: string }).code;
      throw new DeployerError(`the deployment's database (agentServer.databaseUri): ${code ? `${code} ` : ""}${(err as Error).message}`);
    }
  }

  async build(target: DeployTarget): Promise<void> {
    const config = graphJson(target);
    const timeoutMs = this.#options.agentServer.startTimeoutMs;
    const command = this.#command(target, ["a2a", "check", "--config", config], false);
    const dir = this.#ownDir(target);
    const buildLog = join(dir, "build.log");
    // No secrets in the build: it only loads the graphs, and a graph module's import must not need them.
    const env = this.#childEnv(target, {});
    const options = {
      env,
      cwd: dirname(config),
      timeout: timeoutMs,
      killSignal: "SIGKILL" as const,
      maxBuffer: 1 << 20,
      ...this.#user(target),
    };
    const stdout = await new Promise<string>((done, fail) => {
      execFile(command.file, command.args, options, (err, out, errOut) => {
        try {
          const log = openDeploymentFile(buildLog, "truncate");
          try {
            writeFileSync(log, `${out}${errOut}`);
          } finally {
            closeSync(log);
          }
        } catch (logErr) {
          return fail(new DeployerError(`writing the build's log ${buildLog}: ${(logErr as Error).message}`));
        }
        if (!err) return done(out);
        const what = err.killed ? `did not finish within ${timeoutMs / 1000} s` : `failed (exit code ${err.code})`;
        fail(new DeployerError(`checking ${config} ${what}: ${failureSummary(errOut, target.secrets, buildLog)}`));
      });
    });
    // The check's answer is its last line: a graph module may print on import.
    const graphs = (JSON.parse(stdout.trim().split("\n").at(-1) ?? "{}") as { graphs?: unknown }).graphs;
    this.#logger.info({ deploymentId: target.deploymentId, revisionId: target.revisionId, graphs }, "deployment built");
  }

  async deploy(target: DeployTarget, previous: Serving | undefined): Promise<Serving> {
    const { deploymentId } = target;
    const dir = this.#ownDir(target);
    // One writer for the SQLite files, and the port is the old one's: the previous server stops first.
    if (previous?.pid !== undefined && isAgentServerOf(previous.pid, this.#agentDataDir(deploymentId), this.#identity(deploymentId)))
      await this.#terminate(previous.pid);
    const port = await loopbackPort(previous ? Number(new URL(previous.url).port) : 0);
    const logPath = join(dir, "agent-server.log");
    if ((lstatSync(logPath, { throwIfNoEntry: false })?.size ?? 0) > LOG_ROTATE_BYTES) renameSync(logPath, `${logPath}.1`);
    const log = openDeploymentFile(logPath, "append");
    const url = `http://127.0.0.1:${port}`;
    let pid: number | undefined;
    try {
      const logOffset = fstatSync(log).size;
      const command = this.#command(
        target,
        serveArgs(target, { port, dataDir: this.#agentDataDir(target.deploymentId), ...this.#options.agentServer }),
        true,
      );
      const child = spawn(command.file, command.args, {
        env: this.#childEnv(target, target.secrets),
        ...this.#user(target),
        cwd: dirname(graphJson(target)),
        detached: true, // its own process group: signalled as one, and it outlives the control plane
        stdio: ["ignore", log, log, ...(command.infoFd ? (["pipe"] as const) : [])],
      });
      child.unref();
      // In a namespace, the agent server is bwrap's child: its pid is what is recorded, checked and signalled.
      pid = command.infoFd ? await sandboxedPid(child.stdio[command.infoFd]) : child.pid;
      const failure = await untilHealthy(url, child, this.#options.agentServer.startTimeoutMs);
      if (failure) {
        if (pid !== undefined) await this.#terminate(pid, "SIGKILL");
        await childExited(child, 5_000);
        const output = readFrom(log, logOffset);
        throw new DeployerError(`the agent server ${failure}: ${failureSummary(output, target.secrets, logPath)}`);
      }
    } finally {
      closeSync(log);
    }
    this.#logger.info({ deploymentId, revisionId: target.revisionId, url, pid }, "agent server started");
    return { url, pid };
  }

  async stop(deploymentId: string, serving: Serving | undefined): Promise<void> {
    if (serving?.pid !== undefined && isAgentServerOf(serving.pid, this.#agentDataDir(deploymentId), this.#identity(deploymentId)))
      await this.#terminate(serving.pid);
    rmSync(this.#deploymentDir(deploymentId), { recursive: true, force: true });
    // Its conversations go with it, as its SQLite files do.
    await this.#options.agentServer.databases?.drop(deploymentId);
  }

  async alive(serving: Serving): Promise<boolean> {
    return serving.pid !== undefined && processAlive(serving.pid) && (await answersOk(serving.url, ALIVE_TIMEOUT_MS));
  }

  /** How a recorded pid is known to be a deployment's agent server still (agent-process.ts isAgentServerOf). */
  #identity(deploymentId: string): { wrapped: boolean; uid?: number | undefined } {
    const { isolation } = this.#options.agentServer;
    if (isolation.mode !== "user") return { wrapped: isolation.mode === "namespace" };
    // The deployment's own user: its directory's owner (#own), not merely any deployment's.
    return { wrapped: false, uid: lstatSync(this.#deploymentDir(deploymentId), { throwIfNoEntry: false })?.uid };
  }

  /** The user and group a deployment's processes run as: one of its own, with isolation user and as root in namespaces. */
  #user(target: DeployTarget): { uid: number; gid: number } | Record<string, never> {
    const { isolation } = this.#options.agentServer;
    if (isolation.mode === "none" || isolation.uidBase === undefined) return {};
    return { uid: isolation.uidBase + target.ordinal, gid: isolation.uidBase + target.ordinal };
  }

  /** Creates `path` owner-only, owned by the deployment's user when it has one. */
  #own(target: DeployTarget, path: string): string {
    mkdirSync(path, { recursive: true, mode: 0o700 });
    const user = this.#user(target);
    // Not through a link the deployment's code may have put there: chown would follow it.
    if ("uid" in user) lchownSync(path, user.uid, user.gid);
    return path;
  }

  /**
   * The deployment's directory, its processes' own. With a user per deployment, the data dir and `deployments/` are
   * made traversable but not listable (0711), so a process reaches its own directory and nothing else: the
   * database and secrets.key are the control plane's, 0600.
   */
  #ownDir(target: DeployTarget): string {
    if ("uid" in this.#user(target)) {
      mkdirSync(join(this.#dataDir, "deployments"), { recursive: true, mode: 0o711 });
      for (const dir of [this.#dataDir, join(this.#dataDir, "deployments")]) chmodSync(dir, 0o711);
    }
    return this.#own(target, this.#deploymentDir(target.deploymentId));
  }

  /** What a deployment's processes may touch (src/controlplane/process-sandbox.ts). */
  #sandbox(target: DeployTarget): Sandbox {
    const script = this.#cli.args.at(-1)!;
    return sandboxFor({
      script,
      graphConfig: graphJson(target),
      deploymentDir: this.#deploymentDir(target.deploymentId),
      controlPlaneDataDir: this.#dataDir,
    });
  }

  /**
   * A deployment's process: Node under its permission model, inside namespaces of its own with isolation namespace
   * (then `infoFd` is where bwrap tells its pid). `detached`: an agent server, which outlives the control plane.
   */
  #command(target: DeployTarget, args: string[], detached: boolean): { file: string; args: string[]; infoFd?: 3 } {
    const sandbox = this.#sandbox(target);
    const node = [...sandbox.flags, ...this.#cli.args, ...args];
    const { isolation } = this.#options.agentServer;
    if (isolation.mode !== "namespace") return { file: this.#cli.node, args: node };
    const ca = (this.#options.env ?? process.env).NODE_EXTRA_CA_CERTS;
    const wrap = bwrapArgs({
      // Of the Node runtime, its binary: it needs nothing else of its install.
      readable: [...sandbox.readable, this.#cli.node, ...(ca ? [ca] : [])],
      writable: sandbox.writable,
      cwd: dirname(graphJson(target)),
      dieWithParent: !detached,
      infoFd: detached ? 3 : undefined,
    });
    return { file: isolation.bwrap, args: [...wrap, this.#cli.node, ...node], ...(detached ? { infoFd: 3 as const } : {}) };
  }

  #deploymentDir(deploymentId: string): string {
    // The id names a directory: never a path of its own.
    if (!/^[A-Za-z0-9_-]+$/.test(deploymentId))
      throw new DeployerError(`deployment id ${JSON.stringify(deploymentId)} cannot name a directory`);
    return join(this.#dataDir, "deployments", deploymentId);
  }

  /** The same for every revision of a deployment: conversations survive a redeploy. */
  #agentDataDir(deploymentId: string): string {
    return join(this.#deploymentDir(deploymentId), "agent-server");
  }

  /**
   * The environment of a deployment's processes: the deployment's secrets under an explicit base that they cannot
   * override (the API refuses reserved names too), never the control plane's own environment. HOME and TMPDIR are
   * the deployment's own directories.
   */
  #childEnv(target: DeployTarget, secrets: Record<string, string>): NodeJS.ProcessEnv {
    const dir = this.#ownDir(target);
    const base: NodeJS.ProcessEnv = { PATH: CHILD_PATH, HOME: join(dir, "home"), TMPDIR: join(dir, "tmp"), LANG: "C.UTF-8" };
    for (const path of [base.HOME!, base.TMPDIR!]) this.#own(target, path);
    const ca = (this.#options.env ?? process.env).NODE_EXTRA_CA_CERTS;
    if (ca) base.NODE_EXTRA_CA_CERTS = ca;
    // Configuration, not the deployment's secrets (which may not name these): its own role and schema in the database.
    const { databases } = this.#options.agentServer;
    if (databases) Object.assign(base, databases.settingsFor(target.deploymentId));
    return { ...secrets, ...base };
  }

  /** Signals the process group and waits for the server to exit; SIGKILL when it takes longer than its grace. */
  async #terminate(pid: number, signal: NodeJS.Signals = "SIGTERM"): Promise<void> {
    signalGroup(pid, signal);
    if (await exited(pid, STOP_GRACE_MS)) return;
    this.#logger.warn({ pid }, `agent server did not stop within ${STOP_GRACE_MS / 1000} s; killing it`);
    signalGroup(pid, "SIGKILL");
    if (!(await exited(pid, 5_000))) throw new DeployerError(`the agent server (pid ${pid}) did not exit after SIGKILL`);
  }
}
