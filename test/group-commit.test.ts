import assert from "node:assert/strict";
import { test } from "node:test";
import { GroupCommit } from "../src/group-commit.ts";

// Unit test with a stand-in transaction: what each submitter hears when its group's commit fails.

test("a group whose commit fails is committed again job by job: only the job the store refuses fails", async () => {
  const commits: string[][] = [];
  const group = new GroupCommit<string, string>(
    (jobs) => {
      commits.push([...jobs]);
      if (jobs.includes("poison")) throw new Error("the store cannot hold this");
      return jobs.map((job) => `stored ${job}`);
    },
    () => false,
  );
  const results = await Promise.allSettled(["a", "poison", "b"].map((job) => group.submit(job)));
  assert.deepEqual(
    results.map((r) => (r.status === "fulfilled" ? r.value : (r.reason as Error).message)),
    ["stored a", "the store cannot hold this", "stored b"],
  );
  assert.deepEqual(commits, [["a", "poison", "b"], ["a"], ["poison"], ["b"]], "one group, then each alone");
});

test("a lone job's failure is not retried: the store is asked once", async () => {
  let calls = 0;
  const group = new GroupCommit<string, string>(
    async () => {
      calls++;
      throw new Error("database unavailable");
    },
    () => false,
  );
  await assert.rejects(group.submit("a"), /database unavailable/);
  assert.equal(calls, 1);
});

test("a failure that is no job's (the database away, a full disk) fails the whole group with one commit, not one more per job", async () => {
  let calls = 0;
  const away = Object.assign(new Error("terminating connection"), { code: "57P01" });
  const group = new GroupCommit<string, string>(
    async () => {
      calls++;
      throw away;
    },
    (err) => err === away,
  );
  const results = await Promise.allSettled(["a", "b", "c"].map((job) => group.submit(job)));
  assert.deepEqual(
    results.map((r) => r.status),
    ["rejected", "rejected", "rejected"],
  );
  assert.equal(calls, 1);
});
