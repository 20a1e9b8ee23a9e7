import assert from "node:assert/strict";
import { test } from "node:test";
import { endpointTemplate, looksLikeEndpoint } from "../../src/sidecar/privacy/endpoint-template.ts";
import { createVocabulary } from "../../src/sidecar/privacy/vocabulary.ts";

test("the segment after a known collection becomes that collection's named placeholder", () => {
  assert.equal(endpointTemplate("/a2a/3f2a9c1e-7b4d-4e2a-9c1e-0d2f4e6b7a10"), "/a2a/{assistant_id}");
  assert.equal(endpointTemplate("/threads/8d3e1f2a-0000-4000-8000-123456789abc/runs/17"), "/threads/{thread_id}/runs/{run_id}");
  assert.equal(endpointTemplate("/assistants/my_agent/versions"), "/assistants/{assistant_id}/versions");
  assert.equal(endpointTemplate("/runs/crons/42"), "/runs/crons/{cron_id}");
  assert.equal(endpointTemplate("/threads/abc/runs/crons/9"), "/threads/{thread_id}/runs/crons/{cron_id}");
  assert.equal(endpointTemplate("/crons/5"), "/crons/{cron_id}");
  assert.equal(endpointTemplate("/v2/deployments/d-1/revisions/r-9"), "/v2/deployments/{deployment_id}/revisions/{revision_id}");
  assert.equal(endpointTemplate("/listeners/L1"), "/listeners/{listener_id}");
});

test("a collection at the end of the path or followed by a slash stays a collection", () => {
  assert.equal(endpointTemplate("/runs"), "/runs");
  assert.equal(endpointTemplate("/threads/"), "/threads/");
});

test("a route word after a collection is a route, not an item of it", () => {
  assert.equal(endpointTemplate("/runs/stream"), "/runs/stream");
  assert.equal(endpointTemplate("/threads/search"), "/threads/search");
  assert.equal(endpointTemplate("/store/items/search"), "/store/items/search");
  assert.equal(endpointTemplate("/store/items/User42"), "/store/items/{param}");
});

test("every segment that is not a known route word becomes {param}, lower-case words too", () => {
  assert.equal(endpointTemplate("/users/johnsmith"), "/{param}/{param}");
  assert.equal(endpointTemplate("/v1/users/42/avatar"), "/v1/{param}/{param}/{param}");
  assert.equal(endpointTemplate("/v1/users/jane.doe@example.com"), "/v1/{param}/{param}");
  assert.equal(endpointTemplate("/home/alice/.ssh/id_rsa"), "/{param}/{param}/{param}/{param}");
  assert.equal(endpointTemplate("/files/report%20q3.pdf"), "/{param}/{param}");
  assert.equal(endpointTemplate("/.well-known/agent-card.json"), "/.well-known/agent-card.json");
  assert.equal(endpointTemplate("/v1/beacon/ingest-traces"), "/v1/beacon/ingest-traces");
  assert.equal(endpointTemplate("/v1/status"), "/v1/status");
});

test("the operator's privacy.vocabulary adds route words; nothing else does", () => {
  const vocabulary = createVocabulary(["users", "avatar"]);
  assert.equal(endpointTemplate("/v1/users/42/avatar", vocabulary), "/v1/users/{param}/avatar");
  assert.equal(endpointTemplate("/v1/users/johnsmith", vocabulary), "/v1/users/{param}");
  assert.equal(endpointTemplate("/v1/users/42/avatar"), "/v1/{param}/{param}/{param}", "the built-in vocabulary is unchanged");
  // Longer than any built-in route word: a segment that long is still looked up when the operator has such a word.
  const long = createVocabulary(["customer-onboarding-workflows"]);
  assert.equal(endpointTemplate("/v1/customer-onboarding-workflows/7", long), "/v1/customer-onboarding-workflows/{param}");
  assert.equal(endpointTemplate("/v1/customer-onboarding-workflows/7"), "/v1/{param}/{param}");
});

test("scheme, host, credentials, query and fragment never reach the template", () => {
  assert.equal(endpointTemplate("https://h:1/threads/x?token=abc"), "/threads/{thread_id}");
  const templated = endpointTemplate("https://admin:hunter2@internal.acme.corp:8443/v1/users/42#frag");
  assert.equal(templated, "/v1/{param}/{param}");
  assert.equal(endpointTemplate("https://internal.acme.corp"), "/");
  assert.equal(endpointTemplate("https://internal.acme.corp?session=s3cr3t"), "/");
  assert.equal(endpointTemplate("//cdn.acme.corp/assets/app"), "/{param}/{param}");
  assert.equal(endpointTemplate("/ok/health?probe=k8s#top"), "/ok/health");
  assert.equal(endpointTemplate("/threads?email=alice%40corp.example"), "/threads");
});

test("a leading HTTP method is kept, upper-cased", () => {
  assert.equal(endpointTemplate("GET /ok/health"), "GET /ok/health");
  assert.equal(endpointTemplate("POST /threads/8d3e1f2a/runs"), "POST /threads/{thread_id}/runs");
  assert.equal(endpointTemplate("delete https://h/crons/7?x=1"), "DELETE /crons/{cron_id}");
});

test("a segment in braces stays only when it is a placeholder the filter or the product writes", () => {
  assert.equal(endpointTemplate("/users/{johnsmith}"), "/{param}/{param}");
  assert.equal(endpointTemplate("/v2/auth/setup/{provider_id}"), "/v2/auth/setup/{provider_id}");
});

test("an already templated path comes back unchanged", () => {
  for (const path of ["/threads/{thread_id}/runs/{run_id}", "/v1/{param}/{id}/status", "POST /a2a/{assistant_id}"]) {
    assert.equal(endpointTemplate(path), path);
  }
});

test("looksLikeEndpoint tells paths, URLs and METHOD /path from other span names", () => {
  for (const name of ["/runs", "POST /runs", "https://h/x", "GET https://h/x"]) assert.equal(looksLikeEndpoint(name), true, name);
  for (const name of ["POST", "db.query", "SELECT * FROM runs", "retry /runs later"]) assert.equal(looksLikeEndpoint(name), false, name);
});
