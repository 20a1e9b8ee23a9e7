import assert from "node:assert/strict";
import { test } from "node:test";
import { ControlPlaneError, listPages } from "../../src/controlplane/client.ts";

// The client's page walk against simulated list answers (the real control plane's are in docs-fidelity.e2e.test.ts).

const items = (...ids: string[]) => ids.map((id) => ({ id }));

test("a list that echoes the requested offset (the old answer) is an error after one page, not the same page forever", async () => {
  let requests = 0;
  const echoing = async (offset: number) => {
    requests++;
    return { resources: items("a", "b"), offset };
  };
  await assert.rejects(
    listPages(echoing),
    (err: unknown) => err instanceof ControlPlaneError && /does not lead to a next page/.test(err.message),
  );
  assert.equal(requests, 1);
});

test("an item that a page boundary shows twice (one created while paging) is kept once; the walk ends at the empty page", async () => {
  // Newest first: "new" arrived after the first page, pushing "c" onto the second page again.
  const pages: Record<number, { resources: { id: string }[]; offset: number }> = {
    0: { resources: items("e", "d", "c"), offset: 3 },
    3: { resources: items("c", "b", "a"), offset: 6 },
    6: { resources: [], offset: 6 },
  };
  const asked: number[] = [];
  const all = await listPages(async (offset) => {
    asked.push(offset);
    return pages[offset]!;
  });
  assert.deepEqual([all.resources.map((i) => i.id), all.offset, asked], [["e", "d", "c", "b", "a"], 6, [0, 3, 6]]);
});
