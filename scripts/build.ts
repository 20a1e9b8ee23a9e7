// npm run build: src/ bundled into dist/cli.js (plus chunks for what loads on first use), which
// bin/egress-agent.js runs. One bundled file starts ~35% faster than Node resolving and compiling a few hundred
// module files (bench/RESULTS.md). Type checking is `npm run typecheck`; this only strips types.
import { rmSync } from "node:fs";
import { build } from "esbuild";

export async function buildDist(outdir = new URL("../dist", import.meta.url).pathname): Promise<void> {
  rmSync(outdir, { recursive: true, force: true });
  await build({
    entryPoints: [new URL("../src/cli.ts", import.meta.url).pathname],
    outdir,
    bundle: true,
    splitting: true, // protobufjs and the OpenTelemetry SDK stay in chunks loaded on first use
    format: "esm",
    platform: "node",
    target: "node24",
    // A native addon, and the Postgres client that loads only for `usage.source: postgres`.
    external: ["better-sqlite3", "pg"],
    // Bundled CommonJS packages call require() for Node's built-ins.
    banner: { js: 'import { createRequire as __egressCreateRequire } from "node:module"; const require = __egressCreateRequire(import.meta.url);' },
    // Node keeps a module's source text for as long as the process runs: minified, it is 2.5 MB instead of 3.5.
    // Function and class names are kept (stack traces, error names); the sources are in the maps.
    minify: true,
    keepNames: true,
    // Node stores that text as UTF-16 (twice the size) once a single byte is not ASCII (the one was a licence
    // comment's "ä"): licence comments go to dist/*.LEGAL.txt, and the code is ASCII.
    legalComments: "external",
    charset: "ascii",
    sourcemap: "linked",
    logLevel: "warning",
  });
}

if (import.meta.url === `file://${process.argv[1]}`) await buildDist(process.argv[2]);
