import assert from "node:assert/strict";
import { test } from "node:test";
import { endpointTemplate, looksLikeEndpoint } from "../../src/agent/privacy/endpoint-template.ts";

test("the segment after a known collection becomes that collection's named placeholder", () => {
  assert.equal(endpointTemplate("/a2a/3f2a9c1e-7b4d-4e2a-9c1e-0d2f4e6b7a10"), "/a2a/{assistant_id}");
  assert.equal(endpointTemplate("/threads/8d3e1f2a-0000-4000-8000-123456789abc/runs/17"), "/threads/{thread_id}/runs/{run_id}");
  assert.equal(endpointTemplate("/assistants/my_agent/versions"), "/assistants/{assistant_id}/versions");
  assert.equal(endpointTemplate("/runs/crons/42"), "/runs/{run_id}/{id}");
  assert.equal(endpointTemplate("/threads/abc/runs/crons/9"), "/threads/{thread_id}/runs/{run_id}/{id}");
  assert.equal(endpointTemplate("/crons/5"), "/crons/{cron_id}");
  assert.equal(endpointTemplate("/v2/deployments/d-1/revisions/r-9"), "/v2/deployments/{deployment_id}/revisions/{revision_id}");
  assert.equal(endpointTemplate("/listeners/L1"), "/listeners/{listener_id}");
});

test("a collection at the end of the path or followed by a slash stays a collection", () => {
  assert.equal(endpointTemplate("/runs"), "/runs");
  assert.equal(endpointTemplate("/threads/"), "/threads/");
});

test("store is a route word, not a collection: what follows it is judged on its own", () => {
  assert.equal(endpointTemplate("/store/items/search"), "/store/items/search");
  assert.equal(endpointTemplate("/store/items/User42"), "/store/items/{id}");
});

test("identifiers that are not after a collection become {id}; route words and versions stay", () => {
  assert.equal(endpointTemplate("/v1/users/42/avatar"), "/v1/users/{id}/avatar");
  assert.equal(endpointTemplate("/v1/users/jane.doe@example.com"), "/v1/users/{id}");
  assert.equal(endpointTemplate("/orgs/6f1c8a52f00d4c55/members/JaneDoe"), "/orgs/{id}/members/{id}");
  assert.equal(endpointTemplate("/files/report%20q3.pdf"), "/files/{id}");
  assert.equal(endpointTemplate("/.well-known/agent-card.json"), "/.well-known/agent-card.json");
  assert.equal(endpointTemplate("/ingest-traces/batch_v"), "/ingest-traces/batch_v");
});

test("scheme, host, credentials, query and fragment never reach the template", () => {
  assert.equal(endpointTemplate("https://h:1/threads/x?token=abc"), "/threads/{thread_id}");
  const templated = endpointTemplate("https://admin:hunter2@internal.acme.corp:8443/v1/users/42#frag");
  assert.equal(templated, "/v1/users/{id}");
  assert.equal(endpointTemplate("https://internal.acme.corp"), "/");
  assert.equal(endpointTemplate("https://internal.acme.corp?session=s3cr3t"), "/");
  assert.equal(endpointTemplate("//cdn.acme.corp/assets/app"), "/assets/app");
  assert.equal(endpointTemplate("/ok/health?probe=k8s#top"), "/ok/health");
});

test("a leading HTTP method is kept, upper-cased", () => {
  assert.equal(endpointTemplate("GET /ok/health"), "GET /ok/health");
  assert.equal(endpointTemplate("POST /threads/8d3e1f2a/runs"), "POST /threads/{thread_id}/runs");
  assert.equal(endpointTemplate("delete https://h/crons/7?x=1"), "DELETE /crons/{cron_id}");
});

test("an already templated path comes back unchanged", () => {
  for (const path of ["/threads/{thread_id}/runs/{run_id}", "/v1/users/{id}/avatar", "POST /a2a/{assistant_id}"]) {
    assert.equal(endpointTemplate(path), path);
  }
});

test("looksLikeEndpoint tells paths, URLs and METHOD /path from other span names", () => {
  for (const name of ["/runs", "POST /runs", "https://h/x", "GET https://h/x"]) assert.equal(looksLikeEndpoint(name), true, name);
  for (const name of ["POST", "db.query", "SELECT * FROM runs", "retry /runs later"]) assert.equal(looksLikeEndpoint(name), false, name);
});
