import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { createServer } from "node:http";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { stringify } from "yaml";
import { startService, tempDir, type ServiceProcess } from "../helpers/processes.ts";

// The setup callback through the real control plane process, as a provider's browser redirect reaches it, with a
// provider stand-in on loopback for the token exchange.

const API_KEY = `cp-auth-key-${randomUUID()}`;
const CLIENT_SECRET = `client-secret-${randomUUID()}`;
const ACCESS_TOKEN = `gho_${randomUUID()}`;
const BROWSER = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8";
const exchanges: URLSearchParams[] = [];
const provider = createServer((request, response) => {
  let body = "";
  request.on("data", (chunk) => (body += chunk));
  request.on("end", () => {
    const form = new URLSearchParams(body);
    exchanges.push(form);
    const ok = form.get("code") === "good-code" && form.get("client_secret") === CLIENT_SECRET;
    response
      .writeHead(ok ? 200 : 400, { "content-type": "application/json" })
      .end(JSON.stringify(ok ? { access_token: ACCESS_TOKEN, token_type: "bearer" } : { error: "bad_verification_code" }));
  });
});
let controlPlane: ServiceProcess;

before(async () => {
  await new Promise<void>((resolve) => provider.listen(0, "127.0.0.1", resolve));
  const dir = tempDir("controlplane-auth-");
  writeFileSync(join(dir, "client-secret"), `${CLIENT_SECRET}\n`, { mode: 0o600 });
  const tokenUrl = `http://127.0.0.1:${(provider.address() as { port: number }).port}/login/oauth/access_token`;
  writeFileSync(
    join(dir, "controlplane.yaml"),
    stringify({
      listen: "127.0.0.1:0",
      dataDir: join(dir, "data"),
      apiKeys: [API_KEY],
      auth: {
        providers: {
          github: {
            tokenUrl,
            authorizeUrl: "https://github.example.invalid/apps/x/installations/new",
            clientId: "Iv1.test",
            clientSecretFile: join(dir, "client-secret"),
          },
        },
      },
    }),
  );
  controlPlane = await startService(["controlplane", "serve", "--config", join(dir, "controlplane.yaml")], "control plane listening");
});
after(async () => {
  await controlPlane.stop();
  provider.close();
});

const callback = (query: Record<string, string>, accept = "application/json") =>
  fetch(`${controlPlane.url}/v2/auth/setup/github?${new URLSearchParams(query)}`, { headers: { accept } });

async function authRequest() {
  const response = await fetch(`${controlPlane.url}/v2/auth/providers/github/auth-requests`, {
    method: "POST",
    headers: { "x-api-key": API_KEY },
  });
  assert.equal(response.status, 201);
  return (await response.json()) as { auth_id: string; state: string; authorize_url: string };
}

test("a new installation: the state from the control plane, the code exchanged at the provider, the installation recorded; the state works once", async () => {
  const { auth_id, state, authorize_url } = await authRequest();
  assert.match(authorize_url, /^https:\/\/github\.example\.invalid\/apps\/x\/installations\/new\?/);
  const page = await callback({ code: "good-code", state, installation_id: "4711", setup_action: "install" }, BROWSER);
  assert.equal(page.status, 200);
  assert.match(await page.text(), /Installation complete/);
  assert.deepEqual([exchanges.at(-1)!.get("grant_type"), exchanges.at(-1)!.get("client_id")], ["authorization_code", "Iv1.test"]);

  const installations = (await (
    await fetch(`${controlPlane.url}/v2/auth/installations`, { headers: { "x-api-key": API_KEY } })
  ).json()) as any;
  assert.ok(installations.resources.some((i: any) => i.installation_id === 4711 && i.auth_id === auth_id && i.provider_id === "github"));
  assert.ok(!JSON.stringify(installations).includes(ACCESS_TOKEN), "the token is never answered");
  const status = (await (
    await fetch(`${controlPlane.url}/v2/auth/auth-requests/${auth_id}`, { headers: { "x-api-key": API_KEY } })
  ).json()) as any;
  assert.equal(status.status, "completed");

  const again = await callback({ code: "good-code", state, installation_id: "4711" });
  assert.equal(again.status, 400);
  assert.equal(((await again.json()) as any).status, "failed");
  assert.ok(
    ![CLIENT_SECRET, ACCESS_TOKEN, state.split(".")[1]!].some((secret) => controlPlane.output().includes(secret)),
    "no secret in the log",
  );
});

test("update, a bad state, a provider error and a non-integer installation_id", async () => {
  const before = exchanges.length;
  const unasked = await callback({ setup_action: "update", installation_id: "4711" });
  assert.deepEqual([unasked.status, ((await unasked.json()) as any).error], [400, "invalid_state"], "an update needs the state too");
  const update = await callback({ setup_action: "update", installation_id: "4711", state: (await authRequest()).state });
  assert.deepEqual([update.status, ((await update.json()) as any).status], [200, "updated"]);
  assert.equal(exchanges.length, before, "an update exchanges no token");

  const forged = await callback({ code: "good-code", state: `${randomUUID()}.forged` });
  assert.equal(forged.status, 400);
  assert.equal(exchanges.length, before, "a state the control plane never issued reaches no provider");

  const denied = await callback({ error: "access_denied", error_description: "<script>alert(1)</script> user said no" }, BROWSER);
  assert.equal(denied.status, 400);
  const page = await denied.text();
  assert.match(page, /access_denied/);
  // No state this control plane issued: the error code only, never the query's free text.
  assert.doesNotMatch(page, /user said no|alert/);

  const invalid = await callback({ installation_id: "abc", setup_action: "install" });
  assert.equal(invalid.status, 422);
  const detail = ((await invalid.json()) as any).detail;
  assert.deepEqual(detail[0].loc, ["query", "installation_id"]);
  assert.equal(typeof detail[0].msg, "string");

  const unauthenticated = await fetch(`${controlPlane.url}/v2/auth/installations`);
  assert.equal(unauthenticated.status, 401);
});
