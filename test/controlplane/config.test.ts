import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { stringify } from "yaml";
import { ApiKeys, hashApiKey } from "../../src/http/api-keys.ts";
import { loadControlPlaneConfig } from "../../src/controlplane/config.ts";
import { ConfigError } from "../../src/errors.ts";
import type { HttpRequest } from "../../src/http/exchange.ts";
import { tempDir } from "../helpers/processes.ts";

function load(file: Record<string, unknown>, env: NodeJS.ProcessEnv = {}) {
  const path = join(tempDir(), "controlplane.yaml");
  writeFileSync(path, stringify(file));
  return loadControlPlaneConfig(path, env);
}

const problems = (fn: () => unknown) => {
  try {
    fn();
  } catch (err) {
    if (err instanceof ConfigError) return err.problems.join("\n");
    throw err;
  }
  return assert.fail("no ConfigError");
};

test("PLATFORM_API_KEY from the environment gets the rules of a key in the file: a bad one is a config error at start", () => {
  const good = "a-key-of-24-characters!!";
  assert.deepEqual(load({}, { PLATFORM_API_KEY: good }).apiKeys, [good]);
  assert.deepEqual(load({}, { PLATFORM_API_KEY: hashApiKey(good) }).apiKeys, [hashApiKey(good)]);
  assert.match(
    problems(() => load({}, { PLATFORM_API_KEY: "ab" })),
    /^env PLATFORM_API_KEY: must be a key of at least 16 characters/,
  );
  // A malformed digest, which made every request a 500: refused, in the env and in the file alike.
  const malformed = `sha256:${"ab".repeat(30)}`;
  assert.match(
    problems(() => load({}, { PLATFORM_API_KEY: malformed })),
    /^env PLATFORM_API_KEY: /,
  );
  assert.match(
    problems(() => load({ apiKeys: [malformed] })),
    /^apiKeys\[0\]: /m,
  );
  assert.match(
    problems(() => load({ apiKeys: ["sha256:XYZ"] })),
    /^apiKeys\[0\]: /m,
  );
});

test("the X-Api-Key check answers 401 for any header, never a 500", () => {
  const keys = new ApiKeys([hashApiKey("a-key-of-24-characters!!"), "another-key-16-chars"]);
  const request = (key: string | undefined) => ({ headers: key === undefined ? {} : { "x-api-key": key } }) as unknown as HttpRequest;
  assert.doesNotThrow(() => keys.check(request("a-key-of-24-characters!!")));
  assert.doesNotThrow(() => keys.check(request("another-key-16-chars")));
  for (const bad of [undefined, "", "x", "sha256:", "a".repeat(10_000), "another-key-16-chars "]) {
    assert.throws(() => keys.check(request(bad)), { statusCode: 401 }, JSON.stringify(bad?.slice(0, 20)));
  }
});

test("agentServer.runAsUidBase needs a control plane running as root: otherwise exit 2 naming the key", async (t) => {
  if (process.getuid?.() !== 0) return t.skip("needs root, to run the control plane as another user");
  const { spawnSync } = await import("node:child_process");
  const { chmodSync } = await import("node:fs");
  const dir = tempDir();
  chmodSync(dir, 0o777);
  const path = join(dir, "controlplane.yaml");
  writeFileSync(
    path,
    stringify({
      listen: "127.0.0.1:0",
      dataDir: join(dir, "data"),
      apiKeys: ["a-key-of-24-characters!!"],
      agentServer: { runAsUidBase: 300000 },
    }),
  );
  chmodSync(path, 0o644);
  const cli = new URL("../../src/cli.ts", import.meta.url).pathname;
  const result = spawnSync(
    "setpriv",
    ["--reuid=65534", "--regid=65534", "--clear-groups", "--", process.execPath, cli, "controlplane", "serve", "--config", path],
    {
      env: { ...process.env, HOME: "/tmp" },
      encoding: "utf8",
      timeout: 30_000,
    },
  );
  assert.equal(result.status, 2, result.stderr);
  assert.match(result.stderr, /agentServer\.runAsUidBase: the control plane must run as root/);
});
