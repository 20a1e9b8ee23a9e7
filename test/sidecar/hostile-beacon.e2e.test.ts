import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { text } from "node:stream/consumers";
import { test } from "node:test";
import { AgentStatus } from "../../src/protocol/local-api.ts";
import { testLicense, traceTransactions } from "../helpers/fixtures.ts";
import { agentConfig, getJson, postJson, runCli, startAgentProcess, waitFor } from "../helpers/processes.ts";

/** What a terminal would act on: an escape sequence, a bell, a carriage return that overwrites the line. */
const ANSI = "\u001b[2J\u001b[31mREAD ME\u0007\r";

type Phase = "503" | "500" | "404" | "422";

/**
 * A beacon URL that answers every request with an error whose text echoes the request (license key and billing body
 * included), as a proxy's error page, a wrong `beaconUrl` or a hostile host may. `phase` picks the ingest answer.
 */
async function echoingBeacon(state: { phase: Phase; badId: string }) {
  const server = createServer(async (request: IncomingMessage, response: ServerResponse) => {
    const echo = await text(request);
    const send = (status: number, contentType: string, body: string) =>
      response.writeHead(status, { "content-type": contentType }).end(body);
    if (request.url === "/v1/beacon/verify") {
      return send(503, "application/json", JSON.stringify({ detail: `upstream said: ${echo}${ANSI}`, code: `${echo}${ANSI}` }));
    }
    switch (state.phase) {
      case "503":
        return send(
          503,
          "application/json",
          JSON.stringify({ detail: `overloaded; your request was ${echo}${ANSI}`, code: "BEACON_OVERLOADED" }),
        );
      case "500":
        return send(500, "text/html", `<html><body><h1>Proxy Error</h1><pre>${echo}</pre>${ANSI}</body></html>`);
      case "404":
        return send(404, "text/plain", `no route for ${echo}${ANSI}`);
      case "422": {
        // The sidecar's own telemetry may leave now too: only billing meets the refusal.
        if (request.url !== "/v1/beacon/ingest-traces") return send(200, "application/json", "{}");
        const records = (JSON.parse(echo) as { trace_transactions: { id: string }[] }).trace_transactions;
        if (!records.some((record) => record.id === state.badId)) {
          return send(200, "application/json", JSON.stringify({ inserted_count: records.length }));
        }
        const detail = [
          { loc: ["body", "trace_transactions", 0, "tenant_id"], msg: `bad value in ${echo}`, type: "invalid_format" },
          { loc: ["body", echo.slice(0, 80)], msg: ANSI, type: `${ANSI} not a type` },
        ];
        return send(422, "application/json", JSON.stringify({ detail }));
      }
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}`, close: () => server.close() };
}

test("a beacon URL whose errors echo the request: status, `status` and the log show each answer's status and code, never its text", async () => {
  const license = testLicense();
  const transactions = traceTransactions(6);
  const state = { phase: "503" as Phase, badId: transactions[3]!.id };
  const beacon = await echoingBeacon(state);
  const fixture = agentConfig(beacon.url, { usageReporting: false });
  const agent = await startAgentProcess(fixture, { PLATFORM_LICENSE_KEY: license.key });
  // What only the echoed request holds: the key, a field of the billing body, the proxy page's words.
  const echoed = [license.key, transactions[0]!.tenant_id, transactions[0]!.session_id, "Proxy Error", "READ ME", "upstream said"];
  const leaks = (shown: string) => echoed.filter((secret) => shown.includes(secret));
  // Raw, or as JSON escapes (status and the log are JSON; a viewer decodes them).
  const unprintable = (shown: string) => /[\p{Cc}]|\\u00[01][0-9a-f]|\\u007f|\\[rbf]/iu.test(shown.replaceAll("\n", ""));
  const statusWhen = (probe: (status: AgentStatus) => boolean, what: string) =>
    waitFor(
      async () => {
        const status = AgentStatus.parse(await getJson(`${agent.url}/v1/status`));
        return probe(status) ? status : undefined;
      },
      15_000,
      what,
    );
  try {
    const accepted = await postJson(`${agent.url}/v1/transactions`, { trace_transactions: transactions });
    assert.equal(accepted.status, 202);
    const expected: [Phase, RegExp][] = [
      ["503", /^beacon answered 503 BEACON_OVERLOADED$/],
      ["500", /^beacon answered 500 \(HTML: a proxy or login page\?\)$/],
      ["404", /^beacon answered 404$/],
    ];
    for (const [phase, message] of expected) {
      state.phase = phase;
      const status = await statusWhen((s) => message.test(s.streams.billing!.lastError?.message ?? ""), `billing's last error ${message}`);
      assert.equal(status.license.lastError, "license verification answered 503", "the verify answer's code was the echo: left out");
      assert.deepEqual(leaks(JSON.stringify(status)), [], `phase ${phase}`);
      assert.equal(unprintable(JSON.stringify(status)), false, `phase ${phase}`);
    }

    // A 422 still splits the batch down to the refused record; its dead letter names the field, not the echo.
    state.phase = "422";
    const status = await statusWhen((s) => s.streams.billing!.failed === 1 && s.streams.billing!.pending === 0, "the dead letter");
    assert.equal(status.streams.billing!.completed, 5);
    assert.deepEqual(
      status.streams.billing!.deadLetters.map(({ recordId, error }) => ({ recordId, error })),
      [{ recordId: state.badId, error: "beacon answered 422: body.trace_transactions.0.tenant_id invalid_format; ?" }],
    );
    assert.deepEqual(leaks(JSON.stringify(status)), []);

    const shown = await runCli(["status", "--url", agent.url]);
    assert.equal(shown.code, 0, shown.stderr);
    assert.match(shown.stdout, /license error: license verification answered 503\n/);
    assert.match(shown.stdout, /billing: last error \S+: beacon answered 404\n/);
    assert.match(
      shown.stdout,
      /billing: dead letter \S+ after \d+ failed sends: beacon answered 422: body\.trace_transactions\.0\.tenant_id invalid_format; \?/,
    );
    assert.deepEqual(leaks(shown.stdout), []);
    assert.equal(unprintable(shown.stdout), false);
  } finally {
    await agent.stop();
    beacon.close();
  }
  const log = agent.output();
  assert.match(log, /"reason":"beacon answered 503 BEACON_OVERLOADED"/);
  assert.match(log, /"reason":"license verification answered 503"/);
  assert.deepEqual(leaks(log), [], "the sidecar's log");
  assert.equal(unprintable(log), false, "the sidecar's log");
});

test("a key shaped like an error code, answered back as the code: status and the log show [REDACTED], never the key", async () => {
  // Deny by default keeps a well-formed code; only the last nets (status, the log) know the configured key.
  const key = `LIC_${randomUUID().replaceAll("-", "").toUpperCase()}`;
  const server = createServer(async (request, response) => {
    await text(request);
    const status = request.url === "/v1/beacon/verify" ? 403 : 503;
    response.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify({ detail: "no", code: key }));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const agent = await startAgentProcess(agentConfig(`http://127.0.0.1:${(server.address() as { port: number }).port}`), {
    PLATFORM_LICENSE_KEY: key,
  });
  try {
    assert.equal((await postJson(`${agent.url}/v1/transactions`, { trace_transactions: traceTransactions(2) })).status, 202);
    const status = await waitFor(async () => {
      const s = AgentStatus.parse(await getJson(`${agent.url}/v1/status`));
      return s.license.lastError && s.streams.billing!.lastError ? s : undefined;
    });
    assert.equal(status.license.lastError, "beacon refused the license: [REDACTED]");
    assert.equal(status.streams.billing!.lastError!.message, "beacon answered 503 [REDACTED]");
    const shown = await runCli(["status", "--url", agent.url]);
    assert.doesNotMatch(shown.stdout, new RegExp(key));
  } finally {
    await agent.stop();
    server.close();
  }
  assert.match(agent.output(), /"reason":"beacon answered 503 \[redacted\]"/);
  assert.doesNotMatch(agent.output(), new RegExp(key), "the sidecar's log");
});
