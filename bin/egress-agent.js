#!/usr/bin/env -S node --max-semi-space-size=2 --heap-growing-percent=50
// The installed entry point: the compiled CLI when built (the image), else the TypeScript source.
// The V8 flags bound memory (bench/RESULTS.md): a 2 MiB semi-space instead of Node's default (up to 32 MiB on a large
// host), and the old generation collected when it has grown by half rather than by up to 4x. Measured: RSS peaks
// under ingest, OTLP and drain load fall from 280-390 to 100-130 MiB. The young generation grows to its cap while
// starting and stays there when idle: 2 MiB rather than 4 keeps idle RSS 3.5 MiB lower (79 -> 76 MiB) for about 10%
// of OTLP intake throughput (6.6 -> 6.0 MB/s in alternating runs); ingest and drain showed no difference.
import { existsSync } from "node:fs";
import { enableCompileCache } from "node:module";

// V8 keeps compiled code in the OS temp dir: later starts skip most parsing (about 100 ms of ~550, bench/).
enableCompileCache?.();
const compiled = new URL("../dist/cli.js", import.meta.url);
await import(existsSync(compiled) ? compiled.href : new URL("../src/cli.ts", import.meta.url).href);
