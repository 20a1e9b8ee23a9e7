import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { testLicense } from "./fixtures.ts";
import { beaconConfig, runCli } from "./processes.ts";

/** The vendor issues an offline license and hands over its public key: both through the beacon CLI. */
export async function offlineLicenseFiles(dir: string, license = testLicense()) {
  const beacon = beaconConfig([license], {}, dir);
  const licenseFile = join(dir, "offline.jwt");
  const issued = await runCli([
    "beacon",
    "issue-offline-license",
    "--config",
    beacon.configPath,
    "--license",
    license.id,
    "--output",
    licenseFile,
  ]);
  assert.equal(issued.code, 0, issued.stderr);
  const key = await runCli(["beacon", "public-key", "--config", beacon.configPath]);
  assert.equal(key.code, 0, key.stderr);
  const publicKeyFile = join(dir, "vendor.pem");
  writeFileSync(publicKeyFile, key.stdout);
  return { licenseFile, publicKeyFile, license };
}
