import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join, posix } from "node:path";
import { test } from "node:test";
import { parse } from "yaml";

const ROOT = new URL("../../", import.meta.url).pathname;

interface Service {
  command?: string[];
  environment?: Record<string, string>;
  volumes?: (string | { type: string; source: string; target: string; read_only?: boolean })[];
  read_only?: boolean;
  tmpfs?: string[];
  working_dir?: string;
  healthcheck?: { test?: string[] };
  network_mode?: string;
  profiles?: string[];
}
interface Compose {
  services: Record<string, Service>;
  volumes?: Record<string, unknown>;
}

const compose = () => parse(readFileSync(join(ROOT, "compose.yaml"), "utf8")) as Compose;

function mounts(service: Service) {
  return (service.volumes ?? []).map((spec) => {
    if (typeof spec === "object")
      return { source: spec.source, target: spec.target, readOnly: spec.read_only === true, bind: spec.type === "bind" };
    const [source = "", target = "", mode] = spec.split(":");
    return { source, target, readOnly: mode === "ro", bind: source.startsWith(".") || source.startsWith("/") };
  });
}

/** The service's --config file (mounted from the repository), and where its dataDir lands in the container. */
function configAndDataDir(service: Service) {
  const command = service.command ?? [];
  const configPath = command[command.indexOf("--config") + 1];
  assert.ok(command.includes("--config") && configPath, "the command names its --config");
  const mount = mounts(service).find((m) => m.target === configPath);
  assert.ok(mount, `${configPath} is mounted`);
  assert.ok(mount.bind && mount.readOnly, `${configPath}: a read-only bind mount`);
  assert.ok(existsSync(join(ROOT, mount.source)), `${mount.source} exists in the repository`);
  const config = parse(readFileSync(join(ROOT, mount.source), "utf8")) as { dataDir?: string };
  return { dataDir: posix.resolve(service.working_dir ?? "/", config.dataDir ?? "./data") };
}

test("compose.yaml: the sidecar runs read-only with its outbox on a named volume at the config's dataDir", () => {
  const file = compose();
  const sidecar = file.services["egress-agent"];
  assert.ok(sidecar, "service egress-agent");
  assert.equal(sidecar.command?.[0], "start");
  assert.equal(sidecar.read_only, true);
  assert.ok(
    (sidecar.tmpfs ?? []).some((t) => t.split(":")[0] === "/tmp"),
    "a tmpfs on /tmp (HOME and TMPDIR)",
  );
  const data = mounts(sidecar).find((m) => m.target === "/data");
  assert.ok(data && !data.bind, "a named volume on /data");
  assert.ok(file.volumes && data.source in file.volumes, `volume ${data.source} is declared`);
  assert.equal(configAndDataDir(sidecar).dataDir, "/data", "the mounted config's dataDir is the volume (working_dir + dataDir)");
  // The image's own check: it probes the URL the service announced, whatever its --listen. (PostgreSQL has its own.)
  for (const [name, service] of Object.entries(file.services)) {
    if (service.healthcheck && name !== "postgres")
      assert.deepEqual(service.healthcheck.test, ["CMD", "egress-agent", "healthcheck"], name);
  }
  assert.ok(sidecar.healthcheck, "the sidecar has a healthcheck");
});

test("compose.yaml: the placeholder instance shares the sidecar's network namespace (its API is loopback-only)", () => {
  const { services } = compose();
  const instance = services.instance;
  assert.ok(instance, "an instance service");
  assert.equal(instance.network_mode, "service:egress-agent");
  assert.match(
    readFileSync(join(ROOT, "compose.yaml"), "utf8"),
    /127\.0\.0\.1:4318\/v1\/transactions|EGRESS_URL: http:\/\/127\.0\.0\.1:4318/,
  );
});

test("compose.yaml: the optional beacon keeps its data on its own volume and listens beyond loopback", () => {
  const file = compose();
  const beacon = file.services.beacon;
  assert.ok(beacon, "service beacon");
  assert.ok(beacon.profiles && beacon.profiles.length > 0, "behind a profile: not started by a plain `up`");
  assert.equal(beacon.read_only, true);
  const volume = mounts(beacon).find((m) => !m.bind);
  assert.ok(volume && file.volumes && volume.source in file.volumes);
  const { dataDir } = configAndDataDir(beacon);
  assert.ok(dataDir === volume.target || dataDir.startsWith(`${volume.target}/`), `${dataDir} is on the ${volume.target} volume`);
  const command = beacon.command ?? [];
  assert.match(command[command.indexOf("--listen") + 1] ?? "", /^0\.0\.0\.0:/, "the sidecar reaches it as beacon:PORT");
});

test("compose.yaml: the optional agent server shares the sidecar's network, reports to it, and keeps its threads on a volume", () => {
  const file = compose();
  const server = file.services["agent-server"]!;
  assert.deepEqual(server.profiles, ["agent-server"]);
  assert.equal(server.network_mode, "service:egress-agent");
  const command = server.command ?? [];
  const option = (name: string) => command[command.indexOf(name) + 1];
  assert.equal(option("--sidecar-url"), "http://127.0.0.1:4318");
  // The image copies examples/ to /app/examples.
  const graphJson = option("--config")!;
  assert.ok(graphJson.startsWith("/app/") && existsSync(join(ROOT, graphJson.slice("/app/".length))), `${graphJson} is in the image`);
  assert.match(readFileSync(join(ROOT, "Dockerfile"), "utf8"), /^COPY examples \.\/examples$/m);
  const data = mounts(server).find((m) => option("--data-dir")!.startsWith(m.target));
  assert.ok(data && !data.bind && file.volumes && data.source in file.volumes, "the data dir is on a named volume");
  assert.equal(server.read_only, true);
});

test("compose.yaml, profile scale: beacon replicas share one PostgreSQL database and one signing key (a secret)", () => {
  const file = parse(readFileSync(join(ROOT, "compose.yaml"), "utf8")) as {
    services: Record<
      string,
      Service & {
        environment?: Record<string, string>;
        deploy?: { replicas?: number };
        secrets?: string[];
        depends_on?: Record<string, unknown>;
      }
    >;
    secrets?: Record<string, { file?: string }>;
  };
  const postgres = file.services.postgres;
  const beacon = file.services["beacon-scale"];
  assert.ok(postgres && beacon, "services postgres and beacon-scale");
  assert.deepEqual([postgres.profiles, beacon.profiles], [["scale"], ["scale"]]);
  assert.ok((beacon.deploy?.replicas ?? 1) >= 2, "several replicas");
  assert.match(
    beacon.environment?.BEACON_DATABASE_URL ?? "",
    /^postgres:\/\/[^@]+@postgres:5432\//,
    "the database is the postgres service",
  );
  assert.ok(beacon.depends_on && "postgres" in beacon.depends_on);
  const keyFile = beacon.environment?.BEACON_SIGNING_KEY_FILE;
  const bound = (beacon.volumes ?? []).find((v) => typeof v === "object" && v.target === keyFile) as
    | { type: string; source: string; read_only: boolean; bind?: { create_host_path?: boolean } }
    | undefined;
  assert.ok(bound, "the signing key file is bound where BEACON_SIGNING_KEY_FILE says");
  assert.deepEqual(
    [bound.type, bound.read_only, bound.bind?.create_host_path],
    ["bind", true, false],
    "read-only; a missing key fails `up`",
  );
  // compose checks every top-level secret's file on every command, warning on the default path when it is missing.
  assert.equal(file.secrets, undefined, "no top-level secret file");
  assert.equal(configAndDataDir(beacon).dataDir, "/data/beacon");
});

test("compose.yaml, profile scale: agent server replicas keep conversations in the same PostgreSQL, in a schema of their own", () => {
  const file = parse(readFileSync(join(ROOT, "compose.yaml"), "utf8")) as {
    services: Record<string, Service & { environment?: Record<string, string>; deploy?: { replicas?: number } }>;
  };
  const server = file.services["agent-server-scale"];
  assert.ok(server, "service agent-server-scale");
  assert.deepEqual(server.profiles, ["scale"]);
  assert.ok((server.deploy?.replicas ?? 1) >= 2, "several replicas");
  assert.match(server.environment?.DATABASE_URI ?? "", /^postgres:\/\/[^@]+@postgres:5432\//);
  assert.match(server.environment?.DATABASE_SCHEMA ?? "", /^[a-z_][a-z0-9_]*$/);
  assert.notEqual(server.environment?.DATABASE_SCHEMA, "public", "apart from the beacon's tables");
  const command = server.command ?? [];
  assert.match(command[command.indexOf("--listen") + 1] ?? "", /^0\.0\.0\.0:/, "reachable by the other services");
  assert.equal(server.read_only, true);
});

/** `${NAME:-default}` and `${NAME:?message}` of a compose value, as compose fills them from `shell`. */
function interpolate(value: string, shell: Record<string, string>): string {
  return value.replace(/\$\{(\w+)(?::([-?])([^}]*))?\}/g, (_, name: string, kind?: string, rest?: string) => {
    if (shell[name]) return shell[name];
    assert.notEqual(kind, "?", `${name} is required: ${rest}`);
    return kind === "-" ? (rest ?? "") : "";
  });
}

test("compose.yaml: each try-out's command line gives the sidecar a config `egress-agent validate` accepts", () => {
  const text = readFileSync(join(ROOT, "compose.yaml"), "utf8");
  const lines = [...text.matchAll(/#\s+((?:\w+=\S+\s+)+)\\\n\s*#\s+docker compose --profile (\S+) up/g)];
  assert.deepEqual(lines.map((line) => line[2]).sort(), ["local-beacon", "scale"]);
  const sidecar = compose().services["egress-agent"]!;
  // Only compose's env reaches the sidecar's variables: none inherited from whoever runs the tests.
  const inherited = Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !/^(EGRESS_|BEACON_|PLATFORM_|PHONE_HOME_|HTTPS?_PROXY|NO_PROXY)/i.test(name)),
  );
  const validate = (shell: Record<string, string>) => {
    const env = Object.fromEntries(Object.entries(sidecar.environment ?? {}).map(([name, value]) => [name, interpolate(value, shell)]));
    return spawnSync(process.execPath, [join(ROOT, "src/cli.ts"), "validate", "--config", "config/egress.yaml"], {
      cwd: ROOT,
      env: { ...inherited, ...env },
      encoding: "utf8",
    });
  };
  for (const [, assignments, profile] of lines) {
    const shell = Object.fromEntries(
      assignments!
        .trim()
        .split(/\s+/)
        .map((pair) => pair.split("=", 2) as [string, string]),
    );
    assert.match(shell.BEACON_URL ?? "", /^http:\/\/beacon/, profile);
    const result = validate(shell);
    assert.equal(result.status, 0, `${profile}: validate exit ${result.status}\n${result.stderr}`);
  }
  // Without the explicit switch, the same plain-http beacon is refused, naming the key.
  const refused = validate({ BEACON_URL: "http://beacon:8080", PLATFORM_LICENSE_KEY: "lic-demo-0000-0000-0000-000000000000" });
  assert.equal(refused.status, 2, refused.stderr);
  assert.match(refused.stderr, /beaconUrl: http:\/\/ to beacon:8080 would send the license key in clear/);
});

test("compose.yaml: nothing for compose to warn about on the default path (a fresh clone, only PLATFORM_LICENSE_KEY set)", () => {
  const text = readFileSync(join(ROOT, "compose.yaml"), "utf8");
  const file = parse(text) as Compose & {
    version?: unknown;
    secrets?: Record<string, { file?: string }>;
    configs?: Record<string, { file?: string }>;
  };
  assert.equal(file.version, undefined, "`version` is obsolete: compose warns about it");
  // compose reads every top-level secret and config file on every command, active profile or not.
  for (const [name, entry] of Object.entries({ ...file.secrets, ...file.configs })) {
    if (entry.file) assert.ok(existsSync(join(ROOT, entry.file)), `${name}: ${entry.file} is not in a fresh clone`);
  }
  // An unset variable without a default is a warning ("defaulting to a blank string").
  const bare = [...text.replace(/^\s*#.*$/gm, "").matchAll(/\$\{(\w+)\}|\$(\w+)/g)].map((m) => m[0]);
  assert.deepEqual(bare, [], "every variable has a default (:-) or a required message (:?)");
});
