import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { makeCheckout, privateNetworks, type Ran, runScenario, type Step } from "./readme-runner.ts";
import { allShellBlocks, forms, withoutComment } from "./readme-shell.ts";

// Every shell example of the README and docs/*.md, run as written: from the root of a checkout, `egress-agent` on
// PATH through a link as `npm link` makes it, the machine's own node first on PATH (Node 20 here: the entry point
// hands over to .tools' Node 24), against real services on the documented default loopback ports. Each block is
// marked `<!-- readme-test: NAME -->` and NAME is one of SCENARIOS: its commands run, or are skipped here with the
// reason. A name is one block's, whichever file holds it.

const LICENSE_KEY = "lic-demo-0000-0000-0000-000000000000"; // config/beacon.yaml's demo license
const ORG = "6f1c8a52-3b7e-4c55-9a51-0d2f4e6b7a10";

const ok = (run: { rc: number; err: string; out: string }) => assert.equal(run.rc, 0, `exit ${run.rc}\n${run.err}\n${run.out}`);
/** Exit 0, then `check`. */
const okAnd = (check: (run: { rc: number; err: string; out: string }) => void) => (run: { rc: number; err: string; out: string }) => {
  ok(run);
  check(run);
};
const json = (text: string) => JSON.parse(text) as any;
const jsonLines = (text: string) => text.trim().split("\n").map(json);

/** The sidecar config the operations (docs/operations.md) and offline examples name as `egress.yaml` in the working directory. */
const egressYaml = (extra: string) =>
  `cat > egress.yaml <<'EOF'\nlicenseKey: ${LICENSE_KEY}\ndataDir: ./data/sidecar\nintervals: {flush: 1s}\nlogLevel: warn\n${extra}\nEOF`;
const postTransactions = (count: number) => {
  const now = new Date().toISOString();
  const tx = Array.from({ length: count }, (_, i) => ({
    id: crypto.randomUUID(),
    tenant_id: crypto.randomUUID(),
    session_id: crypto.randomUUID(),
    trace_count: i + 1,
    start_insertion_time: now,
    end_insertion_time: now,
    start_interval_time: now,
    end_interval_time: now,
    status: "completed",
    num_failed_send_attempts: 0,
    transaction_type: "all_traces",
    organization_id: ORG,
  }));
  return `curl -sf -H 'content-type: application/json' -d '${JSON.stringify({ trace_transactions: tx })}' http://127.0.0.1:4318/v1/transactions`;
};

type Scenario = { skip: string } | { steps: Step[]; projectNodeFirst?: boolean; check?: (ran: Ran) => void };

const SCENARIOS: Record<string, Scenario> = {
  // README.md's five minutes: a beacon and a sidecar started by hand, the example body posted, where it went.
  walkthrough: {
    steps: [
      { cmd: 0, serves: 8080, check: ok },
      { cmd: 1, serves: 4318, check: ok },
      { cmd: 2, check: okAnd((run) => assert.deepEqual(json(run.out), { accepted: 1, duplicates: 0 })) },
      {
        cmd: 3,
        check: okAnd((run) => {
          assert.match(run.out, /^license: /m);
          assert.match(run.out, /^billing +yes +/m);
        }),
      },
      { cmd: 4, check: okAnd((run) => assert.match(run.out, /drained: nothing left to deliver/)) },
      {
        cmd: 5,
        check: okAnd((run) => {
          assert.match(run.out, /^\S+ +license +http:\/\/127\.0\.0\.1:8080\/v1\/beacon\/verify +1 +\d+ +200 /m);
          assert.match(run.out, /^\S+ +billing +http:\/\/127\.0\.0\.1:8080\/v1\/beacon\/ingest-traces +1 +\d+ +200 +[0-9a-f]{64}$/m);
        }),
      },
      // The record reached the beacon: its report counts the example's transaction and its 42 traces.
      { cmd: 6, check: okAnd((run) => assert.match(run.out, /^2026-11 +acme-prod +6f1c8a52-3b7e-4c55-9a51-0d2f4e6b7a10 +1 +42$/m)) },
      // Posted again, it is kept once, as the README says.
      {
        own: "curl -s -H 'content-type: application/json' -d @examples/trace-transaction.json http://127.0.0.1:4318/v1/transactions",
        check: okAnd((run) => assert.deepEqual(json(run.out), { accepted: 1, duplicates: 1 })),
      },
      { cmd: 7, check: ok },
      // Both stopped: their ports are free within 15 s.
      { own: "(for _ in $(seq 1 150); do port_busy 8080 || port_busy 4318 || exit 0; sleep 0.1; done; exit 1)", check: ok },
      // Their logs went to the files the README names.
      { own: 'grep -c \'"msg":"sidecar listening"\' sidecar.log', check: (run) => assert.equal(run.out.trim(), "1") },
    ],
  },
  make: {
    steps: [
      {
        cmd: 0,
        check: (run) => {
          ok(run);
          assert.match(run.out, /sidecar -> beacon: 250 delivered, 0 pending, 0 failed/);
          assert.match(run.out, /"recall" +-> You told me: "buy milk", "call Ada at five"\./);
        },
      },
      { cmd: 1, skip: "the whole suite, this test included (it would run itself); CI runs it, as `bash .ci/run`" },
    ],
  },
  kubectl: { skip: "kubectl: needs a Kubernetes cluster (the chart's templates are checked in test/packaging/helm-chart.test.ts)" },
  compose: { skip: "docker compose: needs Docker, and the registry for node:24-slim (test/packaging/compose.test.ts checks compose.yaml)" },
  sidecar: {
    steps: [
      {
        cmd: 0,
        form: "min",
        values: { "...": LICENSE_KEY },
        serves: 4318,
        check: okAnd((run) => assert.match(run.out, /"msg":"sidecar listening"/)),
      },
      { own: "curl -sf http://127.0.0.1:4318/readyz", check: ok },
      { own: "stop_step 0 4318" },
      {
        cmd: 0,
        form: "full",
        values: { "...": LICENSE_KEY },
        serves: 4318,
        check: okAnd((run) => assert.match(run.out, /"msg":"sidecar listening"/)),
      },
      { own: "curl -sf http://127.0.0.1:4318/readyz", check: ok },
    ],
  },
  offline: {
    steps: [
      { own: "cp config/beacon.yaml beacon.yaml" },
      { cmd: 0, check: okAnd((run) => assert.equal(run.out, "")) },
      { own: "cut -d. -f2 offline.jwt | base64 -d 2>/dev/null", check: (run) => assert.match(run.out, /"sub":"acme-prod"/) },
      { cmd: 1, check: ok },
      { own: "cat vendor.pem", check: (run) => assert.match(run.out, /^-----BEGIN PUBLIC KEY-----\n/) },
      // The customer's side: an offline sidecar that took 3 transactions.
      { own: egressYaml("offline: {enabled: true, licenseFile: offline.jwt, publicKeyFile: vendor.pem}") },
      { own: "egress-agent start --config egress.yaml", serves: 4318, check: ok },
      { own: postTransactions(3), check: ok },
      { own: "stop_step 6 4318" },
      { cmd: 2, check: ok },
      // The header line (the instance and the offline license), then the 3 transactions.
      { own: "wc -l < billing.jsonl", check: (run) => assert.equal(run.out.trim(), "4") },
      { own: "head -1 billing.jsonl", check: (run) => assert.equal(json(run.out).license_id, "acme-prod") },
    ],
  },
  operating: {
    steps: [
      { own: "egress-agent beacon --config config/beacon.yaml", serves: 8080, check: ok },
      { own: egressYaml("beaconUrl: http://127.0.0.1:8080\nallowInsecureBeaconUrl: true"), check: ok },
      { own: "egress-agent start --config egress.yaml", serves: 4318, check: ok },
      { own: postTransactions(5), check: ok },
      { cmd: 0, form: "min", check: okAnd((run) => assert.match(run.out, /billing/)) },
      { cmd: 0, form: "full", check: okAnd((run) => assert.equal(json(run.out).license.licenseId, "acme-prod")) },
      { cmd: 1, form: "min", check: okAnd((run) => assert.match(run.out, /drained|nothing left|0 left/i)) },
      { cmd: 1, form: "full", check: ok },
      { cmd: 2, form: "min", check: okAnd((run) => assert.match(run.out, /beaconUrl\s+http:\/\/127\.0\.0\.1:8080\s+file/)) },
      { cmd: 2, form: "full", check: okAnd((run) => assert.ok(json(run.out))) },
      { cmd: 3, form: "min", check: ok },
      { cmd: 3, form: "full", check: okAnd((run) => assert.ok(json(run.out))) },
      { cmd: 4, check: okAnd((run) => assert.match(run.out, /http:\/\/127\.0\.0\.1:8080\/v1\/beacon\/ingest-traces/)) },
      {
        cmd: 5,
        check: (run) => {
          assert.equal(run.rc, 2, run.err);
          assert.match(run.out + run.err, /offline/);
        },
      },
      { cmd: 6, form: "min", check: okAnd((run) => assert.match(run.out, /billing/)) },
      {
        cmd: 6,
        form: "full",
        values: { URL: "http://127.0.0.1:4318" },
        check: okAnd((run) =>
          assert.ok(
            jsonLines(run.out).some((entry) => entry.stream === "billing"),
            run.out,
          ),
        ),
      },
      // The header line, then the 5 transactions.
      { cmd: 7, form: "min", check: okAnd((run) => assert.equal(run.out.trim().split("\n").length, 6)) },
      { cmd: 7, form: "full", values: { FILE: "billing.jsonl" }, check: ok },
      { own: "wc -l < billing.jsonl", check: (run) => assert.equal(run.out.trim(), "6") },
    ],
  },
  beacon: {
    steps: [
      { cmd: 0, serves: 8080, check: ok },
      { cmd: 1, form: "min", check: okAnd((run) => assert.match(run.out, /MONTH|no trace/i)) },
      {
        cmd: 1,
        form: "full",
        values: { ID: "acme-prod", UUID: ORG, "YYYY-MM": "$(date -u +%Y-%m)" },
        check: okAnd((run) => assert.ok(json(run.out))),
      },
      {
        cmd: 2,
        form: "min",
        values: { ID: "acme-prod" },
        check: okAnd((run) => assert.match(run.out, /^ey[\w-]+\.[\w-]+\.[\w-]+\n?$/)),
      },
      { cmd: 2, form: "full", values: { ID: "acme-prod", FILE: "offline.jwt" }, check: ok },
      { own: "cut -d. -f2 offline.jwt | base64 -d 2>/dev/null", check: (run) => assert.match(run.out, /"sub":"acme-prod"/) },
      { cmd: 3, check: okAnd((run) => assert.match(run.out, /^-----BEGIN PUBLIC KEY-----\n/)) },
    ],
  },
  // docs/beacon.md, "Running the beacon as a vendor": the admin listener and `beacon licenses`.
  vendor: {
    steps: [
      { cmd: 0, check: ok },
      { cmd: 1, serves: 8081, check: ok },
      {
        cmd: 2,
        check: okAnd((run) => {
          assert.match(run.out, /^license globex-prod: active, 20 seats, expires 2027-12-31T00:00:00.000Z$/m);
          assert.match(run.out, /^key: lic-[\w-]{43}$/m);
        }),
      },
      {
        cmd: 3,
        check: okAnd((run) => {
          assert.match(run.out, /^acme-prod +6f1c8a52-3b7e-4c55-9a51-0d2f4e6b7a10 +2027-12-31T00:00:00.000Z +50 +\w+ +- +0$/m);
          assert.match(run.out, /^globex-prod +0b9e1d2c-7a44-4f0e-8c1b-5e6f7a8b9c0d +2027-12-31T00:00:00.000Z +20 +active +- +0$/m);
        }),
      },
      { cmd: 4, check: okAnd((run) => assert.match(run.out, /^license globex-prod: active, 25 seats, expires 2028-12-31/m)) },
      { cmd: 5, check: okAnd((run) => assert.deepEqual([json(run.out).seats, json(run.out).usage], [25, []])) },
      { cmd: 6, check: okAnd((run) => assert.match(run.out, /^key: lic-[\w-]{43}$/m)) },
      { cmd: 7, check: okAnd((run) => assert.match(run.out, /^license globex-prod: revoked/m)) },
      {
        cmd: 8,
        check: okAnd((run) => {
          const actions = json(run.out).records.map((r: { actor: string; action: string }) => `${r.actor} ${r.action}`);
          assert.equal(actions.length, 5, actions.join("\n"));
          assert.match(actions[0], /^key:[0-9a-f]{8} license\.revoke$/);
          assert.match(actions[3], /^key:[0-9a-f]{8} license\.create$/);
          assert.equal(actions.at(-1), "config license.config");
        }),
      },
    ],
  },
  // docs/beacon.md, "Offline true-ups": an offline sidecar's export, imported twice, then in the report.
  "true-up": {
    steps: [
      { own: "egress-agent beacon issue-offline-license --config config/beacon.yaml --license acme-prod --output offline.jwt", check: ok },
      { own: "egress-agent beacon public-key --config config/beacon.yaml > vendor.pem", check: ok },
      { own: egressYaml("offline: {enabled: true, licenseFile: offline.jwt, publicKeyFile: vendor.pem}") },
      { own: "egress-agent start --config egress.yaml", serves: 4318, check: ok },
      { own: postTransactions(3), check: ok },
      { own: "stop_step 3 4318", check: ok },
      { own: "egress-agent export --since 2026-01-01 --config egress.yaml --output billing.jsonl", check: ok },
      { own: "export BEACON_ADMIN_API_KEY=readme-admin-key-0123456789" },
      { own: "egress-agent beacon --config config/beacon.yaml", serves: 8081, check: ok },
      {
        cmd: 0,
        check: okAnd((run) => assert.equal(run.out, "imported 3 records, 0 duplicates (already in the beacon) for license acme-prod\n")),
      },
      { cmd: 1, check: okAnd((run) => assert.deepEqual(json(run.out), { imported: 0, duplicates: 3 })) },
      { cmd: 2, check: okAnd((run) => assert.match(run.out, new RegExp(`^\\d{4}-\\d{2} +acme-prod +${ORG} +3 +6$`, "m"))) },
    ],
  },
  a2a: {
    steps: [
      { cmd: 0, serves: 2024, check: ok },
      {
        cmd: 1,
        check: (run) => {
          ok(run);
          assert.match(run.out, /^Noted: "buy milk"\. /);
          assert.match(run.err, /^contextId: [0-9a-f-]{36}$/m);
        },
      },
      {
        cmd: 2,
        values: { CONTEXT_ID: '$(sed -n "s/^contextId: //p" "$OUT/1.err")', TASK_ID: '$(sed -n "s/^taskId: //p" "$OUT/1.err")' },
        check: okAnd((run) => assert.match(run.out, /You told me: "buy milk"/)),
      },
    ],
  },
  quickstart: {
    // Node 24 itself runs the link (no hand-over from an older node, which would name the real path): the control
    // plane finds its install from a linked argv[1], as after `npm link` and in the image.
    projectNodeFirst: true,
    steps: [
      { cmd: 0, check: ok },
      { cmd: 1, serves: 8000, check: ok },
      {
        cmd: 2,
        check: okAnd((run) => assert.match(run.out, /DEPLOYED at http:\/\/127\.0\.0\.1:\d+/)),
      },
      {
        cmd: 3,
        values: { PORT: '$(grep -o "DEPLOYED at http://127.0.0.1:[0-9]*" "$OUT/2.out" | grep -o "[0-9]*$")' },
        check: okAnd((run) => assert.match(run.out, /^Noted: "hello"\. /)),
      },
      // The deployment's agent server outlives the control plane: delete it.
      { own: 'egress-agent deployments delete "$(grep -o "deployment [0-9a-f-]*" "$OUT/2.out" | head -1 | cut -d" " -f2)"', check: ok },
    ],
  },
};

const blocks = allShellBlocks();

test("every shell block of the README and docs/ is marked with a scenario of this test, which runs each line or says why not", (t) => {
  const unmarked = blocks
    .filter((block) => !block.name || !(block.name in SCENARIOS))
    .map((block) => `${block.file}:${block.fence} (${block.name})`);
  assert.deepEqual(unmarked, [], "mark each with <!-- readme-test: NAME --> and add NAME to SCENARIOS");
  assert.deepEqual(
    Object.keys(SCENARIOS).filter((name) => !blocks.some((block) => block.name === name)),
    [],
    "scenarios without a block in the README or docs/",
  );
  const names = blocks.map((block) => block.name);
  assert.deepEqual(
    blocks.filter((block, i) => names.indexOf(block.name) !== i).map((block) => `${block.file}:${block.fence} (${block.name})`),
    [],
    "a scenario name marks one block",
  );
  for (const block of blocks) {
    const scenario = SCENARIOS[block.name!]!;
    for (const [i, line] of block.lines.entries()) {
      const steps = "skip" in scenario ? [] : scenario.steps.filter((step) => "cmd" in step && step.cmd === i);
      const skipped = "skip" in scenario ? scenario.skip : steps.find((step) => "skip" in step)?.skip;
      const run = steps.filter((step) => !("skip" in step)).length;
      if (!skipped) {
        // A synopsis line runs in both forms: without its optional parts and with them.
        assert.equal(run, forms(withoutComment(line.text)).length, `${block.file}:${line.line} runs in every form: ${line.text}`);
      }
      t.diagnostic(`${block.file}:${line.line} ${skipped ? `skipped: ${skipped}` : `run (${run})`}: ${line.text.trim()}`);
    }
  }
});

// Two scenarios at a time when each has a network namespace of its own (its own default ports), beside its own checkout.
describe("the shell blocks of the README and docs/", { concurrency: privateNetworks ? 2 : 1 }, () => {
  for (const block of blocks) {
    const scenario = block.name ? SCENARIOS[block.name] : undefined;
    if (!scenario || "skip" in scenario) continue;
    test(`${block.file}:${block.fence} (${block.name}) runs as written`, async (t) => {
      // A fresh checkout each, as a new reader has: what one example leaves in ./data is not the next one's.
      const checkout = makeCheckout();
      t.after(() => checkout.remove());
      const ran = await runScenario(block, scenario.steps, checkout, { projectNodeFirst: scenario.projectNodeFirst, timeoutMs: 240_000 });
      for (const { step, shell, run } of ran.steps) {
        if ("skip" in step || !run || !("check" in step) || !step.check) continue;
        try {
          step.check(run);
        } catch (err) {
          (err as Error).message =
            `${"own" in step ? "this test's" : `${block.file}:${block.lines[step.cmd]!.line}`} \`${shell}\`: ${(err as Error).message}`;
          throw err;
        }
      }
      scenario.check?.(ran);
    });
  }
});
