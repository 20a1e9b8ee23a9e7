import assert from "node:assert/strict";
import { test } from "node:test";
import { Authenticator } from "../../src/beacon/authenticate.ts";
import { LicenseRegistry } from "../../src/beacon/licenses.ts";
import { TokenIssuer } from "../../src/beacon/token-issuer.ts";
import type { HttpRequest } from "../../src/http/exchange.ts";
import { ORG_ID } from "../helpers/fixtures.ts";
import { tempDir } from "../helpers/processes.ts";

const HOUR = 3_600_000;
const license = { id: "acme-prod", organizationId: ORG_ID, expiresAt: new Date("2099-01-01T00:00:00Z"), seats: 5 };

test("a token checked once is still refused once it expires, and a tampered copy never passes", async () => {
  let now = Date.parse("2026-11-01T00:00:00Z");
  const issuer = await TokenIssuer.open({ dataDir: tempDir(), signingKeyFile: "", ttlMs: HOUR, now: () => now });
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

test("a token had with a key since replaced is refused, however soon after the replacement it was issued (a replica not yet told)", async () => {
  let now = Date.parse("2026-11-01T00:00:00Z");
  const clock = () => now;
  const issuer = await TokenIssuer.open({ dataDir: tempDir(), signingKeyFile: "", ttlMs: HOUR, now: clock });
  const record = (keySha256: string, keyRotatedAt: string | null) => ({
    id: "acme-prod",
    organizationId: ORG_ID,
    expiresAt: "2099-01-01T00:00:00.000Z",
    seats: 5,
    offlineAllowed: false,
    keySha256,
    revokedAt: null,
    keyRotatedAt,
    createdAt: "2026-01-01T00:00:00.000Z",
    updatedAt: "2026-01-01T00:00:00.000Z",
    lastVerifiedAt: null,
  });
  const before = new LicenseRegistry([record("a".repeat(64), null)]);
  const bearer = (token: string) => ({ headers: { authorization: `Bearer ${token}` } }) as unknown as HttpRequest;
  // A replica still holding the old key answers verify a second after the rotation, elsewhere, to the old key.
  const rotatedAt = new Date(now).toISOString();
  now += 1_000;
  const stale = await issuer.issue(before.findById("acme-prod")!);
  const after = new LicenseRegistry([record("b".repeat(64), rotatedAt)]);
  const auth = new Authenticator(after, issuer, clock);
  await assert.rejects(auth.bearer(bearer(stale)), { code: "EGRESS_ERR_TOKEN_INVALID" });
  const fresh = await issuer.issue(after.findById("acme-prod")!);
  assert.equal((await auth.bearer(bearer(fresh)))?.id, "acme-prod", "a token had with the new key passes");
});
