import assert from "node:assert/strict";
import { createServer } from "node:http";
import { test } from "node:test";
import pino from "pino";
import { buildStatus } from "../../src/sidecar/local-api/status.ts";
import { Outbox } from "../../src/sidecar/storage/outbox.ts";
import { StreamHealth } from "../../src/sidecar/storage/stream-health.ts";
import { getLocal } from "../../src/sidecar/commands/local-api-client.ts";
import { formatStatus } from "../../src/sidecar/commands/status.ts";
import { AgentStatus, type LicenseStatus } from "../../src/protocol/local-api.ts";
import { tempDir } from "../helpers/processes.ts";

const KEY = 'lic-"quoted"-SECRET';
const JWT = "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJhY21lLXByb2QifQ.c2lnbmF0dXJl";
/** Every way a message could come to hold a secret: as is, JSON-escaped inside an echoed body, split by an escape. */
const poisoned = `answered ${KEY} | {"license":${JSON.stringify(KEY)}} | lic-"quo\u001b[0mted"-SECRET | Bearer ${JWT} | \u001b]0;title\u0007\r`;

test("status never shows the license key, a token or a control character, whatever an error message came to hold", () => {
  const outbox = new Outbox(tempDir("status-redaction-"));
  outbox.enqueue("billing", [{ recordId: "r1", body: "{}" }]);
  const [record] = outbox.claim("billing", 1);
  outbox.deadLetter("billing", [record!.seq], poisoned);
  const health = new StreamHealth(pino({ level: "silent" }), "billing");
  health.failure(poisoned);
  const license: LicenseStatus = {
    mode: "online",
    state: "grace",
    licenseId: null,
    organizationId: null,
    expiresAt: null,
    licenseExpiresAt: null,
    verifiedAt: null,
    lastError: poisoned,
  };
  const status = buildStatus(license, outbox, [{ stream: "billing", enabled: true, health }], Date.now(), [KEY]);
  const shown = [status.license.lastError!, status.streams.billing!.lastError!.message, status.streams.billing!.deadLetters[0]!.error!];
  for (const message of shown) {
    assert.equal(message, 'answered [REDACTED] | {"license":"[REDACTED]"} | [REDACTED] | Bearer [REDACTED] | ');
  }
  const printed = formatStatus(status);
  assert.doesNotMatch(printed, /SECRET|eyJ|(?!\n)\p{Cc}/u);
  outbox.close();
});

test("the status CLI prints nothing that drives a terminal, even from a sidecar URL that sends it", () => {
  const sequences = "\u001b[2J\u001b]0;owned\u0007";
  const printed = formatStatus({
    license: {
      mode: "online",
      state: "grace",
      licenseId: `acme${sequences}`,
      organizationId: null,
      expiresAt: null,
      licenseExpiresAt: null,
      verifiedAt: null,
      lastError: `${sequences}\nbilling: dead letter forged`,
    },
    streams: {},
  });
  assert.doesNotMatch(printed, /(?!\n)\p{Cc}/u);
  assert.match(printed, /id acme$/m, "the escape sequences gone whole, parameters included");
  assert.doesNotMatch(printed, /^billing: dead letter forged/m, "a message cannot start a line of its own");
});

test("a --url that answers status with an error page: the command names its status and code, never its text", async () => {
  const server = createServer((request, response) => {
    const html = request.url === "/v1/status";
    response
      .writeHead(html ? 502 : 503, { "content-type": html ? "text/html" : "application/json" })
      .end(
        html ? "<html>\u001b[2JProxy Error</html>" : JSON.stringify({ detail: "\u001b]0;owned\u0007 go away", code: "EGRESS_ERR_BUSY" }),
      );
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  try {
    await assert.rejects(getLocal(url, "/v1/status", AgentStatus), {
      message: `${url}/v1/status answered 502 (HTML: a proxy or login page?)`,
    });
    await assert.rejects(getLocal(url, "/v1/audit", AgentStatus), { message: `${url}/v1/audit answered 503 EGRESS_ERR_BUSY` });
  } finally {
    server.close();
  }
});
