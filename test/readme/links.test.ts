import assert from "node:assert/strict";
import { existsSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { test } from "node:test";
import { TransactionsRequest } from "../../src/protocol/local-api.ts";
import { TraceTransaction } from "../../src/protocol/trace-transaction.ts";
import { docFiles, ROOT } from "./readme-shell.ts";

// The README is a table of contents into docs/: a link that names a moved file or a renamed heading sends a reader
// nowhere. Every relative link of README.md and docs/*.md must name a file that exists and, with a #fragment, a
// heading of that file as GitHub anchors it.

/** The document's text outside fenced code blocks and inline code spans, where a link is a link. */
function prose(markdown: string): string {
  return markdown.replace(/^```[\s\S]*?^```/gm, "").replace(/`[^`\n]*`/g, "");
}

/** GitHub's anchor of a heading (github-slugger): lower case, punctuation dropped, each space a hyphen. */
function slug(heading: string): string {
  const text = heading.replace(/\[([^\]]*)\]\([^)]*\)/g, "$1");
  return text
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, "")
    .replace(/ /g, "-");
}

/** The anchors of a markdown file's headings, a repeated one numbered as GitHub numbers it (`-1`, `-2`). */
function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const [, heading] of markdown.replace(/^```[\s\S]*?^```/gm, "").matchAll(/^#{1,6} +(.+?) *#*$/gm)) {
    const base = slug(heading!);
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    out.add(count === 0 ? base : `${base}-${count}`);
  }
  return out;
}

/** Each `[text](target)` link of a file: its target as written and where it leads. */
function links(file: string): { target: string; path: string; fragment: string | undefined }[] {
  const text = prose(readFileSync(join(ROOT, file), "utf8"));
  return [...text.matchAll(/\]\(([^)\s]+)(?: "[^"]*")?\)/g)]
    .map((m) => m[1]!)
    .filter((target) => !/^[a-z][a-z0-9+.-]*:/i.test(target))
    .map((target) => {
      const [pathPart, fragment] = target.split("#", 2) as [string, string | undefined];
      const path = pathPart === "" ? join(ROOT, file) : join(ROOT, dirname(file), decodeURIComponent(pathPart));
      return { target, path, fragment };
    });
}

test("every relative link and #anchor of the README and docs/*.md leads somewhere", () => {
  const broken: string[] = [];
  let checked = 0;
  for (const file of docFiles()) {
    for (const { target, path, fragment } of links(file)) {
      checked++;
      if (!existsSync(path)) {
        broken.push(`${file}: ${target}: no ${relative(ROOT, path)}`);
        continue;
      }
      if (fragment === undefined) continue;
      if (!path.endsWith(".md") || statSync(path).isDirectory()) {
        broken.push(`${file}: ${target}: an anchor into a file that is not markdown`);
        continue;
      }
      if (!anchors(readFileSync(path, "utf8")).has(fragment)) broken.push(`${file}: ${target}: no heading #${fragment}`);
    }
  }
  assert.deepEqual(broken, []);
  assert.ok(checked > 50, `only ${checked} links found: the link pattern no longer matches the documents`);
});

test("GitHub's anchors as the links use them", () => {
  assert.equal(slug("The sidecar (`egress-agent start`)"), "the-sidecar-egress-agent-start");
  assert.equal(slug("`POST /v1/metrics`, `/v1/traces`, `/v1/logs`: the OTLP receiver"), "post-v1metrics-v1traces-v1logs-the-otlp-receiver");
  assert.equal(slug("Docker / compose"), "docker--compose");
  assert.equal(slug("The CI/CD client"), "the-cicd-client");
  assert.deepEqual([...anchors("# A\n\n```sh\n# not a heading\n```\n## A\n## B_c\n")], ["a", "a-1", "b_c"]);
});

test("the README's example body is examples/trace-transaction.json, a request the sidecar takes, its fields all in the table", () => {
  const readme = readFileSync(join(ROOT, "README.md"), "utf8");
  const file = readFileSync(join(ROOT, "examples/trace-transaction.json"), "utf8");
  const shown = /```json\n([\s\S]*?)```/.exec(readme.slice(readme.indexOf("`examples/trace-transaction.json`")))?.[1];
  assert.ok(shown, "the README shows examples/trace-transaction.json in a json block");
  assert.equal(shown, file);
  assert.ok(TransactionsRequest.safeParse(JSON.parse(file)).success, "the example is a valid POST /v1/transactions body");
  const table = readme.slice(readme.indexOf("| Field | What |"), readme.indexOf("\n\n", readme.indexOf("| Field | What |")));
  const named = [...table.matchAll(/^\| ([^|]+) \|/gm)].flatMap((row) => [...row[1]!.matchAll(/`(\w+)`/g)].map((m) => m[1]!));
  assert.deepEqual(named.sort(), Object.keys(TraceTransaction.shape).sort());
});
