#!/usr/bin/env -S node --max-semi-space-size=4 --heap-growing-percent=50
// The installed entry point: the compiled CLI when built (the image), else the TypeScript source.
// The V8 flags bound memory (bench/RESULTS.md): a 4 MiB semi-space instead of Node's default (up to 32 MiB on a large
// host), and the old generation collected when it has grown by half rather than by up to 4x. Measured: RSS peaks
// under ingest, OTLP and drain load fall from 280-390 to about 150-160 MiB at no throughput cost we could separate
// from noise.
import { existsSync } from "node:fs";
import { enableCompileCache } from "node:module";

// V8 keeps compiled code in the OS temp dir: later starts skip most parsing (about 100 ms of ~550, bench/).
enableCompileCache?.();
const compiled = new URL("../dist/cli.js", import.meta.url);
await import(existsSync(compiled) ? compiled.href : new URL("../src/cli.ts", import.meta.url).href);
