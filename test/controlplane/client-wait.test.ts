import assert from "node:assert/strict";
import { afterEach, beforeEach, mock, test } from "node:test";
import { ControlPlaneClient, ControlPlaneError, DeployWaitError } from "../../src/controlplane/client.ts";
import { HOUR, MINUTE, SimulatedTime } from "../helpers/simulated-time.ts";

// `deployments ... --wait` polls the control plane; on simulated time, how many requests it makes per hour while a
// revision is stuck, while the control plane restarts, and when it refuses. fetch stands in for the control plane.

let time: SimulatedTime;
beforeEach(() => (time = SimulatedTime.start()));
afterEach(() => time.stop());

const stamp = "2026-11-01T00:00:00Z";
const config = {
  repo_ref: null,
  langgraph_config_path: "/srv/graph.json",
  image_uri: null,
  source_tarball_path: null,
  repo_commit_sha: null,
};
const deployment = (revision: string) => ({
  id: "d1",
  tenant_id: "t1",
  name: "agent",
  source: "local",
  source_config: {},
  source_revision_config: config,
  secrets: [],
  secret_references: null,
  image_version: null,
  latest_revision_id: revision,
  active_revision_id: null,
  status: "AWAITING_DATABASE",
  latest_revision_status: "QUEUED",
  url: null,
  created_at: stamp,
  updated_at: stamp,
});
const revision = (id: string, status: string) => ({
  id,
  deployment_id: "d1",
  source: "local",
  status,
  status_message: null,
  source_revision_config: config,
  created_at: stamp,
  updated_at: stamp,
});

/** A control plane whose answers `answer` decides; counts requests. */
function controlPlane(answer: (path: string) => Response | Promise<Response>) {
  const calls = { count: 0 };
  const fetchMock = mock.method(globalThis, "fetch", async (url: string) => {
    calls.count++;
    return answer(new URL(url).pathname);
  });
  return { calls, restore: () => fetchMock.mock.restore() };
}

const json = (body: unknown, status = 200) =>
  new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } });
const client = () => new ControlPlaneClient({ baseUrl: "http://127.0.0.1:9", apiKey: "k" });

/** Runs the wait on simulated time until it settles or `ms` pass; the outcome and the requests it made. */
async function waitOn(answer: (path: string) => Response | Promise<Response>, timeoutMs: number, ms: number) {
  const plane = controlPlane(answer);
  let outcome: unknown;
  const waiting = client()
    .waitDeployed("d1", { timeoutMs })
    .then(
      (value) => (outcome = value),
      (err) => (outcome = err),
    );
  try {
    for (let done = 0; done < ms && outcome === undefined; done += MINUTE) await time.advance(MINUTE, 1_000);
    return { outcome, requests: plane.calls.count, waiting };
  } finally {
    plane.restore();
  }
}

test("a revision stuck in BUILDING: polls slow to one every 10 s, about 720 requests an hour, then the timeout", async () => {
  const { outcome, requests } = await waitOn(
    (path) => (path.includes("/revisions/") ? json(revision("r1", "BUILDING")) : json(deployment("r1"))),
    HOUR,
    HOUR + 2 * MINUTE,
  );
  assert.ok(outcome instanceof DeployWaitError, String(outcome));
  assert.match((outcome as Error).message, /revision r1 is still BUILDING after 3600 s/);
  // Two requests (deployment, revision) per poll; 360 polls an hour at 10 s, a few more while slowing down.
  assert.ok(requests >= 700 && requests <= 760, `${requests} requests in an hour`);
});

test("a control plane that restarts (unreachable, then 503) is asked again on the slow schedule, and the wait goes on", async () => {
  let phase: "down" | "503" | "up" = "down";
  const plane = controlPlane((path) => {
    if (phase === "down") throw new TypeError("fetch failed", { cause: { code: "ECONNREFUSED" } });
    if (phase === "503") return new Response("<html>Service Unavailable</html>", { status: 503, headers: { "content-type": "text/html" } });
    return path.includes("/revisions/") ? json(revision("r1", "DEPLOYED")) : json(deployment("r1"));
  });
  let outcome: unknown;
  void client()
    .waitDeployed("d1", { timeoutMs: HOUR })
    .then(
      (value) => (outcome = value),
      (err) => (outcome = err),
    );
  try {
    await time.advance(10 * MINUTE, 1_000);
    const whileDown = plane.calls.count;
    assert.ok(whileDown >= 55 && whileDown <= 70, `${whileDown} attempts in 10 minutes away (one per 10 s)`);
    phase = "503";
    await time.advance(10 * MINUTE, 1_000);
    assert.ok(plane.calls.count - whileDown <= 62, "a 503 is asked again on the same schedule");
    phase = "up";
    await time.advance(MINUTE, 1_000);
    assert.equal((outcome as { revision: { status: string } }).revision.status, "DEPLOYED");
  } finally {
    plane.restore();
  }
});

test("a refusal (401, 404) ends the wait at once: one request, no loop", async () => {
  for (const status of [401, 404]) {
    const { outcome, requests } = await waitOn(() => json({ detail: "no" }, status), HOUR, HOUR);
    assert.ok(outcome instanceof ControlPlaneError && !(outcome instanceof DeployWaitError), String(outcome));
    assert.equal((outcome as ControlPlaneError).status, status);
    assert.equal(requests, 1);
  }
});

test("a control plane still away at the timeout ends the wait with its error", async () => {
  const { outcome, requests } = await waitOn(() => new Response("bad gateway", { status: 502 }), 5 * MINUTE, 10 * MINUTE);
  assert.ok(outcome instanceof ControlPlaneError, String(outcome));
  assert.match((outcome as Error).message, /answered 502/);
  assert.ok(requests <= 5 * 6 + 5, `${requests} requests in 5 minutes`);
});

test("the local deployer's start wait: /ok asked every 100 ms until the start timeout, no faster, then it gives up", async () => {
  const { untilHealthy } = await import("../../src/controlplane/agent-process.ts");
  const { EventEmitter } = await import("node:events");
  for (const answer of [() => new Response("starting", { status: 503 }), () => Promise.reject(new TypeError("fetch failed"))]) {
    const plane = controlPlane(answer);
    let outcome: string | undefined | null = null;
    void untilHealthy("http://127.0.0.1:9", new EventEmitter() as never, 60_000).then((value) => (outcome = value));
    try {
      await time.advance(61_000, 100);
      assert.equal(outcome, "did not answer /ok within 60 s");
      assert.ok(plane.calls.count >= 550 && plane.calls.count <= 602, `${plane.calls.count} requests in the 60 s start timeout`);
    } finally {
      plane.restore();
    }
  }
  // A process that exits ends the wait at once.
  const plane = controlPlane(() => new Response("", { status: 503 }));
  const child = new EventEmitter();
  let outcome: string | undefined | null = null;
  void untilHealthy("http://127.0.0.1:9", child as never, 60_000).then((value) => (outcome = value));
  await time.advance(1_000, 100);
  child.emit("exit", 1, null);
  await time.advance(200, 100);
  assert.equal(outcome, "exited (code 1) before answering /ok");
  const asked = plane.calls.count;
  await time.advance(10_000, 100);
  assert.equal(plane.calls.count, asked, "no more requests once it ended");
  plane.restore();
});
