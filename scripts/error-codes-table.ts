// node scripts/error-codes-table.ts: writes docs/errors.md, the "Error codes" table, from the catalogue
// (src/error-codes.ts), so a user can look up every code the product emits; test/errors/catalogue.test.ts checks
// that the file holds what this writes.
import { writeFileSync } from "node:fs";
import { ERRORS, type ErrorEntry } from "../src/error-codes.ts";

export const ERRORS_DOC = new URL("../docs/errors.md", import.meta.url).pathname;

function where(entry: ErrorEntry): string {
  if ("logOnly" in entry) return "log only";
  return ["status" in entry ? `HTTP ${entry.status}` : undefined, entry.exit === undefined ? undefined : `exit ${entry.exit}`]
    .filter(Boolean)
    .join("; ");
}

const cell = (text: string) => text.replaceAll("|", "\\|");

/** The whole of docs/errors.md. */
export function errorCodesDoc(): string {
  const rows = Object.entries(ERRORS).map(
    ([code, entry]: [string, ErrorEntry]) => `| \`${code}\` | ${where(entry)} | ${cell(entry.meaning)} | ${cell(entry.fix)} |`,
  );
  return [
    "# Error codes",
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

if (import.meta.url === `file://${process.argv[1]}`) writeFileSync(ERRORS_DOC, errorCodesDoc());
