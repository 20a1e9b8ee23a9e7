import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import type { OtlpRequest, OtlpSignal } from "../../src/protocol/otlp.ts";
import { parseExport } from "../../src/protocol/otlp-request.ts";
import {
  type FilterResult,
  filterLogs,
  filterMetrics,
  filterTraces,
  type PrivacyPolicy,
  privacyPolicy,
} from "../../src/sidecar/privacy/policy.ts";
import { exportRequest } from "../protocol/otlp-arbitraries.ts";

// What the privacy filter lets out is already in normalised form (built field by field from a parsed request, every
// default set): the beacon parses it unchanged (ParsedExport.canonical) and stores the bytes the sidecar sent, with
// no second serialisation. Over random requests (valid and not) and both a strict and a lenient policy.

const SEED = process.env.FC_SEED ?? "20261127";
const filters = { metrics: filterMetrics, traces: filterTraces, logs: filterLogs } as {
  [S in OtlpSignal]: (request: OtlpRequest, policy: PrivacyPolicy) => FilterResult<OtlpRequest>;
};
const policies = [privacyPolicy(), privacyPolicy({ logMinSeverity: 1, slowSpanMs: 0, extraAllow: { resource: ["extra"] } })];

for (const signal of ["metrics", "traces", "logs"] as OtlpSignal[]) {
  test(`${signal}: what the privacy filter lets out parses unchanged at the beacon (canonical)`, () => {
    let checked = 0;
    fc.assert(
      fc.property(exportRequest(signal), fc.nat(1), (raw, p) => {
        let parsed: ReturnType<typeof parseExport>;
        try {
          parsed = parseExport(signal, raw);
        } catch {
          return; // not an export request at all: a 400, nothing leaves
        }
        if (parsed.accepted === 0) return;
        const filtered = filters[signal](parsed.request, policies[p]!);
        if (!filtered.request) return;
        const sent = JSON.parse(JSON.stringify(filtered.request)) as unknown;
        const atBeacon = parseExport(signal, sent);
        assert.equal(atBeacon.rejected, 0, atBeacon.errors.join("; "));
        assert.ok(atBeacon.canonical, JSON.stringify(sent));
        assert.equal(atBeacon.request, sent);
        checked++;
      }),
      { numRuns: 600, ...(SEED === "random" ? {} : { seed: Number(SEED) }) },
    );
    assert.ok(checked > 100, `${checked} requests let out`);
  });
}
