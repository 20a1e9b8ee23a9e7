import { readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { v5 as uuidv5 } from "uuid";
import * as z from "zod";
import { parseConfig } from "../config/load.ts";
import { ConfigError } from "../errors.ts";

/** Namespace of the assistants' UUID aliases: the same graph id gives the same UUID on every server. */
const ASSISTANT_NAMESPACE = "6ba7b821-9dad-11d1-80b4-00c04fd430c8";

const GraphEntry = z.union([
  z.string().min(1, { message: "must be FILE:EXPORT" }),
  z.looseObject({ path: z.string().min(1, { message: "must be FILE:EXPORT" }), description: z.string().optional() }),
]);

/**
 * The platform's graph.json. Only the keys the agent server acts on are checked; the platform's others
 * (dependencies, node_version, dockerfile_lines, ...) pass untouched.
 */
export const GraphConfigFile = z.looseObject({
  graphs: z
    .record(z.string().regex(/^[A-Za-z0-9_.-]+$/, { message: "graph ids are letters, digits, '_', '.' or '-'" }), GraphEntry)
    .refine((graphs) => Object.keys(graphs).length > 0, { message: "must name at least one graph" }),
  /** Environment for the graphs: variables, or a .env file beside graph.json. Variables already set win. */
  env: z.union([z.record(z.string(), z.string()), z.string()]).optional(),
  http: z.looseObject({ disable_a2a: z.boolean().default(false) }).default({ disable_a2a: false }),
});

/** What the agent server calls on a graph: a compiled `@langchain/langgraph` graph (duck-typed: any copy of the package). */
export interface CompiledGraph {
  checkpointer?: unknown;
  channels?: Record<string, unknown>;
  stream(input: unknown, options: Record<string, unknown>): Promise<AsyncIterable<unknown>>;
  getState(config: Record<string, unknown>): Promise<{ values: unknown }>;
}

export interface Assistant {
  graphId: string;
  /** The stable UUID alias of the graph id: either names the assistant in paths. */
  uuid: string;
  description: string;
  graph: CompiledGraph;
  /** A2A works on the state's `messages`: a graph without the key is refused on A2A calls. */
  hasMessages: boolean;
}

export interface GraphConfig {
  assistants: Assistant[];
  disableA2a: boolean;
}

export function assistantUuid(graphId: string): string {
  return uuidv5(graphId, ASSISTANT_NAMESPACE);
}

function isCompiled(value: unknown): value is CompiledGraph {
  return typeof (value as CompiledGraph | undefined)?.stream === "function" && typeof (value as CompiledGraph).getState === "function";
}

/** An export may be a compiled graph, a StateGraph to compile, or a function (sync or async) returning either. */
async function compiledFrom(value: unknown): Promise<CompiledGraph | undefined> {
  if (typeof value === "function" && !isCompiled(value)) value = await (value as () => unknown)();
  if (isCompiled(value)) return value;
  const builder = value as { compile?: () => unknown } | undefined;
  if (typeof builder?.compile === "function") {
    const compiled = builder.compile();
    if (isCompiled(compiled)) return compiled;
  }
  return undefined;
}

async function loadGraph(key: string, spec: string, baseDir: string): Promise<CompiledGraph> {
  const colon = spec.lastIndexOf(":");
  if (colon <= 0 || colon === spec.length - 1)
    throw new ConfigError(key, [`${key}: must be FILE:EXPORT, e.g. ./src/agent.ts:graph (got ${spec})`]);
  const file = resolve(baseDir, spec.slice(0, colon));
  const exportName = spec.slice(colon + 1);
  let module: Record<string, unknown>;
  try {
    module = (await import(pathToFileURL(file).href)) as Record<string, unknown>;
  } catch (err) {
    throw new ConfigError(key, [`${key}: cannot load ${file}: ${(err as Error).message.split("\n")[0]}`]);
  }
  if (!(exportName in module)) throw new ConfigError(key, [`${key}: ${file} has no export named ${exportName}`]);
  let graph: CompiledGraph | undefined;
  try {
    graph = await compiledFrom(module[exportName]);
  } catch (err) {
    throw new ConfigError(key, [`${key}: building the graph failed: ${(err as Error).message.split("\n")[0]}`]);
  }
  if (!graph)
    throw new ConfigError(key, [
      `${key}: ${exportName} in ${file} is not a LangGraph graph (compiled, a StateGraph, or a function returning one)`,
    ]);
  return graph;
}

function applyEnv(env: Record<string, string> | string | undefined, baseDir: string): void {
  if (env === undefined) return;
  if (typeof env === "string") {
    try {
      process.loadEnvFile(resolve(baseDir, env));
    } catch (err) {
      throw new ConfigError("env", [`env: cannot read ${resolve(baseDir, env)} (${(err as NodeJS.ErrnoException).code ?? String(err)})`]);
    }
    return;
  }
  for (const [name, value] of Object.entries(env)) process.env[name] ??= value;
}

/**
 * Reads graph.json and loads every graph it names (paths relative to the file). The graphs' environment is set
 * first, as graph modules may read it when they load. Any problem is a ConfigError naming the key.
 */
export async function loadGraphConfig(path: string): Promise<GraphConfig> {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, "utf8"));
  } catch (err) {
    // Where, never what: V8's message quotes the text around the error, which may be any file's content.
    const where = err instanceof SyntaxError ? / at position \d+(?: \(line \d+ column \d+\))?/.exec(err.message)?.[0] : undefined;
    const reason =
      err instanceof SyntaxError
        ? `not valid JSON${where ?? ""}`
        : `cannot read the file: ${(err as NodeJS.ErrnoException).code ?? String(err)}`;
    throw new ConfigError(path, [reason]);
  }
  const file = parseConfig(GraphConfigFile, raw, path);
  const baseDir = dirname(resolve(path));
  applyEnv(file.env, baseDir);
  const assistants: Assistant[] = [];
  for (const [graphId, entry] of Object.entries(file.graphs)) {
    const spec = typeof entry === "string" ? entry : entry.path;
    const graph = await loadGraph(`graphs.${graphId}`, spec, baseDir);
    const description = (typeof entry === "string" ? undefined : entry.description) ?? `LangGraph graph ${graphId}`;
    assistants.push({
      graphId,
      uuid: assistantUuid(graphId),
      description,
      graph,
      hasMessages: Object.hasOwn(graph.channels ?? {}, "messages"),
    });
  }
  return { assistants, disableA2a: file.http.disable_a2a };
}
