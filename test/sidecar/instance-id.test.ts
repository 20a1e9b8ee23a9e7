import assert from "node:assert/strict";
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import pino from "pino";
import { ensureInstanceId, INSTANCE_ID_FILE, readInstanceId } from "../../src/sidecar/storage/instance-id.ts";
import { DataDirError } from "../../src/errors.ts";
import { groupShared } from "../../src/file-modes.ts";
import { testLicense } from "../helpers/fixtures.ts";
import { agentConfig, NOWHERE, runCli, tempDir } from "../helpers/processes.ts";

const logger = pino({ level: "silent" });

test("the first start makes a random UUID v4, owner-only, no temporary file left; later starts read the same", () => {
  const dir = tempDir();
  assert.equal(readInstanceId(dir), null, "none before the first start");
  const id = ensureInstanceId(dir, logger);
  assert.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  assert.equal(readFileSync(join(dir, INSTANCE_ID_FILE), "utf8"), `${id}\n`);
  if (!groupShared()) assert.equal(statSync(join(dir, INSTANCE_ID_FILE)).mode & 0o777, 0o600);
  assert.deepEqual(readdirSync(dir), [INSTANCE_ID_FILE]);
  assert.equal(ensureInstanceId(dir, logger), id);
  assert.notEqual(ensureInstanceId(tempDir(), logger), id, "another data dir, another id");
});

test("an instance-id file that does not hold a UUID is refused, named, and left as it is", () => {
  for (const text of ["", "not-a-uuid\n", "3f0c2a8e-5b1d-4e7a-9c64-2d8b1f0e7a51 3f0c2a8e-5b1d-4e7a-9c64-2d8b1f0e7a52\n"]) {
    const dir = tempDir();
    writeFileSync(join(dir, INSTANCE_ID_FILE), text);
    assert.throws(
      () => ensureInstanceId(dir, logger),
      (err: unknown) =>
        err instanceof DataDirError && err.code === "EGRESS_ERR_INSTANCE_ID" && err.message.includes(join(dir, INSTANCE_ID_FILE)),
    );
    assert.equal(readFileSync(join(dir, INSTANCE_ID_FILE), "utf8"), text);
  }
  const dir = tempDir();
  writeFileSync(join(dir, INSTANCE_ID_FILE), "  3F0C2A8E-5B1D-4E7A-9C64-2D8B1F0E7A51\n");
  assert.equal(ensureInstanceId(dir, logger), "3f0c2a8e-5b1d-4e7a-9c64-2d8b1f0e7a51", "a restored file in capitals is the same id");
});

test("a sidecar on a data dir with a damaged instance-id refuses to start (exit 3), naming the file and the way out", async () => {
  const fixture = agentConfig(NOWHERE);
  const path = join(fixture.dataDir, INSTANCE_ID_FILE);
  mkdirSync(fixture.dataDir, { recursive: true });
  writeFileSync(path, "garbage\n");
  const started = await runCli(["start", "--config", fixture.configPath], { env: { PLATFORM_LICENSE_KEY: testLicense().key } });
  assert.equal(started.code, 3, started.stderr);
  assert.match(started.stderr, /EGRESS_ERR_INSTANCE_ID/);
  assert.ok(started.stderr.includes(`${path} does not hold an instance id`), started.stderr);
  assert.match(started.stderr, /delete it to start as a new instance/);
  assert.equal(readFileSync(path, "utf8"), "garbage\n");
});
