import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { spawnSync } from "node:child_process";
import {
  chmodSync,
  chownSync,
  closeSync,
  cpSync,
  existsSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  truncateSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import { join } from "node:path";
import { before, describe, test } from "node:test";
import Database from "better-sqlite3";
import { MARKER_FILE } from "../../src/sidecar/storage/data-dir.ts";
import { metricsRequestOfPoints, testLicense, traceTransactions } from "../helpers/fixtures.ts";
import {
  agentConfig,
  getJson,
  NOWHERE,
  postJson,
  runCli,
  startAgentProcess,
  startService,
  type AgentFixture,
} from "../helpers/processes.ts";

const license = testLicense();
const env = { PLATFORM_LICENSE_KEY: license.key };

const sha256 = (file: string) => createHash("sha256").update(readFileSync(file)).digest("hex");
/** The data dir's files and their sizes: what a refused start must leave exactly as it was (but the empty lock file it may create). */
const listing = (dir: string) =>
  readdirSync(dir)
    .filter((name) => name !== "sidecar.lock")
    .sort()
    .map((name) => `${name} ${statSync(join(dir, name)).size}`);

/** Billing records held and not delivered: pending, or being sent (the beacon is NOWHERE: a send is failing). */
const undelivered = (status: { streams: { billing: { pending: number; sending: number } } }) =>
  status.streams.billing.pending + status.streams.billing.sending;

/** A sidecar with `count` undelivered transactions in its outbox, stopped by `signal`. */
async function seeded(count: number, signal: NodeJS.Signals = "SIGTERM"): Promise<AgentFixture> {
  const fixture = agentConfig(NOWHERE, { usageReporting: false, selfTelemetry: { enabled: false } });
  const agent = await startAgentProcess(fixture, env);
  for (let posted = 0; posted < count; posted += 300) {
    assert.equal(
      (await postJson(`${agent.url}/v1/transactions`, { trace_transactions: traceTransactions(Math.min(300, count - posted)) })).status,
      202,
    );
  }
  await agent.stop(signal);
  return fixture;
}

let template: AgentFixture;
/** A copy of the seeded data dir (900 undelivered records, stopped cleanly), with its own config. */
function copyOfTemplate(): AgentFixture {
  const fixture = agentConfig(NOWHERE, { usageReporting: false, selfTelemetry: { enabled: false } });
  cpSync(template.dataDir, fixture.dataDir, { recursive: true });
  return fixture;
}

/** Starts the sidecar on a data dir it must refuse: exit 3 with `code`; nothing in the data dir changes. */
async function refusedStart(fixture: AgentFixture, code: string): Promise<string> {
  const before = listing(fixture.dataDir);
  const db = join(fixture.dataDir, "outbox.db");
  const digest = existsSync(db) ? sha256(db) : undefined;
  const result = await runCli(["start", "--config", fixture.configPath], { env });
  assert.equal(result.code, 3, `exit code 3 (data dir refused); stderr: ${result.stderr}`);
  assert.match(result.stderr, new RegExp(`^egress-agent: ${code}: `));
  assert.ok(result.stderr.includes(db), "the error names the file");
  assert.match(result.stderr, /egress-agent start --new-outbox/, "the error names the deliberate way to start afresh");
  assert.doesNotMatch(result.stdout, /sidecar listening/);
  assert.deepEqual(listing(fixture.dataDir), before, "no file created, removed or resized");
  if (digest) assert.equal(sha256(db), digest, "outbox.db left byte for byte as it was");
  return result.stderr;
}

describe("data dir checks at start: a missing, damaged or swapped outbox is refused (exit 3), never silently replaced", () => {
  before(async () => {
    template = await seeded(900);
    assert.ok(existsSync(join(template.dataDir, MARKER_FILE)), "the first start wrote the data dir marker");
  });

  test("a second start on a data dir a running sidecar holds is refused (exit 3 naming it); after a kill -9 of the first, a start works", async () => {
    const fixture = copyOfTemplate();
    const first = await startAgentProcess(fixture, env);
    try {
      const second = await runCli(["start", "--config", fixture.configPath], { env });
      assert.equal(second.code, 3, second.stderr);
      assert.match(second.stderr, /EGRESS_ERR_DATA_DIR_IN_USE: data dir .* is in use by another sidecar \(pid \d+ on host /);
      assert.ok(second.stderr.includes(`pid ${first.child.pid} `), "names the running sidecar's pid");
      assert.doesNotMatch(second.stdout, /sidecar listening/);
      const status = await getJson(`${first.url}/v1/status`);
      assert.equal(undelivered(status), 900, "the first sidecar's records untouched");
    } finally {
      await first.stop("SIGKILL");
    }
    const third = await startAgentProcess(fixture, env);
    try {
      assert.equal(undelivered(await getJson(`${third.url}/v1/status`)), 900);
    } finally {
      await third.stop();
    }
  });

  test("outbox.db deleted (a clean stop before): refused, naming the marker that shows an outbox was there", async () => {
    const fixture = copyOfTemplate();
    rmSync(join(fixture.dataDir, "outbox.db"));
    const stderr = await refusedStart(fixture, "EGRESS_ERR_OUTBOX_MISSING");
    assert.ok(stderr.includes(join(fixture.dataDir, MARKER_FILE)), "names the marker");
    assert.match(stderr, /undelivered billing records/);
  });

  test("outbox.db deleted after a kill -9, its -wal left behind: refused, the -wal untouched", async () => {
    const fixture = await seeded(300, "SIGKILL");
    const wal = join(fixture.dataDir, "outbox.db-wal");
    assert.ok(statSync(wal).size > 0, "the kill left committed transactions in the WAL");
    const walDigest = sha256(wal);
    rmSync(join(fixture.dataDir, "outbox.db"));
    await refusedStart(fixture, "EGRESS_ERR_OUTBOX_MISSING");
    assert.equal(sha256(wal), walDigest);
  });

  test("garbage bytes in outbox.db (SQLITE_NOTADB): refused as damaged, with the ways to recover", async () => {
    const fixture = copyOfTemplate();
    const db = join(fixture.dataDir, "outbox.db");
    writeFileSync(db, Buffer.alloc(statSync(db).size, "not a database, just bytes "));
    const stderr = await refusedStart(fixture, "EGRESS_ERR_OUTBOX_CORRUPT");
    assert.match(stderr, /not a database/);
    assert.match(stderr, /restore outbox\.db from a backup/);
    assert.match(stderr, /\.recover/);
  });

  test("a damaged telemetry.db (it syncs nothing: a power cut's damage) is replaced at start, with a warning; billing untouched", async () => {
    const fixture = copyOfTemplate();
    const metricsPending = async (url: string) => {
      const { metrics } = (await getJson(`${url}/v1/status`)).streams;
      return metrics.pending + metrics.sending;
    };
    const relay = async (url: string) => {
      for (let i = 0; i < 20; i++) {
        const request = metricsRequestOfPoints(50, () => [{ key: "method", value: { stringValue: "GET" } }]);
        assert.equal((await postJson(`${url}/v1/metrics`, request)).status, 200);
      }
    };
    const first = await startAgentProcess(fixture, env);
    try {
      await relay(first.url);
      assert.ok((await metricsPending(first.url)) > 0, "telemetry held while the beacon is away");
    } finally {
      await first.stop();
    }
    const db = join(fixture.dataDir, "telemetry.db");
    const size = statSync(db).size;
    assert.ok(size > 16_384, `telemetry.db holds its records (${size} bytes)`);
    // Every page but the first (the header and the schema) overwritten: what a write cut off mid-checkpoint leaves.
    const fd = openSync(db, "r+");
    writeSync(fd, Buffer.alloc(size - 16_384, "torn page "), 0, size - 16_384, 16_384);
    closeSync(fd);

    const second = await startAgentProcess(fixture, env);
    try {
      assert.match(second.output(), /telemetry\.db was damaged .*replaced by an empty one/);
      const status = await getJson(`${second.url}/v1/status`);
      assert.equal(undelivered(status), 900, "every billing record still held");
      assert.equal(await metricsPending(second.url), 0, "the damaged file's telemetry is gone");
      await relay(second.url);
      assert.ok((await metricsPending(second.url)) > 0, "telemetry is taken and held again");
    } finally {
      await second.stop();
    }
  });

  test("truncated outbox.db (cut in half, or to nothing): refused as damaged", async () => {
    const fixture = copyOfTemplate();
    const db = join(fixture.dataDir, "outbox.db");
    truncateSync(db, Math.floor(statSync(db).size / 2));
    assert.match(await refusedStart(fixture, "EGRESS_ERR_OUTBOX_CORRUPT"), /truncated: its header counts \d+ pages/);
    truncateSync(db, 0);
    assert.match(await refusedStart(fixture, "EGRESS_ERR_OUTBOX_CORRUPT"), /empty \(0 bytes\)/);
  });

  test("a damaged page (the root page of an index overwritten): refused as damaged", async () => {
    const fixture = copyOfTemplate();
    const db = join(fixture.dataDir, "outbox.db");
    const conn = new Database(db, { readonly: true });
    const { rootpage } = conn.prepare("SELECT rootpage FROM sqlite_master WHERE name = 'outbox_by_state'").get() as { rootpage: number };
    const pageSize = conn.pragma("page_size", { simple: true }) as number;
    conn.close();
    const bytes = readFileSync(db);
    bytes.fill(0xa5, (rootpage - 1) * pageSize, rootpage * pageSize);
    writeFileSync(db, bytes);
    assert.match(await refusedStart(fixture, "EGRESS_ERR_OUTBOX_CORRUPT"), /malformed|quick_check/);
  });

  test("start --new-outbox over a damaged file: moves it aside byte for byte, says so in the log, and starts a new outbox that later starts accept", async () => {
    const fixture = copyOfTemplate();
    const db = join(fixture.dataDir, "outbox.db");
    writeFileSync(db, Buffer.alloc(statSync(db).size, 0x42));
    const damaged = sha256(db);
    const agent = await startService(["start", "--config", fixture.configPath, "--new-outbox"], "sidecar listening", env);
    let setAside: string;
    try {
      const line = agent
        .output()
        .split("\n")
        .find((l) => l.includes("--new-outbox: what was in the data dir is moved aside"));
      assert.ok(line, `the log says what --new-outbox did:\n${agent.output()}`);
      const entry = JSON.parse(line) as { reason: string; setAside: string; files: string[] };
      assert.equal(entry.reason, "EGRESS_ERR_OUTBOX_CORRUPT");
      assert.ok(entry.files.includes("outbox.db") && entry.files.includes(MARKER_FILE), JSON.stringify(entry.files));
      setAside = entry.setAside;
      assert.equal(sha256(join(setAside, "outbox.db")), damaged, "the damaged file is kept, unchanged, where the log says");
      assert.equal((await postJson(`${agent.url}/v1/transactions`, { trace_transactions: traceTransactions(3) })).status, 202);
    } finally {
      assert.equal(await agent.stop(), 0);
    }
    // The new outbox is now the one this data dir holds: a plain start takes it, with the new records only.
    const again = await startAgentProcess(fixture, env);
    try {
      assert.equal(undelivered(await getJson(`${again.url}/v1/status`)), 3);
    } finally {
      await again.stop();
    }
  });

  test("start --new-outbox over a sound outbox: ignored with a warning, every record kept", async () => {
    const fixture = copyOfTemplate();
    const agent = await startService(["start", "--config", fixture.configPath, "--new-outbox"], "sidecar listening", env);
    try {
      assert.match(agent.output(), /--new-outbox ignored: the outbox is present and sound/);
      const billing = (await getJson(`${agent.url}/v1/status`)).streams.billing;
      assert.equal(billing.pending + billing.sending, 900);
    } finally {
      await agent.stop();
    }
    assert.deepEqual(
      readdirSync(fixture.dataDir).filter((name) => name.startsWith("set-aside")),
      [],
      "nothing moved aside",
    );
  });
});

/** `start` run to its end as uid and gid 65534 (nobody), as a pod's runAsUser would; the config made readable to it. */
function startAsNobody(fixture: AgentFixture) {
  chmodSync(fixture.dir, 0o755);
  chmodSync(fixture.configPath, 0o644);
  const cli = new URL("../../src/cli.ts", import.meta.url).pathname;
  return spawnSync(
    "setpriv",
    ["--reuid=65534", "--regid=65534", "--clear-groups", "--", process.execPath, cli, "start", "--config", fixture.configPath],
    {
      env: { ...process.env, ...env, HOME: "/tmp" },
      encoding: "utf8",
      timeout: 30_000,
    },
  );
}

test("a data dir the process cannot write (a volume without fsGroup): exit 3 naming the path, the UID, the owner and the fix", async (t) => {
  if (process.getuid?.() !== 0) return t.skip("needs root, to run the sidecar as another user");
  const fixture = agentConfig("http://127.0.0.1:9", { usageReporting: false, selfTelemetry: { enabled: false } });
  // As a volume mounted without fsGroup: the directory is root's, 0755; the sidecar runs as another user.
  mkdirSync(fixture.dataDir, { mode: 0o755 });
  chmodSync(fixture.dataDir, 0o755);
  const result = startAsNobody(fixture);
  assert.equal(result.status, 3, result.stderr);
  const message = result.stderr;
  assert.match(message, /EGRESS_ERR_DATA_DIR_NOT_WRITABLE/);
  assert.ok(message.includes(`the data dir ${fixture.dataDir} is not writable by this process (uid 65534, gid 65534`), message);
  assert.match(message, /is owned by uid 0, gid 0, mode 755/);
  assert.match(message, /fsGroup: 10001/);
  assert.doesNotMatch(message, /unable to open database file/);
  assert.deepEqual(readdirSync(fixture.dataDir), [], "nothing written");
});

test("random UIDs in group 0 (OpenShift): /data group-writable works, and a later start under another UID of the group reads the outbox", async (t) => {
  if (process.getuid?.() !== 0) return t.skip("needs root, to run the sidecar as other users");
  const fixture = agentConfig("http://127.0.0.1:9", { usageReporting: false, selfTelemetry: { enabled: false } });
  // As the image makes /data: root's, group 0, 0770.
  mkdirSync(fixture.dataDir);
  chownSync(fixture.dataDir, 0, 0);
  chmodSync(fixture.dataDir, 0o770);
  chmodSync(fixture.dir, 0o755);
  chmodSync(fixture.configPath, 0o644);
  const as = (uid: number) => ["setpriv", `--reuid=${uid}`, "--regid=0", "--clear-groups", "--"];
  const first = await startService(["start", "--config", fixture.configPath], "sidecar listening", { ...env, HOME: "/tmp" }, as(123456));
  const batch = traceTransactions(3);
  assert.equal((await postJson(`${first.url}/v1/transactions`, { trace_transactions: batch })).status, 202);
  assert.equal(await first.stop(), 0);
  const outbox = statSync(join(fixture.dataDir, "outbox.db"));
  assert.equal(outbox.uid, 123456);
  assert.equal(outbox.mode & 0o077, 0o060, "group 0 may read and write it, others nothing");
  const second = await startService(["start", "--config", fixture.configPath], "sidecar listening", { ...env, HOME: "/tmp" }, as(234567));
  try {
    assert.equal(undelivered(await getJson(`${second.url}/v1/status`)), 3, "the records the first UID accepted");
  } finally {
    await second.stop();
  }
});

test("outbox files another user wrote (owner-only): exit 3 naming the file, its owner and the fix", async (t) => {
  if (process.getuid?.() !== 0) return t.skip("needs root, to run the sidecar as another user");
  const fixture = copyOfTemplate();
  chownSync(fixture.dataDir, 65534, 65534);
  const result = startAsNobody(fixture);
  assert.equal(result.status, 3, result.stderr);
  assert.match(
    result.stderr,
    /EGRESS_ERR_DATA_DIR_NOT_WRITABLE: \/\S+ is not readable and writable by this process \(uid 65534, gid 65534/,
  );
  assert.match(result.stderr, /it is owned by uid 0, gid 0, mode 600\. Run the sidecar as the user that wrote it/);
  assert.doesNotMatch(result.stderr, /unable to open database file/);
});
