// node scripts/error-codes-table.ts: writes the README's "Error codes" section from the catalogue
// (src/error-codes.ts), so a user can look up every code the product emits; test/errors/catalogue.test.ts checks
// that the README holds what this writes.
import { readFileSync, writeFileSync } from "node:fs";
import { ERRORS, type ErrorEntry } from "../src/error-codes.ts";

export const README_PATH = new URL("../README.md", import.meta.url).pathname;
const HEADING = "## Error codes";
/** The section goes before this one (or last, when the README has none). */
const NEXT_HEADING = "## Development";

function where(entry: ErrorEntry): string {
  if ("logOnly" in entry) return "log only";
  return ["status" in entry ? `HTTP ${entry.status}` : undefined, entry.exit === undefined ? undefined : `exit ${entry.exit}`]
    .filter(Boolean)
    .join("; ");
}

const cell = (text: string) => text.replaceAll("|", "\\|");

export function errorCodesSection(): string {
  const rows = Object.entries(ERRORS).map(
    ([code, entry]: [string, ErrorEntry]) => `| \`${code}\` | ${where(entry)} | ${cell(entry.meaning)} | ${cell(entry.fix)} |`,
  );
  return [
    HEADING,
    "",
    "Every code the product emits starts with `EGRESS_ERR_` (an `ERR_...` without it is Node's, or a library's). A server",
    "answers a refused request with `{detail, code}`, the detail saying what in particular; a command that fails prints",
    "`egress-agent: CODE: message` (a configuration error: its problems, one a line) and exits with the code listed.",
    "Some answers carry the message and the status without the code, as their protocol has it: the 422",
    "`HTTPValidationError`, the OTLP receivers of the sidecar and the beacon (OTLP's google.rpc.Status) and the agent server's A2A endpoint",
    "(a JSON-RPC error). This table is written from `src/error-codes.ts` by `node scripts/error-codes-table.ts`.",
    "",
    "| Code | Status / exit | Meaning | What to do |",
    "| --- | --- | --- | --- |",
    ...rows,
    "",
  ].join("\n");
}

/** `readme` with its Error codes section replaced by (or, when it has none, given) the catalogue's. */
export function withErrorCodesSection(readme: string): string {
  const section = `${errorCodesSection()}\n`;
  const start = readme.indexOf(`\n${HEADING}\n`);
  if (start >= 0) {
    const end = readme.indexOf("\n## ", start + 1);
    return `${readme.slice(0, start + 1)}${section}${end >= 0 ? readme.slice(end + 1) : ""}`;
  }
  const next = readme.indexOf(`\n${NEXT_HEADING}\n`);
  if (next < 0) return `${readme.trimEnd()}\n\n${section}`;
  return `${readme.slice(0, next + 1)}${section}${readme.slice(next + 1)}`;
}

if (import.meta.url === `file://${process.argv[1]}`) writeFileSync(README_PATH, withErrorCodesSection(readFileSync(README_PATH, "utf8")));
