import assert from "node:assert/strict";
import { test } from "node:test";
import { TokenIssuer } from "../../src/beacon/token-issuer.ts";
import { ORG_ID } from "../helpers/fixtures.ts";
import { tempDir } from "../helpers/processes.ts";

const HOUR = 3_600_000;
const license = { id: "acme-prod", organizationId: ORG_ID, expiresAt: new Date("2099-01-01T00:00:00Z"), seats: 5 };

test("a token checked once is still refused once it expires, and a tampered copy never passes", async () => {
  let now = Date.parse("2026-11-01T00:00:00Z");
  const issuer = await TokenIssuer.open({ dataDir: tempDir(), signingKeyFile: "", ttlMs: HOUR, now: () => new Date(now) });
  const token = await issuer.issue(license);
  for (let i = 0; i < 3; i++) assert.equal((await issuer.verify(token)).sub, "acme-prod");

  const [header, payload, signature] = token.split(".");
  const forged = Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(payload!, "base64url").toString()), sub: "other" })).toString(
    "base64url",
  );
  await assert.rejects(issuer.verify(`${header}.${forged}.${signature}`), { statusCode: 401, message: /bearer token is invalid/ });

  now += HOUR - 1_000;
  assert.equal((await issuer.verify(token)).sub, "acme-prod");
  now += 1_000;
  await assert.rejects(issuer.verify(token), { statusCode: 401, message: /bearer token is expired/ });
});
