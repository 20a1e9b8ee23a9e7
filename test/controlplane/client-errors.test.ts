import assert from "node:assert/strict";
import { createServer } from "node:http";
import { text } from "node:stream/consumers";
import { test } from "node:test";
import { ControlPlaneClient, ControlPlaneError } from "../../src/controlplane/client.ts";

const SECRET = "sk-live-0123456789abcdef";
const API_KEY = "cp-api-key-fedcba9876543210";

test("a control plane URL whose refusals echo the request: the error names status, code and fields, never a secret or the echo", async () => {
  const answers: [status: number, contentType: string, body: (echo: string) => string, shown: RegExp][] = [
    [
      400,
      "application/json",
      (echo) => JSON.stringify({ detail: `bad request ${echo}`, code: "EGRESS_ERR_BAD_REQUEST" }),
      /^POST \/v2\/deployments answered 400 EGRESS_ERR_BAD_REQUEST$/,
    ],
    [
      502,
      "text/html",
      (echo) => `<html><h1>Bad Gateway</h1><pre>${echo}</pre></html>`,
      /^POST \/v2\/deployments answered 502 \(HTML: a proxy or login page\?\)$/,
    ],
    [
      422,
      "application/json",
      (echo) => JSON.stringify({ detail: [{ loc: ["body", "secrets", 0, "value"], msg: echo, type: "too_big" }] }),
      /^POST \/v2\/deployments answered 422: body\.secrets\.0\.value too_big$/,
    ],
    [401, "text/plain", (echo) => `\u001b[2Jwho are you? ${echo}`, /^POST \/v2\/deployments answered 401$/],
  ];
  let current = 0;
  const server = createServer(async (request, response) => {
    const echo = `${JSON.stringify(request.headers)} ${await text(request)}`;
    const [status, contentType, body] = answers[current]!;
    response.writeHead(status, { "content-type": contentType }).end(body(echo));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const client = new ControlPlaneClient({ baseUrl: `http://127.0.0.1:${(server.address() as { port: number }).port}`, apiKey: API_KEY });
  try {
    for (current = 0; current < answers.length; current++) {
      const error = await client
        .create({
          name: "agent",
          source: "local",
          source_revision_config: { langgraph_config_path: "/srv/graph.json" },
          secrets: [{ name: "OPENAI_API_KEY", value: SECRET }],
        } as never)
        .then(
          () => assert.fail("refused"),
          (err: unknown) => err,
        );
      assert.ok(error instanceof ControlPlaneError);
      assert.match(error.message, answers[current]![3]);
      assert.equal(error.status, answers[current]![0]);
    }
  } finally {
    server.close();
  }
});

test("a control plane URL that redirects: the redirect is the answer; its Location gets neither the API key nor the secrets", async () => {
  const seenElsewhere: string[] = [];
  const elsewhere = createServer(async (request, response) => {
    seenElsewhere.push(`${JSON.stringify(request.headers)} ${await text(request)}`);
    response.writeHead(201, { "content-type": "application/json" }).end("{}");
  });
  await new Promise<void>((resolve) => elsewhere.listen(0, "127.0.0.1", resolve));
  const location = `http://localhost:${(elsewhere.address() as { port: number }).port}/v2/deployments`;
  const redirecting = createServer((_request, response) => response.writeHead(307, { location }).end());
  await new Promise<void>((resolve) => redirecting.listen(0, "127.0.0.1", resolve));
  const client = new ControlPlaneClient({
    baseUrl: `http://127.0.0.1:${(redirecting.address() as { port: number }).port}`,
    apiKey: API_KEY,
  });
  try {
    const created = client.create({
      name: "agent",
      source: "local",
      source_revision_config: { langgraph_config_path: "/srv/graph.json" },
      secrets: [{ name: "OPENAI_API_KEY", value: SECRET }],
    } as never);
    await assert.rejects(created, (err: unknown) => err instanceof ControlPlaneError && /answered 307/.test(err.message));
    await assert.rejects(client.list({}), /answered 307/);
    assert.deepEqual(seenElsewhere, [], "the redirect's target got a request");
  } finally {
    redirecting.close();
    elsewhere.close();
  }
});
