// npm run build: src/ bundled into dist/cli.js (plus chunks for what loads on first use), which
// bin/egress-agent.js runs. One bundled file starts ~35% faster than Node resolving and compiling a few hundred
// module files (bench/RESULTS.md). Type checking is `npm run typecheck`; this only strips types.
import { copyFileSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { build, type Plugin } from "esbuild";

/**
 * ES imports of node:http and node:https (ours, and the OpenTelemetry exporter's `await import("http")`) read every
 * export of the module, and http's WebSocket getter then loads Node's fetch implementation and http2: about 3 MiB
 * of idle memory for code the sidecar never runs (bench/RESULTS.md). In the bundle they take the module object
 * from process.getBuiltinModule instead, which reads nothing.
 */
const httpWithoutFetch: Plugin = {
  name: "http-without-fetch",
  setup(build) {
    build.onResolve({ filter: /^(node:)?https?$/ }, (args) => ({ path: args.path.replace(/^node:/, ""), namespace: "http-without-fetch" }));
    build.onLoad({ filter: /.*/, namespace: "http-without-fetch" }, (args) => {
      const names =
        args.path === "http"
          ? "Agent, ClientRequest, IncomingMessage, METHODS, OutgoingMessage, STATUS_CODES, Server, ServerResponse, createServer, get, request"
          : "Agent, Server, createServer, get, request";
      const contents = `const m = process.getBuiltinModule("node:${args.path}");\nexport const { ${names} } = m;\nexport default m;\n`;
      return { contents, loader: "js" };
    });
  },
};

// A native addon, the Postgres client that loads only for `usage.source: postgres`, and LangGraph: a user's graph
// module imports it from node_modules, and the agent server must share that copy with it.
const EXTERNAL = ["better-sqlite3", "pg", "@langchain/*"];

/**
 * dist/runtime-package.json: the package.json of an install that runs dist/ (the image's), whose dependencies are
 * only what the bundle leaves out. Everything else is inside dist/: installing it too cost the image about 30 MB.
 */
function writeRuntimePackage(outdir: string): void {
  const pkg = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as {
    name: string;
    version: string;
    dependencies: Record<string, string>;
    overrides?: Record<string, unknown>;
  };
  const external = (name: string) =>
    EXTERNAL.some((pattern) => (pattern.endsWith("/*") ? name.startsWith(pattern.slice(0, -1)) : name === pattern));
  const dependencies = Object.fromEntries(Object.entries(pkg.dependencies).filter(([name]) => external(name)));
  // The overrides too: without them LangGraph's SQLite checkpointer gets a better-sqlite3 of its own, one that ships
  // no prebuilt binary, and `a2a serve` cannot load it (seen in a real image build).
  const runtime = { name: pkg.name, version: pkg.version, private: true, type: "module", dependencies, overrides: pkg.overrides };
  writeFileSync(`${outdir}/runtime-package.json`, `${JSON.stringify(runtime, null, 2)}\n`);
}

export async function buildDist(outdir = new URL("../dist", import.meta.url).pathname): Promise<void> {
  rmSync(outdir, { recursive: true, force: true });
  await build({
    // The writer threads (the beacon's ingest, the sidecar's billing intake) start from files of their own (src/writer-thread.ts).
    entryPoints: {
      cli: new URL("../src/cli.ts", import.meta.url).pathname,
      "ingest-writer-thread": new URL("../src/beacon/ingest-writer-thread.ts", import.meta.url).pathname,
      "billing-writer-thread": new URL("../src/sidecar/storage/billing-writer-thread.ts", import.meta.url).pathname,
    },
    outdir,
    bundle: true,
    plugins: [httpWithoutFetch],
    splitting: true, // protobufjs and the OpenTelemetry SDK stay in chunks loaded on first use
    format: "esm",
    platform: "node",
    target: "node24",
    external: EXTERNAL,
    // Bundled CommonJS packages call require() for Node's built-ins.
    banner: {
      js: 'import { createRequire as __egressCreateRequire } from "node:module"; const require = __egressCreateRequire(import.meta.url);',
    },
    // Node keeps a module's source text for as long as the process runs: minified, it is about a third smaller.
    // Function and class names are kept (stack traces, error names); the sources are in the maps.
    minify: !process.env.NO_MINIFY, // NO_MINIFY=1: readable names and lines in a CPU profile (bench/relay.ts PROFILE=)
    keepNames: true,
    // Node stores that text as UTF-16 (twice the size) once a single byte is not ASCII (the one was a licence
    // comment's "ä"): licence comments go to dist/*.LEGAL.txt, and the code is ASCII.
    legalComments: "external",
    charset: "ascii",
    sourcemap: "linked",
    logLevel: "warning",
  });
  writeRuntimePackage(outdir);
  // Read at run time beside the bundle's chunks (src/sidecar/privacy/vocabulary.ts says why it is not bundled).
  copyFileSync(new URL("../src/sidecar/privacy/english-words.txt", import.meta.url), `${outdir}/english-words.txt`);
}

if (import.meta.url === `file://${process.argv[1]}`) await buildDist(process.argv[2]);
