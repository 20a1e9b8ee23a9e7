import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { after, before, describe, test } from "node:test";
import { testLicense, traceTransactions } from "../helpers/fixtures.ts";
import { waitFor } from "../helpers/processes.ts";

// The image itself, built from this checkout with the labels' build args as `make image` passes them: what it holds
// (Node without npm, the pruned packages, the SBOM), its labels, and its services on a read-only root filesystem
// with no tmpfs at all. Needs Docker and the base images (node:24-slim, debian:bookworm-slim) or a registry to pull
// them from; test/packaging/standin-images.sh builds stand-ins on a machine that has neither.

const ROOT = new URL("../../", import.meta.url).pathname;
const pkg = JSON.parse(readFileSync(`${ROOT}package.json`, "utf8")) as {
  version: string;
  license: string;
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
};
const TAG = `egress-agent:image-test-${process.pid}`;
const BASES = ["node:24-slim", "debian:bookworm-slim"];

function docker(args: string[], timeoutMs = 60_000) {
  const result = spawnSync("docker", args, { encoding: "utf8", timeout: timeoutMs, maxBuffer: 64 * 2 ** 20 });
  return { status: result.status, stdout: result.stdout ?? "", stderr: result.stderr ?? String(result.error ?? "") };
}
const ok = (args: string[], timeoutMs?: number) => {
  const result = docker(args, timeoutMs);
  assert.equal(result.status, 0, `docker ${args.join(" ")}: ${result.stderr}`);
  return result.stdout;
};

function unavailable(): string | false {
  const info = docker(["info", "--format", "{{.ServerVersion}}"], 20_000);
  if (info.status !== 0) return `needs Docker: docker info failed (${info.stderr.trim().split("\n").at(-1)})`;
  for (const base of BASES) {
    if (docker(["image", "inspect", base]).status === 0) continue;
    const pull = docker(["pull", base], 300_000);
    if (pull.status !== 0) {
      return `needs the base image ${base}: not present and not pullable (${pull.stderr.trim().split("\n").at(-1)}); test/packaging/standin-images.sh builds stand-ins`;
    }
  }
  return false;
}

const skip = unavailable();
const git = spawnSync("git", ["rev-parse", "HEAD"], { cwd: ROOT, encoding: "utf8" });
const ARGS = {
  VERSION: pkg.version,
  REVISION: git.status === 0 ? git.stdout.trim() : "0".repeat(40),
  CREATED: new Date().toISOString().replace(/\.\d+Z$/, "Z"),
  SOURCE: "https://git.example.test/egress-agent",
};
const run = (entrypoint: string, ...args: string[]) => ok(["run", "--rm", "--read-only", "--entrypoint", entrypoint, TAG, ...args]);

describe("the image", { skip }, () => {
  before(
    () => {
      const buildArgs = Object.entries(ARGS).flatMap(([name, value]) => ["--build-arg", `${name}=${value}`]);
      ok(["build", "-t", TAG, ...buildArgs, ROOT], 1_500_000);
    },
    { timeout: 1_600_000 },
  );
  after(() => docker(["image", "rm", "-f", TAG]));

  test("OCI labels: version (package.json's), revision, created and source from the build args; licenses package.json's", () => {
    const labels = JSON.parse(ok(["image", "inspect", "--format", "{{json .Config.Labels}}", TAG])) as Record<string, string>;
    assert.equal(labels["org.opencontainers.image.version"], ARGS.VERSION);
    assert.equal(labels["org.opencontainers.image.revision"], ARGS.REVISION);
    assert.equal(labels["org.opencontainers.image.created"], ARGS.CREATED);
    assert.equal(labels["org.opencontainers.image.source"], ARGS.SOURCE);
    assert.equal(labels["org.opencontainers.image.licenses"], pkg.license);
    assert.equal(labels["org.opencontainers.image.title"], "egress-agent");
    // A VERSION that is not package.json's fails the build, before anything is tagged.
    const wrong = docker(["build", "-q", "--build-arg", "VERSION=9.9.9", ROOT], 1_500_000);
    assert.notEqual(wrong.status, 0);
    assert.match(wrong.stderr + wrong.stdout, /VERSION=9\.9\.9 is not package\.json's version/);
  });

  test("Node without npm, npx or corepack; node_modules pruned to what runs: no declarations, maps, sources, docs or foreign binaries", () => {
    assert.match(run("node", "--version"), /^v24\./);
    const listing = run(
      "sh",
      "-c",
      "command -v npm npx corepack; ls /usr/local/lib/node_modules 2>&1; " +
        "find /app/node_modules -type f ! -name '*.js' ! -name '*.cjs' ! -name '*.mjs' ! -name '*.json' ! -name '*.node' " +
        "! -iname 'licen[cs]e*' ! -iname 'notice*' ! -iname 'copying*' ! -iname 'authors*'; " +
        "find /app/node_modules -name '*.node'; find /app/dist -name '*.map'; echo KB $(du -sk /app/node_modules | cut -f1)",
    );
    const lines = listing.trim().split("\n");
    assert.match(lines[0]!, /No such file or directory/, `npm, npx, corepack: ${listing}`);
    assert.deepEqual(lines.slice(1, -1), ["/app/node_modules/better-sqlite3/prebuilds/linux-x64.node"]);
    const kb = Number(lines.at(-1)!.split(" ")[1]);
    assert.ok(kb < 25_000, `node_modules holds ${kb} KB (80 MB unpruned)`);
  });

  test("the SBOM at /app/sbom.cdx.json: CycloneDX, the application at its version, exactly the production dependencies", () => {
    const sbom = JSON.parse(run("cat", "/app/sbom.cdx.json")) as {
      bomFormat: string;
      metadata: { component: { name: string; version: string; purl: string } };
      components: { name: string; version: string; purl: string }[];
    };
    assert.equal(sbom.bomFormat, "CycloneDX");
    assert.deepEqual(
      [sbom.metadata.component.name, sbom.metadata.component.version, sbom.metadata.component.purl],
      ["egress-agent", pkg.version, `pkg:npm/egress-agent@${pkg.version}`],
    );
    const listed = new Set(sbom.components.map((c) => `${c.name}@${c.version}`));
    assert.deepEqual([...listed].sort(), [...productionClosure()].sort());
    // No build tool: esbuild, TypeScript, Biome and the test libraries are nobody's production dependency.
    for (const name of ["esbuild", "typescript", "@biomejs/biome", "fastify", "fast-check", "ajv"]) {
      assert.ok(name in pkg.devDependencies);
      assert.ok(![...listed].some((entry) => entry.startsWith(`${name}@`)), name);
    }
    // Every package the image holds is listed, at the version it holds.
    const installed = run(
      "node",
      "-e",
      `const { readdirSync, readFileSync } = require("node:fs");
       for (const e of readdirSync("/app/node_modules", { recursive: true, withFileTypes: true }))
         if (e.name === "package.json" && /node_modules\\/(@[^/]+\\/)?[^/@]+$/.test(e.parentPath)) {
           const p = JSON.parse(readFileSync(e.parentPath + "/package.json", "utf8"));
           if (p.name && p.version) console.log(p.name + "@" + p.version);
         }`,
    );
    const missing = installed
      .trim()
      .split("\n")
      .filter((entry) => !listed.has(entry));
    assert.deepEqual(missing, []);
  });

  test("read-only, no tmpfs anywhere: the sidecar runs healthy, takes a batch on /data, and /tmp is not writable", async () => {
    const name = `egress-image-test-sidecar-${process.pid}`;
    ok([
      "run",
      "-d",
      "--name",
      name,
      "--read-only",
      "--health-interval=1s",
      "--health-retries=60",
      "-e",
      `PLATFORM_LICENSE_KEY=${testLicense().key}`,
      TAG,
    ]);
    try {
      await healthy(name);
      const body = JSON.stringify(JSON.stringify({ trace_transactions: traceTransactions(2) }));
      const post = ok([
        "exec",
        name,
        "node",
        "-e",
        `fetch("http://127.0.0.1:4318/v1/transactions", { method: "POST", headers: { "content-type": "application/json" }, body: ${body} })
           .then(async (r) => console.log(r.status, await r.text()))`,
      ]);
      assert.match(post, /^202 \{"accepted":2/);
      assert.equal(ok(["exec", name, "cat", "/data/egress-agent.health"]).trim(), "http://127.0.0.1:4318/healthz");
      assert.notEqual(docker(["exec", name, "sh", "-c", "touch /tmp/probe"]).status, 0, "/tmp is read-only");
      const state = JSON.parse(ok(["inspect", "--format", "{{json .State}}", name])) as { Running: boolean; Restarting: boolean };
      assert.equal(state.Running, true);
      assert.doesNotMatch(ok(["logs", name]), /EGRESS_HEALTH_FILE cannot be written/);
    } finally {
      docker(["rm", "-f", "-v", name]);
    }
  });

  test("read-only, no tmpfs: `a2a serve` runs the example graph on the pruned LangGraph packages and answers a message", async () => {
    const name = `egress-image-test-agent-${process.pid}`;
    const serve = [
      "a2a",
      "serve",
      "--config",
      "/app/examples/agent-server/graph.json",
      "--listen",
      "127.0.0.1:2024",
      "--data-dir",
      "/data/agent-server",
    ];
    ok(["run", "-d", "--name", name, "--read-only", "--health-interval=1s", "--health-retries=60", TAG, ...serve]);
    try {
      await healthy(name);
      const answer = ok(["exec", name, "egress-agent", "a2a", "send", "http://127.0.0.1:2024", "--assistant", "notes", "buy milk"]);
      assert.match(answer, /buy milk/);
    } finally {
      docker(["rm", "-f", "-v", name]);
    }
  });
});

/** Waits for Docker's HEALTHCHECK (`egress-agent healthcheck`) to call the container healthy. */
function healthy(name: string) {
  return waitFor(
    () => {
      const status = docker(["inspect", "--format", "{{.State.Health.Status}} {{.State.Running}}", name]).stdout.trim();
      if (status.endsWith("false")) throw new Error(`${name} stopped: ${docker(["logs", name]).stderr}`);
      return status.startsWith("healthy") ? status : undefined;
    },
    60_000,
    `${name} healthy`,
  );
}

/** name@version of every package the lockfile installs for package.json's dependencies, resolved as Node resolves them. */
function productionClosure(): Set<string> {
  const lock = JSON.parse(readFileSync(`${ROOT}package-lock.json`, "utf8")) as {
    packages: Record<
      string,
      {
        version?: string;
        dependencies?: Record<string, string>;
        optionalDependencies?: Record<string, string>;
        peerDependencies?: Record<string, string>;
        peerDependenciesMeta?: Record<string, { optional?: boolean }>;
      }
    >;
  };
  const found = new Set<string>();
  const resolve = (from: string, name: string): string | undefined => {
    for (let dir = from; ; dir = dir.replace(/\/?node_modules\/(@[^/]+\/)?[^/]+$/, "")) {
      const path = `${dir ? `${dir}/` : ""}node_modules/${name}`;
      if (lock.packages[path]) return path;
      if (!dir) return undefined;
    }
  };
  const visit = (path: string) => {
    const entry = lock.packages[path]!;
    const names = [
      ...Object.keys(entry.dependencies ?? {}),
      ...Object.keys(entry.optionalDependencies ?? {}),
      ...Object.keys(entry.peerDependencies ?? {}).filter((peer) => !entry.peerDependenciesMeta?.[peer]?.optional),
    ];
    for (const name of names) {
      const target = resolve(path, name);
      if (!target || found.has(target)) continue;
      found.add(target);
      visit(target);
    }
  };
  visit("");
  return new Set([...found].map((path) => `${path.replace(/^.*node_modules\//, "")}@${lock.packages[path]!.version}`));
}
