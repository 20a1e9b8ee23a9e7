import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { join, posix } from "node:path";
import { test } from "node:test";

const ROOT = new URL("../../", import.meta.url).pathname;

interface Instruction {
  cmd: string;
  args: string;
}
interface Stage {
  image: string;
  name: string | undefined;
  instructions: Instruction[];
}

/** The Dockerfile as stages of instructions: comments dropped, continuation lines joined. */
function stages(): Stage[] {
  const text = readFileSync(join(ROOT, "Dockerfile"), "utf8")
    .split("\n")
    .filter((line) => !/^\s*#/.test(line))
    .join("\n")
    .replace(/\\\n/g, " ");
  const result: Stage[] = [];
  for (const line of text.split("\n")) {
    const match = /^\s*([A-Za-z]+)\s+(.*)$/.exec(line);
    if (!match) continue;
    const cmd = match[1]!.toUpperCase();
    const args = match[2]!.trim();
    if (cmd === "FROM") {
      const words = args.split(/\s+/).filter((word) => !word.startsWith("--"));
      result.push({ image: words[0]!, name: /^as$/i.test(words[1] ?? "") ? words[2] : undefined, instructions: [] });
    } else if (result.length > 0) result.at(-1)!.instructions.push({ cmd, args });
  }
  return result;
}

const final = () => stages().at(-1)!;
const all = (stage: Stage, cmd: string) => stage.instructions.filter((i) => i.cmd === cmd).map((i) => i.args);
const execForm = (args: string) => JSON.parse(args) as string[];

/** COPY instructions with their sources and destination resolved against the stage's WORKDIR at that point. */
function copies(stage: Stage) {
  let workdir = "/";
  const result: { from: string | undefined; sources: string[]; dest: string }[] = [];
  for (const { cmd, args } of stage.instructions) {
    if (cmd === "WORKDIR") workdir = posix.resolve(workdir, args);
    if (cmd !== "COPY" && cmd !== "ADD") continue;
    const words = args.split(/\s+/);
    const from = words.find((w) => w.startsWith("--from="))?.slice("--from=".length);
    const paths = words.filter((w) => !w.startsWith("--"));
    const dest = posix.resolve(workdir, paths.at(-1)!);
    result.push({ from, sources: paths.slice(0, -1), dest });
  }
  return result;
}

const stageNamed = (name: string) => stages().find((s) => s.name === name)!;

test("the final stage is Debian slim with node:24-slim's Node binary alone (no npm, npx), runs as a numeric non-root user, and starts egress-agent", () => {
  const stage = final();
  assert.match(stage.image, /^debian:[a-z]+-slim$/, stage.image);
  const nodeStages = new Set(
    stages()
      .filter((s) => s.image === "node:24-slim")
      .map((s) => s.name),
  );
  const fromNode = copies(stage).filter(
    (c) => c.from && nodeStages.has(c.from) && !c.sources.some((s) => /^\/(egress-agent|app)\//.test(s)),
  );
  assert.deepEqual(fromNode, [{ from: "build", sources: ["/usr/local/bin/node"], dest: "/usr/local/bin/node" }]);
  assert.doesNotMatch(all(stage, "RUN").join(" && "), /\bnp[mx]\b/, "nothing runs npm in the final stage");
  const users = all(stage, "USER");
  assert.ok(users.length > 0, "a USER in the final stage");
  const uid = users.at(-1)!.split(":")[0]!;
  assert.match(uid, /^\d+$/, "numeric UID (runAsNonRoot can verify it)");
  assert.notEqual(Number(uid), 0);
  assert.deepEqual(execForm(all(stage, "ENTRYPOINT").at(-1)!).slice(0, 1), ["egress-agent"]);
  assert.equal(execForm(all(stage, "CMD").at(-1)!)[0], "start", "the default command runs the sidecar");
});

test("OCI labels: source, version, revision and created from build args, licenses package.json's; the build checks VERSION against package.json", () => {
  const stage = final();
  const labels = Object.fromEntries(
    [
      ...all(stage, "LABEL")
        .join(" ")
        .matchAll(/(org\.opencontainers\.image\.[a-z]+)="([^"]*)"/g),
    ].map((m) => [m[1]!, m[2]!]),
  );
  const args = all(stage, "ARG").map((arg) => arg.split("=")[0]);
  for (const [label, arg] of [
    ["version", "VERSION"],
    ["revision", "REVISION"],
    ["created", "CREATED"],
    ["source", "SOURCE"],
  ] as const) {
    assert.equal(labels[`org.opencontainers.image.${label}`], `\${${arg}}`, label);
    assert.ok(args.includes(arg), `ARG ${arg} in the final stage`);
  }
  const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { license: string };
  assert.equal(labels["org.opencontainers.image.licenses"], pkg.license);
  assert.match(all(stageNamed("build"), "RUN").join(" "), /test "\$VERSION" = "\$\(node -p 'require\("\.\/package\.json"\)\.version'\)"/);
  // make image passes them all, from package.json and git.
  const make = readFileSync(join(ROOT, "Makefile"), "utf8");
  for (const arg of ["VERSION", "REVISION", "CREATED", "SOURCE"]) assert.match(make, new RegExp(`--build-arg ${arg}=`), arg);
});

test("the image's HEALTHCHECK probes whatever service it runs (`egress-agent healthcheck`), VOLUME /data, EXPOSE 4318", () => {
  const stage = final();
  const healthcheck = all(stage, "HEALTHCHECK").at(-1) ?? "";
  assert.doesNotMatch(healthcheck, /^NONE/);
  // Not a fixed port: `beacon` and `a2a serve` from this image listen elsewhere (healthcheck.e2e tests the command).
  assert.deepEqual(execForm(healthcheck.replace(/^.*?CMD\s+/, "")), ["egress-agent", "healthcheck"]);
  // On the /data volume: writable even under --read-only with no tmpfs on /tmp.
  assert.match(all(stage, "ENV").join(" "), /EGRESS_HEALTH_FILE=\/data\/\S+/, "announced on the data volume");
  assert.ok(
    all(stage, "VOLUME").some((args) => /(^|["\s[])\/data(["\s\]]|$)/.test(args)),
    "VOLUME /data",
  );
  assert.ok(all(stage, "EXPOSE").some((args) => args.split(/\s+/).includes("4318")));
});

test("no `# syntax=` line (BuildKit would fetch a frontend from a registry); /data is writable by group 0 (random UIDs)", () => {
  assert.doesNotMatch(readFileSync(join(ROOT, "Dockerfile"), "utf8"), /^#\s*syntax=/m);
  const runs = all(final(), "RUN").join(" && ");
  assert.match(runs, /chown 10001:0 \/data/);
  assert.match(runs, /chmod 0?770 \/data/);
});

test("the runtime packages: production only, those the bundle leaves out, pruned; the final stage takes node_modules from there alone", () => {
  const deps = stageNamed("deps");
  const installs = all(deps, "RUN").filter((run) => /\bnpm\s+(ci|install|i)\b/.test(run));
  assert.ok(installs.length > 0, "npm install in the deps stage");
  for (const run of installs) assert.match(run, /--omit=dev|--production/, run);
  // Only what the bundle leaves out is installed: its package.json is the one scripts/build.ts writes.
  const manifest = copies(deps).find((c) => c.dest.endsWith("/package.json"));
  assert.deepEqual(manifest?.sources, ["/egress-agent/dist/runtime-package.json"]);
  const prune = copies(deps).find((c) => c.sources.includes("scripts/prune-runtime.ts"));
  assert.ok(prune, "COPY scripts/prune-runtime.ts");
  assert.ok(
    all(deps, "RUN").some((run) => run.includes(`node ${prune.dest}/prune-runtime.ts /app`)),
    "the install is pruned",
  );
  const modules = copies(final()).filter((c) => c.sources.some((source) => source.includes("node_modules")));
  assert.deepEqual(modules, [{ from: "deps", sources: ["/app/node_modules"], dest: "/app/node_modules" }]);
});

test("the SBOM: npm sbom (CycloneDX) of the production dependencies, at /app/sbom.cdx.json", () => {
  const runs = all(stageNamed("build"), "RUN").join(" && ").replace(/\s+/g, " ");
  assert.match(
    runs,
    /npm pkg delete devDependencies && npm prune --omit=dev .* && npm sbom --sbom-format=cyclonedx --sbom-type=application > sbom\.cdx\.json/,
  );
  assert.doesNotMatch(runs, /npm sbom[^&]*--omit/, "npm sbom --omit=dev leaves out production packages a dev one shares");
  const sbom = copies(final()).find((c) => c.dest === "/app/sbom.cdx.json");
  assert.deepEqual(sbom, { from: "build", sources: ["/egress-agent/sbom.cdx.json"], dest: "/app/sbom.cdx.json" });
});

test("`egress-agent` resolves in the image: the PATH link, bin/ and dist/ where bin/egress-agent.js looks for them", () => {
  const [build] = stages();
  const stage = final();
  const runtimeCopies = copies(stage);
  const bin = runtimeCopies.find((c) => c.sources.includes("bin") || c.sources.includes("bin/"));
  assert.ok(bin, "COPY bin");
  const appDir = posix.dirname(bin.dest);
  const link = all(stage, "RUN")
    .join(" && ")
    .match(/ln -s\S*\s+(\S+)\s+(\S+)/);
  assert.ok(link, "a symlink puts egress-agent on PATH");
  assert.equal(link[1], posix.join(bin.dest, "egress-agent.js"));
  assert.match(link[2]!, /^\/usr\/(local\/)?bin\/egress-agent$/);
  // bin/egress-agent.js imports ../dist/cli.js when it exists (else ../src/cli.ts, which the image does not have).
  assert.match(readFileSync(join(ROOT, "bin/egress-agent.js"), "utf8"), /\.\.\/dist\/cli\.js/);
  const dist = runtimeCopies.find((c) => c.from && c.dest === posix.join(appDir, "dist"));
  assert.ok(dist, `COPY --from=... ${posix.join(appDir, "dist")}`);
  // scripts/build.ts (npm run build) writes the bundle to dist/ beside it.
  assert.match(readFileSync(join(ROOT, "scripts/build.ts"), "utf8"), /new URL\("\.\.\/dist", import\.meta\.url\)/);
  let buildWorkdir = "/";
  for (const { cmd, args } of build!.instructions) if (cmd === "WORKDIR") buildWorkdir = posix.resolve(buildWorkdir, args);
  assert.equal(dist.from, build!.name);
  assert.deepEqual(dist.sources, [posix.join(buildWorkdir, "dist")]);
  assert.ok(
    all(build!, "RUN").some((run) => /npm run build/.test(run)),
    "the build stage runs npm run build",
  );
});

test("the image's EGRESS_CONFIG is a file the image contains", () => {
  const stage = final();
  const env = all(stage, "ENV").join(" ");
  const config = /EGRESS_CONFIG=(\S+)/.exec(env)?.[1];
  assert.ok(config, "ENV EGRESS_CONFIG");
  assert.ok(
    copies(stage).some((c) => c.dest === config),
    `a COPY to ${config}`,
  );
});

test("every path the Dockerfile copies from the context exists and is not excluded by .dockerignore", () => {
  const ignore = readFileSync(join(ROOT, ".dockerignore"), "utf8")
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line && !line.startsWith("#"));
  assert.equal(ignore[0], "*", ".dockerignore is an allowlist");
  const allowed = ignore.filter((line) => line.startsWith("!")).map((line) => line.slice(1).replace(/\/$/, ""));
  const problems: string[] = [];
  for (const stage of stages()) {
    for (const copy of copies(stage).filter((c) => !c.from)) {
      for (const source of copy.sources) {
        const path = source.replace(/^\.\//, "").replace(/\/$/, "");
        if (!existsSync(join(ROOT, path))) problems.push(`${source}: not in the repository`);
        if (!allowed.some((entry) => path === entry || path.startsWith(`${entry}/`))) problems.push(`${source}: excluded by .dockerignore`);
      }
    }
  }
  assert.deepEqual(problems, []);
});
